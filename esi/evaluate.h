// evaluate: one request's walk over a Template - variables substituted, esi:choose decided,
// include URLs resolved and checked - giving a Plan: what to output, in document order, and
// which includes it needs. No I/O: esi/assembly.h executes plans as includes complete.
//
// Include URLs, as Varnish resolves them (cache_esi_parse.c), after variables are substituted:
// - "http://host/path": Host becomes `host` (for "http:///path" an empty Host, as Varnish sends),
//   the target is /path. Only the
//   including page's own host is allowed unless IncludePolicy::allow_host says yes; a refused host
//   is a failed fetch (alt, then onerror apply). "http://host" without a path is dropped (Varnish:
//   "invalid src= URL").
// - "https://...": dropped, as Varnish does without feature esi_ignore_https, unless
//   allow_host(host, true) allows it (then Location::https is set).
// - "/path": the including page's host, that target.
// - anything else is relative: the including page's target up to its last '/' before any '?',
//   then "/" and the src ("/a/b?x" + "c" -> "/a/c"). Dot segments are passed on, as Varnish does.
// - In the path part &amp; &lt; &gt; &quot; &apos; are decoded (Varnish does too); substituted
//   variable values are percent-encoded where a URL needs it and never decoded.
// - A target that would hold a control byte or a space is refused (a failed fetch).
//
// Threads: Evaluate() is a pure function of its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "esi/expr.h"
#include "esi/template.h"

namespace shellac::esi {

// Where a page comes from, or where an include goes.
struct Location {
  std::string host;    // Host header
  std::string target;  // request-target: path and query
  bool https = false;  // only when IncludePolicy allowed an https:// include

  bool operator==(const Location&) const = default;
};

// The config hook that keeps includes from reaching anywhere else (no SSRF).
struct IncludePolicy {
  // Asked for an include naming a host other than the including page's, or https://. Null or
  // false: refused.
  std::function<bool(std::string_view host, bool https)> allow_host;
};

struct EvalOptions {
  IncludePolicy policy;
  // Escape values substituted inside esi:vars as HTML text (& < > " '). The note says nothing of
  // escaping; shellac does it so that a cookie or query parameter cannot inject markup.
  bool escape_vars = true;
};

enum class StepKind : uint8_t {
  kBytes,    // body bytes [offset, offset + length) of the plan's body
  kText,     // plan.text bytes [offset, offset + length): substituted values
  kInclude,  // plan.includes[index]
  kTry,      // attempt steps follow, up to the kExcept step at `except`
  kExcept,   // except steps follow, up to `end` (the try's end too)
};

struct Step {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t index = 0;   // kInclude: into includes; kTry: the try's ordinal in the plan
  uint32_t except = 0;  // kTry: index of its kExcept step
  uint32_t end = 0;     // kTry, kExcept: index just past the except's steps
  StepKind kind = StepKind::kBytes;
};

struct IncludeCall {
  Location src;
  Location alt;
  bool src_allowed = false;  // false: refused - fails at once (then alt, then onerror)
  bool has_alt = false;
  bool alt_allowed = false;
  bool continue_on_error = false;
  uint64_t offset = 0;  // where the element is in the body
};

enum class EvalIssueKind : uint8_t {
  kHttpsIgnored,     // Varnish's warning "<esi:include> with https:// ignored"
  kInvalidUrl,       // Varnish's error "<esi:include> invalid src= URL"; dropped
  kHostRefused,      // http://host not allowed by the policy: a failed fetch
  kBadTarget,        // control byte or space in the resolved target: a failed fetch
  kDepthLimit,       // (assembly) include below esi-max-depth: dropped, as Varnish does
  kTooManyIncludes,  // (assembly) past esi-max-includes: a failed fetch
};

struct EvalIssue {
  EvalIssueKind kind;
  uint64_t offset;  // in the body of the page that holds the include
};

const char* EvalIssueName(EvalIssueKind kind);

struct Plan {
  uintptr_t body = 0;  // the caller's name for the body kBytes steps point into
  std::vector<Step> steps;
  std::vector<IncludeCall> includes;
  std::string text;
  uint32_t try_count = 0;
  std::vector<EvalIssue> issues;

  // The plan of a body that is not ESI (or a fragment delivered as is): all of it.
  static Plan Verbatim(uint64_t length, uintptr_t body);
};

// Evaluates `page` for one request. `base` is where the page itself was fetched from (the client's
// Host and target for the top page, the include's Location for a fragment). `body` tags the
// plan's kBytes steps.
Plan Evaluate(const Template& page, const RequestContext& context, const Location& base,
              const EvalOptions& options, uintptr_t body);

// The URL part alone (exposed for tests): resolves an expanded src against `base`.
enum class Resolution : uint8_t { kOk, kHttps, kInvalid };
Resolution ResolveSrc(std::string_view src, const Location& base, Location* out);

}  // namespace shellac::esi

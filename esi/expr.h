// expr: ESI variables and test expressions (ESI 1.0 note, sections 4 and 5).
//
// Variables read the client's request: $(HTTP_ACCEPT_LANGUAGE{lang}), $(HTTP_COOKIE{name}),
// $(HTTP_HOST), $(HTTP_REFERER), $(HTTP_USER_AGENT{browser|os|version}), $(QUERY_STRING) and
// $(QUERY_STRING{name}), each with an optional default: $(HTTP_COOKIE{id}|'guest') or |guest.
// A value is used as data only: nothing substituted is ever parsed again, as ESI or as an entity.
//
// Everything here is compiled once (when a template is parsed) and evaluated per request. Compiled
// objects are immutable; any thread may evaluate them concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shellac::esi {

// The request data variables read. Views: the caller keeps the bytes alive while evaluating.
struct RequestContext {
  std::string_view host;             // Host header
  std::string_view query;            // query string, without the '?'
  std::string_view cookie;           // Cookie header (several joined with "; ")
  std::string_view referer;          // Referer header
  std::string_view user_agent;       // User-Agent header
  std::string_view accept_language;  // Accept-Language header
};

enum class Variable : uint8_t {
  kUnknown,  // any other name: always empty (the note: nonexistent variables are empty)
  kHttpAcceptLanguage,
  kHttpCookie,
  kHttpHost,
  kHttpReferer,
  kHttpUserAgent,
  kQueryString,
};

// One compiled reference "$(NAME{key}|default)".
struct VarRef {
  Variable variable = Variable::kUnknown;
  bool has_key = false;
  bool has_default = false;
  std::string key;
  std::string fallback;  // the default, unquoted
};

// Longest reference accepted, in bytes; longer ones stay literal text.
inline constexpr size_t kMaxVarRefLength = 512;

// Parses a reference at the start of `text` ("$(" included). Returns the bytes it spans, or 0 when
// `text` does not start with a well-formed reference (then *ref is unspecified).
// Grammar: "$(" NAME [ "{" KEY "}" ] [ "|" ( "'" ANY-BUT-QUOTE "'" | BARE ) ] ")"
//   NAME: [A-Za-z0-9_]+; KEY and BARE: no '$', '(', ')', '{', '}', '\'', '<', '>', whitespace.
size_t ParseVarRef(std::string_view text, VarRef* ref);
// A byte allowed in KEY and BARE.
bool IsVarBareChar(char c);

// Why a reference gives what it gives:
// - HTTP_COOKIE{name}: the first cookie of that name, value as sent; no key: the whole header.
// - QUERY_STRING{name}: the first parameter of that name, still percent-encoded ("a=" and "a" give
//   ""); no key: the whole query string.
// - HTTP_USER_AGENT{browser}: MSIE, MOZILLA or OTHER; {os}: WIN, MAC, UNIX or OTHER; {version}:
//   the browser's version ("5.5" for "MSIE 5.5", "5.0" for "Mozilla/5.0"); no key: the header.
// - HTTP_ACCEPT_LANGUAGE{lang}: "true" when the header lists lang (ASCII case-insensitive, "en"
//   also matches "en-gb", q=0 entries do not count), else "false"; no key: the header.
// - HTTP_HOST, HTTP_REFERER: the header; a key makes them empty.
// The default replaces an empty value.
std::string VarValue(const VarRef& ref, const RequestContext& context);
// True when the reference gives a boolean (HTTP_ACCEPT_LANGUAGE with a key).
bool IsBooleanVar(const VarRef& ref);

// A string with variable references, such as an include's src: literal text with $(...) in it.
class Interpolation {
 public:
  enum class Escape : uint8_t {
    kNone,  // values as they are (test expressions)
    kHtml,  // & < > " ' as entities (text inside esi:vars)
    // For an include's src/alt: bytes outside printable ASCII, space and "<>\^`{|} are
    // percent-encoded, then '&' is written "&amp;" so that the entity decoding the URL resolution
    // applies to literal text leaves the value as it was.
    kUrl,
  };

  Interpolation() = default;
  // Compiles `raw`: every well-formed "$(...)" becomes a reference when `variables` is true;
  // anything else is literal.
  static Interpolation Compile(std::string_view raw, bool variables);

  bool has_variables() const { return has_variables_; }
  std::string_view raw() const { return raw_; }
  // Appends the expanded text to *out.
  void Expand(const RequestContext& context, Escape escape, std::string* out) const;
  size_t memory_bytes() const;

 private:
  struct Part {
    uint32_t begin;   // literal: offset into raw_
    uint32_t length;  // literal: length; reference: index into refs_
    bool is_ref;
  };
  std::string raw_;
  std::vector<Part> parts_;
  std::vector<VarRef> refs_;
  bool has_variables_ = false;
};

// Appends `value` to *out escaped as `escape` says.
void AppendEscaped(std::string_view value, Interpolation::Escape escape, std::string* out);

// A compiled test expression, as the `test` attribute of esi:when holds.
//
// Operands: variables, quoted strings ('text', or '''text''' which may hold a single quote) and
// numbers (-?[0-9]+(.[0-9]+)?). Operators by falling precedence: == != < <= > >= (comparison);
// ! (negation); & (and); | (or); parentheses group. As the note says, when both operands of a
// comparison are numeric they compare as numbers, otherwise as strings (bytewise). An operand
// used alone is true when it is a true boolean, a non-zero number or a non-empty string.
class Expression {
 public:
  Expression() = default;
  // Compiles `text`. On a syntax error returns false and sets *error_at to the byte offset in
  // `text` where it was found; the expression then evaluates to false.
  bool Compile(std::string_view text, size_t* error_at);
  bool Evaluate(const RequestContext& context) const;
  bool valid() const { return valid_; }
  size_t memory_bytes() const;

  // Deepest nesting of parentheses and '!' accepted.
  static constexpr int kMaxNesting = 32;

 private:
  enum class Op : uint8_t { kOperand, kNot, kAnd, kOr, kEq, kNe, kLt, kLe, kGt, kGe };
  struct Node {
    Op op;
    uint32_t first;   // kOperand: operand index; kNot: child; kAnd/kOr: first child in links_;
                      // comparisons: left child
    uint32_t second;  // kAnd/kOr: child count; comparisons: right child
  };
  struct Operand {
    enum Kind : uint8_t { kString, kNumber, kVariable } kind;
    std::string text;  // kString, kNumber
    VarRef ref;        // kVariable
  };
  struct Value;
  class Compiler;

  Value Evaluate(uint32_t node, const RequestContext& context) const;
  bool Truth(uint32_t node, const RequestContext& context) const;

  std::vector<Node> nodes_;
  std::vector<uint32_t> links_;  // children of kAnd/kOr nodes
  std::vector<Operand> operands_;
  uint32_t root_ = 0;
  bool valid_ = false;
};

}  // namespace shellac::esi

#include "esi/evaluate.h"

#include <utility>

#include "base/entities.h"
#include "base/text.h"

namespace shellac::esi {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}


bool ValidTarget(std::string_view target) {
  for (char c : target) {
    auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b == 0x7f) return false;
  }
  return true;
}

class Evaluator {
 public:
  Evaluator(const Template& page, const RequestContext& context, const Location& base,
            const EvalOptions& options, uintptr_t body)
      : page_(page), context_(context), base_(base), options_(options) {
    plan_.body = body;
  }

  Plan Run() {
    auto instructions = page_.instructions();
    Walk(0, static_cast<uint32_t>(instructions.size()));
    return std::move(plan_);
  }

 private:
  void Walk(uint32_t begin, uint32_t end) {
    auto instructions = page_.instructions();
    for (uint32_t i = begin; i < end;) {
      const Instruction& in = instructions[i];
      switch (in.op) {
        case Op::kLiteral:
          AddBytes(in.offset, in.length);
          break;
        case Op::kVariable: {
          std::string value = VarValue(page_.variable(in.index()), context_);
          size_t at = plan_.text.size();
          AppendEscaped(
              value,
              options_.escape_vars ? Interpolation::Escape::kHtml : Interpolation::Escape::kNone,
              &plan_.text);
          if (plan_.text.size() > at) {
            Step step;
            step.kind = StepKind::kText;
            step.offset = at;
            step.length = plan_.text.size() - at;
            plan_.steps.push_back(step);
          }
          break;
        }
        case Op::kInclude:
          AddInclude(in);
          break;
        case Op::kTry:
          AddTry(i);
          i = in.end;
          continue;
        case Op::kChoose:
          AddChoose(i);
          i = in.end;
          continue;
        case Op::kAttempt:
        case Op::kExcept:
        case Op::kOtherwise:
          // Only found inside their parents, which walk them; kept total for safety.
          Walk(i + 1, in.end);
          i = in.end;
          continue;
        case Op::kWhen:
          i = in.end;
          continue;
      }
      ++i;
    }
  }

  void AddBytes(uint64_t offset, uint64_t length) {
    if (length == 0) return;
    if (!plan_.steps.empty()) {
      Step& last = plan_.steps.back();
      if (last.kind == StepKind::kBytes && last.offset + last.length == offset) {
        last.length += length;
        return;
      }
    }
    Step step;
    step.kind = StepKind::kBytes;
    step.offset = offset;
    step.length = length;
    plan_.steps.push_back(step);
  }

  // Resolves one URL of an include. Returns false when the element is to be dropped.
  bool ResolveOne(const Interpolation& raw, uint64_t offset, Location* location, bool* allowed) {
    std::string expanded;
    raw.Expand(context_, Interpolation::Escape::kUrl, &expanded);
    Resolution r = ResolveSrc(expanded, base_, location);
    if (r == Resolution::kInvalid) {
      plan_.issues.push_back({EvalIssueKind::kInvalidUrl, offset});
      return false;
    }
    *allowed = true;
    if (r == Resolution::kHttps) {
      if (!options_.policy.allow_host || !options_.policy.allow_host(location->host, true)) {
        plan_.issues.push_back({EvalIssueKind::kHttpsIgnored, offset});
        return false;
      }
      location->https = true;
    } else if (!base::EqualsIgnoreCase(location->host, base_.host) &&
               (!options_.policy.allow_host ||
                !options_.policy.allow_host(location->host, false))) {
      plan_.issues.push_back({EvalIssueKind::kHostRefused, offset});
      *allowed = false;
    }
    if (*allowed && !ValidTarget(location->target)) {
      plan_.issues.push_back({EvalIssueKind::kBadTarget, offset});
      *allowed = false;
    }
    return true;
  }

  void AddInclude(const Instruction& in) {
    const Include& include = page_.include(in.index());
    IncludeCall call;
    call.offset = in.offset;
    call.continue_on_error = include.continue_on_error;
    if (!ResolveOne(include.src, in.offset, &call.src, &call.src_allowed)) return;
    if (include.has_alt)
      call.has_alt = ResolveOne(include.alt, in.offset, &call.alt, &call.alt_allowed);
    Step step;
    step.kind = StepKind::kInclude;
    step.offset = in.offset;
    step.index = static_cast<uint32_t>(plan_.includes.size());
    plan_.includes.push_back(std::move(call));
    plan_.steps.push_back(step);
  }

  void AddTry(uint32_t at) {
    auto instructions = page_.instructions();
    const Instruction& block = instructions[at];
    uint32_t attempt = 0, except = 0;
    bool has_attempt = false, has_except = false;
    for (uint32_t j = at + 1; j < block.end; j = instructions[j].end) {
      if (instructions[j].op == Op::kAttempt && !has_attempt) {
        attempt = j;
        has_attempt = true;
      } else if (instructions[j].op == Op::kExcept && !has_except) {
        except = j;
        has_except = true;
      }
      if (instructions[j].end <= j) break;  // not a block (cannot happen)
    }
    size_t try_step = plan_.steps.size();
    size_t includes_before = plan_.includes.size();
    plan_.steps.push_back(Step{});
    plan_.steps[try_step].kind = StepKind::kTry;
    if (has_attempt) Walk(attempt + 1, instructions[attempt].end);
    if (plan_.includes.size() == includes_before) {
      // Nothing in the attempt can fail: it is the output, the except never runs.
      plan_.steps.erase(plan_.steps.begin() + static_cast<ptrdiff_t>(try_step));
      return;
    }
    uint32_t except_step = static_cast<uint32_t>(plan_.steps.size());
    Step marker;
    marker.kind = StepKind::kExcept;
    plan_.steps.push_back(marker);
    if (has_except) Walk(except + 1, instructions[except].end);
    uint32_t end = static_cast<uint32_t>(plan_.steps.size());
    Step& step = plan_.steps[try_step];
    step.offset = block.offset;
    step.except = except_step;
    step.end = end;
    step.index = plan_.try_count++;
    plan_.steps[except_step].end = end;
  }

  void AddChoose(uint32_t at) {
    auto instructions = page_.instructions();
    const Instruction& block = instructions[at];
    uint32_t otherwise = 0;
    bool has_otherwise = false;
    for (uint32_t j = at + 1; j < block.end; j = instructions[j].end) {
      const Instruction& child = instructions[j];
      if (child.op == Op::kWhen && page_.expression(child.index()).Evaluate(context_)) {
        Walk(j + 1, child.end);
        return;
      }
      if (child.op == Op::kOtherwise && !has_otherwise) {
        otherwise = j;
        has_otherwise = true;
      }
      if (child.end <= j) break;
    }
    if (has_otherwise) Walk(otherwise + 1, instructions[otherwise].end);
  }

  const Template& page_;
  const RequestContext& context_;
  const Location& base_;
  const EvalOptions& options_;
  Plan plan_;
};

}  // namespace

const char* EvalIssueName(EvalIssueKind kind) {
  switch (kind) {
    case EvalIssueKind::kHttpsIgnored:
      return "ESI 1.0 <esi:include> with https:// ignored";
    case EvalIssueKind::kInvalidUrl:
      return "ESI 1.0 <esi:include> invalid src= URL";
    case EvalIssueKind::kHostRefused:
      return "<esi:include> host not allowed";
    case EvalIssueKind::kBadTarget:
      return "<esi:include> URL holds a control byte or space";
    case EvalIssueKind::kDepthLimit:
      return "ESI depth limit reached (esi-max-depth)";
    case EvalIssueKind::kTooManyIncludes:
      return "too many includes (esi-max-includes)";
  }
  return "?";
}

Plan Plan::Verbatim(uint64_t length, uintptr_t body) {
  Plan plan;
  plan.body = body;
  if (length > 0) {
    Step step;
    step.kind = StepKind::kBytes;
    step.length = length;
    plan.steps.push_back(step);
  }
  return plan;
}

Resolution ResolveSrc(std::string_view src, const Location& base, Location* out) {
  out->https = false;
  out->target.clear();
  Resolution result = Resolution::kOk;
  std::string_view path;
  size_t scheme = 0;
  if (src.size() > 7 && StartsWith(src, "http://")) {
    scheme = 7;
  } else if (src.size() > 8 && StartsWith(src, "https://")) {
    scheme = 8;
    result = Resolution::kHttps;
  }
  if (scheme > 0) {
    std::string_view rest = src.substr(scheme);
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return Resolution::kInvalid;
    std::string_view host = rest.substr(0, slash);
    out->host.assign(host);  // may be empty: Varnish then sends an empty Host
    path = rest.substr(slash);
  } else if (!src.empty() && src[0] == '/') {
    out->host = base.host;
    path = src;
  } else {
    // Relative: the base's target up to its last '/' before any '?'.
    out->host = base.host;
    std::string_view url = base.target;
    size_t q = 0;
    size_t last_slash = std::string_view::npos;
    for (; q < url.size() && url[q] != '?'; ++q)
      if (url[q] == '/') last_slash = q;
    size_t keep = last_slash != std::string_view::npos ? last_slash
                  : q < url.size()                     ? q + 1
                                                       : url.size();
    out->target.assign(url.substr(0, keep));
    out->target.push_back('/');
    path = src;
  }
  base::AppendXmlDecoded(path, &out->target);  // the five entities Varnish decodes in a src
  return result;
}

Plan Evaluate(const Template& page, const RequestContext& context, const Location& base,
              const EvalOptions& options, uintptr_t body) {
  return Evaluator(page, context, base, options, body).Run();
}

}  // namespace shellac::esi

#include "esi/template.h"

namespace shellac::esi {

const char* ProblemName(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kNotXml:
      return "no ESI processing, first byte not '<'";
    case ProblemKind::kUnknownElement:
      return "ESI 1.0 <esi:bogus> element";
    case ProblemKind::kIllegalEndTag:
      return "ESI 1.0 illegal end-tag";
    case ProblemKind::kNestedInRemove:
      return "ESI element nested in <esi:remove>";
    case ProblemKind::kRemoveEmpty:
      return "ESI 1.0 <esi:remove/> not legal";
    case ProblemKind::kRemoveAlreadyOpen:
      return "ESI 1.0 <esi:remove> already open";
    case ProblemKind::kRemoveNotOpen:
      return "ESI 1.0 <esi:remove> not open";
    case ProblemKind::kCommentNotEmpty:
      return "ESI 1.0 <esi:comment> needs final '/'";
    case ProblemKind::kIncludeNotEmpty:
      return "ESI 1.0 <esi:include> lacks final '/'";
    case ProblemKind::kIncludeNoSrc:
      return "ESI 1.0 <esi:include> lacks src attr";
    case ProblemKind::kIncludeMultipleSrc:
      return "ESI 1.0 <esi:include> has multiple src= attributes";
    case ProblemKind::kIncludeSrcWhitespace:
      return "ESI 1.0 <esi:include> has whitespace in src= attribute";
    case ProblemKind::kGreaterNotAfterSlash:
      return "XML 1.0 '>' does not follow '/' in tag";
    case ProblemKind::kBadAttributeStart:
      return "XML 1.0 Illegal attribute start char";
    case ProblemKind::kBadAttributeChar:
      return "XML 1.0 Illegal attr char";
    case ProblemKind::kBadAttributeDelimiter:
      return "XML 1.0 Illegal attribute delimiter";
    case ProblemKind::kUnterminatedAttribute:
      return "XML 1.0 Missing end attribute delimiter";
    case ProblemKind::kEndedInsideTag:
      return "ended inside a tag";
    case ProblemKind::kRemoveUnclosed:
      return "ended inside <esi:remove>";
    case ProblemKind::kMisplacedElement:
      return "ESI element not allowed here";
    case ProblemKind::kDuplicateElement:
      return "second attempt/except/otherwise in one block";
    case ProblemKind::kUnmatchedEndTag:
      return "end tag without open element";
    case ProblemKind::kUnclosedElement:
      return "element closed implicitly";
    case ProblemKind::kMissingTest:
      return "<esi:when> lacks test attr";
    case ProblemKind::kBadTest:
      return "<esi:when> test= is not an expression";
    case ProblemKind::kTooDeep:
      return "ESI elements nested too deep";
    case ProblemKind::kAttributeTooLong:
      return "attribute value too long";
    case ProblemKind::kTooManyVariables:
      return "too many $(...) in one construct";
    case ProblemKind::kIncludeMisplaced:
      return "<esi:include> directly inside try or choose";
  }
  return "?";
}

bool IsWarning(ProblemKind kind) {
  return kind == ProblemKind::kIncludeNotEmpty || kind == ProblemKind::kRemoveUnclosed ||
         kind == ProblemKind::kNotXml;
}

size_t Template::memory_bytes() const {
  size_t bytes = sizeof(*this) + instructions_.capacity() * sizeof(Instruction) +
                 includes_.capacity() * sizeof(Include) +
                 expressions_.capacity() * sizeof(Expression) +
                 variables_.capacity() * sizeof(VarRef) + problems_.capacity() * sizeof(Problem);
  for (const Include& include : includes_)
    bytes += include.src.memory_bytes() + include.alt.memory_bytes() - 2 * sizeof(Interpolation);
  for (const Expression& expression : expressions_)
    bytes += expression.memory_bytes() - sizeof(Expression);
  for (const VarRef& ref : variables_) bytes += ref.key.capacity() + ref.fallback.capacity();
  return bytes;
}

namespace {

void AppendRef(const VarRef& ref, std::string* out) {
  static const char* const kNames[] = {"?",           "HTTP_ACCEPT_LANGUAGE", "HTTP_COOKIE",
                                       "HTTP_HOST",   "HTTP_REFERER",         "HTTP_USER_AGENT",
                                       "QUERY_STRING"};
  out->append("$(");
  out->append(kNames[static_cast<int>(ref.variable)]);
  if (ref.has_key) out->append("{").append(ref.key).append("}");
  if (ref.has_default) out->append("|'").append(ref.fallback).append("'");
  out->append(")");
}

}  // namespace

std::string Template::Dump() const {
  std::string out;
  std::vector<uint32_t> ends;
  for (uint32_t i = 0; i < instructions_.size(); ++i) {
    while (!ends.empty() && ends.back() <= i) ends.pop_back();
    out.append(2 * ends.size(), ' ');
    const Instruction& in = instructions_[i];
    switch (in.op) {
      case Op::kLiteral:
        out.append("literal ")
            .append(std::to_string(in.offset))
            .append("+")
            .append(std::to_string(in.length));
        break;
      case Op::kVariable:
        out.append("variable ");
        AppendRef(variables_[in.index()], &out);
        break;
      case Op::kInclude: {
        const Include& include = includes_[in.index()];
        out.append("include src=").append(include.src.raw());
        if (include.has_alt) out.append(" alt=").append(include.alt.raw());
        if (include.continue_on_error) out.append(" continue");
        break;
      }
      case Op::kTry:
        out.append("try");
        break;
      case Op::kAttempt:
        out.append("attempt");
        break;
      case Op::kExcept:
        out.append("except");
        break;
      case Op::kChoose:
        out.append("choose");
        break;
      case Op::kWhen:
        out.append("when");
        if (!expressions_[in.index()].valid()) out.append(" (invalid)");
        break;
      case Op::kOtherwise:
        out.append("otherwise");
        break;
    }
    out.push_back('\n');
    if (in.op != Op::kLiteral && in.op != Op::kVariable && in.op != Op::kInclude)
      ends.push_back(in.end);
  }
  return out;
}

}  // namespace shellac::esi

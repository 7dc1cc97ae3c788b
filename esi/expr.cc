#include "esi/expr.h"

#include <charconv>
#include <cstring>

#include "base/text.h"

namespace shellac::esi {
namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

bool IsVarBareChar(char c) {
  switch (c) {
    case '$':
    case '(':
    case ')':
    case '{':
    case '}':
    case '\'':
    case '<':
    case '>':
    case ' ':
    case '\t':
    case '\r':
    case '\n':
      return false;
    default:
      return true;
  }
}

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

using base::AsciiLower;
using base::EqualsIgnoreCase;
using base::TrimOws;

Variable LookupVariable(std::string_view name) {
  if (name == "HTTP_ACCEPT_LANGUAGE") return Variable::kHttpAcceptLanguage;
  if (name == "HTTP_COOKIE") return Variable::kHttpCookie;
  if (name == "HTTP_HOST") return Variable::kHttpHost;
  if (name == "HTTP_REFERER") return Variable::kHttpReferer;
  if (name == "HTTP_USER_AGENT") return Variable::kHttpUserAgent;
  if (name == "QUERY_STRING") return Variable::kQueryString;
  return Variable::kUnknown;
}

// Calls f(item) for each piece of `list` between `separator`s.
template <typename F>
void ForEachItem(std::string_view list, char separator, F&& f) {
  while (!list.empty()) {
    size_t cut = list.find(separator);
    std::string_view item = list.substr(0, cut);
    list = cut == std::string_view::npos ? std::string_view() : list.substr(cut + 1);
    if (f(item)) return;
  }
}

std::string_view CookieValue(std::string_view header, std::string_view name) {
  std::string_view found;
  bool hit = false;
  ForEachItem(header, ';', [&](std::string_view item) {
    item = TrimOws(item);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return false;
    if (TrimOws(item.substr(0, eq)) != name) return false;
    found = TrimOws(item.substr(eq + 1));
    hit = true;
    return true;
  });
  return hit ? found : std::string_view();
}

std::string_view QueryValue(std::string_view query, std::string_view name) {
  std::string_view found;
  ForEachItem(query, '&', [&](std::string_view item) {
    size_t eq = item.find('=');
    if (item.substr(0, eq) != name) return false;
    found = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    return true;
  });
  return found;
}

bool AcceptsLanguage(std::string_view header, std::string_view lang) {
  bool accepted = false;
  ForEachItem(header, ',', [&](std::string_view item) {
    size_t semi = item.find(';');
    std::string_view tag = TrimOws(item.substr(0, semi));
    if (semi != std::string_view::npos) {
      // A q of 0 means "not acceptable".
      std::string_view params = item.substr(semi + 1);
      bool refused = false;
      ForEachItem(params, ';', [&](std::string_view p) {
        p = TrimOws(p);
        if (p.size() < 2 || AsciiLower(p[0]) != 'q' || p[1] != '=') return false;
        std::string_view q = TrimOws(p.substr(2));
        refused = !q.empty() && q.find_first_not_of("0.") == std::string_view::npos;
        return true;
      });
      if (refused) return false;
    }
    if (EqualsIgnoreCase(tag, lang) || (tag.size() > lang.size() && tag[lang.size()] == '-' &&
                                        EqualsIgnoreCase(tag.substr(0, lang.size()), lang))) {
      accepted = true;
      return true;
    }
    return false;
  });
  return accepted;
}

std::string_view VersionAfter(std::string_view agent, std::string_view marker) {
  size_t at = agent.find(marker);
  if (at == std::string_view::npos) return {};
  std::string_view rest = agent.substr(at + marker.size());
  size_t end = 0;
  while (end < rest.size() && ((rest[end] >= '0' && rest[end] <= '9') || rest[end] == '.')) ++end;
  return rest.substr(0, end);
}

std::string UserAgentPart(std::string_view agent, std::string_view key) {
  bool msie = agent.find("MSIE ") != std::string_view::npos;
  bool trident = !msie && agent.find("Trident/") != std::string_view::npos;
  bool mozilla = !msie && !trident && agent.substr(0, 8) == "Mozilla/";
  if (key == "browser") return msie || trident ? "MSIE" : mozilla ? "MOZILLA" : "OTHER";
  if (key == "version") {
    if (msie) return std::string(VersionAfter(agent, "MSIE "));
    if (trident) return std::string(VersionAfter(agent, "rv:"));
    if (mozilla) return std::string(VersionAfter(agent, "Mozilla/"));
    return std::string(VersionAfter(agent, "/"));
  }
  if (key == "os") {
    auto has = [&](std::string_view s) { return agent.find(s) != std::string_view::npos; };
    if (has("Win")) return "WIN";
    if (has("Mac") || has("Darwin")) return "MAC";
    if (has("X11") || has("Linux") || has("Unix") || has("BSD") || has("SunOS")) return "UNIX";
    return "OTHER";
  }
  return {};
}

// -?[0-9]+(.[0-9]+)?
bool IsNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  size_t digits = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == digits) return false;
  if (i < s.size() && s[i] == '.') {
    size_t frac = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == frac) return false;
  }
  return i == s.size();
}

double ToNumber(std::string_view s) {
  double d = 0;
  std::from_chars(s.data(), s.data() + s.size(), d);
  return d;
}

constexpr char kHex[] = "0123456789ABCDEF";

}  // namespace

size_t ParseVarRef(std::string_view text, VarRef* ref) {
  size_t n = text.size() < kMaxVarRefLength ? text.size() : kMaxVarRefLength;
  if (n < 4 || text[0] != '$' || text[1] != '(') return 0;
  size_t i = 2;
  while (i < n && IsNameChar(text[i])) ++i;
  if (i == 2) return 0;
  ref->variable = LookupVariable(text.substr(2, i - 2));
  ref->has_key = false;
  ref->has_default = false;
  ref->key.clear();
  ref->fallback.clear();
  if (i < n && text[i] == '{') {
    size_t key = ++i;
    while (i < n && IsVarBareChar(text[i])) ++i;
    if (i == key || i >= n || text[i] != '}') return 0;
    ref->has_key = true;
    ref->key.assign(text.substr(key, i - key));
    ++i;
  }
  if (i < n && text[i] == '|') {
    ++i;
    if (i < n && text[i] == '\'') {
      size_t start = ++i;
      while (i < n && text[i] != '\'') ++i;
      if (i >= n) return 0;
      ref->fallback.assign(text.substr(start, i - start));
      ++i;
    } else {
      size_t start = i;
      while (i < n && IsVarBareChar(text[i])) ++i;
      ref->fallback.assign(text.substr(start, i - start));
    }
    ref->has_default = true;
  }
  if (i >= n || text[i] != ')') return 0;
  return i + 1;
}

bool IsBooleanVar(const VarRef& ref) {
  return ref.variable == Variable::kHttpAcceptLanguage && ref.has_key;
}

std::string VarValue(const VarRef& ref, const RequestContext& context) {
  std::string value;
  switch (ref.variable) {
    case Variable::kUnknown:
      break;
    case Variable::kHttpHost:
      if (!ref.has_key) value.assign(context.host);
      break;
    case Variable::kHttpReferer:
      if (!ref.has_key) value.assign(context.referer);
      break;
    case Variable::kHttpCookie:
      value.assign(ref.has_key ? CookieValue(context.cookie, ref.key) : context.cookie);
      break;
    case Variable::kQueryString:
      value.assign(ref.has_key ? QueryValue(context.query, ref.key) : context.query);
      break;
    case Variable::kHttpUserAgent:
      if (ref.has_key)
        value = UserAgentPart(context.user_agent, ref.key);
      else
        value.assign(context.user_agent);
      break;
    case Variable::kHttpAcceptLanguage:
      if (ref.has_key)
        value = AcceptsLanguage(context.accept_language, ref.key) ? "true" : "false";
      else
        value.assign(context.accept_language);
      break;
  }
  if (value.empty() && ref.has_default) value = ref.fallback;
  return value;
}

void AppendEscaped(std::string_view value, Interpolation::Escape escape, std::string* out) {
  switch (escape) {
    case Interpolation::Escape::kNone:
      out->append(value);
      return;
    case Interpolation::Escape::kHtml:
      for (char c : value) {
        switch (c) {
          case '&':
            out->append("&amp;");
            break;
          case '<':
            out->append("&lt;");
            break;
          case '>':
            out->append("&gt;");
            break;
          case '"':
            out->append("&quot;");
            break;
          case '\'':
            out->append("&#39;");
            break;
          default:
            out->push_back(c);
        }
      }
      return;
    case Interpolation::Escape::kUrl:
      for (char c : value) {
        auto b = static_cast<unsigned char>(c);
        if (b <= 0x20 || b >= 0x7f || std::strchr("\"<>\\^`{|}", c) != nullptr) {
          out->push_back('%');
          out->push_back(kHex[b >> 4]);
          out->push_back(kHex[b & 15]);
        } else if (c == '&') {
          out->append("&amp;");
        } else {
          out->push_back(c);
        }
      }
      return;
  }
}

Interpolation Interpolation::Compile(std::string_view raw, bool variables) {
  Interpolation result;
  result.raw_.assign(raw);
  size_t literal = 0;
  size_t i = 0;
  auto flush_literal = [&](size_t end) {
    if (end > literal)
      result.parts_.push_back(
          {static_cast<uint32_t>(literal), static_cast<uint32_t>(end - literal), false});
  };
  while (variables && i + 1 < raw.size()) {
    if (raw[i] != '$' || raw[i + 1] != '(') {
      ++i;
      continue;
    }
    VarRef ref;
    size_t length = ParseVarRef(raw.substr(i), &ref);
    if (length == 0) {
      ++i;
      continue;
    }
    flush_literal(i);
    result.parts_.push_back({0, static_cast<uint32_t>(result.refs_.size()), true});
    result.refs_.push_back(std::move(ref));
    i += length;
    literal = i;
  }
  flush_literal(raw.size());
  result.has_variables_ = !result.refs_.empty();
  return result;
}

void Interpolation::Expand(const RequestContext& context, Escape escape, std::string* out) const {
  for (const Part& part : parts_) {
    if (part.is_ref)
      AppendEscaped(VarValue(refs_[part.length], context), escape, out);
    else
      out->append(raw_, part.begin, part.length);
  }
}

size_t Interpolation::memory_bytes() const {
  size_t bytes = sizeof(*this) + raw_.capacity() + parts_.capacity() * sizeof(Part) +
                 refs_.capacity() * sizeof(VarRef);
  for (const VarRef& ref : refs_) bytes += ref.key.capacity() + ref.fallback.capacity();
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// Expressions

struct Expression::Value {
  enum Kind : uint8_t { kString, kNumber, kBool } kind = kString;
  bool boolean = false;
  double number = 0;
  std::string text;
};

// Recursive descent over the token stream; every '(' and '!' counts toward kMaxNesting, which
// bounds the recursion of both compiling and evaluating.
class Expression::Compiler {
 public:
  Compiler(std::string_view text, Expression* out) : text_(text), out_(out) {}

  bool Run(size_t* error_at) {
    uint32_t root = 0;
    if (!ParseOr(&root)) {
      *error_at = pos_;
      return false;
    }
    SkipSpace();
    if (pos_ != text_.size()) {
      *error_at = pos_;
      return false;
    }
    out_->root_ = root;
    return true;
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool PeekTwo(char a, char b) {
    SkipSpace();
    return pos_ + 1 < text_.size() && text_[pos_] == a && text_[pos_ + 1] == b;
  }
  uint32_t AddNode(Op op, uint32_t first, uint32_t second) {
    out_->nodes_.push_back({op, first, second});
    return static_cast<uint32_t>(out_->nodes_.size() - 1);
  }

  // A chain of `op`-separated operands, parsed by `next`, as one n-ary node.
  template <typename Next>
  bool ParseChain(char separator, Op op, Next next, uint32_t* node) {
    uint32_t first = 0;
    if (!(this->*next)(&first)) return false;
    if (!Peek(separator) || PeekTwo(separator, '=')) {
      *node = first;
      return true;
    }
    std::vector<uint32_t> children{first};
    while (Peek(separator)) {
      ++pos_;
      uint32_t child = 0;
      if (!(this->*next)(&child)) return false;
      children.push_back(child);
    }
    uint32_t start = static_cast<uint32_t>(out_->links_.size());
    out_->links_.insert(out_->links_.end(), children.begin(), children.end());
    *node = AddNode(op, start, static_cast<uint32_t>(children.size()));
    return true;
  }

  bool ParseOr(uint32_t* node) { return ParseChain('|', Op::kOr, &Compiler::ParseAnd, node); }
  bool ParseAnd(uint32_t* node) { return ParseChain('&', Op::kAnd, &Compiler::ParseUnary, node); }

  bool ParseUnary(uint32_t* node) {
    if (Peek('!') && !PeekTwo('!', '=')) {
      ++pos_;
      if (++depth_ > kMaxNesting) return false;
      uint32_t child = 0;
      if (!ParseUnary(&child)) return false;
      --depth_;
      *node = AddNode(Op::kNot, child, 0);
      return true;
    }
    return ParseComparison(node);
  }

  bool ParseComparison(uint32_t* node) {
    uint32_t left = 0;
    if (!ParsePrimary(&left)) return false;
    SkipSpace();
    Op op;
    size_t width = 2;
    if (PeekTwo('=', '=')) {
      op = Op::kEq;
    } else if (PeekTwo('!', '=')) {
      op = Op::kNe;
    } else if (PeekTwo('<', '=')) {
      op = Op::kLe;
    } else if (PeekTwo('>', '=')) {
      op = Op::kGe;
    } else if (Peek('<')) {
      op = Op::kLt;
      width = 1;
    } else if (Peek('>')) {
      op = Op::kGt;
      width = 1;
    } else {
      *node = left;
      return true;
    }
    pos_ += width;
    uint32_t right = 0;
    if (!ParsePrimary(&right)) return false;
    *node = AddNode(op, left, right);
    return true;
  }

  bool ParsePrimary(uint32_t* node) {
    SkipSpace();
    if (pos_ >= text_.size()) return false;
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      if (++depth_ > kMaxNesting) return false;
      if (!ParseOr(node)) return false;
      --depth_;
      if (!Peek(')')) return false;
      ++pos_;
      return true;
    }
    Operand operand;
    if (c == '\'') {
      operand.kind = Operand::kString;
      if (text_.substr(pos_, 3) == "'''") {
        size_t end = text_.find("'''", pos_ + 3);
        if (end == std::string_view::npos) return false;
        operand.text.assign(text_.substr(pos_ + 3, end - pos_ - 3));
        pos_ = end + 3;
      } else {
        size_t end = text_.find('\'', pos_ + 1);
        if (end == std::string_view::npos) return false;
        operand.text.assign(text_.substr(pos_ + 1, end - pos_ - 1));
        pos_ = end + 1;
      }
    } else if (c == '$') {
      size_t length = ParseVarRef(text_.substr(pos_), &operand.ref);
      if (length == 0) return false;
      operand.kind = Operand::kVariable;
      pos_ += length;
    } else if ((c >= '0' && c <= '9') || c == '-') {
      size_t end = pos_ + 1;
      while (end < text_.size() && ((text_[end] >= '0' && text_[end] <= '9') || text_[end] == '.'))
        ++end;
      std::string_view number = text_.substr(pos_, end - pos_);
      if (!IsNumber(number)) return false;
      operand.kind = Operand::kNumber;
      operand.text.assign(number);
      pos_ = end;
    } else {
      return false;
    }
    out_->operands_.push_back(std::move(operand));
    *node = AddNode(Op::kOperand, static_cast<uint32_t>(out_->operands_.size() - 1), 0);
    return true;
  }

  std::string_view text_;
  Expression* out_;
  size_t pos_ = 0;
  int depth_ = 0;
};

bool Expression::Compile(std::string_view text, size_t* error_at) {
  nodes_.clear();
  links_.clear();
  operands_.clear();
  root_ = 0;
  valid_ = false;
  size_t at = 0;
  Compiler compiler(text, this);
  if (!compiler.Run(&at)) {
    if (error_at != nullptr) *error_at = at;
    nodes_.clear();
    links_.clear();
    operands_.clear();
    return false;
  }
  valid_ = true;
  return true;
}

Expression::Value Expression::Evaluate(uint32_t index, const RequestContext& context) const {
  const Node& node = nodes_[index];
  Value value;
  if (node.op != Op::kOperand) {
    value.kind = Value::kBool;
    value.boolean = Truth(index, context);
    return value;
  }
  const Operand& operand = operands_[node.first];
  switch (operand.kind) {
    case Operand::kString:
      value.text = operand.text;
      break;
    case Operand::kNumber:
      value.kind = Value::kNumber;
      value.text = operand.text;
      value.number = ToNumber(operand.text);
      break;
    case Operand::kVariable:
      value.text = VarValue(operand.ref, context);
      if (IsBooleanVar(operand.ref)) {
        value.kind = Value::kBool;
        value.boolean = value.text == "true";
      }
      break;
  }
  return value;
}

bool Expression::Truth(uint32_t index, const RequestContext& context) const {
  const Node& node = nodes_[index];
  switch (node.op) {
    case Op::kOperand: {
      Value v = Evaluate(index, context);
      if (v.kind == Value::kBool) return v.boolean;
      if (v.kind == Value::kNumber) return v.number != 0;
      return !v.text.empty();
    }
    case Op::kNot:
      return !Truth(node.first, context);
    case Op::kAnd:
      for (uint32_t i = 0; i < node.second; ++i)
        if (!Truth(links_[node.first + i], context)) return false;
      return true;
    case Op::kOr:
      for (uint32_t i = 0; i < node.second; ++i)
        if (Truth(links_[node.first + i], context)) return true;
      return false;
    default:
      break;
  }
  Value left = Evaluate(node.first, context);
  Value right = Evaluate(node.second, context);
  for (Value* v : {&left, &right}) {
    if (v->kind == Value::kBool) v->text = v->boolean ? "true" : "false";
  }
  auto numeric = [](const Value& v) { return v.kind == Value::kNumber || IsNumber(v.text); };
  int order;
  if (numeric(left) && numeric(right)) {
    double a = left.kind == Value::kNumber ? left.number : ToNumber(left.text);
    double b = right.kind == Value::kNumber ? right.number : ToNumber(right.text);
    order = a < b ? -1 : a > b ? 1 : 0;
  } else {
    int c = left.text.compare(right.text);
    order = c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  switch (node.op) {
    case Op::kEq:
      return order == 0;
    case Op::kNe:
      return order != 0;
    case Op::kLt:
      return order < 0;
    case Op::kLe:
      return order <= 0;
    case Op::kGt:
      return order > 0;
    case Op::kGe:
      return order >= 0;
    default:
      return false;
  }
}

bool Expression::Evaluate(const RequestContext& context) const {
  return valid_ && Truth(root_, context);
}

size_t Expression::memory_bytes() const {
  size_t bytes = sizeof(*this) + nodes_.capacity() * sizeof(Node) +
                 links_.capacity() * sizeof(uint32_t) + operands_.capacity() * sizeof(Operand);
  for (const Operand& o : operands_)
    bytes += o.text.capacity() + o.ref.key.capacity() + o.ref.fallback.capacity();
  return bytes;
}

}  // namespace shellac::esi

#include "cache/key.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <span>

#include "base/text.h"

namespace shellac::cache {
namespace {

constexpr int kMaxCaptures = 32;
constexpr size_t kInlineParams = 32;

// One query parameter of a target, by view.
struct Param {
  std::string_view name;
  std::string_view value;
  std::string_view text;  // "name=value" (or "name" without '=') as sent
  uint32_t order;         // position in the request, for a stable sort
};

// A target split into path and sorted parameters. Up to kInlineParams parameters are kept without
// allocating; more go to the heap.
class Target {
 public:
  explicit Target(std::string_view target) {
    size_t question = target.find('?');
    path_ = target.substr(0, question);
    if (question == std::string_view::npos) return;
    std::string_view query = target.substr(question + 1);
    size_t count = static_cast<size_t>(std::count(query.begin(), query.end(), '&')) + 1;
    if (count > kInlineParams) {
      heap_.resize(count);
      params_ = heap_.data();
    } else {
      params_ = inline_.data();
    }
    uint32_t order = 0;
    while (!query.empty()) {
      size_t amp = query.find('&');
      std::string_view text = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (text.empty()) continue;  // "a=1&&b=2": nothing between the separators
      size_t eq = text.find('=');
      Param& p = params_[size_++];
      p.text = text;
      p.name = text.substr(0, eq);
      p.value = eq == std::string_view::npos ? std::string_view() : text.substr(eq + 1);
      p.order = order++;
    }
    std::sort(params_, params_ + size_, [](const Param& a, const Param& b) {
      return a.name != b.name ? a.name < b.name : a.order < b.order;
    });
  }
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  std::string_view path() const { return path_; }
  std::span<const Param> params() const { return {params_, size_}; }

  std::string_view Arg(std::string_view name) const {
    for (const Param& p : params()) {
      if (p.name == name) return p.value;  // sorted stably: the first is the first sent
    }
    return {};
  }

  // Appends the normalized query; with `names`, only those parameters.
  void AppendQuery(std::string* out, const std::vector<std::string>* names = nullptr) const {
    bool first = true;
    for (const Param& p : params()) {
      if (names != nullptr && std::find(names->begin(), names->end(), p.name) == names->end())
        continue;
      if (!first) out->push_back('&');
      out->append(p.text);
      first = false;
    }
  }

  // Appends path ["?" normalized query].
  void AppendNormalized(std::string* out) const {
    out->append(path_);
    if (size_ == 0) return;
    out->push_back('?');
    AppendQuery(out);
  }

 private:
  std::string_view path_;
  std::array<Param, kInlineParams> inline_;
  std::vector<Param> heap_;
  Param* params_ = nullptr;
  size_t size_ = 0;
};

using base::AppendLower;
using base::TrimOws;

}  // namespace

struct KeyRules::Rule {
  enum class Kind { kLiteral, kCapture, kHost, kPath, kQuery, kArg, kArgs };
  struct Part {
    Kind kind;
    std::string text;                // literal text, or the parameter name of ${arg:}
    int capture = 0;                 // kCapture
    std::vector<std::string> names;  // kArgs
  };

  std::unique_ptr<RE2> regex;
  std::vector<Part> parts;
  int submatches = 0;  // groups to extract: 1 + the highest capture used, or 0 when none is used

  Status ParseTemplate(std::string_view text);
};

Status KeyRules::Rule::ParseTemplate(std::string_view text) {
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) parts.push_back(Part{Kind::kLiteral, std::move(literal), 0, {}});
    literal.clear();
  };
  auto capture = [&](int n) -> Status {
    if (n > regex->NumberOfCapturingGroups()) {
      return Status::Error("template uses $" + std::to_string(n) + " but the regex has " +
                           std::to_string(regex->NumberOfCapturingGroups()) + " groups");
    }
    if (n > kMaxCaptures) return Status::Error("captures above $" + std::to_string(kMaxCaptures));
    flush();
    parts.push_back(Part{Kind::kCapture, {}, n, {}});
    submatches = std::max(submatches, n + 1);
    return Status::Ok();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '$') {
      literal.push_back(c);
      continue;
    }
    if (i + 1 == text.size()) return Status::Error("template ends with a lone $");
    char next = text[i + 1];
    if (next == '$') {
      literal.push_back('$');
      ++i;
    } else if (next >= '0' && next <= '9') {
      Status s = capture(next - '0');
      if (!s.ok()) return s;
      ++i;
    } else if (next == '{') {
      size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos) return Status::Error("template has an unclosed ${");
      std::string_view name = text.substr(i + 2, close - i - 2);
      i = close;
      if (!name.empty() &&
          std::all_of(name.begin(), name.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        if (name.size() > 3)
          return Status::Error("capture number too large: ${" + std::string(name) + "}");
        int n = 0;
        for (char d : name) n = n * 10 + (d - '0');
        Status s = capture(n);
        if (!s.ok()) return s;
      } else if (name == "host" || name == "path" || name == "query") {
        flush();
        parts.push_back(Part{name == "host"   ? Kind::kHost
                             : name == "path" ? Kind::kPath
                                              : Kind::kQuery,
                             {},
                             0,
                             {}});
      } else if (name.starts_with("arg:") && name.size() > 4) {
        flush();
        parts.push_back(Part{Kind::kArg, std::string(name.substr(4)), 0, {}});
      } else if (name.starts_with("args:") && name.size() > 5) {
        Part part{Kind::kArgs, {}, 0, {}};
        std::string_view list = name.substr(5);
        while (!list.empty()) {
          size_t comma = list.find(',');
          std::string_view item = TrimOws(list.substr(0, comma));
          if (item.empty()) return Status::Error("empty name in ${args:...}");
          part.names.emplace_back(item);
          list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        }
        flush();
        parts.push_back(std::move(part));
      } else {
        return Status::Error("unknown template variable ${" + std::string(name) + "}");
      }
    } else {
      return Status::Error("'$' must be followed by a digit, '{' or '$' (write $$ for a dollar)");
    }
  }
  flush();
  if (parts.empty()) return Status::Error("empty template");
  return Status::Ok();
}

KeyRules::KeyRules() = default;
KeyRules::KeyRules(KeyRules&&) noexcept = default;
KeyRules& KeyRules::operator=(KeyRules&&) noexcept = default;
KeyRules::~KeyRules() = default;

Status KeyRules::Add(std::string_view rule) {
  size_t arrow = rule.find("=>");
  if (arrow == std::string_view::npos) return Status::Error("expected REGEX => TEMPLATE");
  std::string_view pattern = TrimOws(rule.substr(0, arrow));
  std::string_view templ = TrimOws(rule.substr(arrow + 2));
  if (pattern.empty()) return Status::Error("empty regex before =>");
  if (templ.empty()) return Status::Error("empty template after =>");

  auto parsed = std::make_unique<Rule>();
  RE2::Options options;
  options.set_log_errors(false);  // the error goes back as a Status
  parsed->regex = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!parsed->regex->ok()) return Status::Error("bad regex: " + parsed->regex->error());
  Status s = parsed->ParseTemplate(templ);
  if (!s.ok()) return s;
  rules_.push_back(std::move(parsed));
  return Status::Ok();
}

int KeyRules::MakeKey(std::string_view host, std::string_view target, std::string* key) const {
  Target parsed(target);
  key->clear();
  if (!rules_.empty()) {
    // The regex sees the normalized target. A per-thread buffer: no allocation once warmed up.
    thread_local std::string normalized;
    normalized.clear();
    parsed.AppendNormalized(&normalized);
    const re2::StringPiece input(normalized.data(), normalized.size());
    std::array<re2::StringPiece, kMaxCaptures + 1> groups;
    for (size_t r = 0; r < rules_.size(); ++r) {
      const Rule& rule = *rules_[r];
      if (!rule.regex->Match(input, 0, input.size(), RE2::UNANCHORED, groups.data(),
                             rule.submatches)) {
        continue;
      }
      for (const Rule::Part& part : rule.parts) {
        switch (part.kind) {
          case Rule::Kind::kLiteral:
            key->append(part.text);
            break;
          case Rule::Kind::kCapture:
            key->append(groups[part.capture].data(), groups[part.capture].size());
            break;
          case Rule::Kind::kHost:
            AppendLower(key, host);
            break;
          case Rule::Kind::kPath:
            key->append(parsed.path());
            break;
          case Rule::Kind::kQuery:
            parsed.AppendQuery(key);
            break;
          case Rule::Kind::kArg:
            key->append(parsed.Arg(part.text));
            break;
          case Rule::Kind::kArgs:
            parsed.AppendQuery(key, &part.names);
            break;
        }
      }
      if (key->starts_with("//")) key->insert(key->begin(), '=');
      return static_cast<int>(r);
    }
  }
  key->append("//");
  AppendLower(key, host);
  parsed.AppendNormalized(key);
  return -1;
}

}  // namespace shellac::cache

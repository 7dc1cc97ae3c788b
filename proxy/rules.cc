#include "proxy/rules.h"

#include <re2/re2.h>

#include "base/text.h"

namespace shellac::proxy {

struct TtlRules::Rule {
  RE2 regex;
  std::chrono::seconds ttl;
  Rule(std::string_view pattern, std::chrono::seconds t) : regex(pattern, RE2::Quiet), ttl(t) {}
};

bool TtlRules::Compile(const std::vector<conf::Config::Rule>& rules, std::string* error) {
  for (const auto& rule : rules) {
    const std::string_view text = rule.text;
    const auto arrow = text.find("=>");
    conf::Millis ttl{};
    const std::string_view pattern = base::TrimOws(text.substr(0, arrow));
    const std::string_view duration = base::TrimOws(text.substr(arrow + 2));
    conf::ParseDuration(duration, &ttl);
    auto compiled =
        std::make_shared<Rule>(pattern, std::chrono::duration_cast<std::chrono::seconds>(ttl));
    if (!compiled->regex.ok()) {
      *error = rule.origin + ": ttl: bad regular expression: " + compiled->regex.error();
      return false;
    }
    rules_.push_back(std::move(compiled));
  }
  return true;
}

std::optional<std::chrono::seconds> TtlRules::Match(std::string_view target) const {
  for (const auto& rule : rules_) {
    if (RE2::PartialMatch(target, rule->regex)) return rule->ttl;
  }
  return std::nullopt;
}

struct RegexList::Regex {
  RE2 regex;
  explicit Regex(std::string_view pattern) : regex(pattern, RE2::Quiet) {}
};

bool RegexList::Compile(const std::vector<conf::Config::Rule>& rules, const char* key,
                        std::string* error) {
  for (const auto& rule : rules) {
    auto compiled = std::make_shared<const Regex>(rule.text);
    if (!compiled->regex.ok()) {
      *error = rule.origin + ": " + key + ": bad regular expression: " + compiled->regex.error();
      return false;
    }
    regexes_.push_back(std::move(compiled));
  }
  return true;
}

bool RegexList::MatchesPart(std::string_view text) const {
  for (const auto& r : regexes_) {
    if (RE2::PartialMatch(text, r->regex)) return true;
  }
  return false;
}

bool RegexList::MatchesWhole(std::string_view text) const {
  for (const auto& r : regexes_) {
    if (RE2::FullMatch(text, r->regex)) return true;
  }
  return false;
}

bool EsiRules::AllowsHost(std::string_view host) const {
  return hosts_.MatchesWhole(base::ToLower(host));
}

}  // namespace shellac::proxy

// rules: the compiled regular-expression rules of the configuration (ttl=, force-store=, esi-url=,
// esi-allow-host=). Compiled once per reload into the Runtime; read-only after.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/config.h"

namespace shellac::proxy {

// RE2 expressions from list keys of the configuration (force-store=, esi-url=, esi-allow-host=).
class RegexList {
 public:
  // Compiles every rule; false with *error "ORIGIN: KEY: bad regular expression: ..." on the first
  // bad one.
  bool Compile(const std::vector<conf::Config::Rule>& rules, const char* key, std::string* error);
  // Whether some expression matches somewhere in `text` / all of `text`.
  bool MatchesPart(std::string_view text) const;
  bool MatchesWhole(std::string_view text) const;

 private:
  struct Regex;
  std::vector<std::shared_ptr<const Regex>> regexes_;
};

// ttl=REGEX => DURATION rules: the first whose RE2 expression matches a request target (path and
// query) sets the freshness of a storable response for it; 0 keeps such responses out of the store.
class TtlRules {
 public:
  // Compiles every rule; false with *error "ORIGIN: ttl: what is wrong" on the first bad one.
  bool Compile(const std::vector<conf::Config::Rule>& rules, std::string* error);
  std::optional<std::chrono::seconds> Match(std::string_view target) const;
  // force-store=REGEX rules: responses for a matching target are stored even when they say
  // no-store, private or no-cache, or set a cookie (the Set-Cookie header is not stored).
  bool CompileForceStore(const std::vector<conf::Config::Rule>& rules, std::string* error) {
    return force_store_.Compile(rules, "force-store", error);
  }
  bool ForcesStore(std::string_view target) const { return force_store_.MatchesPart(target); }

 private:
  struct Rule;
  std::vector<std::shared_ptr<const Rule>> rules_;
  RegexList force_store_;
};

// esi-url= and esi-allow-host= rules (RE2).
class EsiRules {
 public:
  // Compiles every rule; false with *error "ORIGIN: esi-url: what is wrong" on the first bad one.
  bool Compile(const conf::Config& config, std::string* error) {
    return urls_.Compile(config.esi_urls, "esi-url", error) &&
           hosts_.Compile(config.esi_allow_hosts, "esi-allow-host", error);
  }
  // esi-url: responses for this target (path and query) are processed as ESI whatever their headers
  // say. Partial match, as ttl= rules.
  bool MatchesUrl(std::string_view target) const { return urls_.MatchesPart(target); }
  // esi-allow-host: an include may name this host besides the page's own. Full match, on the host
  // as written (lower-cased).
  bool AllowsHost(std::string_view host) const;

 private:
  RegexList urls_;
  RegexList hosts_;
};

}  // namespace shellac::proxy

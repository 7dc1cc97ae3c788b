// key: the cache key of a request.
//
// Default key: "//" HOST PATH ["?" QUERY], the host lowercased and the query normalized.
//
// Normalized query: parameters are split at '&', empty ones dropped, and sorted by name (byte
// order); parameters with the same name keep their order. Bytes are otherwise kept as sent (no
// percent- decoding). So "?id=1&context=3" and "?context=3&id=1" give the same key.
//
// Rules: `cache-key = REGEX => TEMPLATE`, tried in configuration order. REGEX (RE2 syntax,
// unanchored: use ^ and $) is matched against the normalized target, PATH ["?" QUERY]; the first
// rule that matches makes the key from TEMPLATE. REGEX must not contain "=>" (write [=]> instead).
//
// TEMPLATE is literal text with these substitutions:
//   $1 .. $9, ${N}    capture group N of REGEX ("" if it did not take part); $0: the whole match
//   ${host}           the request's host, lowercased
//   ${path}           the path
//   ${query}          the normalized query, without "?"
//   ${arg:NAME}       the value of the first parameter NAME ("" when absent)
//   ${args:A,B,...}   the normalized query restricted to parameters A, B, ... ("" when none is set)
//   $$                a "$"
//
// Example - a cgit ESI fork's diff fragment, one object for every fork and parameter order:
//   cache-key = ^/[^?]+/esi-diff/\?(.*)$ => diff/${arg:id}/${args:context,ignorews,dt}
//   /linux/esi-diff/?id=SHA&context=3       -> diff/SHA/context=3
//   /other-fork/esi-diff/?context=3&id=SHA  -> diff/SHA/context=3
// Captures see the sorted query, so they work too:
//   cache-key = ^/[^?]+/esi-diff/\?context=(\d+)&id=([0-9a-f]+)$ => diff/$2/context=$1
//
// A rule's key that would begin with "//" gets a "=" in front, so no rule can produce a
// default-form key: a client choosing its Host header cannot reach rule-made keys, and vice versa.
//
// Threads: Add() at configuration time; MakeKey() is const and may run on any thread concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/status.h"

namespace shellac::cache {

class KeyRules {
 public:
  KeyRules();
  KeyRules(KeyRules&&) noexcept;
  KeyRules& operator=(KeyRules&&) noexcept;
  ~KeyRules();

  // Adds one rule, "REGEX => TEMPLATE" (the value of a cache-key= line). On error nothing is added
  // and the Status says what is wrong with the rule; the caller adds file and line.
  Status Add(std::string_view rule);
  size_t size() const { return rules_.size(); }

  // Sets *key to the key of a request for `target` (path and optional query, as received) on
  // `host`. Reuse *key across requests: its capacity is kept. Returns the index of the rule that
  // made the key, or -1 for the default key.
  int MakeKey(std::string_view host, std::string_view target, std::string* key) const;

 private:
  struct Rule;
  std::vector<std::unique_ptr<Rule>> rules_;
};

}  // namespace shellac::cache

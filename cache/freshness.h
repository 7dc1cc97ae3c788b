// freshness: whether a response may be stored, how long it is fresh and then served stale, from its
// HTTP headers: the rules of a shared cache (RFC 9111), as users of Varnish or nginx expect.
//
// Not stored:
//   Cache-Control: no-store, private, no-cache (no revalidation here yet, so "always revalidate"
//   means "do not store"); Set-Cookie; Vary on anything but Accept-Encoding (or *); status >= 500;
//   a status that is not cacheable by default (e.g. 302) without explicit freshness.
//   Policy::store_uncacheable (a configuration rule) overrides
//   no-store/private/no-cache/Set-Cookie.
// ttl, first that applies:
//   Cache-Control s-maxage (shared caches), max-age, Expires - Date (Date missing or invalid: the
//   arrival time; an invalid Expires: already expired), else Policy::default_ttl for statuses that
//   are cacheable by default (200 203 204 300 301 308 404 405 410 414 501). An Age header is
//   subtracted: the response was already that old.
// grace: the larger of Cache-Control stale-while-revalidate and stale-if-error, else Policy::grace.
//
// ttl=REGEX and fragment-ttl rules key on the URL, not the headers: the caller applies them to the
// Decision afterwards. Thread-safe: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string_view>

#include "cache/object.h"

namespace shellac::cache {

struct FreshnessPolicy {
  std::chrono::seconds default_ttl{120};  // default-ttl
  std::chrono::seconds grace{10};         // when the response names none
  bool store_uncacheable = false;         // a rule says: store even no-store/private/Set-Cookie
};

struct FreshnessDecision {
  bool storable = false;
  std::chrono::seconds ttl{0};
  std::chrono::seconds grace{0};
  // What decided it, for logs and tests: "s-maxage", "max-age", "Expires", "default-ttl", or why
  // not: "no-store", "private", "no-cache", "Set-Cookie", "Vary", "status".
  std::string_view reason;
};

// `headers`: the response's fields (repeated names allowed). `now`: when the response arrived.
FreshnessDecision DecideFreshness(int status, std::span<const Header> headers,
                                  std::chrono::sys_seconds now, const FreshnessPolicy& policy);

// Parses an HTTP-date in any of the three forms recipients must accept (RFC 9110 5.6.7):
// "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994".
std::optional<std::chrono::sys_seconds> ParseHttpDate(std::string_view text);

// Whether a Surrogate-Control field value asks for ESI processing: a content="ESI/1.0" directive,
// possibly among others or targeted at a surrogate (content="ESI/1.0";shellac).
bool SurrogateControlWantsEsi(std::string_view field);

}  // namespace shellac::cache

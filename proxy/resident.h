// resident: pages rendered inside shellac by gitfrag/, delivered through the same store and ESI
// pipeline as backend responses.
//
// A render runs on the render pool, never on an event loop. The page is turned into an object on
// the pool thread too (compressed; a frame's ESI template parsed), a repository-neutral one stored
// under its key (for fragment-ttl, default for ever: a commit does not change) with the
// single-flight waiters told; then the outcome is posted to the requesting worker's loop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "gitfrag/gitfrag.h"
#include "proxy/http1.h"
#include "proxy/runtime.h"

namespace shellac::proxy {

class Worker;

struct Rendered {
  int status = 0;           // the page's status; 503 when the render queue refused it
  std::string reason;       // one line, for status != 200
  cache::ObjectRef object;  // status 200: the page (with its template when it is a frame)
  bool stored = false;      // the object is in the store under the fill key
  gitfrag::Refusal refusal = gitfrag::Refusal::kNone;  // why the queue refused it (status 503)
  // A frame made for this request, or any page (stored or not) for a client without gzip: its
  // identity text, so that such a client is answered from it rather than by inflating the object
  // (a page made for this request then holds stored, uncompressed segments; a stored part was
  // compressed for the store, and the include of an identity client's frame takes its text).
  std::shared_ptr<const std::string> text;
  // A page whose body is made piece by piece (a snapshot): its headers (Content-Type first) and
  // the stream, for a StreamResponse; `object` is then null. Never stored.
  std::shared_ptr<gitfrag::BodyStream> stream;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Renders `route` with runtime->site and calls `done` on `worker`'s thread unless `alive` has
// expired by then. A non-empty `fill_key` means the caller leads single-flight for it: the page is
// stored under it and the waiters are told (of a failure too; when the queue refused the render
// they are told the leader is gone, so each tries for itself). `admission` places the render in
// the render queue (AdmissionFor). When the queue refuses it at once, `done` runs before this
// returns, with status 503. `gzip`: whether the client accepts gzip (a page made for one request
// that does not is not compressed, and a page for it comes with its text). A non-empty `memo_base` (PageMemoBase, for a page made for this
// request) keeps the page in the page memo, when it may be kept (page_memo.h).
//
// Pre-rendering at the lowest priority (an admin endpoint, `shellac warm`): with a route whose
// cache_key is not empty and that key as `fill_key` (after SingleFlight::TryLead on it), and
//   gitfrag::Admission{.client = "warm", .render_class = gitfrag::RenderClass::kBackground}
// the part is rendered only while no request's render waits, and stored as a request's would be.
void RenderResident(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                    const gitfrag::Route& route, std::string fill_key, std::weak_ptr<void> alive,
                    gitfrag::Admission admission, bool gzip, std::function<void(Rendered)> done,
                    std::string memo_base = {});

// A request's place in the render queue: its class from the page kind (gitfrag::ClassOf), its
// client, and render-queue-timeout.
gitfrag::Admission AdmissionFor(const conf::Config& config, const gitfrag::Route& route,
                                std::string client);

// Whose request this is, for fair shares: the peer's address, or, when the peer is a
// trusted-proxy=, the nearest address in X-Forwarded-For that is not one; masked to
// client-prefix-v4 / client-prefix-v6 bits ("192.0.2.0/24"; a whole address as itself).
std::string ClientKey(const conf::Config& config, std::string_view peer_ip,
                      const http::RequestHead& request);

// Retry-After, in seconds, of a 503 for a refused render: render-queue-timeout, at least 1.
unsigned RetryAfterSeconds(const conf::Config& config);

// The resident route for `target` (path and query), if the configuration has repositories and
// this URL is one of their pages.
std::optional<gitfrag::Route> MatchResident(const Runtime& runtime, std::string_view target);

}  // namespace shellac::proxy

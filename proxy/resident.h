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

#include "gitfrag.h"
#include "object.h"
#include "worker.h"

namespace shellac::proxy {

struct Rendered {
  int status = 0;           // the page's status; 503 when the render queue was full
  std::string reason;       // one line, for status != 200
  cache::ObjectRef object;  // status 200: the page (with its template when it is a frame)
  bool stored = false;      // the object is in the store under the fill key
  // A frame made for this request: its identity text, so that a client without gzip is answered
  // from it rather than by inflating the object (which then holds stored, uncompressed segments).
  std::shared_ptr<const std::string> text;
};

// Renders `route` with runtime->site and calls `done` on `worker`'s thread unless `alive` has
// expired by then. A non-empty `fill_key` means the caller leads single-flight for it: the page is
// stored under it and the waiters are told (also of a failure). When the pool's queue is full,
// `done` runs before this returns, with status 503. `gzip`: whether the client accepts gzip (a
// frame for one that does not is not compressed).
void RenderResident(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                    const gitfrag::Route& route, std::string fill_key, std::weak_ptr<void> alive,
                    bool gzip, std::function<void(Rendered)> done);

// The resident route for `target` (path and query), if the configuration has repositories and
// this URL is one of their pages.
std::optional<gitfrag::Route> MatchResident(const Runtime& runtime, std::string_view target);

}  // namespace shellac::proxy

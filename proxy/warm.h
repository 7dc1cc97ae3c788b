// warm: the admin endpoints `shellac warm` drives to fill the store ahead of the crawlers. They are
// on the admin listener only, so the public side is untouched:
//
//   GET  /warm/repos                  the repositories' URLs, one a line
//   GET  /warm/commits?repo=URL[&since=UNIX][&limit=N][&all-refs=1]
//                                     full SHAs, newest first (git I/O on the render pool)
//   POST /warm/render?repo=URL&id=SHA the commit's repository-neutral diff fragment (default diff
//                                     options: what its commit page includes) into the store:
//                                     "hit KEY" when it is stored already, "rendered KEY" when
//                                     this request rendered and stored it
//
// A render goes through the same single-flight and store path as a request's, so a crawler asking
// for the same commit meanwhile waits for it instead of rendering it twice. Renders and the walk
// wait in the render queue's background class (client "warm"): they run only while no request's
// render waits. A render that waited 2 s is refused with 503, and `shellac warm` asks again after
// a pause: under load it yields, and a request that joined its single-flight waits 2 s at most.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "proxy/runtime.h"

namespace shellac::proxy {

class Worker;

struct WarmRequest {
  std::string repo;  // repo.url
  std::string id;    // full SHA (render)
  int64_t since = 0;
  size_t limit = 0;
  bool all_refs = false;
};

struct WarmAnswer {
  int status = 200;
  std::string body;  // text/plain, ends with a newline
};

using WarmDone = std::function<void(WarmAnswer)>;

// Each calls `done` on `worker`'s thread (possibly before returning) unless `alive` expired.
void WarmRepositories(const Runtime& runtime, const WarmDone& done);
void WarmCommits(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                 const WarmRequest& request, std::weak_ptr<void> alive, WarmDone done);
void WarmRender(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                const WarmRequest& request, std::weak_ptr<void> alive, WarmDone done);

}  // namespace shellac::proxy

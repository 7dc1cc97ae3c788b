#include "proxy/warm.h"

#include <chrono>

#include "proxy/resident.h"
#include "proxy/worker.h"

namespace shellac::proxy {
namespace {

// Pre-rendering waits in the render queue's lowest class: it runs only while no request's render
// waits. A render still waiting after kWarmWait is refused (503) and `shellac warm` asks again
// later, so a request for the same commit, which waits behind warm's single-flight lead, is held
// up at most this long.
constexpr std::chrono::milliseconds kWarmWait{2000};

gitfrag::Admission WarmAdmission(std::chrono::milliseconds timeout) {
  return gitfrag::Admission{"warm", gitfrag::RenderClass::kBackground, timeout};
}

std::chrono::sys_seconds Now() {
  return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
}

// The repository named by `request.repo`, or an answer saying why there is none.
std::optional<size_t> FindRepository(const Runtime& runtime, const WarmRequest& request,
                                     const WarmDone& done) {
  if (!runtime.site) {
    done({404, "404 Not Found: no repositories are configured (repo=, cgitrc=, scan-path=)\n"});
    return std::nullopt;
  }
  auto repo = runtime.site->RepositoryByUrl(request.repo);
  if (!repo) done({404, "404 Not Found: no repository with the URL '" + request.repo + "'\n"});
  return repo;
}

}  // namespace

void WarmRepositories(const Runtime& runtime, const WarmDone& done) {
  std::string body;
  if (runtime.site) {
    for (const auto& r : runtime.site->repositories()) body += r.url + "\n";
  }
  done({200, body});
}

void WarmCommits(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                 const WarmRequest& request, std::weak_ptr<void> alive, WarmDone done) {
  const auto repo = FindRepository(*runtime, request, done);
  if (!repo) return;
  const gitfrag::Site::HistoryQuery query{request.since, request.limit, request.all_refs};
  Worker* owner = &worker;
  auto site = runtime->site;
  auto job = [owner, site, repo = *repo, query, alive, done] {
    std::vector<std::string> shas;
    std::string error;
    WarmAnswer answer;
    if (site->History(repo, query, &shas, &error)) {
      answer.body.reserve(shas.size() * 41);
      for (const auto& sha : shas) answer.body.append(sha).push_back('\n');
    } else {
      answer = {500, "500 Internal Server Error: " + error + "\n"};
    }
    owner->Post([alive, done, answer = std::move(answer)]() mutable {
      if (!alive.expired()) done(std::move(answer));
    });
  };
  auto refused = [owner, alive, done](gitfrag::Refusal) {
    owner->Post([alive, done] {
      if (!alive.expired()) done({503, "503 Service Unavailable: the render queue refused the walk\n"});
    });
  };
  if (worker.shared().render_pool->SubmitJob(WarmAdmission(std::chrono::milliseconds(0)),
                                             std::move(job), std::move(refused)) ==
      gitfrag::RenderPool::Submitted::kBusy) {
    done({503, "503 Service Unavailable: the render queue is full (render-queue)\n"});
  }
}

void WarmRender(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                const WarmRequest& request, std::weak_ptr<void> alive, WarmDone done) {
  const auto repo = FindRepository(*runtime, request, done);
  if (!repo) return;
  if (!runtime->config->cache) {
    done({409, "409 Conflict: cache=off, so there is no store to fill\n"});
    return;
  }
  const std::string url =
      runtime->site->FragmentUrl(*repo, request.id, "", gitfrag::DiffOptions{});
  auto route = MatchResident(*runtime, url);
  if (!route || route->cache_key.empty()) {
    done({400, "400 Bad Request: id must be a full commit SHA (40 hex digits)\n"});
    return;
  }
  const std::string key = route->cache_key;
  if (worker.shared().store->HasFresh(key, Now())) {
    done({200, "hit " + key + "\n"});
    return;
  }
  // Another request rendering the same fragment now: wait for it rather than render it twice.
  const bool leader = worker.shared().flights.Join(
      key, &worker, alive, [done, key](const FillResult& result) {
        switch (result.kind) {
          case FillResult::kStored:
            done({200, "hit " + key + "\n"});
            break;
          case FillResult::kNotStorable:
            done({200, "rendered, too large to store " + key + "\n"});
            break;
          case FillResult::kAbandoned:
            done({503, "503 Service Unavailable: the render of this commit was given up; ask again\n"});
            break;
          case FillResult::kFailed:
            done({result.status, std::to_string(result.status) + " " + result.detail + "\n"});
            break;
        }
      });
  if (!leader) return;
  RenderResident(worker, runtime, *route, key, alive, WarmAdmission(kWarmWait), /*gzip=*/true,
                 [done, key](Rendered rendered) {
    if (rendered.status != 200) {
      done({rendered.status, std::to_string(rendered.status) + " " + rendered.reason + "\n"});
    } else {
      done({200, (rendered.stored ? "rendered " : "rendered, too large to store ") + key + "\n"});
    }
  });
}

}  // namespace shellac::proxy

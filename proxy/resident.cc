#include "resident.h"

#include <chrono>
#include <vector>

#include "page_object.h"
#include "parser.h"

namespace shellac::proxy {

std::optional<gitfrag::Route> MatchResident(const Runtime& runtime, std::string_view target) {
  if (!runtime.site) return std::nullopt;
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (auto route = runtime.site->Match(path, query)) return route;
  // A repository's own URL is cgit's summary page, which gitfrag does not render. Without a forge
  // behind shellac (the embedded default, say) the log stands in for it rather than a 404.
  if (runtime.config->backend || !path.ends_with('/')) return std::nullopt;
  auto log = runtime.site->Match(std::string(path) + "log/", query);
  if (log && log->kind == gitfrag::PageKind::kLog) return log;
  return std::nullopt;
}

namespace {

// Pool thread: the page as an object, stored and announced when this render fills the store.
Rendered Finish(Worker& worker, const Runtime& runtime, const std::string& fill_key,
                std::string_view kind, bool gzip, gitfrag::Page page) {
  Rendered r{page.status, page.reason, {}, false};
  if (page.status == 200) {
    std::vector<cache::Header> headers;
    headers.push_back({"Content-Type", page.content_type});
    for (const auto& [name, value] : page.headers) headers.push_back({name, value});
    std::shared_ptr<const esi::Template> frame;
    if (page.esi) {
      auto parsed = std::make_shared<esi::Template>(esi::ParseTemplate(page.body));
      if (parsed->esi()) frame = std::move(parsed);
    }
    PageSpec spec;
    spec.status = 200;
    spec.headers = headers;
    spec.stored_at =
        std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
    const conf::Config& config = *runtime.config;
    spec.ttl = config.fragment_ttl
                   ? std::chrono::duration_cast<std::chrono::seconds>(*config.fragment_ttl)
                   : cache::Object::kForever;
    spec.esi_template = frame;
    spec.level = fill_key.empty() ? 1 : 6;  // a frame made for one request is compressed fast
    spec.transient = fill_key.empty() && frame != nullptr;
    spec.compress = gzip;
    spec.shared = page.shared;
    cache::Status status;
    r.object = MakePageObject(fill_key.empty() ? kind : std::string_view(fill_key), page.body, spec,
                              &status);
    if (r.object && spec.transient) r.text = std::make_shared<const std::string>(std::move(page.body));
    if (!r.object) {
      r.status = 500;
      r.reason = "the rendered page cannot be kept: " + status.message();
    } else if (!fill_key.empty() && worker.shared().store->Insert(r.object).ok()) {
      r.stored = true;
    }
  }
  if (!fill_key.empty()) {
    FillResult fill;
    if (r.stored) {
      fill = FillResult{FillResult::kStored, r.object, 0, {}};
    } else if (r.object) {
      fill =
          FillResult{FillResult::kNotStorable, {}, 0, {}};  // too large for the store: each renders
    } else {
      fill = FillResult{FillResult::kFailed, {}, r.status, r.reason};
    }
    worker.shared().flights.Complete(fill_key, fill);
  }
  return r;
}

}  // namespace

void RenderResident(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                    const gitfrag::Route& route, std::string fill_key, std::weak_ptr<void> alive,
                    bool gzip, std::function<void(Rendered)> done) {
  Worker* owner = &worker;
  // A page made for one request is never stored: its page kind will do for its key.
  const char* kind = gitfrag::PageKindName(route.kind);
  auto finish = [owner, runtime, fill_key, kind, alive, gzip, done](gitfrag::Page&& page) {
    Rendered r = Finish(*owner, *runtime, fill_key, kind, gzip, std::move(page));
    owner->Post([alive, done, r = std::move(r)]() mutable {
      if (!alive.expired()) done(std::move(r));
    });
  };
  if (worker.shared().render_pool->Submit(runtime->site, route, std::move(finish)) ==
      gitfrag::RenderPool::Submitted::kBusy) {
    Rendered busy{
        503, "all render threads are busy and the render queue is full (render-queue)", {}, false};
    if (!fill_key.empty()) {
      worker.shared().flights.Complete(fill_key,
                                       FillResult{FillResult::kFailed, {}, 503, busy.reason});
    }
    done(std::move(busy));
  }
}

}  // namespace shellac::proxy

#include <chrono>

#include "gitfrag/gitfrag.h"

namespace shellac::gitfrag {

RenderClass ClassOf(PageKind kind) {
  switch (kind) {
    case PageKind::kIndex:
    case PageKind::kCommit:
    case PageKind::kDiff:
    case PageKind::kTree:
    case PageKind::kPlain:
    case PageKind::kSummary:
    case PageKind::kRefs:
    case PageKind::kTag:
    case PageKind::kAbout:
    case PageKind::kAtom:
    case PageKind::kSnapshot:
      return RenderClass::kFrame;
    case PageKind::kLog:
    case PageKind::kStats:
    case PageKind::kDiffFragment:
    case PageKind::kPatch:
    case PageKind::kRawDiff:
    case PageKind::kBlob:
    case PageKind::kReadme:
    case PageKind::kBlame:
    case PageKind::kClone:  // a clone's files: bulk, behind a person's pages
      return RenderClass::kPart;
  }
  return RenderClass::kPart;
}

RenderPool::RenderPool(unsigned threads, size_t queue_limit, size_t client_max_renders,
                       unsigned reserve_threads)
    : queue_limit_(std::max<size_t>(1, queue_limit)),
      client_max_renders_(client_max_renders),
      normal_threads_(std::max(1u, threads)),
      reserve_threads_(reserve_threads),
      queue_(queue_limit_, client_max_renders) {
  for (unsigned i = 0; i < normal_threads_; ++i) threads_.emplace_back([this] { Loop(false); });
  for (unsigned i = 0; i < reserve_threads; ++i) threads_.emplace_back([this] { Loop(true); });
  reaper_ = std::thread([this] { Reap(); });
}

RenderPool::~RenderPool() {
  std::vector<RenderQueue::Job> refused;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.Drain(&refused);
  }
  cv_.notify_all();
  reserve_cv_.notify_all();
  reaper_cv_.notify_all();
  for (auto& job : refused)
    if (job.refuse) job.refuse(Refusal::kStopping);
  for (auto& t : threads_) t.join();
  reaper_.join();
}

void RenderPool::Loop(bool reserve) {
  std::condition_variable& cv = reserve ? reserve_cv_ : cv_;
  for (;;) {
    std::optional<RenderQueue::Job> job;
    std::vector<RenderQueue::Job> gone;
    bool wake_reserve = false;
    {
      std::unique_lock lock(mu_);
      cv.wait(lock, [&] {
        if (stopping_) return true;
        // A reserve thread takes a job only while every other thread is busy: otherwise one of
        // them takes it, and the reserve stays free for the next newcomer.
        if (reserve && normal_running_ < normal_threads_) return false;
        job = queue_.Pop(RenderQueue::Clock::now(), &gone, reserve);
        return job.has_value();
      });
      if (job && !reserve) {
        ++normal_running_;
        wake_reserve = ReserveHasWork();
      }
    }
    if (wake_reserve) reserve_cv_.notify_one();
    if (job) ++running_;
    if (job && reserve) ++reserve_started_;
    for (auto& g : gone)
      if (g.refuse) g.refuse(Refusal::kGone);
    gone.clear();
    if (!job) return;  // stopping: what waited was refused, what runs finishes
    if (gate_) gate_();
    job->run();
    {
      std::lock_guard lock(mu_);
      // A capped client may now run again: this thread looks for it on its next turn.
      queue_.Finished(job->admission.client);
      if (!reserve) --normal_running_;
    }
    --running_;
  }
}

bool RenderPool::ReserveHasWork() const {
  return reserve_threads_ > 0 && normal_running_ >= normal_threads_ && queue_.NewcomerWaiting();
}

void RenderPool::Reap() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (auto next = queue_.NextDeadline()) {
      reaper_cv_.wait_until(lock, *next);
    } else {
      reaper_cv_.wait(lock);
    }
    std::vector<RenderQueue::Job> refused;
    queue_.Expire(RenderQueue::Clock::now(), &refused);
    if (refused.empty()) continue;
    lock.unlock();
    for (auto& job : refused)
      if (job.refuse) job.refuse(Refusal::kTimeout);
    refused.clear();  // the callbacks' captures go before the lock is taken again
    lock.lock();
  }
}

RenderPool::Submitted RenderPool::SubmitJob(Admission admission, std::function<void()> job,
                                            std::function<void(Refusal)> refused_callback) {
  std::vector<RenderQueue::Job> refused;
  bool queued = false;
  bool earlier_deadline = false;
  bool wake_reserve = false;
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      const auto now = RenderQueue::Clock::now();
      const auto before = queue_.NextDeadline();
      const auto timeout = admission.timeout;
      queued = queue_.Push(
          RenderQueue::Job{std::move(job), std::move(refused_callback), std::move(admission), {}},
          now, &refused);
      earlier_deadline = queued && timeout.count() > 0 && (!before || now + timeout < *before);
      // Woken only when it could take a job: a wake-up that finds nothing costs two context
      // switches per render.
      wake_reserve = queued && ReserveHasWork();
    }
  }
  if (queued) cv_.notify_one();
  if (wake_reserve) reserve_cv_.notify_one();
  if (earlier_deadline) reaper_cv_.notify_one();
  for (auto& r : refused)
    if (r.refuse) r.refuse(r.refusal);
  if (!queued) {
    ++rejected_;
    return Submitted::kBusy;
  }
  return Submitted::kQueued;
}

namespace {

Page RefusedPage(Refusal why, std::chrono::milliseconds timeout) {
  Page page;
  page.status = 503;
  page.refusal = why;
  switch (why) {
    case Refusal::kTimeout:
      page.reason = "waited " + std::to_string(timeout.count()) +
                    " ms for a render thread (render-queue-timeout)";
      break;
    case Refusal::kFull:
      page.reason =
          "the render queue is full and this client has the most renders waiting (render-queue)";
      break;
    case Refusal::kGone:
      page.reason = "the client went away before its render started";
      break;
    default:
      page.reason = "shellac is shutting down";
      break;
  }
  page.content_type = "text/plain; charset=utf-8";
  page.body = "503 Service Unavailable: " + page.reason + "\n";
  return page;
}

}  // namespace

// A page's body stream whose pieces count their time under the page's kind.
class RenderPool::TimedStream final : public BodyStream {
 public:
  TimedStream(std::shared_ptr<BodyStream> inner, std::shared_ptr<StreamCounters> counters,
              size_t kind)
      : inner_(std::move(inner)), counters_(std::move(counters)), kind_(kind) {}
  Result Next(std::string* out, std::string* error) override {
    const auto start = std::chrono::steady_clock::now();
    const Result result = inner_->Next(out, error);
    auto& c = counters_->kinds[kind_];
    ++c.pieces;
    c.us += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
    return result;
  }
  std::optional<uint64_t> Length() const override { return inner_->Length(); }

 private:
  const std::shared_ptr<BodyStream> inner_;
  const std::shared_ptr<StreamCounters> counters_;
  const size_t kind_;
};

RenderPool::Submitted RenderPool::Submit(std::shared_ptr<const Site> site, Route route,
                                         Admission admission, Done done) {
  // `done` is called by exactly one of the two callbacks; both hold it, so share it.
  auto shared_done = std::make_shared<Done>(std::move(done));
  const auto timeout = admission.timeout;
  auto refused = [shared_done, timeout](Refusal why) { (*shared_done)(RefusedPage(why, timeout)); };
  return SubmitJob(
      std::move(admission),
      [this, site = std::move(site), route = std::move(route), shared_done] {
        const auto start = std::chrono::steady_clock::now();
        Page page = site->Render(route);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - start);
        KindCounters& k = kinds_[static_cast<size_t>(route.kind)];
        ++k.renders;
        if (page.status != 200) ++k.errors;
        k.render_us += static_cast<uint64_t>(us.count());
        size_t bucket = 0;
        while (bucket < std::size(kRenderBuckets) &&
               static_cast<double>(us.count()) > kRenderBuckets[bucket] * 1e6)
          ++bucket;
        ++k.buckets[bucket];
        if (page.stream) {
          page.stream = std::make_shared<TimedStream>(
              std::move(page.stream), streams_, static_cast<size_t>(route.kind));
        }
        (*shared_done)(std::move(page));
      },
      std::move(refused));
}

void RenderPool::Pause(RenderClass cls, bool paused) {
  {
    std::lock_guard lock(mu_);
    queue_.Pause(cls, paused);
  }
  if (!paused) {
    cv_.notify_all();
    reserve_cv_.notify_all();
  }
}

PoolMetrics RenderPool::Metrics() const {
  PoolMetrics m;
  m.threads = threads_.size() - reserve_threads_;
  m.reserve_threads = reserve_threads_;
  m.reserve_started = reserve_started_.load();
  m.queue_limit = queue_limit_;
  m.client_max_renders = client_max_renders_;
  {
    std::lock_guard lock(mu_);
    m.queue = queue_.Snapshot(RenderQueue::Clock::now());
    m.queue_depth = queue_.waiting();
    for (size_t i = 0; i < kRenderClasses; ++i)
      m.paused[i] = queue_.paused(static_cast<RenderClass>(i));
  }
  m.running = running_.load();
  m.rejected = rejected_.load();
  for (size_t i = 0; i < kPageKinds; ++i) {
    m.kinds[i].renders = kinds_[i].renders.load();
    m.kinds[i].errors = kinds_[i].errors.load();
    m.kinds[i].render_us = kinds_[i].render_us.load();
    m.kinds[i].stream_pieces = streams_->kinds[i].pieces.load();
    m.kinds[i].stream_us = streams_->kinds[i].us.load();
    for (size_t b = 0; b < kRenderBucketCount; ++b)
      m.kinds[i].buckets[b] = kinds_[i].buckets[b].load();
  }
  return m;
}

}  // namespace shellac::gitfrag

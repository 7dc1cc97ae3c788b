#include <chrono>

#include "gitfrag.h"

namespace shellac::gitfrag {

RenderPool::RenderPool(unsigned threads, size_t queue_limit)
    : queue_limit_(std::max<size_t>(1, queue_limit)) {
  threads = std::max(1u, threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

RenderPool::~RenderPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void RenderPool::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued render has run
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    job();
    --running_;
  }
}

RenderPool::Submitted RenderPool::SubmitJob(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= queue_limit_ || stopping_) {
      ++rejected_;
      return Submitted::kBusy;
    }
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return Submitted::kQueued;
}

RenderPool::Submitted RenderPool::Submit(std::shared_ptr<const Site> site, Route route, Done done) {
  return SubmitJob(
      [this, site = std::move(site), route = std::move(route), done = std::move(done)] {
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
        done(std::move(page));
      });
}

PoolMetrics RenderPool::Metrics() const {
  PoolMetrics m;
  m.threads = threads_.size();
  m.queue_limit = queue_limit_;
  {
    std::lock_guard lock(mu_);
    m.queue_depth = queue_.size();
  }
  m.running = running_.load();
  m.rejected = rejected_.load();
  for (size_t i = 0; i < kPageKinds; ++i) {
    m.kinds[i].renders = kinds_[i].renders.load();
    m.kinds[i].errors = kinds_[i].errors.load();
    m.kinds[i].render_us = kinds_[i].render_us.load();
    for (size_t b = 0; b < kRenderBucketCount; ++b) m.kinds[i].buckets[b] = kinds_[i].buckets[b].load();
  }
  return m;
}

}  // namespace shellac::gitfrag

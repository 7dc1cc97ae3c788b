#include "proxy/status.h"

#include <cstdio>

#include "proxy/runtime.h"

namespace shellac::proxy {
namespace {

static_assert(std::size(gitfrag::kRenderBuckets) + 1 == 17, "Totals::render_buckets size");

// Quantile q of per-bucket counts (bounds gitfrag::kRenderBuckets, then +Inf), in milliseconds,
// interpolated inside its bucket; -1 when there is no observation.
double QuantileMs(const std::array<uint64_t, 17>& counts, double q) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return -1;
  const double rank = q * static_cast<double>(total);
  double below = 0, lower = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    const double here = static_cast<double>(counts[b]);
    if (b + 1 == counts.size()) return lower * 1e3;  // +Inf bucket: its lower bound
    const double upper = gitfrag::kRenderBuckets[b];
    if (here > 0 && below + here >= rank) return (lower + (upper - lower) * (rank - below) / here) * 1e3;
    below += here;
    lower = upper;
  }
  return lower * 1e3;
}

void Number(std::string* out, double v) {
  if (v < 0) {
    out->append("null");
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  out->append(buf);
}

}  // namespace

StatusHistory::Totals StatusHistory::Read(const Shared& shared) const {
  Totals t;
  for (const WorkerMetrics* m : shared.shards) {
    for (int route : {static_cast<int>(Route::kProxy), static_cast<int>(Route::kLocal)}) {
      for (const auto& c : m->requests[route]) t.requests += c.load(std::memory_order_relaxed);
    }
    for (const auto& c : m->upstream_errors) t.upstream_errors += c.load(std::memory_order_relaxed);
  }
  if (shared.store) {
    const cache::StoreStats s = shared.store->Stats();
    t.hits = s.hits + s.stale_hits;
    t.lookups = s.hits + s.stale_hits + s.misses;
  }
  if (shared.render_pool) {
    const gitfrag::PoolMetrics m = shared.render_pool->Metrics();
    for (const auto& kind : m.kinds) {
      for (size_t b = 0; b < t.render_buckets.size(); ++b) t.render_buckets[b] += kind.buckets[b];
    }
  }
  return t;
}

void StatusHistory::Sample(const Shared& shared, int64_t now) {
  const Totals t = Read(shared);
  uint64_t bytes = 0;
  if (shared.store) {
    const cache::StoreStats s = shared.store->Stats();
    bytes = s.bytes;
    budget_ = s.budget;
  }
  if (!have_last_) {
    last_ = t;
    have_last_ = true;
    return;
  }
  StatusSample s;
  s.time = now;
  s.requests_per_s = static_cast<double>(t.requests - last_.requests);
  const uint64_t lookups = t.lookups - last_.lookups;
  s.hit_ratio = lookups == 0 ? -1 : static_cast<double>(t.hits - last_.hits) / static_cast<double>(lookups);
  std::array<uint64_t, 17> renders{};
  for (size_t b = 0; b < renders.size(); ++b) renders[b] = t.render_buckets[b] - last_.render_buckets[b];
  s.render_p50_ms = QuantileMs(renders, 0.5);
  s.render_p99_ms = QuantileMs(renders, 0.99);
  s.store_bytes = static_cast<double>(bytes);
  s.upstream_errors_per_s = static_cast<double>(t.upstream_errors - last_.upstream_errors);
  last_ = t;
  ring_[next_] = s;
  next_ = (next_ + 1) % kCapacity;
  if (size_ < kCapacity) ++size_;
}

std::string StatusHistory::Json(int64_t since) const {
  std::string out = "{\"budget\":" + std::to_string(budget_) + ",\"samples\":[";
  out.reserve(64 * size_ + 64);
  bool first = true;
  for (size_t i = 0; i < size_; ++i) {
    const StatusSample& s = ring_[(next_ + kCapacity - size_ + i) % kCapacity];
    if (s.time <= since) continue;
    if (!first) out.push_back(',');
    first = false;
    out.append("[").append(std::to_string(s.time)).push_back(',');
    Number(&out, s.requests_per_s);
    out.push_back(',');
    Number(&out, s.hit_ratio);
    out.push_back(',');
    Number(&out, s.render_p50_ms);
    out.push_back(',');
    Number(&out, s.render_p99_ms);
    out.push_back(',');
    out.append(std::to_string(static_cast<uint64_t>(s.store_bytes))).push_back(',');
    Number(&out, s.upstream_errors_per_s);
    out.push_back(']');
  }
  out += "]}\n";
  return out;
}

}  // namespace shellac::proxy

// status: the admin listener's status page. Once a second the main thread takes a sample of the
// process' counters (requests/s, store hit ratio, render latency, store fill, backend errors) into
// a ring that holds the last 15 minutes; GET /status.json hands the ring (or its newer part) to the
// page, and GET / is the page itself: HTML with inline script and SVG, nothing fetched elsewhere.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace shellac::proxy {

class Shared;

struct StatusSample {
  int64_t time = 0;               // unix seconds
  double requests_per_s = 0;      // public requests answered (proxy and local routes)
  double hit_ratio = -1;          // store lookups that hit, over the second; -1: none
  double render_p50_ms = -1;      // render time over the second, all page kinds; -1: no render
  double render_p99_ms = -1;
  double store_bytes = 0;         // charged to the budget
  double upstream_errors_per_s = 0;
};

// Main thread only (the admin listener's loop takes the samples and serves the page).
class StatusHistory {
 public:
  static constexpr size_t kCapacity = 900;  // 15 minutes of one sample a second

  // Reads the counters now and records the difference since the last call (the first call only
  // sets the baseline).
  void Sample(const Shared& shared, int64_t now);
  // {"budget":B,"samples":[[time,rps,hit,p50,p99,bytes,errors],...]} for samples newer than
  // `since` (unix seconds; 0 for all), oldest first; absent values are null.
  std::string Json(int64_t since) const;
  size_t size() const { return size_; }

 private:
  struct Totals {
    uint64_t requests = 0, hits = 0, lookups = 0, upstream_errors = 0;
    std::array<uint64_t, 17> render_buckets{};
  };
  Totals Read(const Shared& shared) const;

  std::array<StatusSample, kCapacity> ring_{};
  size_t next_ = 0, size_ = 0;
  Totals last_{};
  bool have_last_ = false;
  uint64_t budget_ = 0;
};

// The page (constant).
const std::string& StatusPage();

}  // namespace shellac::proxy

// metrics: counters and gauges for /metrics (Prometheus text format 0.0.4).
//
// Each worker thread owns one WorkerMetrics and is its only writer (relaxed atomics, so a scrape
// from the admin thread reads consistent words without locks). Render() sums the shards.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shellac::proxy {

enum class Route { kProxy, kLocal, kAdmin };
// How a response was answered, as the access log's cache field says it.
enum class CacheOutcome { kHit, kMiss, kPass, kLocal };
inline constexpr std::array<const char*, 4> kCacheOutcomeNames = {"hit", "miss", "pass", "local"};
enum class UpstreamError { kRefused, kTimeout, kReset, kInvalid };
// Why a TLS handshake on a listen-tls= port did not finish.
enum class TlsFailure { kPlainHttp, kTimeout, kAborted, kProtocol };

// Upper bounds (seconds) of the upstream first-byte histogram buckets.
inline constexpr std::array<double, 12> kLatencyBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                           0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
// Statuses that the front answers itself when it refuses a request.
inline constexpr std::array<int, 9> kRejectStatuses = {400, 405, 408, 413, 414, 417, 431, 501, 505};

struct WorkerMetrics {
  using Counter = std::atomic<uint64_t>;
  using Gauge = std::atomic<int64_t>;

  std::array<std::array<Counter, 5>, 3> requests{};  // [route][status class 1xx..5xx]
  std::array<std::array<Counter, 4>, 3> responses{};  // [route][CacheOutcome]
  Gauge in_flight{0};
  Gauge connections_open{0};
  Counter connections_accepted{0};
  Counter upstream_opened{0};
  Counter upstream_reused{0};
  Counter upstream_retried{0};
  std::array<Counter, 4> upstream_errors{};
  std::array<Counter, kLatencyBuckets.size()> first_byte_buckets{};  // non-cumulative
  Counter first_byte_count{0};
  Counter first_byte_sum_us{0};
  std::array<Counter, kRejectStatuses.size()> rejected{};
  Counter cache_stitched{0};  // responses served from the store as stitched gzip
  Counter cache_inflated{0};  // responses served from the store inflated (identity)
  Counter cache_waits{0};     // requests that waited for another request's fetch (single-flight)
  Counter cache_wait_timeouts{0};
  Counter esi_pages{0};             // responses assembled from an ESI template
  Counter esi_page_failures{0};     // ... that failed (502 before the first byte, or cut short)
  Counter esi_includes_hit{0};      // includes served from the store
  Counter esi_includes_fetched{0};  // includes fetched from the upstream (or waited for)
  Counter esi_include_failures{0};  // include fetches that failed (alt, onerror, except then apply)
  Counter esi_include_issues{0};    // includes dropped or refused (depth limit, host, URL, count)
  Counter esi_includes_busy{0};     // resident includes the render queue refused: a notice instead
  Counter esi_parse_errors{0};      // problems found parsing templates (Varnish's ESI_xmlerror)
  Counter esi_parse_warnings{0};
  Counter tls_handshakes_12{0};  // finished handshakes, TLS 1.2
  Counter tls_handshakes_13{0};  // finished handshakes, TLS 1.3
  Counter tls_resumed{0};        // of those, resumed sessions (ticket or session cache)
  Counter tls_sni_fallback{0};   // SNI named a host no certificate covers: the listener's was used
  std::array<Counter, 4> tls_failures{};  // by TlsFailure
  Gauge tls_handshaking{0};      // connections in their handshake now

  // Single-writer helpers: load + store, not read-modify-write.
  static void Add(Counter& c, uint64_t n = 1) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  static void Add(Gauge& g, int64_t n) { g.store(g.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }

  void CountRequest(Route route, int status);
  // `cache` is the access log's field: "hit", "miss", "pass" or "local".
  void CountOutcome(Route route, std::string_view cache);
  // Counts a refusal when `status` is one the front gives itself (kRejectStatuses); false otherwise.
  bool CountReject(int status);
  void CountUpstreamError(UpstreamError e) { Add(upstream_errors[static_cast<int>(e)]); }
  void ObserveFirstByte(uint64_t micros);
};

// Process-wide values that are not per worker.
struct GlobalMetrics {
  std::atomic<uint64_t> config_generation{1};
  std::atomic<uint64_t> reloads_ok{0};
  std::atomic<uint64_t> reloads_refused{0};
  std::atomic<bool> draining{false};
  // store-snapshot=: what the start read (objects stored again, the file refused or not).
  std::atomic<uint64_t> snapshot_loaded{0};
  std::atomic<uint64_t> snapshot_refused{0};
};

// Renders every shard plus the globals as Prometheus text.
std::string RenderPrometheus(const std::vector<const WorkerMetrics*>& shards, const GlobalMetrics& global);

}  // namespace shellac::proxy

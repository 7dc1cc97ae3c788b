#include "proxy/metrics.h"

#include <cstdio>

namespace shellac::proxy {
namespace {

constexpr const char* kRouteNames[] = {"proxy", "local", "admin"};
constexpr const char* kErrorNames[] = {"refused", "timeout", "reset", "invalid"};
constexpr const char* kTlsFailureNames[] = {"plain_http", "timeout", "aborted", "protocol"};

template <typename Get>
uint64_t Sum(const std::vector<const WorkerMetrics*>& shards, Get get) {
  uint64_t total = 0;
  for (const auto* s : shards) total += static_cast<uint64_t>(get(*s).load(std::memory_order_relaxed));
  return total;
}

void Line(std::string* out, const char* fmt, auto... args) {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n > 0) out->append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
}

}  // namespace

void WorkerMetrics::CountRequest(Route route, int status) {
  int klass = status / 100 - 1;
  if (klass < 0 || klass > 4) klass = 4;
  Add(requests[static_cast<int>(route)][klass]);
}

void WorkerMetrics::CountOutcome(Route route, std::string_view cache) {
  size_t outcome = kCacheOutcomeNames.size() - 1;
  for (size_t i = 0; i < kCacheOutcomeNames.size(); ++i) {
    if (cache == kCacheOutcomeNames[i]) outcome = i;
  }
  Add(responses[static_cast<int>(route)][outcome]);
}

bool WorkerMetrics::CountReject(int status) {
  for (size_t i = 0; i < kRejectStatuses.size(); ++i) {
    if (kRejectStatuses[i] == status) {
      Add(rejected[i]);
      return true;
    }
  }
  return false;
}

void WorkerMetrics::ObserveFirstByte(uint64_t micros) {
  const double seconds = static_cast<double>(micros) / 1e6;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      Add(first_byte_buckets[i]);
      break;
    }
  }
  Add(first_byte_count);
  Add(first_byte_sum_us, micros);
}

std::string RenderPrometheus(const std::vector<const WorkerMetrics*>& shards, const GlobalMetrics& global) {
  std::string out;
  out.reserve(4096);
  out += "# HELP shellac_requests_total Requests answered, by route and status class.\n"
         "# TYPE shellac_requests_total counter\n";
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 5; ++k) {
      Line(&out, "shellac_requests_total{route=\"%s\",class=\"%dxx\"} %llu\n", kRouteNames[r], k + 1,
           static_cast<unsigned long long>(Sum(shards, [&](const WorkerMetrics& m) -> auto& { return m.requests[r][k]; })));
    }
  }
  out += "# HELP shellac_responses_total Responses, by route and cache outcome (the access log's "
         "cache field).\n"
         "# TYPE shellac_responses_total counter\n";
  for (int r = 0; r < 3; ++r) {
    for (size_t c = 0; c < kCacheOutcomeNames.size(); ++c) {
      Line(&out, "shellac_responses_total{route=\"%s\",cache=\"%s\"} %llu\n", kRouteNames[r],
           kCacheOutcomeNames[c],
           static_cast<unsigned long long>(Sum(shards, [&](const WorkerMetrics& m) -> auto& { return m.responses[r][c]; })));
    }
  }
  auto scalar = [&](const char* name, const char* type, const char* help, uint64_t value) {
    Line(&out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
         static_cast<unsigned long long>(value));
  };
  scalar("shellac_requests_in_flight", "gauge", "Requests being answered now.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.in_flight; }));
  scalar("shellac_connections_open", "gauge", "Client connections open now.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.connections_open; }));
  scalar("shellac_connections_accepted_total", "counter", "Client connections accepted.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.connections_accepted; }));
  scalar("shellac_upstream_connections_opened_total", "counter", "Upstream connections opened.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.upstream_opened; }));
  scalar("shellac_upstream_connections_reused_total", "counter", "Requests sent on a kept-alive upstream connection.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.upstream_reused; }));
  scalar("shellac_upstream_retries_total", "counter", "Requests retried after a kept-alive upstream connection failed.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.upstream_retried; }));

  out += "# HELP shellac_upstream_errors_total Upstream failures, by kind.\n"
         "# TYPE shellac_upstream_errors_total counter\n";
  for (int e = 0; e < 4; ++e) {
    Line(&out, "shellac_upstream_errors_total{kind=\"%s\"} %llu\n", kErrorNames[e],
         static_cast<unsigned long long>(Sum(shards, [&](const WorkerMetrics& m) -> auto& { return m.upstream_errors[e]; })));
  }

  out += "# HELP shellac_upstream_first_byte_seconds Time from request sent to response head received.\n"
         "# TYPE shellac_upstream_first_byte_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    cumulative += Sum(shards, [&](const WorkerMetrics& m) -> auto& { return m.first_byte_buckets[i]; });
    Line(&out, "shellac_upstream_first_byte_seconds_bucket{le=\"%g\"} %llu\n", kLatencyBuckets[i],
         static_cast<unsigned long long>(cumulative));
  }
  const uint64_t count = Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.first_byte_count; });
  Line(&out, "shellac_upstream_first_byte_seconds_bucket{le=\"+Inf\"} %llu\n", static_cast<unsigned long long>(count));
  Line(&out, "shellac_upstream_first_byte_seconds_sum %.6f\n",
       static_cast<double>(Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.first_byte_sum_us; })) / 1e6);
  Line(&out, "shellac_upstream_first_byte_seconds_count %llu\n", static_cast<unsigned long long>(count));

  out += "# HELP shellac_rejected_requests_total Requests refused by the front, by status.\n"
         "# TYPE shellac_rejected_requests_total counter\n";
  for (size_t i = 0; i < kRejectStatuses.size(); ++i) {
    Line(&out, "shellac_rejected_requests_total{status=\"%d\"} %llu\n", kRejectStatuses[i],
         static_cast<unsigned long long>(Sum(shards, [&](const WorkerMetrics& m) -> auto& { return m.rejected[i]; })));
  }

  scalar("shellac_cache_stitched_total", "counter", "Responses served from the store as stitched gzip.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.cache_stitched; }));
  scalar("shellac_cache_inflated_total", "counter", "Responses served from the store inflated to identity.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.cache_inflated; }));
  scalar("shellac_cache_single_flight_waits_total", "counter", "Requests that waited for another request's fetch.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.cache_waits; }));
  scalar("shellac_cache_single_flight_timeouts_total", "counter", "Waits that gave up with 503.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.cache_wait_timeouts; }));
  scalar("shellac_esi_pages_total", "counter", "Responses assembled from an ESI template.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_pages; }));
  scalar("shellac_esi_page_failures_total", "counter",
         "ESI pages that failed: 502 before the first byte, or the response cut short after it.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_page_failures; }));
  scalar("shellac_esi_includes_hit_total", "counter", "ESI includes served from the store.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_includes_hit; }));
  scalar("shellac_esi_includes_fetched_total", "counter", "ESI includes fetched from the upstream.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_includes_fetched; }));
  scalar("shellac_esi_include_failures_total", "counter", "ESI include fetches that failed.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_include_failures; }));
  scalar("shellac_esi_includes_busy_total", "counter",
         "Resident includes whose render the render queue refused; the page got a notice instead.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_includes_busy; }));
  scalar("shellac_esi_include_issues_total", "counter",
         "ESI includes dropped or refused: depth limit, host not allowed, bad URL, too many.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_include_issues; }));
  scalar("shellac_esi_parse_errors_total", "counter", "Errors found while parsing ESI templates.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_parse_errors; }));
  scalar("shellac_esi_parse_warnings_total", "counter", "Warnings found while parsing ESI templates.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.esi_parse_warnings; }));
  out += "# HELP shellac_tls_handshakes_total TLS handshakes finished on listen-tls ports, by version.\n"
         "# TYPE shellac_tls_handshakes_total counter\n";
  Line(&out, "shellac_tls_handshakes_total{version=\"1.2\"} %llu\n",
       static_cast<unsigned long long>(Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.tls_handshakes_12; })));
  Line(&out, "shellac_tls_handshakes_total{version=\"1.3\"} %llu\n",
       static_cast<unsigned long long>(Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.tls_handshakes_13; })));
  scalar("shellac_tls_resumed_total", "counter", "TLS handshakes that resumed a session (ticket or cache).",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.tls_resumed; }));
  scalar("shellac_tls_sni_fallback_total", "counter",
         "TLS handshakes whose SNI name no certificate covers; the listener's certificate was used.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.tls_sni_fallback; }));
  out += "# HELP shellac_tls_handshake_failures_total TLS handshakes that did not finish, by reason.\n"
         "# TYPE shellac_tls_handshake_failures_total counter\n";
  for (int f = 0; f < 4; ++f) {
    Line(&out, "shellac_tls_handshake_failures_total{reason=\"%s\"} %llu\n", kTlsFailureNames[f],
         static_cast<unsigned long long>(Sum(shards, [&](const WorkerMetrics& m) -> auto& { return m.tls_failures[f]; })));
  }
  scalar("shellac_tls_handshakes_in_progress", "gauge", "Connections in their TLS handshake now.",
         Sum(shards, [](const WorkerMetrics& m) -> auto& { return m.tls_handshaking; }));
  scalar("shellac_config_generation", "gauge", "Generation of the configuration in force (1 at start).",
         global.config_generation.load());
  out += "# HELP shellac_config_reloads_total Configuration reloads on SIGHUP, by result.\n"
         "# TYPE shellac_config_reloads_total counter\n";
  Line(&out, "shellac_config_reloads_total{result=\"ok\"} %llu\n", static_cast<unsigned long long>(global.reloads_ok.load()));
  Line(&out, "shellac_config_reloads_total{result=\"refused\"} %llu\n",
       static_cast<unsigned long long>(global.reloads_refused.load()));
  return out;
}

}  // namespace shellac::proxy

// shellac stat: reads /metrics twice, an interval apart, and shows totals, rates over the interval
// and render-time quantiles from the histograms' bucket differences. Every figure is computed from
// /metrics alone, so it equals what a Prometheus scrape would show.
#include <getopt.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "ctl/admin_client.h"
#include "ctl/ctl.h"
#include "ctl/prom.h"

namespace shellac::ctl {
namespace {

using Clock = std::chrono::steady_clock;
using Labels = std::map<std::string, std::string>;

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

constexpr const char* kStatUsage =
    "usage: shellac stat [--admin ADDR:PORT] [-1] [-j] [-i SECONDS]\n";

constexpr const char* kRoutes[] = {"proxy", "local", "admin"};
constexpr const char* kOutcomes[] = {"hit", "miss", "pass", "local"};
constexpr const char* kUpstreamErrors[] = {"refused", "timeout", "reset", "invalid"};
constexpr const char* kTlsFailures[] = {"plain_http", "timeout", "aborted", "protocol"};

// One figure: its total now and its change per second over the interval.
struct Figure {
  double total = 0;
  double rate = 0;
};

class Report {
 public:
  Report(const Metrics& now, const Metrics& before, double seconds)
      : now_(now), before_(before), seconds_(seconds > 0 ? seconds : 1) {}

  Figure Counter(const char* name, const Labels& labels = {}) const {
    const double t = now_.Sum(name, labels);
    return {t, before_.empty() ? 0 : (t - before_.Sum(name, labels)) / seconds_};
  }
  double Gauge(const char* name, const Labels& labels = {}) const { return now_.Sum(name, labels); }
  // Quantile in milliseconds over the interval (`interval`) or since start; -1 when no data.
  double QuantileMs(const char* name, const Labels& labels, double q, bool interval) const {
    auto buckets = now_.Buckets(name, labels);
    if (interval) buckets = Delta(buckets, before_.Buckets(name, labels));
    const double v = Quantile(buckets, q);
    return v < 0 ? -1 : v * 1e3;
  }
  std::vector<std::string> Kinds() const { return now_.LabelValues("shellac_renders_total", "kind"); }

 private:
  const Metrics& now_;
  const Metrics& before_;
  double seconds_;
};

// --- JSON -----------------------------------------------------------------------------------

std::string Num(double v) {
  char buf[40];
  if (v == static_cast<double>(static_cast<long long>(v)) && v > -1e15 && v < 1e15)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string Opt(double v) { return v < 0 ? "null" : Num(v); }
std::string Fig(const Figure& f) { return "{\"total\":" + Num(f.total) + ",\"rate\":" + Num(f.rate) + "}"; }
std::string Ratio(double hits, double misses) {
  return hits + misses > 0 ? Num(hits / (hits + misses)) : "null";
}

std::string Json(const Report& r, const std::string& address, double seconds) {
  std::string o = "{\"admin\":\"" + address + "\",\"interval_seconds\":" + Num(seconds);
  o += ",\"requests\":{";
  for (const char* route : kRoutes) {
    if (route != kRoutes[0]) o += ",";
    o += "\"" + std::string(route) + "\":{";
    double hit[2] = {0, 0}, miss[2] = {0, 0};
    for (const char* outcome : kOutcomes) {
      const Figure f = r.Counter("shellac_responses_total", {{"route", route}, {"cache", outcome}});
      o += "\"" + std::string(outcome) + "\":" + Fig(f) + ",";
      if (std::string(outcome) == "hit") hit[0] = f.total, hit[1] = f.rate;
      if (std::string(outcome) == "miss") miss[0] = f.total, miss[1] = f.rate;
    }
    o += "\"hit_ratio\":" + Ratio(hit[0], miss[0]) + ",\"hit_ratio_interval\":" + Ratio(hit[1], miss[1]);
    o += ",\"5xx\":" + Fig(r.Counter("shellac_requests_total", {{"route", route}, {"class", "5xx"}}));
    o += "}";
  }
  o += "},\"in_flight\":" + Num(r.Gauge("shellac_requests_in_flight"));
  o += ",\"connections_open\":" + Num(r.Gauge("shellac_connections_open"));
  o += ",\"renders\":{";
  bool first = true;
  for (const auto& kind : r.Kinds()) {
    if (!first) o += ",";
    first = false;
    const Labels l = {{"kind", kind}};
    const Figure f = r.Counter("shellac_renders_total", l);
    o += "\"" + kind + "\":{\"total\":" + Num(f.total) + ",\"rate\":" + Num(f.rate);
    o += ",\"errors\":" + Num(r.Counter("shellac_render_errors_total", l).total);
    o += ",\"p50_ms\":" + Opt(r.QuantileMs("shellac_render_duration_seconds", l, 0.5, false));
    o += ",\"p99_ms\":" + Opt(r.QuantileMs("shellac_render_duration_seconds", l, 0.99, false));
    o += ",\"p50_ms_interval\":" + Opt(r.QuantileMs("shellac_render_duration_seconds", l, 0.5, true));
    o += ",\"p99_ms_interval\":" + Opt(r.QuantileMs("shellac_render_duration_seconds", l, 0.99, true));
    o += ",\"render_seconds\":" + Num(r.Counter("shellac_render_duration_seconds_sum", l).total);
    o += ",\"stream_pieces\":" + Num(r.Counter("shellac_render_stream_pieces_total", l).total);
    o += ",\"stream_seconds\":" + Num(r.Counter("shellac_render_stream_seconds_total", l).total);
    o += "}";
  }
  o += "},\"render_queue\":{\"depth\":" + Num(r.Gauge("shellac_render_queue_depth"));
  o += ",\"limit\":" + Num(r.Gauge("shellac_render_queue_limit"));
  o += ",\"running\":" + Num(r.Gauge("shellac_render_running"));
  o += ",\"threads\":" + Num(r.Gauge("shellac_render_threads"));
  o += ",\"rejected\":" + Fig(r.Counter("shellac_render_rejected_total")) + "}";
  o += ",\"store\":{\"bytes\":" + Num(r.Gauge("shellac_cache_bytes"));
  o += ",\"budget_bytes\":" + Num(r.Gauge("shellac_cache_budget_bytes"));
  o += ",\"objects\":" + Num(r.Gauge("shellac_cache_objects"));
  o += ",\"hits\":" + Fig(r.Counter("shellac_cache_hits_total"));
  o += ",\"misses\":" + Fig(r.Counter("shellac_cache_misses_total"));
  o += ",\"inserts\":" + Fig(r.Counter("shellac_cache_inserts_total"));
  o += ",\"evictions\":" + Fig(r.Counter("shellac_cache_evictions_total")) + "}";
  o += ",\"page_memo\":{\"bytes\":" + Num(r.Gauge("shellac_page_memo_bytes"));
  o += ",\"budget_bytes\":" + Num(r.Gauge("shellac_page_memo_budget_bytes"));
  o += ",\"pages\":" + Num(r.Gauge("shellac_page_memo_pages"));
  o += ",\"hits\":" + Fig(r.Counter("shellac_page_memo_hits_total"));
  o += ",\"misses\":" + Fig(r.Counter("shellac_page_memo_misses_total")) + "}";
  o += ",\"upstream\":{\"errors\":{";
  for (const char* kind : kUpstreamErrors) {
    if (kind != kUpstreamErrors[0]) o += ",";
    o += "\"" + std::string(kind) + "\":" + Fig(r.Counter("shellac_upstream_errors_total", {{"kind", kind}}));
  }
  o += "},\"first_byte_p50_ms\":" + Opt(r.QuantileMs("shellac_upstream_first_byte_seconds", {}, 0.5, false));
  o += ",\"first_byte_p99_ms\":" + Opt(r.QuantileMs("shellac_upstream_first_byte_seconds", {}, 0.99, false));
  o += ",\"first_byte_p50_ms_interval\":" +
       Opt(r.QuantileMs("shellac_upstream_first_byte_seconds", {}, 0.5, true));
  o += ",\"first_byte_p99_ms_interval\":" +
       Opt(r.QuantileMs("shellac_upstream_first_byte_seconds", {}, 0.99, true));
  o += ",\"opened\":" + Fig(r.Counter("shellac_upstream_connections_opened_total"));
  o += ",\"reused\":" + Fig(r.Counter("shellac_upstream_connections_reused_total")) + "}";
  o += ",\"tls\":{\"handshakes\":{\"1.2\":" + Fig(r.Counter("shellac_tls_handshakes_total", {{"version", "1.2"}}));
  o += ",\"1.3\":" + Fig(r.Counter("shellac_tls_handshakes_total", {{"version", "1.3"}})) + "}";
  o += ",\"resumed\":" + Fig(r.Counter("shellac_tls_resumed_total"));
  o += ",\"failures\":{";
  for (const char* reason : kTlsFailures) {
    if (reason != kTlsFailures[0]) o += ",";
    o += "\"" + std::string(reason) + "\":" +
         Fig(r.Counter("shellac_tls_handshake_failures_total", {{"reason", reason}}));
  }
  o += "},\"in_progress\":" + Num(r.Gauge("shellac_tls_handshakes_in_progress")) + "}";
  o += ",\"config_generation\":" + Num(r.Gauge("shellac_config_generation")) + "}\n";
  return o;
}

// --- Text -----------------------------------------------------------------------------------

std::string Bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string Ms(double ms) {
  if (ms < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.2f" : ms < 100 ? "%.1f" : "%.0f", ms);
  return buf;
}

std::string Pct(double hits, double misses) {
  if (hits + misses <= 0) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * hits / (hits + misses));
  return buf;
}

void Add(std::string* out, const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  *out += buf;
}

// Lines end with "\x1b[K" on a terminal so a shorter line clears what a longer one left.
std::string Text(const Report& r, const std::string& address, double seconds, bool tty) {
  std::string o;
  const char* eol = tty ? "\x1b[K\n" : "\n";
  char when[32];
  const time_t t = time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
  Add(&o, "shellac at %s   %s   rates over %.1f s   config generation %.0f%s", address.c_str(), when,
      seconds, r.Gauge("shellac_config_generation"), eol);
  Add(&o, "%s", eol);
  // One row per route: its rate and total, the rate of each cache outcome, the hit ratio over the
  // interval (since start, marked ~, when the interval had no hit or miss) and 5xx per second.
  Add(&o, "%-9s %8s %10s %8s %8s %8s %8s %7s %7s%s", "REQUESTS", "/s", "total", "hit/s", "miss/s",
      "pass/s", "local/s", "hit%", "5xx/s", eol);
  for (const char* route : kRoutes) {
    Figure outcome[4];
    double rate = 0, total = 0;
    for (int i = 0; i < 4; ++i) {
      outcome[i] = r.Counter("shellac_responses_total", {{"route", route}, {"cache", kOutcomes[i]}});
      rate += outcome[i].rate;
      total += outcome[i].total;
    }
    if (total == 0) continue;
    const bool recent = outcome[0].rate + outcome[1].rate > 0;
    const std::string ratio = recent ? Pct(outcome[0].rate, outcome[1].rate)
                              : outcome[0].total + outcome[1].total > 0
                                  ? "~" + Pct(outcome[0].total, outcome[1].total)
                                  : "-";
    Add(&o, "%-9s %8.1f %10.0f %8.1f %8.1f %8.1f %8.1f %7s %7.1f%s", route, rate, total,
        outcome[0].rate, outcome[1].rate, outcome[2].rate, outcome[3].rate, ratio.c_str(),
        r.Counter("shellac_requests_total", {{"route", route}, {"class", "5xx"}}).rate, eol);
  }
  Add(&o, "in flight %.0f   connections open %.0f%s", r.Gauge("shellac_requests_in_flight"),
      r.Gauge("shellac_connections_open"), eol);
  Add(&o, "%s", eol);
  const auto kinds = r.Kinds();
  if (!kinds.empty()) {
    Add(&o, "%-15s %8s %9s %9s %10s %8s %10s%s", "RENDERS", "/s", "p50 ms", "p99 ms", "total",
        "errors", "busy s", eol);
    for (const auto& kind : kinds) {
      const Labels l = {{"kind", kind}};
      const Figure f = r.Counter("shellac_renders_total", l);
      if (f.total == 0) continue;
      // Quantiles over the interval when it saw renders, else since start (marked ~).
      const bool recent = f.rate > 0;
      const double p50 = r.QuantileMs("shellac_render_duration_seconds", l, 0.5, recent);
      const double p99 = r.QuantileMs("shellac_render_duration_seconds", l, 0.99, recent);
      // Seconds spent on this kind since start: its renders and the pieces of their streamed
      // bodies (a snapshot's archive, a large plain file), made after the render.
      const double spent = r.Counter("shellac_render_duration_seconds_sum", l).total +
                             r.Counter("shellac_render_stream_seconds_total", l).total;
      Add(&o, "%-15s %8.1f %9s %9s %10.0f %8.0f %10.1f%s", kind.c_str(), f.rate,
          ((recent || p50 < 0 ? "" : "~") + Ms(p50)).c_str(),
          ((recent || p99 < 0 ? "" : "~") + Ms(p99)).c_str(), f.total,
          r.Counter("shellac_render_errors_total", l).total, spent, eol);
    }
    Add(&o, "queue %.0f/%.0f waiting   %.0f/%.0f threads busy   refused %.0f (%.1f/s)%s",
        r.Gauge("shellac_render_queue_depth"), r.Gauge("shellac_render_queue_limit"),
        r.Gauge("shellac_render_running"), r.Gauge("shellac_render_threads"),
        r.Counter("shellac_render_rejected_total").total,
        r.Counter("shellac_render_rejected_total").rate, eol);
    Add(&o, "%s", eol);
  }
  const double bytes = r.Gauge("shellac_cache_bytes"), budget = r.Gauge("shellac_cache_budget_bytes");
  const Figure ev = r.Counter("shellac_cache_evictions_total");
  const Figure ins = r.Counter("shellac_cache_inserts_total");
  const Figure hits = r.Counter("shellac_cache_hits_total"), misses = r.Counter("shellac_cache_misses_total");
  Add(&o, "STORE    %s of %s (%.1f%%)   %.0f objects   inserts %.1f/s   evictions %.0f (%.1f/s)%s",
      Bytes(bytes).c_str(), Bytes(budget).c_str(), budget > 0 ? 100 * bytes / budget : 0.0,
      r.Gauge("shellac_cache_objects"), ins.rate, ev.total, ev.rate, eol);
  Add(&o, "         lookups hit %s now, %s since start%s", Pct(hits.rate, misses.rate).c_str(),
      Pct(hits.total, misses.total).c_str(), eol);
  if (const double memo_budget = r.Gauge("shellac_page_memo_budget_bytes"); memo_budget > 0) {
    const double memo = r.Gauge("shellac_page_memo_bytes");
    const Figure memo_hits = r.Counter("shellac_page_memo_hits_total");
    const Figure memo_misses = r.Counter("shellac_page_memo_misses_total");
    Add(&o, "PAGES    %s of %s kept whole, %.0f pages   hit %s now, %s since start%s",
        Bytes(memo).c_str(), Bytes(memo_budget).c_str(), r.Gauge("shellac_page_memo_pages"),
        Pct(memo_hits.rate, memo_misses.rate).c_str(),
        Pct(memo_hits.total, memo_misses.total).c_str(), eol);
  }
  Add(&o, "%s", eol);
  std::string errors;
  double error_rate = 0;
  for (const char* kind : kUpstreamErrors) {
    const Figure f = r.Counter("shellac_upstream_errors_total", {{"kind", kind}});
    error_rate += f.rate;
    errors += std::string(" ") + kind + " " + Num(f.total);
  }
  const bool recent = r.Counter("shellac_upstream_first_byte_seconds_count").rate > 0;
  Add(&o, "UPSTREAM errors%s (%.1f/s)%s", errors.c_str(), error_rate, eol);
  Add(&o, "         first byte p50 %s ms p99 %s ms%s   connections opened %.0f reused %.0f%s",
      Ms(r.QuantileMs("shellac_upstream_first_byte_seconds", {}, 0.5, recent)).c_str(),
      Ms(r.QuantileMs("shellac_upstream_first_byte_seconds", {}, 0.99, recent)).c_str(),
      recent ? "" : " (since start)", r.Counter("shellac_upstream_connections_opened_total").total,
      r.Counter("shellac_upstream_connections_reused_total").total, eol);
  const Figure h12 = r.Counter("shellac_tls_handshakes_total", {{"version", "1.2"}});
  const Figure h13 = r.Counter("shellac_tls_handshakes_total", {{"version", "1.3"}});
  double failures = 0;
  for (const char* reason : kTlsFailures)
    failures += r.Counter("shellac_tls_handshake_failures_total", {{"reason", reason}}).total;
  Add(&o, "%s", eol);
  Add(&o, "TLS      handshakes %.1f/s (1.2: %.0f, 1.3: %.0f)   resumed %.0f   failed %.0f   in progress %.0f%s",
      h12.rate + h13.rate, h12.total, h13.total, r.Counter("shellac_tls_resumed_total").total, failures,
      r.Gauge("shellac_tls_handshakes_in_progress"), eol);
  return o;
}

bool Fetch(AdminClient& client, Metrics* out, std::string* error) {
  AdminResponse r = client.Get("/metrics");
  if (r.status != 200) {
    *error = client.Explain(r);
    return false;
  }
  *out = Metrics::Parse(r.body);
  return true;
}

}  // namespace

int RunStat(int argc, char** argv) {
  static const option kOptions[] = {
      {"admin", required_argument, nullptr, 'a'},
      {"once", no_argument, nullptr, '1'},
      {"json", no_argument, nullptr, 'j'},
      {"interval", required_argument, nullptr, 'i'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  std::string address = "127.0.0.1:8081";
  bool once = false, json = false;
  double interval = 1;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "a:1ji:h", kOptions, nullptr)) != -1) {
    switch (opt) {
      case 'a':
        address = optarg;
        break;
      case '1':
        once = true;
        break;
      case 'j':
        json = true;
        break;
      case 'i':
        interval = std::atof(optarg);
        if (interval < 0.1) {
          std::fprintf(stderr, "shellac stat: --interval must be at least 0.1 seconds\n");
          return 2;
        }
        break;
      case 'h':
        std::fputs(kStatUsage, stdout);
        std::fputs(
            "\nA live view of a running shellac, read from its admin listener's /metrics.\n\n"
            "  -a, --admin ADDR:PORT  the instance's admin-listen= address (default 127.0.0.1:8081)\n"
            "  -1, --once             print one report and exit (rates over one interval)\n"
            "  -j, --json             print one report as JSON and exit\n"
            "  -i, --interval SECONDS time between samples (default 1)\n",
            stdout);
        return 0;
      default:
        std::fputs(kStatUsage, stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "shellac stat: unexpected argument '%s'\n%s", argv[optind], kStatUsage);
    return 2;
  }
  const bool tty = isatty(STDOUT_FILENO) && !once && !json;
  const auto pause = std::chrono::milliseconds(static_cast<long>(interval * 1000));
  AdminClient client(address);
  Metrics before, now;
  std::string error;
  if (!Fetch(client, &before, &error)) {
    std::fprintf(stderr, "shellac stat: %s\n", error.c_str());
    return 1;
  }
  auto taken = Clock::now();
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  if (tty) std::fputs("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J", stdout);  // alternate screen, no cursor
  int status = 0;
  while (!g_stop) {
    // Sleep in small steps so Ctrl-C ends the view at once.
    const auto wake = Clock::now() + pause;
    while (!g_stop && Clock::now() < wake) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (g_stop) break;
    if (!Fetch(client, &now, &error)) {
      if (!tty) {
        std::fprintf(stderr, "shellac stat: %s\n", error.c_str());
        status = 1;
        break;
      }
      std::printf("\x1b[H\x1b[2Jshellac stat: %s\n(retrying every %.1f s; Ctrl-C to quit)\n",
                  error.c_str(), interval);
      std::fflush(stdout);
      before = Metrics();
      continue;
    }
    const auto at = Clock::now();
    const double seconds = std::chrono::duration<double>(at - taken).count();
    const Report report(now, before, seconds);
    if (json) {
      std::fputs(Json(report, address, seconds).c_str(), stdout);
      break;
    }
    const std::string text = Text(report, address, seconds, tty);
    if (!tty) {
      std::fputs(text.c_str(), stdout);
      if (once) break;
      std::fputs("\n", stdout);
    } else {
      std::fputs(("\x1b[H" + text + "\x1b[J").c_str(), stdout);
    }
    std::fflush(stdout);
    before = std::move(now);
    taken = at;
  }
  if (tty) std::fputs("\x1b[?25h\x1b[?1049l", stdout);
  std::fflush(stdout);
  return status;
}

}  // namespace shellac::ctl

#include "proxy/server.h"

#include <arpa/inet.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include <ctime>

#include "cache/cache.h"
#include "proxy/archive_pieces.h"
#include "proxy/part_store.h"
#include "proxy/rules.h"
#include "proxy/tls.h"
#include "proxy/worker.h"

namespace shellac::proxy {
namespace {

constexpr timeval kDrainPoll = {0, 20'000};

// Opens a listening socket. SO_REUSEPORT lets every worker own a socket on the same address, and
// the kernel spreads new connections over them.
int OpenListener(const conf::SocketAddress& address, uint16_t port, bool reuse_port,
                 std::string* error) {
  sockaddr_storage storage = address.storage;
  if (storage.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  else
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
  int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (storage.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), address.length) != 0 ||
      ::listen(fd, 1024) != 0) {
    *error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// "127.0.0.1:8080" or "[::1]:8080" for the address `fd` is bound to.
std::string BoundAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  char host[INET6_ADDRSTRLEN] = "?";
  if (storage.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
}

uint16_t BoundPort(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  if (storage.ss_family == AF_INET)
    return ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// Compiles the cache-key= rules; null with *error "ORIGIN: cache-key: what is wrong" on a bad rule.
std::shared_ptr<const cache::KeyRules> CompileKeyRules(const conf::Config& config,
                                                       std::string* error) {
  auto rules = std::make_shared<cache::KeyRules>();
  for (const auto& rule : config.cache_keys) {
    if (cache::Status status = rules->Add(rule.text); !status.ok()) {
      *error = rule.origin + ": cache-key: " + status.message();
      return nullptr;
    }
  }
  return rules;
}

}  // namespace

std::string Shared::RenderMetrics() const {
  std::string out = RenderPrometheus(shards, global);
  if (!store) return out;
  const cache::StoreStats stats = store->Stats();
  auto line = [&](const char* name, const char* type, const char* help, uint64_t value) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ").append(name);
    out.append(" ")
        .append(type)
        .append("\n")
        .append(name)
        .append(" ")
        .append(std::to_string(value))
        .append("\n");
  };
  line("shellac_cache_objects", "gauge", "Objects in the store.", stats.objects);
  line("shellac_cache_bytes", "gauge", "Bytes charged to the store's budget.", stats.bytes);
  line("shellac_cache_budget_bytes", "gauge", "The store's budget (cache-size).", stats.budget);
  line("shellac_cache_body_bytes", "gauge", "Stored (deflate) body bytes.", stats.body_bytes);
  line("shellac_cache_key_bytes", "gauge", "Bytes of the stored objects' keys.", stats.key_bytes);
  line("shellac_cache_header_bytes", "gauge",
       "Bytes of the stored objects' kept headers, as encoded.", stats.header_bytes);
  line("shellac_cache_hits_total", "counter", "Lookups that found a fresh object.", stats.hits);
  line("shellac_cache_stale_hits_total", "counter",
       "Lookups that found a stale object within grace.", stats.stale_hits);
  line("shellac_cache_misses_total", "counter", "Lookups that found nothing usable.", stats.misses);
  line("shellac_cache_inserts_total", "counter", "Objects stored.", stats.inserts);
  line("shellac_snapshot_loaded_objects", "gauge",
       "Objects the start read back from store-snapshot= and stored.", global.snapshot_loaded.load());
  line("shellac_snapshot_refused", "gauge",
       "1 when the start refused a damaged or foreign store-snapshot= file.",
       global.snapshot_refused.load());
  line("shellac_cache_evictions_total", "counter", "Objects evicted to stay within the budget.",
       stats.evictions);
  line("shellac_cache_purged_total", "counter", "Objects removed by purge or ban.",
       stats.purged + stats.banned);
  line("shellac_cache_single_flight_waiting", "gauge", "Requests waiting for another's fetch now.",
       flights.waiting());
  if (page_memo) {
    const cache::StoreStats m = page_memo->Stats();
    line("shellac_page_memo_budget_bytes", "gauge", "Memory for pages kept whole (page-memo-size).",
         m.budget);
    line("shellac_page_memo_bytes", "gauge", "Bytes the pages kept whole hold.", m.bytes);
    line("shellac_page_memo_pages", "gauge", "Pages kept whole.", m.objects);
    line("shellac_page_memo_hits_total", "counter",
         "Requests answered from a page kept whole, without a render.", m.hits);
    line("shellac_page_memo_misses_total", "counter",
         "Requests for a page that may be kept that found none current (rendered).", m.misses);
    line("shellac_page_memo_kept_total", "counter", "Rendered pages kept whole.", m.inserts);
    line("shellac_page_memo_evictions_total", "counter",
         "Pages kept whole dropped to stay within page-memo-size.", m.evictions);
  }
  if (l2) {
    const cache::SharedTierStats t = l2->Stats();
    line("shellac_l2_servers", "gauge", "memcached servers of the shared tier (l2=).", l2->servers());
    line("shellac_l2_gets_total", "counter",
         "Shared-tier lookups: local misses of repository-neutral objects.", t.gets);
    line("shellac_l2_hits_total", "counter", "Shared-tier lookups answered with an object.", t.hits);
    line("shellac_l2_misses_total", "counter", "Shared-tier lookups the tier did not hold.", t.misses);
    line("shellac_l2_errors_total", "counter",
         "Shared-tier lookups that failed (server down, timeout): rendered locally.", t.errors);
    line("shellac_l2_corrupt_total", "counter",
         "Shared-tier values refused (damaged, another format version or key): treated as misses.",
         t.corrupt);
    line("shellac_l2_busy_total", "counter",
         "Shared-tier lookups not asked: the tier's queue was full (rendered locally).", t.busy);
    line("shellac_l2_puts_total", "counter", "Objects written to the shared tier.", t.puts);
    line("shellac_l2_put_errors_total", "counter", "Shared-tier writes that failed.", t.put_errors);
    line("shellac_l2_too_large_total", "counter",
         "Objects not written to the shared tier: over memcached's item size.", t.too_large);
    line("shellac_l2_dropped_total", "counter",
         "Shared-tier writes dropped: the tier's queue was full.", t.dropped);
  }
  if (render_pool) {
    const gitfrag::PoolMetrics m = render_pool->Metrics();
    line("shellac_render_threads", "gauge", "Render threads (render-threads).", m.threads);
    line("shellac_render_reserve_threads", "gauge",
         "Render threads kept for clients with no render running (render-reserve-threads).",
         m.reserve_threads);
    line("shellac_render_reserve_started_total", "counter",
         "Renders a reserve thread ran (a client with no render running, all others busy).",
         m.reserve_started);
    line("shellac_render_queue_limit", "gauge",
         "Renders that may wait for a thread (render-queue).", m.queue_limit);
    line("shellac_render_client_max_renders", "gauge",
         "Renders one client may have running at once (client-max-renders; 0: no cap).",
         m.client_max_renders);
    line("shellac_render_running", "gauge", "Renders running now.", m.running);
    line("shellac_render_rejected_total", "counter",
         "Renders refused at once: the queue was full and the client had the most waiting.",
         m.rejected);
    // The render queue (gitfrag/render_queue.h), by class and by reason.
    auto labelled = [&](const char* name, const char* type, const char* help, const char* label,
                        size_t n, auto label_of, auto value) {
      out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ").append(name);
      out.append(" ").append(type).append("\n");
      for (size_t i = 0; i < n; ++i) {
        out.append(name).append("{").append(label).append("=\"").append(label_of(i));
        out.append("\"} ").append(value(i)).append("\n");
      }
    };
    auto class_name = [](size_t i) {
      return gitfrag::RenderClassName(static_cast<gitfrag::RenderClass>(i));
    };
    auto seconds = [](uint64_t us) {
      char text[32];
      std::snprintf(text, sizeof text, "%.6f", static_cast<double>(us) / 1e6);
      return std::string(text);
    };
    const auto& q = m.queue;
    labelled("shellac_render_queue_depth", "gauge", "Renders waiting for a thread now, by class.",
             "class", gitfrag::kRenderClasses, class_name,
             [&](size_t i) { return std::to_string(q.depth[i]); });
    labelled("shellac_render_queue_oldest_wait_seconds", "gauge",
             "How long the oldest render waiting in each class has waited.", "class",
             gitfrag::kRenderClasses, class_name,
             [&](size_t i) { return seconds(q.oldest_wait_us[i]); });
    labelled("shellac_render_queue_started_total", "counter",
             "Renders taken from the queue by a thread, by class.", "class",
             gitfrag::kRenderClasses, class_name,
             [&](size_t i) { return std::to_string(q.started[i]); });
    labelled("shellac_render_queue_wait_seconds_total", "counter",
             "Time the started renders waited in the queue, by class (divide by started_total).",
             "class", gitfrag::kRenderClasses, class_name,
             [&](size_t i) { return seconds(q.wait_us[i]); });
    labelled("shellac_render_queue_paused", "gauge", "1 while a class is paused (/render-pause).",
             "class", gitfrag::kRenderClasses, class_name,
             [&](size_t i) { return std::string(m.paused[i] ? "1" : "0"); });
    labelled(
        "shellac_render_refused_total", "counter",
        "Renders refused with 503, by reason: full (the client had the most waiting in a full "
        "queue), timeout (waited render-queue-timeout), stopping.",
        "reason", gitfrag::kRefusals - 1,
        [](size_t i) { return gitfrag::RefusalName(static_cast<gitfrag::Refusal>(i + 1)); },
        [&](size_t i) { return std::to_string(q.refused[i + 1]); });
    line("shellac_render_clients", "gauge", "Clients with a render waiting or running now.",
         q.clients);
    line("shellac_render_clients_seen_total", "counter",
         "Arrivals of a client with no render waiting or running.", q.clients_seen);
    line("shellac_render_largest_client_waiting", "gauge",
         "Frame and part renders waiting for the client with the most.", q.largest_waiting);
    {
      char share[32];
      std::snprintf(share, sizeof share, "%.4f", q.largest_share);
      out.append(
             "# HELP shellac_render_largest_client_share That client's fraction of the frame "
             "and part renders waiting (0 when none wait).\n"
             "# TYPE shellac_render_largest_client_share gauge\n"
             "shellac_render_largest_client_share ")
          .append(share)
          .append("\n");
    }
    auto by_kind = [&](const char* name, const char* type, const char* help, auto value) {
      out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ").append(name);
      out.append(" ").append(type).append("\n");
      for (size_t k = 0; k < gitfrag::kPageKinds; ++k) {
        out.append(name)
            .append("{kind=\"")
            .append(gitfrag::PageKindName(static_cast<gitfrag::PageKind>(k)));
        out.append("\"} ").append(value(m.kinds[k])).append("\n");
      }
    };
    by_kind("shellac_renders_total", "counter",
            "Pages rendered by the resident renderer, by page kind.",
            [](const auto& k) { return std::to_string(k.renders); });
    by_kind("shellac_render_errors_total", "counter",
            "Renders that gave a status other than 200, by page kind.",
            [](const auto& k) { return std::to_string(k.errors); });
    by_kind("shellac_render_seconds_total", "counter", "Time spent rendering, by page kind.",
            [&](const auto& k) { return seconds(k.render_us); });
    by_kind("shellac_render_stream_pieces_total", "counter",
            "Pieces of streamed bodies (snapshots, large plain files, clone files) made on render "
            "threads after their page's render, by page kind.",
            [](const auto& k) { return std::to_string(k.stream_pieces); });
    by_kind("shellac_render_stream_seconds_total", "counter",
            "Time render threads spent making the pieces of streamed bodies, by page kind (not in "
            "shellac_render_seconds_total).",
            [&](const auto& k) { return seconds(k.stream_us); });
    out += "# HELP shellac_render_duration_seconds Render time on a render thread, by page kind.\n"
           "# TYPE shellac_render_duration_seconds histogram\n";
    for (size_t k = 0; k < gitfrag::kPageKinds; ++k) {
      const auto& kind = m.kinds[k];
      const std::string label = gitfrag::PageKindName(static_cast<gitfrag::PageKind>(k));
      uint64_t cumulative = 0;
      char text[160];
      for (size_t b = 0; b < gitfrag::kRenderBucketCount; ++b) {
        cumulative += kind.buckets[b];
        char le[24] = "+Inf";
        if (b < std::size(gitfrag::kRenderBuckets))
          std::snprintf(le, sizeof le, "%g", gitfrag::kRenderBuckets[b]);
        std::snprintf(text, sizeof text,
                      "shellac_render_duration_seconds_bucket{kind=\"%s\",le=\"%s\"} %llu\n",
                      label.c_str(), le, static_cast<unsigned long long>(cumulative));
        out += text;
      }
      std::snprintf(text, sizeof text,
                    "shellac_render_duration_seconds_sum{kind=\"%s\"} %.6f\n"
                    "shellac_render_duration_seconds_count{kind=\"%s\"} %llu\n",
                    label.c_str(), static_cast<double>(kind.render_us) / 1e6, label.c_str(),
                    static_cast<unsigned long long>(cumulative));
      out += text;
    }
    // The in-memory history indexes (repositories without a commit-graph).
    const gitfrag::HistoryIndexMetrics h = gitfrag::HistoryIndexTotals();
    line("shellac_history_index_memory_bytes", "gauge",
         "Memory all history indexes may take (history-index-memory).", h.budget_bytes);
    line("shellac_history_index_stores", "gauge",
         "History indexes built, one per object store (forks that borrow objects share one).",
         h.stores);
    line("shellac_history_index_repositories", "gauge",
         "Repositories without a commit-graph answered by a built history index.",
         h.repositories);
    line("shellac_history_index_commits", "gauge", "Commits in the built history indexes.",
         h.commits);
    line("shellac_history_index_bytes", "gauge", "Size of the built history indexes.", h.bytes);
    line("shellac_history_index_builds_total", "counter", "History index builds that ended.",
         h.builds);
    line("shellac_history_index_refreshes_total", "counter",
         "History index builds that added commits made after an index was built.", h.refreshes);
    line("shellac_history_index_retries_total", "counter",
         "History index builds that followed a failed build of the same index.", h.retries);
    line("shellac_history_index_failed_total", "counter",
         "History index builds not kept (over the memory budget, or a history that cannot be read).",
         h.failed);
    {
      char text[64];
      std::snprintf(text, sizeof text, "%.6f", static_cast<double>(h.build_us) / 1e6);
      out.append(
             "# HELP shellac_history_index_build_seconds_total Time the history index builds took.\n"
             "# TYPE shellac_history_index_build_seconds_total counter\n"
             "shellac_history_index_build_seconds_total ")
          .append(text)
          .append("\n");
    }
    line("shellac_history_index_queued", "gauge", "Repositories waiting for a history index build.",
         h.queued);
    line("shellac_history_index_building_commits", "gauge",
         "Commits the history index build running now has read (0: none running).",
         h.building_commits);
    // Snapshot archives kept whole (gitfrag/snapshot_cache.h).
    const gitfrag::SnapshotCacheStats a = gitfrag::SnapshotCacheMetrics();
    line("shellac_archive_cache_budget_bytes", "gauge",
         "Memory for whole snapshot archives (snapshot-cache-size, taken from cache-size).",
         a.budget);
    line("shellac_archive_cache_max_stored_bytes", "gauge",
         "The largest snapshot archive kept (snapshot-max-stored).", a.max_stored);
    line("shellac_archive_cache_bytes", "gauge", "Memory the kept snapshot archives hold.", a.bytes);
    line("shellac_archive_cache_archives", "gauge", "Snapshot archives kept.", a.archives);
    line("shellac_archive_cache_made_total", "counter",
         "Snapshot archives made (each reads a tree).", a.made);
    line("shellac_archive_cache_hits_total", "counter",
         "Snapshot requests served from a kept archive.", a.hits);
    line("shellac_archive_cache_joins_total", "counter",
         "Snapshot requests that joined an archive another request was making.", a.joins);
    line("shellac_archive_cache_kept_total", "counter", "Snapshot archives kept when done.",
         a.kept);
    line("shellac_archive_cache_too_large_total", "counter",
         "Snapshot archives that grew past snapshot-max-stored (streamed, not kept).", a.too_large);
    line("shellac_archive_cache_evicted_total", "counter",
         "Kept snapshot archives dropped to make room.", a.evicted);
    // The plain page's files, kept once per blob id (gitfrag::PartStore).
    const gitfrag::PlainPartStats parts = gitfrag::PlainPartMetrics();
    line("shellac_plain_parts_found_total", "counter",
         "Plain pages whose file was found kept as a part (no blob read).", parts.found);
    line("shellac_plain_parts_read_total", "counter",
         "Plain pages that read their file and kept it as a part.", parts.read);
    // Remembered blames (gitfrag/blame.h): how often a blame page's blame used one.
    const gitfrag::BlameMemoStats b = gitfrag::BlameMemoMetrics();
    line("shellac_blames_total", "counter", "Blames worked out for blame pages.", b.blames);
    line("shellac_blame_memo_used_total", "counter",
         "Blames that took lines from at least one remembered blame.", b.used);
    line("shellac_blame_memo_whole_total", "counter",
         "Blames whose every line came from one remembered blame (no diff made).", b.whole);
    line("shellac_blame_memo_recalls_total", "counter",
         "Remembered blames used, all blames together (one blame may use several).", b.recalls);
    line("shellac_blame_memo_blames", "gauge", "Blames remembered now.", b.remembered);
    line("shellac_blame_memo_bytes", "gauge", "About how much memory the remembered blames take.",
         b.bytes);
  }
  return out;
}

bool IsGitRepository(const std::string& dir) {
  struct stat st;
  if (stat((dir + "/.git").c_str(), &st) == 0) return true;
  return stat((dir + "/HEAD").c_str(), &st) == 0 && stat((dir + "/objects").c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode);
}

std::string GitRepositoryAbove(std::string dir) {
  for (;;) {
    if (IsGitRepository(dir)) return dir;
    const auto slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/") return {};
    dir.resize(slash == 0 ? 1 : slash);
  }
}

std::shared_ptr<Runtime> BuildRuntime(std::shared_ptr<const conf::Config> config,
                                      uint64_t generation, std::string* error) {
  auto runtime = std::make_shared<Runtime>();
  runtime->access_log = AccessLogFile::Open(config->access_log, error);
  if (!error->empty()) return nullptr;
  runtime->builtin_page = BuiltinPage(*config);
  runtime->key_rules = CompileKeyRules(*config, error);
  if (!runtime->key_rules) return nullptr;
  auto ttl_rules = std::make_shared<TtlRules>();
  if (!ttl_rules->Compile(config->ttl_rules, error) ||
      !ttl_rules->CompileForceStore(config->force_store, error)) {
    return nullptr;
  }
  runtime->ttl_rules = std::move(ttl_rules);
  auto esi_rules = std::make_shared<EsiRules>();
  if (!esi_rules->Compile(*config, error)) return nullptr;
  runtime->esi_rules = std::move(esi_rules);
  if (!config->repositories.empty()) runtime->site = std::make_shared<const gitfrag::Site>(*config);
  // Certificates are re-read on every reload; a broken one refuses the reload (the old context
  // keeps serving) with "FILE: what is wrong".
  if (!config->listen_tls.empty() || (config->backend && config->backend->tls)) {
    runtime->tls = TlsContext::Build(*config, error);
    if (!runtime->tls) return nullptr;
  }
  runtime->generation = generation;
  runtime->config = std::move(config);
  return runtime;
}

std::string BuiltinPage(const conf::Config& config) {
  std::string p;
  p += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>shellac</title></head><body>\n";
  p += "<h1>shellac " SHELLAC_VERSION "</h1>\n";
  p += "<p>A caching front for git web frontends. No <code>backend=</code> is configured, so this "
       "page is all it serves.</p>\n<h2>Configured</h2>\n<ul>\n";
  p += "<li>config file: " +
       (config.config_file.empty() ? std::string("none (built-in defaults)")
                                   : HtmlEscape(config.config_file)) +
       "</li>\n";
  for (const auto& l : config.listen) p += "<li>listen: " + HtmlEscape(l.text) + "</li>\n";
  for (const auto& l : config.listen_tls)
    p += "<li>listen-tls: " + HtmlEscape(l.address.text) + "</li>\n";
  p += "<li>admin: " +
       (config.admin_listen ? HtmlEscape(config.admin_listen->text) + " (/health, /metrics)"
                            : std::string("off")) +
       "</li>\n";
  p += "<li>worker threads: " + std::to_string(config.threads) + "</li>\n";
  p += "<li>cache size: " + std::to_string(config.cache_size >> 20) + " MiB</li>\n";
  if (!config.cgitrc.empty()) p += "<li>cgitrc: " + HtmlEscape(config.cgitrc) + "</li>\n";
  for (const auto& r : config.repos) p += "<li>repository: " + HtmlEscape(r) + "</li>\n";
  p += "</ul>\n";
  p += "<p>To put shellac in front of a forge: <code>shellac --backend HOST:PORT</code>. To render "
       "a "
       "repository's pages itself: <code>shellac --repo PATH</code>, or start it inside the "
       "repository.</p>\n";
  p += "<p>Manual: <code>man shellac</code>, <code>man shellac.conf</code>.</p>\n</body></html>\n";
  return p;
}

struct Server::State {
  std::string config_file;
  conf::Overrides overrides;
  Shared shared;
  std::vector<std::unique_ptr<Worker>> workers;  // the serving threads
  std::unique_ptr<Worker> main;                  // admin listener + signals, on the main thread
  std::vector<std::thread> threads;
  std::atomic<int> running{0};
  std::vector<EventPtr> signals;
  EventPtr drain_poll;
  EventPtr drain_deadline;
  EventPtr status_tick;  // one status-page sample a second
  bool draining = false;
  std::atomic<size_t> listeners_open{0};  // workers that have not closed their listeners yet

  void Reload() {
    std::string error;
    auto config = conf::Load(config_file, overrides, &error);
    std::shared_ptr<Runtime> runtime;
    const uint64_t generation = shared.generation() + 1;
    if (config) runtime = BuildRuntime(config, generation, &error);
    if (!runtime) {
      shared.global.reloads_refused++;
      std::fprintf(stderr, "shellac: reload refused: %s\n", error.c_str());
      return;
    }
    // Keys the table marks as applied by a restart only (listeners, threads, the store's size,
    // the render pool) keep their old values; say which ones changed.
    if (const auto keys = conf::RestartKeysChanged(*shared.runtime()->config, *config); !keys.empty()) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
      std::fprintf(stderr, "shellac: warning: %s changed; a restart applies %s, until then the old %s\n",
                   names.c_str(), keys.size() == 1 ? "it" : "them",
                   keys.size() == 1 ? "value stays" : "values stay");
    }
    shared.Publish(runtime);
    shared.global.reloads_ok++;
    std::fprintf(stderr, "shellac: reloaded configuration (generation %llu)\n",
                 static_cast<unsigned long long>(generation));
  }

  // SIGUSR1: the access log opened again (after logrotate moved it), the configuration unchanged.
  // A path that cannot be opened keeps the old destination and says so.
  void ReopenLog() {
    const auto current = shared.runtime();
    std::string error;
    auto log = AccessLogFile::Open(current->config->access_log, &error);
    if (!error.empty()) {
      std::fprintf(stderr, "shellac: access log not reopened: %s\n", error.c_str());
      return;
    }
    auto runtime = std::make_shared<Runtime>(*current);
    runtime->access_log = std::move(log);
    shared.Publish(std::move(runtime));
    std::fprintf(stderr, "shellac: reopened the access log\n");
  }

  void BeginShutdown() {
    if (draining) {
      // A second signal: stop waiting for in-flight requests.
      for (auto& w : workers) w->Post([w = w.get()] { w->Stop(); });
      return;
    }
    draining = true;
    shared.global.draining = true;
    sd_notify(0, "STOPPING=1");
    std::fprintf(stderr, "shellac: draining\n");
    // Each worker closes its own listeners; the last one to do so says so, which is the moment
    // from which a new connection is certain to be refused.
    listeners_open = workers.size();
    for (auto& w : workers) {
      w->Post([this, w = w.get()] {
        w->BeginDrain();
        if (listeners_open.fetch_sub(1) == 1) std::fprintf(stderr, "shellac: listeners closed\n");
      });
    }
    drain_poll.reset(event_new(main->base(), -1, EV_PERSIST, OnDrainPoll, this));
    event_add(drain_poll.get(), &kDrainPoll);
    const timeval deadline = ToTimeval(shared.runtime()->config->shutdown_timeout);
    drain_deadline.reset(evtimer_new(main->base(), OnDrainDeadline, this));
    evtimer_add(drain_deadline.get(), &deadline);
  }

  static void OnSignal(evutil_socket_t signal, short, void* arg) {
    auto* self = static_cast<State*>(arg);
    if (signal == SIGHUP) {
      // Under systemd (Type=notify) `systemctl reload` waits for READY=1 after RELOADING=1.
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
                 static_cast<unsigned long long>(now.tv_sec) * 1'000'000ull +
                     static_cast<unsigned long long>(now.tv_nsec / 1000));
      self->Reload();
      sd_notifyf(0, "READY=1\nSTATUS=serving (configuration generation %llu)",
                 static_cast<unsigned long long>(self->shared.generation()));
    } else if (signal == SIGUSR1) {
      self->ReopenLog();
    } else {
      self->BeginShutdown();
    }
  }

  static void OnStatusTick(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<State*>(arg);
    self->shared.status->Sample(self->shared, time(nullptr));
  }

  static void OnDrainPoll(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<State*>(arg);
    if (self->running.load() == 0) self->main->Stop();
  }

  static void OnDrainDeadline(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<State*>(arg);
    std::fprintf(stderr, "shellac: shutdown-timeout reached, closing the remaining connections\n");
    for (auto& w : self->workers) w->Post([w = w.get()] { w->Stop(); });
  }

  // Binds every listener before any thread starts, so a bad address fails the start cleanly.
  bool Bind(const conf::Config& config) {
    std::string error;
    for (const auto& address : config.listen) {
      uint16_t port = address.port;
      for (auto& worker : workers) {
        int fd = OpenListener(address, port, /*reuse_port=*/true, &error);
        if (fd < 0) {
          std::fprintf(stderr, "shellac: cannot listen on %s: %s\n", address.text.c_str(),
                       error.c_str());
          return false;
        }
        if (port == 0) port = BoundPort(fd);  // the other workers join the port the kernel chose
        if (worker == workers.front())
          std::fprintf(stderr, "shellac: listening on %s\n", BoundAddress(fd).c_str());
        worker->AddListener(fd, Site::kPublic);
      }
    }
    for (const auto& tls_listener : config.listen_tls) {
      const conf::SocketAddress& address = tls_listener.address;
      uint16_t port = address.port;
      for (auto& worker : workers) {
        int fd = OpenListener(address, port, /*reuse_port=*/true, &error);
        if (fd < 0) {
          std::fprintf(stderr, "shellac: cannot listen on %s (listen-tls): %s\n",
                       address.text.c_str(), error.c_str());
          return false;
        }
        if (port == 0) port = BoundPort(fd);
        if (worker == workers.front())
          std::fprintf(stderr, "shellac: TLS on %s\n", BoundAddress(fd).c_str());
        worker->AddListener(fd, Site::kPublic, address.text);
      }
    }
    if (config.admin_listen) {
      int fd = OpenListener(*config.admin_listen, config.admin_listen->port, /*reuse_port=*/false,
                            &error);
      if (fd < 0) {
        std::fprintf(stderr, "shellac: cannot listen on %s (admin-listen): %s\n",
                     config.admin_listen->text.c_str(), error.c_str());
        return false;
      }
      std::fprintf(stderr, "shellac: admin on %s\n", BoundAddress(fd).c_str());
      main->AddListener(fd, Site::kAdmin);
    }
    return true;
  }
};

Server::Server(std::string config_file, conf::Overrides overrides,
               std::shared_ptr<const conf::Config> config)
    : state_(std::make_unique<State>()) {
  state_->config_file = std::move(config_file);
  state_->overrides = std::move(overrides);
  std::string error;
  auto runtime = BuildRuntime(std::move(config), 1, &error);
  if (!runtime) throw std::runtime_error(error);
  state_->shared.Publish(runtime);
  const conf::Config& loaded = *runtime->config;
  // Whole snapshot archives are kept beside the store, within cache-size (when repositories are
  // rendered at start; a reload that adds the first ones keeps none until a restart).
  const uint64_t archives = loaded.repositories.empty() ? 0 : loaded.snapshot_cache_size;
  gitfrag::ConfigureSnapshotCache(archives, loaded.snapshot_max_stored);
  state_->shared.store =
      std::make_unique<cache::Store>(cache::StoreOptions{.budget = loaded.cache_size - archives});
  // Pages kept whole (page_memo.h), beside cache-size; the same eviction as the store's.
  if (!loaded.repositories.empty() && loaded.cache && loaded.page_memo_size > 0) {
    state_->shared.page_memo =
        std::make_unique<cache::Store>(cache::StoreOptions{.budget = loaded.page_memo_size});
  }
  state_->shared.render_pool = std::make_unique<gitfrag::RenderPool>(
      loaded.render_threads, loaded.render_queue, loaded.client_max_renders,
      loaded.render_reserve_threads);
  // Snapshots' blob pieces, compressed once per blob id, live in the store like any object.
  gitfrag::SetArchivePieceStore(MakeArchivePieceStore(state_->shared.store.get()));
  // Parts of page bodies kept once per blob id (the plain page's files), when pages are stored.
  if (loaded.cache) gitfrag::SetPartStore(MakePartStore(state_->shared.store.get()));
  if (!loaded.l2_servers.empty()) {
    state_->shared.l2 = std::make_unique<cache::SharedTier>(
        cache::SharedTierOptions{.servers = loaded.l2_servers, .trace = loaded.l2_trace});
    std::string list;
    for (const auto& server : loaded.l2_servers) list += (list.empty() ? "" : ", ") + server;
    std::fprintf(stderr, "shellac: shared tier: memcached %s\n", list.c_str());
  }
  if (!loaded.store_snapshot.empty()) LoadStoreSnapshot(loaded.store_snapshot);
}

// store-snapshot=: the store as the last graceful stop left it. A refused file leaves the store
// empty (LoadSnapshot stores nothing then) and is left where it is for the operator to look at;
// the next stop writes over it.
void Server::LoadStoreSnapshot(const std::string& path) {
  cache::SnapshotStats stats;
  bool missing = false;
  const auto started = std::chrono::steady_clock::now();
  const cache::Status status = cache::LoadSnapshot(
      state_->shared.store.get(), path, std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()),
      &stats, &missing);
  if (missing) {
    std::fprintf(stderr, "shellac: no store snapshot at %s yet: starting with an empty store\n",
                 path.c_str());
  } else if (!status.ok()) {
    state_->shared.global.snapshot_refused = 1;
    std::fprintf(stderr, "shellac: store snapshot refused: %s; starting with an empty store\n",
                 status.message().c_str());
  } else {
    state_->shared.global.snapshot_loaded = stats.objects;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started).count();
    std::fprintf(stderr,
                 "shellac: store snapshot %s read: %llu objects stored, %llu expired or left out, "
                 "%llu bytes in %lld ms\n",
                 path.c_str(), static_cast<unsigned long long>(stats.objects),
                 static_cast<unsigned long long>(stats.skipped),
                 static_cast<unsigned long long>(stats.bytes), static_cast<long long>(ms));
  }
}

void Server::WriteStoreSnapshot(const std::string& path) {
  cache::SnapshotStats stats;
  const auto started = std::chrono::steady_clock::now();
  const cache::Status status = cache::WriteSnapshot(*state_->shared.store, path, &stats);
  if (!status.ok()) {
    std::fprintf(stderr, "shellac: store snapshot not written: %s\n", status.message().c_str());
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr,
               "shellac: store snapshot %s written: %llu objects (%llu left out), %llu bytes in "
               "%lld ms\n",
               path.c_str(), static_cast<unsigned long long>(stats.objects),
               static_cast<unsigned long long>(stats.skipped),
               static_cast<unsigned long long>(stats.bytes), static_cast<long long>(ms));
}

Server::~Server() {
  gitfrag::SetArchivePieceStore(nullptr);
  gitfrag::SetPartStore(nullptr);
}

int Server::Run() {
  State& s = *state_;
  const conf::Config& config = *s.shared.runtime()->config;
  const std::string snapshot_path = config.store_snapshot;  // config may be replaced by a reload
  for (unsigned i = 0; i < config.threads; ++i)
    s.workers.push_back(std::make_unique<Worker>(s.shared, static_cast<int>(i)));
  s.main = std::make_unique<Worker>(s.shared, static_cast<int>(config.threads));
  for (auto& w : s.workers) s.shared.shards.push_back(&w->metrics());
  s.shared.shards.push_back(&s.main->metrics());
  if (!s.Bind(config)) return 1;

  for (int sig : {SIGHUP, SIGTERM, SIGINT, SIGUSR1}) {
    s.signals.emplace_back(evsignal_new(s.main->base(), sig, State::OnSignal, &s));
    event_add(s.signals.back().get(), nullptr);
  }
  s.shared.status = std::make_unique<StatusHistory>();
  s.shared.status->Sample(s.shared, time(nullptr));  // the baseline
  s.status_tick.reset(event_new(s.main->base(), -1, EV_PERSIST, State::OnStatusTick, &s));
  constexpr timeval kSecond = {1, 0};
  event_add(s.status_tick.get(), &kSecond);
  s.running = static_cast<int>(s.workers.size());
  for (auto& w : s.workers) {
    s.threads.emplace_back([&s, w = w.get()] {
      w->Run();
      s.running--;
    });
  }
  std::fprintf(stderr, "shellac: ready\n");
  // Every listener is bound and listening: a service manager (systemd, Type=notify) may start what
  // depends on this one. Without NOTIFY_SOCKET in the environment this does nothing.
  sd_notify(0, "READY=1\nSTATUS=serving (configuration generation 1)");
  s.main->Run();
  for (auto& t : s.threads) t.join();
  // Renders still queued finish and post to loops that no longer run; the workers must outlive
  // that. The shared tier's lookups may still submit renders: it stops first.
  s.shared.l2.reset();
  s.shared.render_pool.reset();
  s.workers.clear();
  s.signals.clear();
  s.drain_poll.reset();
  s.drain_deadline.reset();
  s.status_tick.reset();
  s.main.reset();
  // The path in force at start (a restart-only key), written once nothing renders or stores.
  if (!snapshot_path.empty()) WriteStoreSnapshot(snapshot_path);
  std::fprintf(stderr, "shellac: stopped\n");
  return 0;
}

}  // namespace shellac::proxy

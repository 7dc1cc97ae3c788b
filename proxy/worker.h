// worker: one thread, one event_base, its own listeners (SO_REUSEPORT), client connections,
// upstream pool, metrics shard and access-log buffer. Nothing here is shared between workers except
// the Shared state, which is read-mostly and published atomically.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/clock_text.h"
#include "proxy/access_log.h"
#include "conf/config.h"
#include "proxy/event_ptr.h"
#include "gitfrag/gitfrag.h"
#include "cache/key.h"
#include "proxy/metrics.h"
#include "proxy/single_flight.h"
#include "proxy/status.h"
#include "cache/store.h"
#include "proxy/upstream.h"

namespace shellac::proxy {

class ClientConnection;
class ExchangeClient;
class TlsAccept;
class TlsContext;

// RE2 expressions from list keys of the configuration (force-store=, esi-url=, esi-allow-host=).
class RegexList {
 public:
  // Compiles every rule; false with *error "ORIGIN: KEY: bad regular expression: ..." on the first
  // bad one.
  bool Compile(const std::vector<conf::Config::Rule>& rules, const char* key, std::string* error);
  // Whether some expression matches somewhere in `text` / all of `text`.
  bool MatchesPart(std::string_view text) const;
  bool MatchesWhole(std::string_view text) const;

 private:
  struct Regex;
  std::vector<std::shared_ptr<const Regex>> regexes_;
};

// ttl=REGEX => DURATION rules: the first whose RE2 expression matches a request target (path and
// query) sets the freshness of a storable response for it; 0 keeps such responses out of the store.
class TtlRules {
 public:
  // Compiles every rule; false with *error "ORIGIN: ttl: what is wrong" on the first bad one.
  bool Compile(const std::vector<conf::Config::Rule>& rules, std::string* error);
  std::optional<std::chrono::seconds> Match(std::string_view target) const;
  // force-store=REGEX rules: responses for a matching target are stored even when they say
  // no-store, private or no-cache, or set a cookie (the Set-Cookie header is not stored).
  bool CompileForceStore(const std::vector<conf::Config::Rule>& rules, std::string* error) {
    return force_store_.Compile(rules, "force-store", error);
  }
  bool ForcesStore(std::string_view target) const { return force_store_.MatchesPart(target); }

 private:
  struct Rule;
  std::vector<std::shared_ptr<const Rule>> rules_;
  RegexList force_store_;
};

// esi-url= and esi-allow-host= rules (RE2).
class EsiRules {
 public:
  // Compiles every rule; false with *error "ORIGIN: esi-url: what is wrong" on the first bad one.
  bool Compile(const conf::Config& config, std::string* error) {
    return urls_.Compile(config.esi_urls, "esi-url", error) &&
           hosts_.Compile(config.esi_allow_hosts, "esi-allow-host", error);
  }
  // esi-url: responses for this target (path and query) are processed as ESI whatever their headers
  // say. Partial match, as ttl= rules.
  bool MatchesUrl(std::string_view target) const { return urls_.MatchesPart(target); }
  // esi-allow-host: an include may name this host besides the page's own. Full match, on the host
  // as written (lower-cased).
  bool AllowsHost(std::string_view host) const;

 private:
  RegexList urls_;
  RegexList hosts_;
};

// What a configuration reload swaps as one unit.
struct Runtime {
  std::shared_ptr<const conf::Config> config;
  std::shared_ptr<AccessLogFile> access_log;  // null when access-log=off
  uint64_t generation = 1;
  std::string builtin_page;  // the HTML answered when no backend is configured
  std::shared_ptr<const cache::KeyRules> key_rules;  // compiled cache-key= rules
  std::shared_ptr<const TtlRules> ttl_rules;         // compiled ttl= rules
  std::shared_ptr<const EsiRules> esi_rules;         // compiled esi-url= / esi-allow-host= rules
  std::shared_ptr<const gitfrag::Site> site;  // the resident renderer's repositories; null: none
  std::shared_ptr<const TlsContext>
      tls;  // certificates and upstream TLS; null when TLS is not used
};

// Process-wide state read by every worker. Publish() may be called from any thread.
class Shared {
 public:
  std::shared_ptr<const Runtime> runtime() const {
    std::lock_guard lock(mu_);
    return runtime_;
  }
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Grows with every Publish, also one that keeps the generation (a log reopened on SIGUSR1):
  // workers compare it to pick up the new runtime.
  uint64_t serial() const { return serial_.load(std::memory_order_acquire); }
  void Publish(std::shared_ptr<const Runtime> runtime) {
    const uint64_t g = runtime->generation;
    {
      std::lock_guard lock(mu_);
      runtime_ = std::move(runtime);
    }
    generation_.store(g, std::memory_order_release);
    serial_.fetch_add(1, std::memory_order_acq_rel);
    global.config_generation.store(g);
  }
  std::string RenderMetrics() const;

  GlobalMetrics global;
  std::unique_ptr<cache::Store> store;  // made once at start (its budget cannot change on reload)
  // Renders resident pages; made once at start when repositories are configured (render-threads and
  // render-queue cannot change on reload).
  std::unique_ptr<gitfrag::RenderPool> render_pool;
  SingleFlight flights;
  std::vector<const WorkerMetrics*> shards;  // fixed before any worker starts
  // The status page's history: sampled and read on the main thread only (the admin listener's).
  std::unique_ptr<StatusHistory> status;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Runtime> runtime_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> serial_{0};
};

enum class Site { kPublic, kAdmin };

class Worker {
 public:
  Worker(Shared& shared, int index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Before Run(): serve connections accepted on the listening socket `fd` (ownership taken).
  // A non-empty `tls_address` (a listen-tls= address as written) makes connections start with a
  // TLS handshake, with the certificate configured for that address.
  void AddListener(int fd, Site site, std::string tls_address = {});
  // Runs the loop on the calling thread until Stop() or, while draining, the last connection ends.
  void Run();
  // Thread-safe: runs `task` on this worker's thread.
  void Post(std::function<void()> task);
  // Worker thread: stop accepting, close idle connections, end the loop when none are left.
  void BeginDrain();
  // Worker thread: cut every connection and end the loop now.
  void Stop();

  event_base* base() const { return base_.get(); }
  int index() const { return index_; }
  Shared& shared() { return shared_; }
  WorkerMetrics& metrics() { return metrics_; }
  UpstreamPool& upstreams() { return *upstreams_; }
  AccessLogWriter& access_log() { return log_; }
  bool draining() const { return draining_; }
  // The configuration in force; refreshed when a reload published a new one.
  const std::shared_ptr<const Runtime>& runtime();
  // "Sun, 29 Nov 2026 20:30:55 GMT", recomputed at most once a second.
  const std::string& HttpDate();

  // When this worker last logged ESI include issues (rate limit: one report a second).
  time_t esi_issue_logged_at() const { return esi_issue_logged_at_; }
  void set_esi_issue_logged_at(time_t t) { esi_issue_logged_at_ = t; }

  void Register(ClientConnection* c);
  void Unregister(ClientConnection* c);
  void RegisterHandshake(TlsAccept* h) { handshakes_.insert(h); }
  void UnregisterHandshake(TlsAccept* h) { handshakes_.erase(h); }
  // Background refreshes (BackgroundFetch) belong to the worker until they end.
  void AdoptBackground(ExchangeClient* fetch) { background_.insert(fetch); }
  void ReleaseBackground(ExchangeClient* fetch);

 private:
  static void OnAccept(evconnlistener* l, evutil_socket_t fd, sockaddr* addr, int len, void* arg);
  static void OnAcceptError(evconnlistener* l, void* arg);
  static void OnTick(evutil_socket_t, short, void* arg);
  static void OnPosted(evutil_socket_t, short, void* arg);
  void CloseHandshakes();

  Shared& shared_;
  const int index_;
  EventBasePtr base_;
  struct Listener {
    Worker* worker = nullptr;
    Site site = Site::kPublic;
    std::string tls_address;  // "" for plain TCP
    ListenerPtr listener;
    EventPtr resume;  // re-enables accepting after a pause
  };
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::unique_ptr<UpstreamPool> upstreams_;
  WorkerMetrics metrics_;
  AccessLogWriter log_;
  std::shared_ptr<const Runtime> runtime_;
  std::unordered_set<ClientConnection*> connections_;
  std::unordered_set<ExchangeClient*> background_;
  std::unordered_set<TlsAccept*>
      handshakes_;  // accepted TLS connections before their handshake ends
  bool draining_ = false;
  EventPtr tick_;
  EventPtr posted_event_;
  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;
  time_t esi_issue_logged_at_ = 0;
  base::SecondText date_{base::kHttpDateFormat};
  uint64_t serial_seen_ = 0;  // Shared::serial() when runtime_ was taken
};

}  // namespace shellac::proxy

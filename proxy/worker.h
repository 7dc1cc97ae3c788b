// worker: one thread, one event_base, its own listeners (SO_REUSEPORT), client connections,
// upstream pool, metrics shard and access-log buffer. Nothing here is shared between workers except
// the Shared state (proxy/runtime.h), which is read-mostly and published atomically.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/clock_text.h"
#include "proxy/access_log.h"
#include "proxy/event_ptr.h"
#include "proxy/metrics.h"
#include "proxy/runtime.h"

namespace shellac::proxy {

class ClientConnection;
class ExchangeClient;
class TlsAccept;
class UpstreamPool;

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

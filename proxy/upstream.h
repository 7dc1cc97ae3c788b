// upstream: per-worker pools of kept-alive connections to backends.
//
// Owned by one Worker and used only on its thread. An idle connection is watched while it waits:
// if the origin closes it, sends stray bytes or it idles past upstream-idle-timeout, it is freed.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "conf/config.h"
#include "proxy/event_ptr.h"

namespace shellac::proxy {

class TlsContext;

class UpstreamPool {
 public:
  explicit UpstreamPool(event_base* base) : base_(base) {}
  ~UpstreamPool() { Clear(); }
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // The most recently used idle connection to `address`, or null. Its callbacks are cleared.
  BufferEventPtr TakeIdle(const conf::SocketAddress& address);
  // A new non-blocking connection attempt; completion or failure arrives as a bufferevent event.
  // Null with *error set when not even a socket could be made. An https:// address gets a TLS
  // bufferevent from `tls`; BEV_EVENT_CONNECTED then means the handshake (and verification) passed.
  BufferEventPtr Connect(const conf::SocketAddress& address, std::string* error, const TlsContext* tls = nullptr);
  // Keeps `connection` for reuse, or frees it when `max_idle` are already kept.
  void PutIdle(const conf::SocketAddress& address, BufferEventPtr connection, unsigned max_idle,
               conf::Millis idle_timeout);
  void Clear();

 private:
  // An idle connection; its address is the callback argument of its bufferevent, so it stays put
  // (owned through a unique_ptr) while the list around it changes.
  struct Idle {
    UpstreamPool* pool;
    std::string key;
    BufferEventPtr bev;
  };
  static void OnIdleEvent(bufferevent* bev, short what, void* arg);
  static void OnIdleRead(bufferevent* bev, void* arg);
  void Drop(Idle* idle);

  event_base* base_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<Idle>>> idle_;  // newest at the back
};

}  // namespace shellac::proxy

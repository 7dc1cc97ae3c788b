// background: a refresh of a stale object that no client waits for (grace, stale-while-revalidate).
//
// The request that found the object stale is answered from it at once; a BackgroundFetch sends the
// same GET upstream as the single-flight leader for the key, discards the bytes it is sent and lets
// the exchange store the new object. Owned by its Worker (which frees any left at shutdown); deletes
// itself when the exchange ends.
#pragma once

#include <memory>
#include <string>

#include "proxy/event_ptr.h"
#include "proxy/exchange.h"
#include "proxy/http1.h"
#include "proxy/runtime.h"

namespace shellac::proxy {

class Worker;

class BackgroundFetch : public ExchangeClient {
 public:
  // Starts refreshing `key` for `request` (copied). The caller must lead the key's single-flight.
  // `secure`: the request that found the object stale came over TLS; the refresh says so upstream
  // (X-Forwarded-Proto: https), as the client's own fetch would have.
  static void Start(Worker& worker, std::shared_ptr<const Runtime> runtime, const http::RequestHead& request,
                    const std::string& peer_ip, bool secure, std::string key);
  ~BackgroundFetch() override;

  Worker& worker() override { return worker_; }
  const std::string& peer_ip() const override { return peer_ip_; }
  bool secure() const override { return secure_; }
  // Either way the exchange stored what it could: the refresh ends.
  void CollectExchange(Collected) override { EndSoon(); }
  void FailExchange(int, const std::string&) override { EndSoon(); }

 private:
  BackgroundFetch(Worker& worker, const http::RequestHead& request, std::string peer_ip, bool secure);
  // The exchange may be on the stack: the end is taken on the next loop turn.
  void EndSoon();
  static void OnEnd(evutil_socket_t, short, void* arg);

  Worker& worker_;
  http::RequestHead request_;
  std::string peer_ip_;
  bool secure_;
  EventPtr end_;
  std::unique_ptr<ProxyExchange> exchange_;
};

}  // namespace shellac::proxy

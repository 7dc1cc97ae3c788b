// client: one accepted client connection. Reads request heads (keep-alive, pipelining), routes
// each request (proxy exchange, built-in page, admin endpoints), answers errors, enforces the
// client-side timeouts and limits, and writes the access log. One request is in progress at a time;
// pipelined requests wait in the input buffer, so responses leave in request order.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>

#include "cache/cache.h"
#include "proxy/esi_response.h"
#include "proxy/event_ptr.h"
#include "proxy/exchange.h"
#include "proxy/http1.h"
#include "proxy/lookup.h"
#include "proxy/resident.h"
#include "proxy/stream_response.h"
#include "proxy/worker.h"

namespace shellac::proxy {

class ClientConnection : public StreamingClient, private LookupClient {
 public:
  // Takes ownership of `fd`. Registers itself with `worker`; deletes itself when done.
  ClientConnection(Worker& worker, evutil_socket_t fd, const sockaddr* peer, Site site);
  // The same over a connected bufferevent, e.g. a TLS one whose handshake finished (`tls`).
  ClientConnection(Worker& worker, BufferEventPtr bev, const sockaddr* peer, Site site, bool tls);
  ~ClientConnection() override;
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Worker shutdown: close now if idle, else after the current response.
  void Drain();
  // Worker stop: close now.
  void Close() { delete this; }

  // --- used by the exchange in progress ---
  evbuffer* input() const override { return bufferevent_get_input(bev_.get()); }
  evbuffer* output() const override { return bufferevent_get_output(bev_.get()); }
  const std::string& peer_ip() const override { return peer_ip_; }
  Worker& worker() override { return worker_; }
  // Reading from the client (request body): on or off.
  void SetReading(bool on) override;
  // Be told (OnClientDrained) when the output falls below `low` bytes; 0 turns it off.
  void NotifyWhenDrained(size_t low) override;
  // Sends queued output now (see WriteNow).
  void Flush() override { WriteNow(bev_.get()); }
  // Counts body bytes written for the access log.
  void CountBodyBytes(uint64_t n) override { body_bytes_ += n; }
  // The exchange queued its whole response. `keep_alive`: the connection may serve another request.
  // Destroys the exchange.
  void FinishExchange(int status, bool keep_alive) override;
  // The exchange failed before sending anything: answer `status` with `detail`, then close.
  // Destroys the exchange.
  void FailExchange(int status, const std::string& detail) override;
  // The exchange failed after part of the response was sent: cut the connection so the client sees
  // an incomplete response. Deletes this connection.
  void AbortExchange() override;
  bool secure() const override { return tls_; }
  // The exchange collected an ESI page (or a page that turned out to hold no ESI): deliver it.
  void CollectExchange(Collected result) override;

 private:
  // kClosing: flushing the last response. kLingering: flushed and half-closed; reading and
  // discarding what the client still sends, so the kernel does not answer it with a reset that
  // would destroy the response before the client read it.
  // kWaiting: another request is fetching this one's object (single-flight).
  enum class State { kReadingHead, kBusy, kWaiting, kClosing, kLingering };

  static void OnRead(bufferevent* bev, void* arg);
  static void OnWrite(bufferevent* bev, void* arg);
  static void OnEvent(bufferevent* bev, short what, void* arg);
  static void OnHeadTimer(evutil_socket_t, short, void* arg);
  static void OnDeferred(evutil_socket_t, short, void* arg);

  // Parses and dispatches every complete request in the input. May delete this.
  void ProcessInput();
  void Dispatch();
  void ServeLocal();
  // Looks the request up in the store (lookup_): serves a hit, joins or leads the fetch (or, for a
  // resident page, the render) of a miss.
  void ServeCached(const std::string& key);
  // LookupClient: a hit is delivered with X-Cache: hit; a fetch is a render for a resident page,
  // else an exchange; a failed fill is answered with its status, a wait too long with 503.
  bool ServeStored(const cache::ObjectRef& object, Found found) override;
  void FetchFor(std::string fill_key) override;
  void Refresh(std::string key) override;
  void FillFailed(int status, const std::string& detail) override;
  void WaitTimedOut() override;
  // A page of the resident renderer (resident_): from the store when it is repository-neutral,
  // else rendered for this request.
  void ServeResident();
  // Renders resident_; a non-empty `fill_key` makes it the render that fills the store.
  void StartRender(std::string fill_key);
  void OnRendered(Rendered rendered);
  // Sends a rendered page whose body is a stream (StreamResponse).
  void StartStream(Rendered rendered);
  // Forwards the request; a non-empty `fill_key` makes it the fetch that fills the store.
  void StartExchange(std::string fill_key);
  // Answers from a stored object; false when the object failed its integrity check.
  // `text`: the object's identity body when at hand (a frame rendered for this request).
  bool Deliver(const cache::ObjectRef& object, std::string_view x_cache,
               std::shared_ptr<const std::string> text = {});
  // Answers with the ESI page `page` assembled for this request.
  void StartEsi(cache::ObjectRef page, std::string_view x_cache,
                std::shared_ptr<const std::string> text = {});
  void ServeAdmin();
  void ServeInvalidation(bool ban, bool keep);
  void ServeRenderPause(bool pause, bool keep);
  void ServeWarm(std::string_view path, bool keep);
  // Queues a complete locally made response and finishes the request.
  void Respond(int status, std::string_view content_type, std::string_view body, bool keep_alive,
               std::string_view extra_headers = {});
  void RespondError(int status, std::string_view detail);
  void FinishRequest(int status, bool keep_alive);
  // After the response is queued: close when flushed, or wait for the next request.
  void AfterResponse(bool keep_alive);
  void ArmHeadTimer(std::chrono::milliseconds ms);
  void ApplyIoTimeouts(bool reading_body);
  void CloseWhenFlushed();
  void StartLingering();
  // Closes on the next loop iteration, when no callback of ours is on the stack.
  void CloseSoon();
  // Parses the next pipelined request on the next loop iteration.
  void ResumeSoon();
  // The exchange (or ESI response) may be on the stack when it ends; it is freed from a later callback.
  void RetireExchange();
  // "Strict-Transport-Security: ...\r\n" on a TLS connection when hsts= is set, else "".
  std::string Hsts() const {
    return tls_ && !runtime_->config->hsts.empty() ? "Strict-Transport-Security: " + runtime_->config->hsts + "\r\n"
                                                   : std::string();
  }
  void FreeRetired();

  Worker& worker_;
  const Site site_;
  const bool tls_ = false;
  BufferEventPtr bev_;
  EventPtr head_timer_;
  EventPtr deferred_;
  bool rendering_ = false;  // kWaiting for a resident render (StartRender .. OnRendered)
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // single-flight wakes only a live connection
  CacheLookup lookup_{*this, worker_, alive_};
  std::string cache_key_;
  enum class Deferred { kNone, kResume, kClose } deferred_action_ = Deferred::kNone;
  bool head_timer_is_idle_ = false;
  uint64_t served_ = 0;
  bool in_request_ = false;
  size_t lingered_ = 0;
  std::vector<std::unique_ptr<ProxyExchange>> retired_;
  std::string peer_ip_;
  State state_ = State::kReadingHead;
  bool close_after_response_ = false;
  std::unique_ptr<ProxyExchange> exchange_;
  std::unique_ptr<EsiResponse> esi_;
  std::vector<std::unique_ptr<EsiResponse>> retired_esi_;
  std::unique_ptr<StreamResponse> stream_;  // a resident page sent piece by piece (a snapshot)
  std::vector<std::unique_ptr<StreamResponse>> retired_streams_;
  std::shared_ptr<const Runtime> runtime_;  // held for the request in progress

  // The request in progress (for the access log and metrics).
  http::RequestHead request_;
  std::chrono::steady_clock::time_point started_;
  uint64_t body_bytes_ = 0;
  const char* cache_status_ = "pass";
  Route route_ = Route::kProxy;
  std::optional<gitfrag::Route> resident_;  // the request is a resident page
  std::string memo_base_;  // its page memo key but the repository's state (PageMemoBase); "": none
};

}  // namespace shellac::proxy

// exchange: one request forwarded to the backend and its response streamed back.
//
// Owned by the ExchangeClient it serves and driven from that client's worker thread.
// Streams both bodies with backpressure: neither direction buffers more than kStreamWindow bytes
// beyond what the socket buffers hold, so a 50 MB transfer costs the same memory as a 5 KB one.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/event_ptr.h"
#include "proxy/http1.h"
#include "proxy/runtime.h"
#include "proxy/single_flight.h"
#include "proxy/upstream.h"

namespace shellac::proxy {

class Worker;

// What a collecting exchange hands back instead of streaming the response (see ProxyExchange).
struct Collected {
  cache::ObjectRef object;  // the whole response (its status too); with a template when it was ESI
  bool stored = false;      // the object is in the store too
};

// Who asked for an exchange, and is told how it ended: a client connection (StreamingClient), an
// ESI include, or a background refresh of a stale object. Called on the owning worker thread only.
// Each end retires the exchange (it may be on the stack).
class ExchangeClient {
 public:
  virtual ~ExchangeClient() = default;
  virtual Worker& worker() = 0;
  virtual const std::string& peer_ip() const = 0;
  // The request came over TLS (X-Forwarded-Proto: https, and HSTS when configured).
  virtual bool secure() const { return false; }
  // The exchange ended with a whole response held rather than streamed: an ESI page, a response
  // decoded to be stored, every response of a collecting exchange. For a refresh (Collect::
  // kStoreOnly) of a response that was not collected, `object` is what was stored, or null.
  virtual void CollectExchange(Collected result) = 0;
  // The exchange failed: `status` with `detail`. For a StreamingClient, before anything was sent.
  virtual void FailExchange(int status, const std::string& detail) = 0;
};

// A client the response is streamed to as it arrives, with backpressure both ways: a client
// connection. It also sends the request body.
class StreamingClient : public ExchangeClient {
 public:
  virtual evbuffer* input() const = 0;   // request body bytes
  virtual evbuffer* output() const = 0;  // response bytes go here
  virtual void SetReading(bool on) = 0;
  // Call OnClientDrained when output falls below `low` bytes; 0 turns it off.
  virtual void NotifyWhenDrained(size_t low) = 0;
  virtual void Flush() = 0;
  virtual void CountBodyBytes(uint64_t n) = 0;
  // The whole response was queued; `keep_alive`: the connection may serve another request.
  virtual void FinishExchange(int status, bool keep_alive) = 0;
  // The exchange failed after part of the response was sent.
  virtual void AbortExchange() = 0;
};

class ProxyExchange {
 public:
  // How an exchange without a StreamingClient treats the response.
  enum class Collect {
    kWhole,      // every response is collected and handed over whole (an include)
    kStoreOnly,  // the response is stored when HTTP allows and its bytes dropped (a refresh)
  };

  // A non-empty `fill_key` makes this the single-flight leader for that key: the response is
  // streamed to the client and, when HTTP allows, stored; waiters are told the outcome.
  //
  // A response to be processed as ESI (esi=, esi-url=, Surrogate-Control) is not streamed: its body
  // is collected, parsed into a template and handed over whole (CollectExchange), stored or not.
  ProxyExchange(StreamingClient& client, std::shared_ptr<const Runtime> runtime,
                http::RequestHead& request, std::string fill_key = {});
  // An exchange nobody streams from: `request` must have no body (nor Expect: 100-continue).
  ProxyExchange(ExchangeClient& client, std::shared_ptr<const Runtime> runtime,
                http::RequestHead& request, std::string fill_key, Collect how);
  ~ProxyExchange();
  ProxyExchange(const ProxyExchange&) = delete;
  ProxyExchange& operator=(const ProxyExchange&) = delete;

  // Starts the exchange. May finish (and destroy) it before returning.
  void Start();
  // The client sent more request-body bytes.
  void OnClientReadable();
  // The client's output buffer fell below the low-water mark.
  void OnClientDrained();
  // True once request-body reading needs the client's read timeout.
  bool reading_body() const { return !body_done_; }
  bool response_started() const { return response_started_; }

 private:
  static void OnUpstreamRead(bufferevent* bev, void* arg);
  static void OnUpstreamWrite(bufferevent* bev, void* arg);
  static void OnUpstreamEvent(bufferevent* bev, short what, void* arg);

  std::string BuildUpstreamHead() const;
  // Sends the request on an idle kept-alive connection, or a new one when `fresh` or none is idle.
  void Connect(bool fresh);
  void Retry();
  void QueueHead();
  void OnConnected();
  // Moves request-body bytes from the client to the upstream as far as the window allows.
  void PumpRequestBody();
  // Handles upstream input: the head, then body bytes to the client.
  void PumpResponse();
  void SendResponseHead();
  void FinishResponse();
  // The response is complete: back to the pool when the connection can serve another, else closed.
  void ReleaseUpstream();
  void UpstreamFailed(UpstreamError kind, int status, const std::string& detail);
  bool CanRetry() const;
  // Cache fill: decides at the response head whether to store, feeds the body as it passes, and
  // tells the waiters. Each is a no-op without a fill.
  void StartCapture();
  void Capture(evbuffer* from, size_t n);
  void CompleteFill(FillResult result);
  // The stored object, or null.
  cache::ObjectRef StoreFill();
  // Whether this response is to be processed as ESI.
  bool WantsEsi() const;
  // The end of a collected response: decode, parse, build (and maybe store) the object.
  void FinishCollect();
  // Where response bytes go, and what the streaming client is asked to do with them (a refresh
  // drops them).
  evbuffer* Output() const { return stream_ ? stream_->output() : sink_.get(); }
  void FlushOutput();
  // A failure: answered when nothing was sent yet, else the streaming client's response is cut.
  void Failed(int status, const std::string& detail);

  ExchangeClient& client_;
  StreamingClient* stream_ = nullptr;  // null: nobody streams from this exchange
  EvbufferPtr sink_;                    // a refresh's response bytes, dropped as they come
  Worker& worker_;
  std::shared_ptr<const Runtime> runtime_;
  const conf::Config& config_;
  http::RequestHead& request_;

  BufferEventPtr upstream_;
  bool reused_ = false;
  bool retried_ = false;
  bool connected_ = false;
  std::string upstream_head_;
  bool head_queued_ = false;  // a chunked request's head waits until its first chunk parses

  // Request body.
  bool body_done_ = true;
  uint64_t body_remaining_ = 0;
  http::ChunkedDecoder body_decoder_;

  // Response.
  bool head_received_ = false;
  bool response_started_ = false;
  bool upstream_got_bytes_ = false;
  bool upstream_eof_ = false;
  http::ResponseHead response_;
  uint64_t response_remaining_ = 0;
  http::ChunkedDecoder response_decoder_;
  bool client_chunked_ = false;
  bool client_keep_alive_ = false;
  std::chrono::steady_clock::time_point sent_at_;
  EvbufferPtr scratch_;  // decoded chunk data on its way to being re-framed

  struct Fill;
  std::unique_ptr<Fill> fill_;
  bool collect_ = false;     // asked to collect every response
  bool esi_ = false;         // this response is ESI
  bool collecting_ = false;  // collect_ || esi_, decided at the response head
  EvbufferPtr collected_;
  std::vector<cache::Header> kept_headers_;  // views into response_, for the stored object
};

}  // namespace shellac::proxy

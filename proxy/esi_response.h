// esi_response: delivers one ESI page. The page's template is evaluated for this request, every
// include is requested at once (store, single-flight, upstream; esi-parallel at a time), and the
// output is written in document order as each prefix becomes ready, so the first byte never waits
// for the last include.
//
// Output. A client that accepts gzip gets one gzip member stitched from stored deflate segments:
// the page's literal spans and stored fragments as stored, text made for this request (esi:vars)
// compressed at a fast level. Any other client gets identity bytes, inflated as they are written.
// When every include was ready at once (all from the store) the response carries Content-Length;
// otherwise it is chunked (HTTP/1.0: delimited by the close).
//
// Failure (the ESI note, see esi/assembly.h): a page that fails before its first byte is answered
// 502 with the reason; after, the connection is cut so that the client sees the response
// incomplete.
//
// Include requests carry the client's request headers (Cookie and Authorization included, as
// Varnish's ESI subrequests do) with Host set to the include's host, and are looked up in the store
// by the same rules as a client's request: with Cookie or Authorization they are fetched each time.
//
// Owned by the client connection; driven on its worker thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache.h"
#include "esi/esi.h"
#include "proxy/event_ptr.h"
#include "proxy/exchange.h"
#include "proxy/http1.h"
#include "proxy/runtime.h"

namespace shellac::proxy {

class Worker;

class IncludeFetch;

class EsiResponse {
 public:
  // `page` holds an ESI template. `request` is the client's request in progress: it must outlive
  // this. `x_cache` is the page's own cache status. `text`, when given, is the page's identity
  // body: an identity client is answered from it instead of inflating the page's segments.
  EsiResponse(StreamingClient& client, std::shared_ptr<const Runtime> runtime,
              const http::RequestHead& request, cache::ObjectRef page, std::string_view x_cache,
              bool keep_alive, std::shared_ptr<const std::string> text = {});
  ~EsiResponse();
  EsiResponse(const EsiResponse&) = delete;
  EsiResponse& operator=(const EsiResponse&) = delete;

  // Starts. May end the response (FinishExchange, FailExchange, AbortExchange) before returning.
  void Start();
  // The client's output buffer fell below the low-water mark.
  void OnClientDrained();

  // --- used by IncludeFetch ---
  Worker& worker() { return client_.worker(); }
  const std::shared_ptr<const Runtime>& runtime() const { return runtime_; }
  const http::RequestHead& request() const { return request_; }
  const std::string& peer_ip() const { return client_.peer_ip(); }
  bool secure() const { return client_.secure(); }
  // Include `fetch` ended: with a response (any status), or without one and `failure` set.
  // `text`, when given, is the response's identity body (a part rendered for this request): an
  // identity client gets it instead of the object's segments inflated.
  void OnInclude(const esi::Fetch& fetch, cache::ObjectRef object, const std::string& failure,
                 std::shared_ptr<const std::string> text = {});
  // Whether the client accepts gzip (set by Start).
  bool gzip() const { return gzip_; }

 private:
  struct Body {
    cache::ObjectRef object;
    std::vector<cache::SegmentView> segments;
    std::vector<uint64_t> starts;  // identity offset of each segment
    std::shared_ptr<const std::string> text;  // the identity bytes, when known
  };
  class Sink;

  // `text`: the object's identity body, when known (kept only when its length matches).
  uintptr_t AddBody(cache::ObjectRef object, std::shared_ptr<const std::string> text = {});
  esi::Plan PlanFor(uintptr_t body, const esi::Location& base) const;
  void Pump();
  // Writes one piece to pending_; false when a stored body failed its check.
  bool Emit(const esi::Piece& piece);
  // `length` >= 0: the whole body is known (Content-Length); < 0: chunked or close-delimited.
  void SendHead(int64_t length);
  // Moves what pending_ holds to the client's output (as a chunk when chunked), the head first if
  // it has not gone out; false when pending_ was empty.
  bool MovePending();
  // MovePending, then writes.
  void FlushPending();
  void Finish();
  void PageFailed(std::string why);
  // Counts what evaluation and assembly noticed (a depth limit met, a host refused...) and logs it.
  void LogIssues();

  StreamingClient& client_;
  std::shared_ptr<const Runtime> runtime_;
  const http::RequestHead& request_;
  std::string x_cache_;
  bool keep_alive_;
  bool gzip_ = false;
  bool head_sent_ = false;
  bool chunked_ = false;
  bool pumping_ = false;
  bool again_ = false;
  bool ended_ = false;
  uint64_t body_bytes_ = 0;
  std::string cookie_;  // the client's Cookie headers joined, for $(HTTP_COOKIE)
  std::string host_;    // the page's host: the base of its includes, $(HTTP_HOST)
  esi::RequestContext context_;
  esi::EvalOptions options_;
  std::deque<Body> bodies_;  // index = Plan::body; [0] is the page
  std::unique_ptr<esi::Assembly> assembly_;
  std::vector<std::unique_ptr<IncludeFetch>> fetches_;
  std::string last_failure_;
  EvbufferPtr pending_;  // output not yet handed to the client
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<cache::GzipStitcher> stitcher_;
  std::unique_ptr<cache::LiteralEncoder> literal_encoder_;  // made for the first esi:vars text
  cache::Inflater inflater_;
};

}  // namespace shellac::proxy

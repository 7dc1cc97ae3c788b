// stream_response: sends a resident page whose body is a gitfrag::BodyStream (a snapshot): the
// head at once, then one piece at a time, each made on the render pool (at the part class, in
// the client's fair share) and written when it comes back. One piece is in flight at a time, and
// the next is asked for only while the client's output holds less than kHighWater bytes, so a
// slow client holds neither a render thread nor more than about a megabyte. A stream that knows
// its length (a file) gets Content-Length; otherwise HTTP/1.1 gets chunked framing and HTTP/1.0 a
// body delimited by the close. Neither stored nor compressed.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gitfrag/gitfrag.h"
#include "proxy/exchange.h"
#include "proxy/http1.h"
#include "proxy/runtime.h"

namespace shellac::proxy {

class StreamResponse {
 public:
  static constexpr size_t kHighWater = 1 << 20;

  // `headers`: the page's (Content-Type first). `client` outlives this object (it owns it).
  StreamResponse(StreamingClient& client, std::shared_ptr<const Runtime> runtime,
                 const http::RequestHead& request,
                 std::vector<std::pair<std::string, std::string>> headers,
                 std::shared_ptr<gitfrag::BodyStream> stream, gitfrag::Admission admission,
                 bool keep_alive, std::string extra_headers);
  ~StreamResponse();
  StreamResponse(const StreamResponse&) = delete;
  StreamResponse& operator=(const StreamResponse&) = delete;

  // Writes the head and asks for the first piece. May finish (FinishExchange) before returning.
  void Start();
  // The client's output fell below the low-water mark.
  void OnClientDrained();

 private:
  void RequestPiece();
  void OnPiece(gitfrag::BodyStream::SharedPiece piece, gitfrag::BodyStream::Result result,
               const std::string& error);

  StreamingClient& client_;
  std::shared_ptr<const Runtime> runtime_;
  const bool head_only_;
  const std::optional<uint64_t> length_;  // the stream's, sent as Content-Length
  const bool chunked_;
  const bool keep_alive_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string extra_headers_;
  std::shared_ptr<gitfrag::BodyStream> stream_;
  gitfrag::Admission admission_;
  bool waiting_for_drain_ = false;
  bool in_flight_ = false;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace shellac::proxy

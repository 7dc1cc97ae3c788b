#include "proxy/stream_response.h"

#include <event2/buffer.h>

#include <string>

#include "proxy/worker.h"

namespace shellac::proxy {

StreamResponse::StreamResponse(StreamingClient& client, std::shared_ptr<const Runtime> runtime,
                               const http::RequestHead& request,
                 std::vector<std::pair<std::string, std::string>> headers,
                               std::shared_ptr<gitfrag::BodyStream> stream,
                               gitfrag::Admission admission, bool keep_alive,
                               std::string extra_headers)
    : client_(client),
      runtime_(std::move(runtime)),
      head_only_(request.method == "HEAD"),
      length_(stream->Length()),
      chunked_(request.minor_version >= 1 && !length_),
      // An HTTP/1.0 body without a length ends with the connection.
      keep_alive_(keep_alive && request.minor_version >= 1),
      headers_(std::move(headers)),
      extra_headers_(std::move(extra_headers)),
      stream_(std::move(stream)),
      admission_(std::move(admission)) {
  // A piece nobody will read leaves the queue when the client has gone.
  admission_.requester = std::weak_ptr<void>(alive_);
  admission_.render_class = gitfrag::RenderClass::kPart;
}

StreamResponse::~StreamResponse() = default;

namespace {

// A piece this large is handed to the output buffer as it is (held until the buffer has sent
// it; a kept snapshot's piece is shared with the cache and other readers), not copied: a
// snapshot's pieces are 256 KiB, and copying them was 4 % of a cold archive's time. A small one
// is copied (a reference costs a chain and a callback of its own).
constexpr size_t kReferencedPiece = 16 * 1024;

void AddPiece(evbuffer* out, gitfrag::BodyStream::SharedPiece piece) {
  if (piece->size() < kReferencedPiece) {
    evbuffer_add(out, piece->data(), piece->size());
    return;
  }
  auto* held = new gitfrag::BodyStream::SharedPiece(std::move(piece));
  const auto release = [](const void*, size_t, void* arg) {
    delete static_cast<gitfrag::BodyStream::SharedPiece*>(arg);
  };
  if (evbuffer_add_reference(out, (*held)->data(), (*held)->size(), release, held) != 0) {
    evbuffer_add(out, (*held)->data(), (*held)->size());
    delete held;
  }
}

}  // namespace

void StreamResponse::Start() {
  std::string head = "HTTP/1.1 200 OK\r\n";
  for (const auto& [name, value] : headers_) head.append(name).append(": ").append(value).append("\r\n");
  head.append("Date: ").append(client_.worker().HttpDate()).append("\r\n");
  head.append("Via: 1.1 shellac\r\nX-Cache: pass\r\n");
  if (length_) head.append("Content-Length: ").append(std::to_string(*length_)).append("\r\n");
  if (chunked_) head.append("Transfer-Encoding: chunked\r\n");
  if (!keep_alive_) head.append("Connection: close\r\n");
  head.append(extra_headers_);
  head.append("\r\n");
  evbuffer_add(client_.output(), head.data(), head.size());
  client_.Flush();
  if (head_only_) {
    client_.FinishExchange(200, keep_alive_);
    return;
  }
  RequestPiece();
}

void StreamResponse::RequestPiece() {
  in_flight_ = true;
  Worker* worker = &client_.worker();
  std::weak_ptr<int> alive = alive_;
  auto stream = stream_;
  auto job = [worker, alive, stream, this] {
    gitfrag::BodyStream::SharedPiece piece;
    std::string error;
    const auto result = stream->NextShared(&piece, &error);
    worker->Post([alive, this, piece = std::move(piece), result, error]() mutable {
      if (!alive.expired()) OnPiece(std::move(piece), result, error);
    });
  };
  auto refused = [worker, alive, this](gitfrag::Refusal) {
    worker->Post([alive, this] {
      if (!alive.expired())
        OnPiece({}, gitfrag::BodyStream::Result::kFailed, "the render queue refused a piece");
    });
  };
  if (runtime_->site == nullptr ||
      worker->shared().render_pool->SubmitJob(admission_, std::move(job), std::move(refused)) ==
          gitfrag::RenderPool::Submitted::kBusy) {
    in_flight_ = false;
    client_.AbortExchange();  // the head is sent: all that is left is to cut the response
  }
}

void StreamResponse::OnPiece(gitfrag::BodyStream::SharedPiece piece,
                             gitfrag::BodyStream::Result result, const std::string& error) {
  in_flight_ = false;
  if (result == gitfrag::BodyStream::Result::kFailed) {
    (void)error;  // the response is cut; the client sees an incomplete body
    client_.AbortExchange();
    return;
  }
  evbuffer* out = client_.output();
  if (piece && !piece->empty()) {
    if (chunked_) {
      char size[24];
      const int n = snprintf(size, sizeof size, "%zx\r\n", piece->size());
      evbuffer_add(out, size, static_cast<size_t>(n));
    }
    const size_t size = piece->size();
    AddPiece(out, std::move(piece));
    if (chunked_) evbuffer_add(out, "\r\n", 2);
    client_.CountBodyBytes(size);
  }
  if (result == gitfrag::BodyStream::Result::kDone) {
    if (chunked_) evbuffer_add(out, "0\r\n\r\n", 5);
    client_.Flush();
    client_.FinishExchange(200, keep_alive_);
    return;
  }
  client_.Flush();
  if (evbuffer_get_length(out) >= kHighWater) {
    waiting_for_drain_ = true;
    client_.NotifyWhenDrained(kHighWater / 4);
    return;
  }
  RequestPiece();
}

void StreamResponse::OnClientDrained() {
  if (!waiting_for_drain_ || in_flight_) return;
  if (evbuffer_get_length(client_.output()) >= kHighWater / 4) return;
  waiting_for_drain_ = false;
  client_.NotifyWhenDrained(0);
  RequestPiece();
}

}  // namespace shellac::proxy

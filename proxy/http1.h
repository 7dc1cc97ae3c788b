// http1: shellac's HTTP/1.x codec. Parses request and response heads and chunked bodies out of
// libevent evbuffers. No I/O and no allocation per byte; every input, however hostile, ends in a
// head, "need more bytes", or an error carrying the HTTP status to answer with.
//
// Why not evhttp: libevent 2.1's evhttp cannot stream a request body on the server side, cannot
// pause a transfer for backpressure, and accepts framing shapes that a front proxy must refuse
// (bare LF, obs-fold, Content-Length together with Transfer-Encoding). This codec is strict on the
// client side (RFC 9112, no leniency that could desynchronise us from the origin) and tolerant only
// where tolerance is safe (bare LF from the origin).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"

struct evbuffer;

namespace shellac::http {

struct Header {
  std::string name;
  std::string value;
};

// The largest Content-Length accepted (18 digits): far beyond any body, and far enough from 2^64
// that offsets and sums of lengths cannot overflow. A larger value is refused as invalid.
inline constexpr uint64_t kMaxContentLength = 999'999'999'999'999'999;

// Calls fn(element) for each comma-separated element of a list-valued field, trimmed, skipping empty
// elements (RFC 9110 5.6.1).
template <typename Fn>
void ForEachListElement(std::string_view value, Fn fn) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    const std::string_view element = base::TrimOws(value.substr(0, comma));
    if (!element.empty()) fn(element);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

enum class BodyKind { kNone, kLength, kChunked, kUntilClose };

struct Limits {
  uint64_t max_request_line = 8 << 10;
  uint64_t max_header_count = 100;
  uint64_t max_header_bytes = 32 << 10;
};

struct RequestHead {
  std::string method;
  std::string target;  // origin-form ("/x?y"), or as sent for "*"
  int minor_version = 1;  // HTTP/1.<minor>
  std::vector<Header> headers;  // in arrival order, names as sent
  std::string host;             // from the Host header or an absolute-form target
  BodyKind body = BodyKind::kNone;
  uint64_t content_length = 0;
  bool keep_alive = true;
  bool expect_continue = false;

  const Header* Find(std::string_view name) const;
};

struct ResponseHead {
  int status = 0;
  std::string reason;
  int minor_version = 1;
  std::vector<Header> headers;
  BodyKind body = BodyKind::kNone;
  uint64_t content_length = 0;
  bool keep_alive = true;  // the origin allows reuse of the connection after this response
};

// Outcome of a parse step. On kError, `status` is the HTTP status to answer with and `detail`
// a short reason for the one-line error body.
struct ParseResult {
  enum Kind { kIncomplete, kDone, kError } kind = kIncomplete;
  int status = 0;
  std::string detail;
  static ParseResult Error(int status, std::string detail) {
    return ParseResult{kError, status, std::move(detail)};
  }
};

// Parses a request head at the start of `in`. On kDone the head's bytes are drained from `in`
// (the body and any pipelined requests stay). On kIncomplete nothing is drained.
ParseResult ParseRequestHead(evbuffer* in, const Limits& limits, RequestHead* out);

// Parses a response head at the start of `in` for a request with method `method`.
// kDone drains the head; 1xx interim heads are returned too (the caller skips them).
ParseResult ParseResponseHead(evbuffer* in, uint64_t max_header_bytes, std::string_view method,
                              ResponseHead* out);

// True for headers that describe one connection only and must not be forwarded
// (RFC 9110 7.6.1), including every header named in `connection_tokens`.
bool IsHopByHop(std::string_view name, const std::vector<std::string>& connection_tokens);
// The comma-separated tokens of every Connection header, lower-cased.
std::vector<std::string> ConnectionTokens(const std::vector<Header>& headers);

// Decodes a chunked body incrementally.
class ChunkedDecoder {
 public:
  enum class Step { kNeedMore, kProgress, kDone, kError };
  // Moves at most `max_out` decoded body bytes from `in` to `out`, consuming framing as it goes.
  // kProgress: some bytes moved or framing consumed, call again; kNeedMore: `in` ran dry;
  // kDone: the last chunk and trailers are consumed (bytes after them stay in `in`);
  // kError: malformed framing, see error().
  Step Decode(evbuffer* in, evbuffer* out, size_t max_out);
  const std::string& error() const { return error_; }
  uint64_t decoded() const { return decoded_; }
  // True once the first chunk-size line has been read and found well formed.
  bool framing_seen() const { return framing_seen_; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;
  uint64_t decoded_ = 0;
  unsigned trailer_lines_ = 0;
  bool framing_seen_ = false;
  std::string error_;
};

// Reason phrase of a status code ("Bad Gateway"), or "Unknown".
const char* ReasonPhrase(int status);

}  // namespace shellac::http

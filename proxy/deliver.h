// deliver: answers a request from a stored object.
//
// A client that accepts gzip gets one gzip member stitched from the stored deflate segments (never
// inflated or recompressed); any other client gets the identity body, inflated as it is written.
// Also: HEAD, conditional requests (304) against the object's strong ETag or Last-Modified, and a
// single byte range (206) on the identity body. Runs on a worker thread; writes into `out`.
#pragma once

#include <event2/buffer.h>

#include <chrono>
#include <string>
#include <string_view>

#include "cache/cache.h"
#include "proxy/event_ptr.h"
#include "proxy/http1.h"

namespace shellac::proxy {

struct Delivered {
  int status = 0;
  uint64_t body_bytes = 0;
  bool gzip = false;  // stitched (true) or inflated (false); meaningless without a body
  bool ok = true;     // false: the stored body failed its check (corrupt); nothing was written
};

// `identity`, when given, is the object's body as identity bytes (the page just rendered for this
// request): an identity answer or a range is cut from it instead of inflating the object.
Delivered DeliverObject(evbuffer* out, const cache::Object& object, const http::RequestHead& request,
                        std::string_view x_cache, std::chrono::sys_seconds now, std::string_view date,
                        bool keep_alive, std::string_view extra_headers = {},
                        const std::string* identity = nullptr);

// Varnish's default: only GET and HEAD without a body, credentials or cookies are looked up in the
// store.
bool IsCacheableRequest(const http::RequestHead& request);

inline std::chrono::sys_seconds NowSeconds() {
  return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
}

// True when the request's Accept-Encoding admits gzip (q > 0, by name or "*").
bool AcceptsGzip(const http::RequestHead& request);

}  // namespace shellac::proxy

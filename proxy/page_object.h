// page_object: turns a whole response body (identity bytes in memory) into a cache Object, the
// form every ESI delivery reads from, stored or not.
//
// A body that is an ESI template is compressed with each literal span of the template as its own
// full-flushed segment (cache::FlushMode::kFull), and the markup between them in segments of their
// own: a delivery then emits exactly the literal segments a request's plan names, skipping the
// rest, and the result is still valid deflate (a full flush leaves nothing to refer back to).
// Any other body is compressed as the store always does (sync flush, 64 KiB segments; at level 1,
// a resident part's, by igzip, and a page made for one request (PageSpec::transient) by igzip's
// level 0 with codes made from cgit markup: cache::FlushEncoder). A resident part that names
// `shared` ranges (a file view's line numbers) takes each from the render thread's memo of such
// pieces, compressed once, and compresses only the text between them.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "cache/cache.h"
#include "esi/esi.h"

namespace shellac::proxy {

struct PageSpec {
  int status = 200;
  std::span<const cache::Header> headers;  // the ones worth keeping
  std::chrono::sys_seconds stored_at{};
  std::chrono::seconds ttl{0};
  std::chrono::seconds grace{0};
  std::shared_ptr<const esi::Template> esi_template;  // null, or a template with esi() true
  int level = 6;  // zlib level (an upstream page stored: 6; resident pages and per-request ones: 1)
  // A page made for one request (not stored). A frame (ESI template): its literal spans are cut
  // further at `shared` (ranges other pages repeat, gitfrag::Page::shared), each such range
  // compressed once per thread (igzip) and reused, the rest compressed small and fast
  // (base::FixedChain). Any other page is compressed whole by igzip (level 0, markup codes), or,
  // when it names `shared` ranges, cut at them as a frame is. With `compress` false (an identity client, or a type compressed
  // already) nothing is compressed: stored blocks. A stored part at level 1 takes its `shared`
  // ranges from the same memo.
  bool transient = false;
  bool compress = true;
  std::span<const std::pair<uint64_t, uint64_t>> shared;
};

// Whether deflate gains anything on a body of `content_type`: not on images, audio, video, fonts
// and archives, which are compressed already (svg is text), nor on bytes of no known type
// (application/octet-stream). A page made for one request of such a type is not compressed.
bool Compressible(std::string_view content_type);

// Builds the object for `body` under `key`. Null with *status set on failure.
cache::ObjectRef MakePageObject(std::string_view key, std::string_view body, const PageSpec& spec,
                                cache::Status* status);

// Undoes a Content-Encoding of gzip (one member or several), x-gzip or deflate in place. False
// with *why set for another coding or a corrupt body. `limit` caps the decoded size.
bool DecodeContent(std::string_view coding, size_t limit, std::string* body, std::string* why);

}  // namespace shellac::proxy

#include "proxy/deliver.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "base/text.h"
#include "cache/cache.h"

namespace shellac::proxy {
namespace {

using base::EqualsIgnoreCase;
using http::ForEachListElement;
using base::ParseDecimal;
using base::TrimOws;

class EvbufferSink : public cache::ByteSink {
 public:
  explicit EvbufferSink(evbuffer* out) : out_(out) {}
  void Copy(std::string_view bytes) override {
    evbuffer_add(out_, bytes.data(), bytes.size());
    written_ += bytes.size();
  }
  uint64_t written() const { return written_; }

 private:
  evbuffer* out_;
  uint64_t written_ = 0;
};

class StringSink : public cache::ByteSink {
 public:
  void Copy(std::string_view bytes) override { text.append(bytes); }
  std::string text;
};

// "W/\"x\"" and "\"x\"" compare equal (weak comparison, RFC 9110 8.8.3.2).
std::string_view Opaque(std::string_view tag) {
  if (tag.starts_with("W/")) tag.remove_prefix(2);
  return tag;
}

bool NoneMatch(const http::RequestHead& request, std::string_view etag, bool* present) {
  *present = false;
  bool matched = false;
  for (const auto& h : request.headers) {
    if (!EqualsIgnoreCase(h.name, "if-none-match")) continue;
    *present = true;
    ForEachListElement(h.value, [&](std::string_view tag) {
      if (tag == "*" || Opaque(tag) == Opaque(etag)) matched = true;
    });
  }
  return matched;
}

// A single "bytes=" range over `length` bytes: [*first, *last]. nullopt: no usable Range header
// (absent, several ranges, in one header or several, other units: the whole body is sent).
// false: unsatisfiable.
std::optional<bool> SingleRange(const http::RequestHead& request, uint64_t length, uint64_t* first, uint64_t* last) {
  const http::Header* range = request.Find("range");
  if (range == nullptr) return std::nullopt;
  const auto ranges = std::count_if(request.headers.begin(), request.headers.end(),
                                    [](const http::Header& h) { return EqualsIgnoreCase(h.name, "range"); });
  if (ranges > 1) return std::nullopt;
  std::string_view spec = TrimOws(range->value);
  if (!spec.starts_with("bytes=") || spec.find(',') != std::string_view::npos) return std::nullopt;
  spec.remove_prefix(6);
  const auto dash = spec.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  uint64_t a = 0, b = 0;
  const std::string_view left = spec.substr(0, dash), right = spec.substr(dash + 1);
  if (left.empty()) {  // suffix: the last N bytes
    if (!ParseDecimal(right, &b)) return std::nullopt;
    if (b == 0 || length == 0) return false;
    *first = length - std::min(b, length);
    *last = length - 1;
    return true;
  }
  if (!ParseDecimal(left, &a)) return std::nullopt;
  if (right.empty()) b = length == 0 ? 0 : length - 1;
  else if (!ParseDecimal(right, &b) || b < a) return std::nullopt;
  if (a >= length) return false;
  *first = a;
  *last = std::min(b, length - 1);
  return true;
}

void AppendHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name).append(": ").append(value).append("\r\n");
}

}  // namespace

bool IsCacheableRequest(const http::RequestHead& request) {
  return (request.method == "GET" || request.method == "HEAD") && request.body == http::BodyKind::kNone &&
         request.Find("authorization") == nullptr && request.Find("cookie") == nullptr;
}

bool AcceptsGzip(const http::RequestHead& request) {
  bool gzip = false;
  for (const auto& h : request.headers) {
    if (!EqualsIgnoreCase(h.name, "accept-encoding")) continue;
    ForEachListElement(h.value, [&](std::string_view element) {
      const auto semi = element.find(';');
      const std::string_view coding = TrimOws(element.substr(0, semi));
      if (!EqualsIgnoreCase(coding, "gzip") && !EqualsIgnoreCase(coding, "x-gzip") && coding != "*") return;
      bool zero = false;
      if (semi != std::string_view::npos) {
        std::string_view q = TrimOws(element.substr(semi + 1));
        if (q.starts_with("q=") || q.starts_with("Q=")) {
          q.remove_prefix(2);
          zero = !q.empty() && std::all_of(q.begin(), q.end(), [](char c) { return c == '0' || c == '.'; });
        }
      }
      if (!zero) gzip = true;
    });
  }
  return gzip;
}

Delivered DeliverObject(evbuffer* out, const cache::Object& object, const http::RequestHead& request,
                        std::string_view x_cache, std::chrono::sys_seconds now, std::string_view date,
                        bool keep_alive, std::string_view extra_headers,
                        const std::string* identity) {
  Delivered result;
  const bool head_only = request.method == "HEAD";
  const uint64_t length = object.body_length();
  if (identity != nullptr && identity->size() != length) identity = nullptr;  // not this body
  std::vector<cache::SegmentView> segments;
  for (const auto& segment : object.segments()) segments.push_back(segment);

  // Representation: gzip when accepted (and no range asked for), else identity.
  uint64_t first = 0, last = 0;
  std::optional<bool> range;
  if (object.status() == 200) {
    range = SingleRange(request, length, &first, &last);
    // If-Range with a validator that does not match turns the range request into a full one.
    if (const http::Header* if_range = request.Find("if-range"); range && if_range != nullptr) {
      if (Opaque(if_range->value) != object.etag().view()) range.reset();
    }
  }
  result.gzip = !range && AcceptsGzip(request);
  // The store's validator is for the identity bytes; the gzip representation gets its own.
  std::string etag(object.etag().view());
  if (result.gzip) etag.insert(etag.size() - 1, "-gz");

  int status = object.status();
  bool etag_asked = false;
  if (NoneMatch(request, etag, &etag_asked)) {
    status = 304;
  } else if (!etag_asked) {
    const http::Header* ims = request.Find("if-modified-since");
    const auto last_modified = object.header("last-modified");
    if (ims != nullptr && last_modified) {
      const auto since = cache::ParseHttpDate(ims->value);
      const auto modified = cache::ParseHttpDate(*last_modified);
      if (since && modified && *modified <= *since) status = 304;
    }
  }
  if (status != 304 && range) status = *range ? 206 : 416;

  std::string head;
  head.reserve(512);
  head.append("HTTP/1.1 ").append(std::to_string(status)).push_back(' ');
  head.append(http::ReasonPhrase(status)).append("\r\n");
  for (const auto& h : object.headers()) {
    if (EqualsIgnoreCase(h.name, "etag") || EqualsIgnoreCase(h.name, "vary") || EqualsIgnoreCase(h.name, "age") ||
        EqualsIgnoreCase(h.name, "date") || EqualsIgnoreCase(h.name, "content-length") ||
        EqualsIgnoreCase(h.name, "content-encoding") ||
        (status == 304 && EqualsIgnoreCase(h.name, "content-type"))) {
      continue;
    }
    AppendHeader(&head, h.name, h.value);
  }
  AppendHeader(&head, "Date", date);
  const auto age = std::max<int64_t>(0, (now - object.stored_at()).count());
  AppendHeader(&head, "Age", std::to_string(age));
  AppendHeader(&head, "ETag", etag);
  AppendHeader(&head, "Vary", "Accept-Encoding");
  if (status == 200 || status == 206 || status == 416) AppendHeader(&head, "Accept-Ranges", "bytes");

  StringSink inflated;  // only for ranges, which need the identity bytes at hand
  uint64_t body_length = 0;
  if (status == 304) {
    body_length = 0;
  } else if (status == 416) {
    AppendHeader(&head, "Content-Range", "bytes */" + std::to_string(length));
  } else if (status == 206) {
    if (identity == nullptr) {
      if (!cache::Inflater().InflateAll(segments, inflated).ok()) {
        result.ok = false;
        return result;
      }
      identity = &inflated.text;
    }
    AppendHeader(&head, "Content-Range",
                 "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(length));
    body_length = last - first + 1;
  } else if (result.gzip) {
    AppendHeader(&head, "Content-Encoding", "gzip");
    body_length = cache::GzipStitcher::kFramingBytes + object.deflate_bytes();
  } else {
    body_length = length;
  }
  AppendHeader(&head, "Content-Length", std::to_string(body_length));
  AppendHeader(&head, "Via", "1.1 shellac");
  AppendHeader(&head, "X-Cache", x_cache);
  if (!keep_alive) AppendHeader(&head, "Connection", "close");
  else if (request.minor_version == 0) AppendHeader(&head, "Connection", "keep-alive");
  head.append(extra_headers);  // whole "Name: value\r\n" lines
  head.append("\r\n");

  // The body goes to a scratch buffer first so that a corrupt object (a failed crc) can still be
  // answered with an error instead of a half-written response.
  EvbufferPtr body(evbuffer_new());
  if (!head_only && status != 304 && status != 416) {
    EvbufferSink sink(body.get());
    if (status == 206) {
      sink.Copy(std::string_view(*identity).substr(first, body_length));
    } else if (result.gzip) {
      cache::GzipStitcher stitcher(sink);
      for (const auto& segment : segments) stitcher.AddStored(segment);
      stitcher.Finish();
    } else if (identity != nullptr) {
      sink.Copy(*identity);
    } else if (!cache::Inflater().InflateAll(segments, sink).ok()) {
      result.ok = false;
      return result;
    }
    result.body_bytes = sink.written();
  }
  evbuffer_add(out, head.data(), head.size());
  evbuffer_add_buffer(out, body.get());
  result.status = status;
  return result;
}

}  // namespace shellac::proxy

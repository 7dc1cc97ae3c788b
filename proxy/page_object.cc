#include "page_object.h"

#include <zlib.h>

#include <vector>

#include "deflate.h"
#include "http1.h"

namespace shellac::proxy {

cache::ObjectRef MakePageObject(std::string_view key, std::string_view body, const PageSpec& spec,
                                cache::Status* status) {
  const bool esi = spec.esi_template && spec.esi_template->esi();
  cache::SegmentEncoder::Options options;
  options.level = spec.level;
  if (esi) options.flush = cache::FlushMode::kFull;
  cache::SegmentEncoder encoder(options);
  cache::Status s;
  if (esi) {
    // Cut at both ends of every literal; literals come in document order.
    uint64_t at = 0;
    for (const esi::Instruction& in : spec.esi_template->instructions()) {
      if (in.op != esi::Op::kLiteral || in.length == 0) continue;
      if (in.offset > at && s.ok()) {
        s = encoder.Write(body.substr(at, in.offset - at));
        if (s.ok()) s = encoder.Cut();
      }
      if (s.ok()) s = encoder.Write(body.substr(in.offset, in.length));
      if (s.ok()) s = encoder.Cut();
      at = in.offset + in.length;
    }
    if (s.ok() && at < body.size()) s = encoder.Write(body.substr(at));
  } else {
    s = encoder.Write(body);
  }
  if (s.ok()) s = encoder.Finish();
  if (!s.ok()) {
    *status = s;
    return {};
  }
  const std::vector<cache::Segment> segments = encoder.TakeSegments();
  std::vector<cache::SegmentView> views;
  views.reserve(segments.size());
  for (const auto& segment : segments) views.push_back(segment.view());
  cache::ObjectSpec object;
  object.status = spec.status;
  object.headers = spec.headers;
  object.stored_at = spec.stored_at;
  object.ttl = spec.ttl;
  object.grace = spec.grace;
  object.body = views;
  if (esi) {
    object.esi_template = spec.esi_template;
    object.esi_template_bytes = spec.esi_template->memory_bytes();
  }
  return cache::Object::Create(key, object, status);
}

bool DecodeContent(std::string_view coding, size_t limit, std::string* body, std::string* why) {
  int window = 0;
  if (http::EqualsIgnoreCase(coding, "gzip") || http::EqualsIgnoreCase(coding, "x-gzip")) {
    window = 16 + MAX_WBITS;
  } else if (http::EqualsIgnoreCase(coding, "deflate")) {
    window = MAX_WBITS;  // zlib-wrapped, as RFC 9110 defines it
  } else {
    *why = "cannot decode Content-Encoding '" + std::string(coding) + "'";
    return false;
  }
  cache::InflateStream stream(new z_stream{});
  if (inflateInit2(stream.get(), window) != Z_OK) {
    delete stream.release();  // initialisation failed: nothing for inflateEnd
    *why = "out of memory";
    return false;
  }
  z_stream& z = *stream;
  std::string out;
  out.resize(std::min<size_t>(limit, std::max<size_t>(body->size() * 4, 4096)));
  z.next_in = reinterpret_cast<Bytef*>(body->data());
  z.avail_in = static_cast<uInt>(body->size());
  size_t produced = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (produced == out.size()) {
      if (out.size() >= limit) break;
      out.resize(std::min(limit, out.size() * 2));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(out.size() - produced);
    rc = inflate(&z, Z_NO_FLUSH);
    produced = out.size() - z.avail_out;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated
    if (rc == Z_BUF_ERROR) rc = Z_OK;
  }
  if (rc != Z_STREAM_END) {
    *why = produced >= limit ? "decoded body larger than " + std::to_string(limit) + " bytes"
                             : "corrupt or truncated " + std::string(coding) + " body";
    return false;
  }
  out.resize(produced);
  *body = std::move(out);
  return true;
}

}  // namespace shellac::proxy

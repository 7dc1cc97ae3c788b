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
  // Room for one byte more than the limit: a body of exactly `limit` bytes must be seen to end
  // (zlib reports the end only once it has read the trailer, which may take a call of its own).
  const size_t room = limit + 1;
  std::string out;
  out.resize(std::min<size_t>(room, std::max<size_t>(body->size() * 4, 4096)));
  z.next_in = reinterpret_cast<Bytef*>(body->data());
  z.avail_in = static_cast<uInt>(body->size());
  size_t produced = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (produced == out.size()) {
      if (out.size() >= room) break;
      out.resize(std::min(room, out.size() * 2));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(out.size() - produced);
    rc = inflate(&z, Z_NO_FLUSH);
    produced = out.size() - z.avail_out;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated
    if (rc == Z_BUF_ERROR) rc = Z_OK;
    // A gzip body may be several members one after another (RFC 1952 2.2): it is their
    // concatenation, as gzip -d gives it. Other bytes after a member are ignored, as browsers do.
    if (rc == Z_STREAM_END && window != MAX_WBITS && z.avail_in >= 2 && z.next_in[0] == 0x1f &&
        z.next_in[1] == 0x8b) {
      rc = inflateReset(&z);
    }
  }
  if (rc != Z_STREAM_END || produced > limit) {
    *why = produced > limit ? "decoded body larger than " + std::to_string(limit) + " bytes"
                            : "corrupt or truncated " + std::string(coding) + " body";
    return false;
  }
  out.resize(produced);
  *body = std::move(out);
  return true;
}

}  // namespace shellac::proxy

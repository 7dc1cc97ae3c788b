// libFuzzer target: the decoding of gzip/deflate coded backend bodies (proxy/page_object.h,
// DecodeContent) and the store's own deflate round trip (cache/deflate.h). The first input byte
// picks the coding, the size limit and the zlib level; the rest is a body. Checked on every input:
// - decoding hostile bytes as gzip, x-gzip or deflate never crashes, and success means output
//   within the limit, failure a reason;
// - the body compressed by zlib (gzip and zlib wrappers, random level) decodes to exactly itself,
//   also when the decoded size is the limit exactly; one byte over the limit fails; gzip members
//   one after another decode to their concatenation;
// - the body stored as segments (SegmentEncoder, random cuts) inflates (Inflater, random piece
//   sizes) to exactly itself.
#include <zlib.h>

#include <string>
#include <string_view>
#include <vector>

#include "cache/deflate.h"
#include "fuzz/check.h"
#include "proxy/page_object.h"

namespace {

using shellac::fuzz::Choices;

std::string Compress(std::string_view body, int level, int window_bits) {
  z_stream z{};
  FUZZ_CHECK(deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, body.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

class StringSink : public shellac::cache::ByteSink {
 public:
  void Copy(std::string_view bytes) override { out.append(bytes); }
  std::string out;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr std::string_view kCodings[] = {"gzip", "x-gzip", "deflate", "GZIP"};
  const std::string_view coding = kCodings[data[0] & 3];
  const size_t limit = (data[0] & 4) ? 1 << 20 : 64 + (data[0] >> 3) * 97;
  const int level = data[0] % 10;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  // Hostile bytes.
  {
    std::string decoded(body);
    std::string why;
    if (shellac::proxy::DecodeContent(coding, limit, &decoded, &why)) {
      FUZZ_CHECK(decoded.size() <= limit);
    } else {
      FUZZ_CHECK(!why.empty());
    }
  }

  // What zlib made decodes to the body, up to the limit.
  const bool gzip = coding != "deflate";
  const std::string compressed = Compress(body, level, gzip ? 16 + MAX_WBITS : MAX_WBITS);
  for (const size_t cap : {body.size(), body.size() + 1 + limit, body.size() - (body.empty() ? 0 : 1)}) {
    std::string decoded = compressed;
    std::string why;
    const bool ok = shellac::proxy::DecodeContent(coding, cap, &decoded, &why);
    if (cap >= body.size()) {
      FUZZ_CHECK(ok);
      FUZZ_CHECK(decoded == body);
    } else {
      FUZZ_CHECK(!ok && !why.empty());
    }
  }
  // Gzip members one after another decode to their concatenation.
  if (gzip) {
    const size_t half = body.size() / 2;
    std::string decoded = Compress(body.substr(0, half), level, 16 + MAX_WBITS) +
                          Compress(body.substr(half), level, 16 + MAX_WBITS);
    std::string why;
    FUZZ_CHECK(shellac::proxy::DecodeContent(coding, body.size(), &decoded, &why));
    FUZZ_CHECK(decoded == body);
  }
  // Cut short, it is refused.
  if (compressed.size() > 1) {
    std::string decoded = compressed.substr(0, compressed.size() - 1);
    std::string why;
    FUZZ_CHECK(!shellac::proxy::DecodeContent(coding, body.size() + 1, &decoded, &why));
  }

  // The store's segments: compress with cuts, inflate in pieces.
  Choices choices(body);
  shellac::cache::SegmentEncoder::Options options;
  options.level = level;
  options.segment_size = choices.Below(2) ? 0 : 1 + choices.Below(512);
  options.flush = choices.Below(2) ? shellac::cache::FlushMode::kSync : shellac::cache::FlushMode::kFull;
  shellac::cache::SegmentEncoder encoder(options);
  for (size_t at = 0; at < body.size();) {
    const size_t n = std::min<size_t>(body.size() - at, 1 + choices.Below(200));
    FUZZ_CHECK(encoder.Write(body.substr(at, n)).ok());
    if (choices.Below(3) == 0) FUZZ_CHECK(encoder.Cut().ok());
    at += n;
  }
  FUZZ_CHECK(encoder.Finish().ok());
  const std::vector<shellac::cache::Segment> segments = encoder.TakeSegments();
  std::vector<shellac::cache::SegmentView> views;
  for (const auto& s : segments) views.push_back(s.view());
  StringSink sink;
  FUZZ_CHECK(shellac::cache::Inflater().InflateAll(views, sink, 1 + choices.Below(300)).ok());
  FUZZ_CHECK(sink.out == body);
  return 0;
}

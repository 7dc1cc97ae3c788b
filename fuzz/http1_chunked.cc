// libFuzzer target: the chunked body decoder (proxy/http1.h, ChunkedDecoder), used on request
// bodies from clients and on response bodies from the backend. Checked on every input:
// - no crash, hang or undefined behaviour;
// - the input fed in random pieces, with random output budgets, decodes to exactly what the whole
//   input at once decodes to: the same bytes, the same end (done, error and which, need more) and
//   the same bytes left over after the last chunk;
// - the input's tail, chunked by an encoder with random chunk sizes, extensions and trailers,
//   decodes back to itself and stops exactly at the end of the framing.
#include <event2/buffer.h>

#include <string>
#include <string_view>

#include "fuzz/check.h"
#include "proxy/event_ptr.h"
#include "proxy/http1.h"

namespace {

using namespace shellac::http;
using shellac::fuzz::Choices;
using shellac::proxy::EvbufferPtr;

struct Decoded {
  ChunkedDecoder::Step end = ChunkedDecoder::Step::kNeedMore;
  std::string body;
  std::string error;
  std::string left;  // bytes after the framing (kDone) or not yet consumed
};

std::string Contents(evbuffer* b) {
  std::string s(evbuffer_get_length(b), '\0');
  evbuffer_copyout(b, s.data(), s.size());
  return s;
}

// Feeds `input` in pieces chosen by `choices` (the whole of it at once when null).
Decoded Decode(std::string_view input, Choices* choices) {
  ChunkedDecoder decoder;
  EvbufferPtr in(evbuffer_new());
  EvbufferPtr out(evbuffer_new());
  Decoded d;
  size_t fed = 0;
  for (size_t rounds = 0;; ++rounds) {
    FUZZ_CHECK(rounds < 4 * input.size() + 64);  // every call makes progress or asks for more
    const size_t budget = choices ? 1 + choices->Below(64) : SIZE_MAX;
    const ChunkedDecoder::Step step = decoder.Decode(in.get(), out.get(), budget);
    if (step == ChunkedDecoder::Step::kProgress) continue;
    if (step == ChunkedDecoder::Step::kNeedMore && fed < input.size()) {
      const size_t n = choices ? 1 + choices->Below(std::min<size_t>(input.size() - fed, 40))
                               : input.size() - fed;
      evbuffer_add(in.get(), input.data() + fed, n);
      fed += n;
      continue;
    }
    d.end = step;
    break;
  }
  d.body = Contents(out.get());
  FUZZ_CHECK(decoder.decoded() == d.body.size());
  d.error = decoder.error();
  FUZZ_CHECK((d.end == ChunkedDecoder::Step::kError) == !d.error.empty());
  // Whatever was not consumed: the buffered rest plus what was never fed (only after kDone or
  // kError can input remain unfed).
  d.left = Contents(in.get()) + std::string(input.substr(fed));
  return d;
}

std::string Hex(size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[n % 16]);
    n /= 16;
  } while (n != 0);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Choices choices(input);

  const Decoded whole = Decode(input, nullptr);
  const Decoded pieces = Decode(input, &choices);
  FUZZ_CHECK(whole.end == pieces.end);
  FUZZ_CHECK(whole.error == pieces.error);
  FUZZ_CHECK(whole.body == pieces.body);
  if (whole.end == ChunkedDecoder::Step::kDone) FUZZ_CHECK(whole.left == pieces.left);
  FUZZ_CHECK(whole.body.size() <= input.size());

  // Encode the second half of the input as a body and decode it again.
  const std::string_view body = input.substr(size / 2);
  std::string framed;
  for (size_t at = 0; at < body.size();) {
    const size_t n = std::min<size_t>(body.size() - at, 1 + choices.Below(300));
    framed += choices.Below(4) == 0 ? Hex(n) : "0" + Hex(n);  // leading zeros are allowed
    if (choices.Below(5) == 0) framed += " ;ext=\"v\"";
    framed += "\r\n";
    framed.append(body.substr(at, n));
    framed += "\r\n";
    at += n;
  }
  framed += "0\r\n";
  if (choices.Below(3) == 0) framed += "Trailer-Field: x\r\n";
  framed += "\r\nGET /next HTTP/1.1\r\n";
  const Decoded round = Decode(framed, &choices);
  FUZZ_CHECK(round.end == ChunkedDecoder::Step::kDone);
  FUZZ_CHECK(round.body == body);
  FUZZ_CHECK(round.left == "GET /next HTTP/1.1\r\n");
  return 0;
}

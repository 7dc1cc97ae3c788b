// libFuzzer target: the response head parser used on backend replies (proxy/http1.h,
// ParseResponseHead). The first input byte picks the request method (GET or HEAD) and the head
// size limit; the rest is what the backend sent. Checked on every input:
// - no crash, hang or undefined behaviour;
// - a decision does not change with more bytes (a prefix parses as "need more" or as the whole);
// - an error is a 502 with a reason, and drains nothing; kDone drains exactly the head;
// - the framing is consistent (no body for HEAD, 1xx, 204 and 304; until-close never keeps alive);
// - a parsed head, written out again with CRLF line ends, parses to the same head.
#include <event2/buffer.h>

#include <string>
#include <string_view>
#include <vector>

#include "fuzz/check.h"
#include "proxy/event_ptr.h"
#include "proxy/http1.h"

namespace {

using namespace shellac::http;
using shellac::fuzz::Choices;
using shellac::proxy::EvbufferPtr;

struct Outcome {
  ParseResult result;
  ResponseHead head;
  std::string left;
};

Outcome Parse(std::string_view bytes, uint64_t max_header_bytes, std::string_view method) {
  EvbufferPtr in(evbuffer_new());
  evbuffer_add(in.get(), bytes.data(), bytes.size());
  Outcome o;
  o.result = ParseResponseHead(in.get(), max_header_bytes, method, &o.head);
  o.left.resize(evbuffer_get_length(in.get()));
  evbuffer_copyout(in.get(), o.left.data(), o.left.size());
  return o;
}

bool SameHead(const ResponseHead& a, const ResponseHead& b) {
  if (a.status != b.status || a.reason != b.reason || a.minor_version != b.minor_version ||
      a.body != b.body || a.content_length != b.content_length || a.keep_alive != b.keep_alive ||
      a.headers.size() != b.headers.size()) {
    return false;
  }
  for (size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view method = (data[0] & 1) ? "HEAD" : "GET";
  const uint64_t max_header_bytes = (data[0] & 2) ? 512 : 32 << 10;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

  const Outcome whole = Parse(input, max_header_bytes, method);
  switch (whole.result.kind) {
    case ParseResult::kError:
      FUZZ_CHECK(whole.result.status == 502 && !whole.result.detail.empty());
      FUZZ_CHECK(whole.left == input);
      break;
    case ParseResult::kIncomplete:
      FUZZ_CHECK(whole.left == input);
      break;
    case ParseResult::kDone:
      FUZZ_CHECK(whole.left.size() < input.size() && input.ends_with(whole.left));
      break;
  }
  // Prefixes: four at random, and the ones ending just after a CR or LF, up to eight.
  Choices choices(input);
  std::vector<size_t> cuts;
  for (int i = 0; i < 4 && !input.empty(); ++i) cuts.push_back(choices.Below(input.size()));
  for (size_t at = 0; cuts.size() < 12 && at < input.size(); ++at) {
    if (input[at] == '\r' || input[at] == '\n') cuts.push_back(at + 1);
  }
  for (const size_t cut : cuts) {
    if (cut >= input.size()) continue;
    const Outcome prefix = Parse(input.substr(0, cut), max_header_bytes, method);
    if (prefix.result.kind == ParseResult::kIncomplete) continue;
    FUZZ_CHECK(prefix.result.kind == whole.result.kind);
    if (prefix.result.kind == ParseResult::kDone) FUZZ_CHECK(SameHead(prefix.head, whole.head));
  }
  if (whole.result.kind != ParseResult::kDone) return 0;

  const ResponseHead& head = whole.head;
  FUZZ_CHECK(head.status >= 100 && head.status <= 999);
  FUZZ_CHECK(head.minor_version == 0 || head.minor_version == 1);
  const bool no_body = head.status < 200 || head.status == 204 || head.status == 304 || method == "HEAD";
  if (no_body) FUZZ_CHECK(head.body == BodyKind::kNone);
  if (head.body == BodyKind::kUntilClose) FUZZ_CHECK(!head.keep_alive);
  if (head.body == BodyKind::kLength) FUZZ_CHECK(head.content_length > 0);

  std::string again = "HTTP/1." + std::to_string(head.minor_version) + " " +
                      std::to_string(head.status) + " " + head.reason + "\r\n";
  for (const Header& h : head.headers) again += h.name + ": " + h.value + "\r\n";
  again += "\r\n";
  if (again.size() > max_header_bytes) return 0;  // CRLF and ": " may make it longer than sent
  const Outcome reparsed = Parse(again + "body", max_header_bytes, method);
  FUZZ_CHECK(reparsed.result.kind == ParseResult::kDone);
  FUZZ_CHECK(SameHead(reparsed.head, head));
  FUZZ_CHECK(reparsed.left == "body");
  return 0;
}

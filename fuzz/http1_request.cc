// libFuzzer target: the HTTP/1 request head parser (proxy/http1.h, ParseRequestHead), as a client
// connection feeds it. Checked on every input:
// - no crash, hang, leak or undefined behaviour;
// - a decision does not change with more bytes: a prefix of the input parses as "need more", or
//   as the whole input does, to the same head or also to an error (the server re-parses from the
//   start as bytes arrive);
// - kDone drains exactly the head: what stays is the input's tail;
// - a parsed head, written out again, parses to the same head and drains exactly what was written.
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
  RequestHead head;
  std::string left;
};

Outcome Parse(std::string_view bytes, const Limits& limits) {
  EvbufferPtr in(evbuffer_new());
  evbuffer_add(in.get(), bytes.data(), bytes.size());
  Outcome o;
  o.result = ParseRequestHead(in.get(), limits, &o.head);
  o.left.resize(evbuffer_get_length(in.get()));
  evbuffer_copyout(in.get(), o.left.data(), o.left.size());
  return o;
}

bool SameHead(const RequestHead& a, const RequestHead& b) {
  if (a.method != b.method || a.target != b.target || a.minor_version != b.minor_version ||
      a.host != b.host || a.body != b.body || a.content_length != b.content_length ||
      a.keep_alive != b.keep_alive || a.expect_continue != b.expect_continue ||
      a.headers.size() != b.headers.size()) {
    return false;
  }
  for (size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value)
      return false;
  }
  return true;
}

// A refusal stays a refusal (which error is reported first may depend on where the bytes were cut:
// a long line is refused as too long before its bare CR arrives); a head stays the same head.
bool SameOutcome(const Outcome& a, const Outcome& b) {
  if (a.result.kind != b.result.kind) return false;
  return a.result.kind != ParseResult::kDone || SameHead(a.head, b.head);
}

// The request target as sent: absolute-form is kept (its authority is the host), so the head
// written out again means the same.
std::string Written(const RequestHead& head, bool absolute_form) {
  std::string out = head.method + " ";
  if (absolute_form) out += "http://" + head.host;
  out += head.target + " HTTP/1." + std::to_string(head.minor_version) + "\r\n";
  for (const Header& h : head.headers) out += h.name + ": " + h.value + "\r\n";
  return out + "\r\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Small limits, so that inputs of a few KiB reach every limit check.
  Limits limits;
  limits.max_request_line = 200;
  limits.max_header_count = 12;
  limits.max_header_bytes = 1024;

  const Outcome whole = Parse(input, limits);
  if (whole.result.kind == ParseResult::kError) {
    FUZZ_CHECK(whole.result.status >= 400 && whole.result.status <= 505);
    FUZZ_CHECK(!whole.result.detail.empty());
    FUZZ_CHECK(whole.left == input);  // nothing drained
  } else if (whole.result.kind == ParseResult::kIncomplete) {
    FUZZ_CHECK(whole.left == input);
  } else {
    FUZZ_CHECK(whole.left.size() < input.size());
    FUZZ_CHECK(input.ends_with(whole.left));
  }

  // Prefixes: four at random, and the ones ending just after a CR or LF (where a segment boundary
  // is most likely to matter), up to eight.
  Choices choices(input);
  std::vector<size_t> cuts;
  for (int i = 0; i < 4 && !input.empty(); ++i) cuts.push_back(choices.Below(input.size()));
  for (size_t at = 0; cuts.size() < 12 && at < input.size(); ++at) {
    if (input[at] == '\r' || input[at] == '\n') cuts.push_back(at + 1);
  }
  for (const size_t cut : cuts) {
    if (cut >= input.size()) continue;
    const Outcome prefix = Parse(input.substr(0, cut), limits);
    FUZZ_CHECK(prefix.result.kind == ParseResult::kIncomplete || SameOutcome(prefix, whole));
  }

  if (whole.result.kind != ParseResult::kDone) return 0;
  const RequestHead& head = whole.head;
  FUZZ_CHECK(!head.method.empty() && !head.target.empty());
  FUZZ_CHECK(head.target.front() == '/' || head.target == "*");
  FUZZ_CHECK(head.minor_version == 0 || head.minor_version == 1);
  FUZZ_CHECK(head.body != BodyKind::kUntilClose);
  FUZZ_CHECK(head.body != BodyKind::kLength || head.content_length > 0);
  FUZZ_CHECK(!head.expect_continue || (head.body != BodyKind::kNone && head.minor_version == 1));

  // Absolute-form: the target as sent did not start with '/' (after up to four empty lines).
  std::string_view line = input;
  while (line.starts_with("\r\n")) line.remove_prefix(2);
  const size_t space = line.find(' ');
  const bool absolute_form = space + 1 < line.size() && line[space + 1] != '/' && head.target != "*";
  const std::string again = Written(head, absolute_form);
  const Outcome reparsed = Parse(again + "tail", limits);
  if (again.size() > limits.max_header_bytes || head.method.size() + head.target.size() + 10 +
                                                        (absolute_form ? 7 + head.host.size() : 0) >
                                                    limits.max_request_line) {
    return 0;  // written out with single spaces it may be longer than the original, and refused
  }
  FUZZ_CHECK(reparsed.result.kind == ParseResult::kDone);
  FUZZ_CHECK(SameHead(reparsed.head, head));
  FUZZ_CHECK(reparsed.left == "tail");
  return 0;
}

// Unit tests for proxy/http1: request/response head parsing, chunked decoding, hop-by-hop helpers;
// proxy::DecodeContent, the decoding of gzip/deflate coded backend bodies; proxy::MakePageObject for
// a page made for one request, and proxy::Compressible.
#include <event2/buffer.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proxy/http1.h"
#include "proxy/page_object.h"

namespace shellac::http {
namespace {

using namespace std::string_literals;

// An owned evbuffer.
class Buffer {
 public:
  Buffer() : buf_(evbuffer_new()) {}
  explicit Buffer(std::string_view bytes) : Buffer() { Add(bytes); }
  ~Buffer() { evbuffer_free(buf_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void Add(std::string_view bytes) { ASSERT_EQ(evbuffer_add(buf_, bytes.data(), bytes.size()), 0); }
  size_t size() const { return evbuffer_get_length(buf_); }
  std::string Contents() const {
    std::string s(size(), '\0');
    if (!s.empty()) evbuffer_copyout(buf_, s.data(), s.size());
    return s;
  }
  evbuffer* get() { return buf_; }

 private:
  evbuffer* buf_;
};

struct RequestOutcome {
  ParseResult result;
  RequestHead head;
  std::string left;  // what stayed in the buffer
};

RequestOutcome ParseRequest(std::string_view bytes, const Limits& limits = {}) {
  Buffer in(bytes);
  RequestOutcome o;
  o.result = ParseRequestHead(in.get(), limits, &o.head);
  o.left = in.Contents();
  return o;
}

struct ResponseOutcome {
  ParseResult result;
  ResponseHead head;
  std::string left;
};

ResponseOutcome ParseResponse(std::string_view bytes, std::string_view method = "GET",
                              uint64_t max_header_bytes = 32 << 10) {
  Buffer in(bytes);
  ResponseOutcome o;
  o.result = ParseResponseHead(in.get(), max_header_bytes, method, &o.head);
  o.left = in.Contents();
  return o;
}

std::string Kind(const ParseResult& r) {
  switch (r.kind) {
    case ParseResult::kIncomplete: return "incomplete";
    case ParseResult::kDone: return "done";
    case ParseResult::kError: return "error " + std::to_string(r.status) + " (" + r.detail + ")";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Request heads: the happy path

TEST(RequestHead, SimpleGet) {
  const std::string head =
      "GET /repo.git/info/refs?service=git-upload-pack HTTP/1.1\r\n"
      "Host: example.org\r\n"
      "User-Agent:  git/2.40 \r\n"
      "Accept: */*\r\n"
      "X-Empty:\r\n"
      "accept: again\r\n"
      "\r\n";
  const std::string pipelined = "GET /next HTTP/1.1\r\nHost: example.org\r\n\r\n";
  auto o = ParseRequest(head + pipelined);
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.method, "GET");
  EXPECT_EQ(o.head.target, "/repo.git/info/refs?service=git-upload-pack");
  EXPECT_EQ(o.head.minor_version, 1);
  EXPECT_EQ(o.head.host, "example.org");
  EXPECT_EQ(o.head.body, BodyKind::kNone);
  EXPECT_EQ(o.head.content_length, 0u);
  EXPECT_TRUE(o.head.keep_alive);
  EXPECT_FALSE(o.head.expect_continue);
  ASSERT_EQ(o.head.headers.size(), 5u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"Host", "example.org"}, {"User-Agent", "git/2.40"}, {"Accept", "*/*"}, {"X-Empty", ""}, {"accept", "again"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(o.head.headers[i].name, want[i].first);
    EXPECT_EQ(o.head.headers[i].value, want[i].second);
  }
  // Find is case-insensitive and returns the first.
  ASSERT_NE(o.head.Find("ACCEPT"), nullptr);
  EXPECT_EQ(o.head.Find("ACCEPT")->value, "*/*");
  EXPECT_EQ(o.head.Find("Cookie"), nullptr);
  // Only the head is drained: the pipelined request stays.
  EXPECT_EQ(o.left, pipelined);
}

TEST(RequestHead, BodyBytesStayInTheBuffer) {
  auto o = ParseRequest("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.body, BodyKind::kLength);
  EXPECT_EQ(o.head.content_length, 5u);
  EXPECT_EQ(o.left, "helloGET");
}

TEST(RequestHead, PipelinedRequestsParseOneAfterAnother) {
  Buffer in("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  RequestHead a, b;
  ASSERT_EQ(ParseRequestHead(in.get(), Limits{}, &a).kind, ParseResult::kDone);
  ASSERT_EQ(ParseRequestHead(in.get(), Limits{}, &b).kind, ParseResult::kDone);
  EXPECT_EQ(a.target, "/a");
  EXPECT_TRUE(a.keep_alive);
  EXPECT_EQ(b.target, "/b");
  EXPECT_FALSE(b.keep_alive);
  EXPECT_EQ(in.size(), 0u);
  RequestHead c;
  EXPECT_EQ(ParseRequestHead(in.get(), Limits{}, &c).kind, ParseResult::kIncomplete);
}

TEST(RequestHead, KeepAlive) {
  struct Case {
    const char* request;
    bool keep_alive;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade, close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: x-foo\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n", true},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nHost: h\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.request);
    auto o = ParseRequest(c.request);
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_EQ(o.head.keep_alive, c.keep_alive);
  }
}

// RFC 9112 9.3: "If the close connection option is present, the connection will not persist";
// that rule comes first, for every version.
// RFC 9112 9.3: "close" ends persistence in every version, even next to "keep-alive".
TEST(RequestHead, CloseWinsOverKeepAliveInHttp10) {
  auto o = ParseRequest("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_FALSE(o.head.keep_alive);
  auto r = ParseResponse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(r.result.kind, ParseResult::kDone) << Kind(r.result);
  EXPECT_FALSE(r.head.keep_alive);
}

TEST(RequestHead, Http10WithoutHost) {
  auto o = ParseRequest("GET /x HTTP/1.0\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.minor_version, 0);
  EXPECT_EQ(o.head.host, "");
  EXPECT_EQ(o.left, "");
}

TEST(RequestHead, LeadingEmptyLinesAreSkipped) {
  auto o = ParseRequest("\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\nrest");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.method, "GET");
  EXPECT_EQ(o.head.target, "/x");
  EXPECT_EQ(o.left, "rest");  // the empty lines are drained with the head
}

TEST(RequestHead, ChunkedBody) {
  for (const char* te : {"chunked", "Chunked", "CHUNKED"}) {
    SCOPED_TRACE(te);
    auto o = ParseRequest(std::string("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ") + te + "\r\n\r\n5\r\n");
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_EQ(o.head.body, BodyKind::kChunked);
    EXPECT_EQ(o.left, "5\r\n");
  }
}

TEST(RequestHead, ContentLengthZeroMeansNoBody) {
  auto o = ParseRequest("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.body, BodyKind::kNone);
}

TEST(RequestHead, RepeatedIdenticalContentLength) {
  for (const char* cl : {"Content-Length: 5\r\nContent-Length: 5\r\n", "Content-Length: 5, 5\r\n",
                         "Content-Length: 5,5\r\ncontent-length: 5\r\n", "Content-Length: 005\r\n",
                         "Content-Length: 0000000000000000000005\r\n"}) {  // leading zeros: the value counts
    SCOPED_TRACE(cl);
    auto o = ParseRequest(std::string("POST / HTTP/1.1\r\nHost: h\r\n") + cl + "\r\n");
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_EQ(o.head.body, BodyKind::kLength);
    EXPECT_EQ(o.head.content_length, 5u);
  }
}

// The largest Content-Length taken is kMaxContentLength (18 nines); one more is refused.
TEST(RequestHead, ContentLengthBound) {
  auto o = ParseRequest("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 999999999999999999\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.content_length, kMaxContentLength);
  for (const char* cl : {"1000000000000000000", "18446744073709551615", "18446744073709551616"}) {
    SCOPED_TRACE(cl);
    auto r = ParseRequest(std::string("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: ") + cl + "\r\n\r\n");
    EXPECT_EQ(r.result.kind, ParseResult::kError);
    EXPECT_EQ(r.result.status, 400);
  }
}

TEST(RequestHead, ExpectContinue) {
  {
    auto o = ParseRequest("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_TRUE(o.head.expect_continue);
  }
  {
    auto o = ParseRequest("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nTransfer-Encoding: chunked\r\n\r\n");
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_TRUE(o.head.expect_continue);
  }
  // Without a body there is nothing to wait for.
  for (const char* r : {"GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
                        "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"}) {
    SCOPED_TRACE(r);
    auto o = ParseRequest(r);
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_FALSE(o.head.expect_continue);
  }
}

// RFC 9110 10.1.1: "A server that receives a 100-continue expectation in an HTTP/1.0 request MUST
// ignore that expectation." (An HTTP/1.0 client would take an interim 100 for the final response.)
// RFC 9110 10.1.1: Expect: 100-continue is ignored in HTTP/1.0 (the client would take the 100 as final).
TEST(RequestHead, ExpectContinueIgnoredForHttp10) {
  auto o = ParseRequest("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.body, BodyKind::kLength);
  EXPECT_FALSE(o.head.expect_continue);
}

TEST(RequestHead, AbsoluteFormTarget) {
  struct Case {
    const char* target;
    const char* path;
    const char* host;
  };
  const Case cases[] = {
      {"http://h:1/p?q", "/p?q", "h:1"},
      {"http://h:1", "/", "h:1"},
      {"http://h?q=1", "/?q=1", "h"},
      {"HTTP://Example.org/a/b", "/a/b", "Example.org"},
      {"https://secure.example/x", "/x", "secure.example"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.target);
    // The authority of an absolute-form target overrides Host (RFC 9112 3.2.2).
    auto o = ParseRequest(std::string("GET ") + c.target + " HTTP/1.1\r\nHost: other\r\n\r\n");
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_EQ(o.head.target, c.path);
    EXPECT_EQ(o.head.host, c.host);
  }
  // With an absolute-form target, an HTTP/1.1 request without Host is acceptable.
  auto o = ParseRequest("GET http://h:1/p?q HTTP/1.1\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.target, "/p?q");
  EXPECT_EQ(o.head.host, "h:1");
}

TEST(RequestHead, AsteriskOnlyForOptions) {
  auto o = ParseRequest("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.target, "*");
  for (const char* method : {"GET", "HEAD", "POST"}) {
    auto bad = ParseRequest(std::string(method) + " * HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_EQ(bad.result.kind, ParseResult::kError) << method;
    EXPECT_EQ(bad.result.status, 400) << method;
  }
}

TEST(RequestHead, ObsTextAndTabInValueAllowed) {
  auto o = ParseRequest("GET / HTTP/1.1\r\nHost: h\r\nX-Latin: caf\xe9\tau\tlait\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  ASSERT_NE(o.head.Find("x-latin"), nullptr);
  EXPECT_EQ(o.head.Find("x-latin")->value, "caf\xe9\tau\tlait");
}

// ---------------------------------------------------------------------------------------------
// Request heads: incomplete input

// Property: every proper prefix of a valid request is "incomplete" and drains nothing; the whole
// head is "done".
TEST(RequestHead, EveryPrefixIsIncomplete) {
  const std::vector<std::string> requests = {
      "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
      "\r\n\r\nPOST /a/b?c=d HTTP/1.1\r\nHost: example.org:8080\r\nContent-Length: 12\r\n"
      "Expect: 100-continue\r\nX-Empty:\r\nConnection: keep-alive\r\n\r\n",
      "PUT http://h:1/p?q HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "OPTIONS * HTTP/1.0\r\n\r\n",
  };
  for (const auto& request : requests) {
    SCOPED_TRACE(request);
    for (size_t n = 0; n < request.size(); ++n) {
      Buffer in(std::string_view(request).substr(0, n));
      RequestHead head;
      ParseResult r = ParseRequestHead(in.get(), Limits{}, &head);
      EXPECT_EQ(r.kind, ParseResult::kIncomplete) << "prefix length " << n << ": " << Kind(r);
      EXPECT_EQ(in.size(), n) << "prefix length " << n << " drained";
    }
    // The same bytes arriving one at a time into one buffer.
    Buffer in;
    RequestHead head;
    ParseResult r;
    for (size_t n = 0; n < request.size(); ++n) {
      in.Add(std::string_view(request).substr(n, 1));
      r = ParseRequestHead(in.get(), Limits{}, &head);
      if (n + 1 < request.size()) {
        ASSERT_EQ(r.kind, ParseResult::kIncomplete) << "after byte " << n << ": " << Kind(r);
        ASSERT_EQ(in.size(), n + 1);
      }
    }
    EXPECT_EQ(r.kind, ParseResult::kDone) << Kind(r);
    EXPECT_EQ(in.size(), 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// Request heads: refusals

struct BadRequest {
  const char* name;
  std::string bytes;
  int status;
};

void ExpectAllRefused(const std::vector<BadRequest>& cases, const Limits& limits = {}) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Buffer in(c.bytes);
    RequestHead head;
    head.method = "untouched";
    ParseResult r = ParseRequestHead(in.get(), limits, &head);
    EXPECT_EQ(r.kind, ParseResult::kError) << c.name << ": " << Kind(r);
    EXPECT_EQ(r.status, c.status) << c.name << ": " << Kind(r);
    EXPECT_FALSE(r.detail.empty()) << c.name;
    EXPECT_EQ(head.method, "untouched") << c.name << ": output written on error";
  }
}

TEST(RequestHead, LineEndingAndSyntaxErrors) {
  ExpectAllRefused({
      {"bare LF after request line", "GET / HTTP/1.1\nHost: h\r\n\r\n", 400},
      {"bare LF after a field", "GET / HTTP/1.1\r\nHost: h\n\r\n", 400},
      {"bare LF as the final empty line", "GET / HTTP/1.1\r\nHost: h\r\n\n", 400},
      {"bare CR in a field", "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400},
      {"bare CR in request line", "GET /\rx HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"bare CR in an unfinished request line", "GET /\rx", 400},
      {"obs-fold", "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n", 400},
      {"obs-fold with tab", "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tb\r\n\r\n", 400},
      {"whitespace before the first field", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400},
      {"tab before colon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", 400},
      {"invalid header name", "GET / HTTP/1.1\r\nHost: h\r\nX(y): 1\r\n\r\n", 400},
      {"quote in header name", "GET / HTTP/1.1\r\nHost: h\r\nX\"y: 1\r\n\r\n", 400},
      {"empty header name", "GET / HTTP/1.1\r\nHost: h\r\n: 1\r\n\r\n", 400},
      {"header without colon", "GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
      {"control char in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x01" "b\r\n\r\n", 400},
      {"DEL in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f" "b\r\n\r\n", 400},
      {"NUL in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"s, 400},
      {"NUL in header name", "GET / HTTP/1.1\r\nHost: h\r\nX\0: b\r\n\r\n"s, 400},
      {"double space in request line", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"trailing space in request line", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
      {"tab separator", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"two-word request line", "GET /\r\nHost: h\r\n\r\n", 400},
      {"invalid method", "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"control char in target", "GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"relative target", "GET foo HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"ftp target", "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"userinfo in target", "GET http://user@h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"empty authority", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"too many leading empty lines", "\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
  });
}

TEST(RequestHead, VersionErrors) {
  ExpectAllRefused({
      {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505},
      {"HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", 505},
      {"HTTP/3.0", "GET / HTTP/3.0\r\nHost: h\r\n\r\n", 505},
      {"garbage version", "GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400},
      {"lower-case http", "GET / http/1.1\r\nHost: h\r\n\r\n", 400},
      {"HTTP/1", "GET / HTTP/1\r\nHost: h\r\n\r\n", 400},
      {"HTTP/1.10", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400},
      {"HTTP/1.x", "GET / HTTP/1.x\r\nHost: h\r\n\r\n", 400},
      {"HTTP/11.1", "GET / HTTP/11.1\r\nHost: h\r\n\r\n", 400},
  });
}

TEST(RequestHead, HostErrors) {
  ExpectAllRefused({
      {"missing Host in 1.1", "GET / HTTP/1.1\r\nX: y\r\n\r\n", 400},
      {"two Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
      {"two Host, different case", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400},
      {"two Host in 1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"slash in Host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
      {"space in Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
      {"userinfo in Host", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400},
  });
}

TEST(RequestHead, FramingErrors) {
  const std::string start = "POST / HTTP/1.1\r\nHost: h\r\n";
  ExpectAllRefused({
      {"CL + TE", start + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"TE + CL", start + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400},
      {"two different CL", start + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"CL list 5, 6", start + "Content-Length: 5, 6\r\n\r\n", 400},
      {"CL +5", start + "Content-Length: +5\r\n\r\n", 400},
      {"CL -1", start + "Content-Length: -1\r\n\r\n", 400},
      {"CL 5 5", start + "Content-Length: 5 5\r\n\r\n", 400},
      {"CL abc", start + "Content-Length: abc\r\n\r\n", 400},
      {"CL hex", start + "Content-Length: 0x5\r\n\r\n", 400},
      {"CL empty", start + "Content-Length:\r\n\r\n", 400},
      {"CL only commas", start + "Content-Length: ,\r\n\r\n", 400},
      {"CL 19 digits", start + "Content-Length: 1000000000000000000\r\n\r\n", 400},
      {"TE chunked, identity", start + "Transfer-Encoding: chunked, identity\r\n\r\n", 400},
      {"TE gzip, chunked", start + "Transfer-Encoding: gzip, chunked\r\n\r\n", 400},
      {"TE xchunked", start + "Transfer-Encoding: xchunked\r\n\r\n", 400},
      {"TE identity", start + "Transfer-Encoding: identity\r\n\r\n", 400},
      {"TE empty", start + "Transfer-Encoding:\r\n\r\n", 400},
      {"two TE headers", start + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
  });
}

TEST(RequestHead, MethodAndExpectationErrors) {
  ExpectAllRefused({
      {"CONNECT", "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n", 405},
      {"Expect other", "POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\n", 417},
      {"Expect other without body", "GET / HTTP/1.1\r\nHost: h\r\nExpect: something\r\n\r\n", 417},
  });
}

TEST(RequestHead, RequestLineTooLong) {
  Limits limits;
  limits.max_request_line = 64;
  const std::string long_target = "/" + std::string(100, 'a');
  // Complete line.
  ExpectAllRefused({{"complete long line", "GET " + long_target + " HTTP/1.1\r\nHost: h\r\n\r\n", 414},
                    {"unfinished long line", "GET " + long_target, 414}},
                   limits);
  // A line of exactly the limit is fine.
  const std::string line = "GET /" + std::string(64 - 4 - 1 - 9, 'b') + " HTTP/1.1";
  ASSERT_EQ(line.size(), 64u);
  auto o = ParseRequest(line + "\r\nHost: h\r\n\r\n", limits);
  EXPECT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  // An unfinished line still within the limit is just incomplete.
  auto p = ParseRequest("GET /" + std::string(50, 'c'), limits);
  EXPECT_EQ(p.result.kind, ParseResult::kIncomplete) << Kind(p.result);
}

// A request line of exactly the limit whose CR has arrived but not yet its LF is still incomplete,
// not too long: the CR is not part of the line (it was refused with 414 when a segment ended
// between CR and LF).
TEST(RequestHead, LineOfTheLimitWithItsCrPendingIsIncomplete) {
  Limits limits;
  limits.max_request_line = 64;
  const std::string line = "GET /" + std::string(64 - 4 - 1 - 9, 'b') + " HTTP/1.1";
  ASSERT_EQ(line.size(), 64u);
  auto o = ParseRequest(line + "\r", limits);
  EXPECT_EQ(o.result.kind, ParseResult::kIncomplete) << Kind(o.result);
  o = ParseRequest(line + "b\r", limits);
  EXPECT_EQ(o.result.kind, ParseResult::kError) << Kind(o.result);
  EXPECT_EQ(o.result.status, 414);
}

// A request line that cannot fit in the head limit must be refused as soon as more than
// max_header_bytes are buffered, whatever max_request_line says (the config accepts
// max-header-bytes below max-request-line). Otherwise the parser answers "incomplete" forever
// while the client keeps the connection stalled until the header timeout.
// An unfinished request line that already exceeds the head limit is refused at once rather than
// left to the header timeout.
TEST(RequestHead, UnfinishedRequestLineBeyondHeadLimit) {
  Limits limits;
  limits.max_request_line = 8 << 10;
  limits.max_header_bytes = 256;
  auto o = ParseRequest("GET /" + std::string(2000, 'a'), limits);
  EXPECT_EQ(o.result.kind, ParseResult::kError) << Kind(o.result);
  EXPECT_TRUE(o.result.status == 414 || o.result.status == 431) << Kind(o.result);
}

TEST(RequestHead, TooManyHeaders) {
  Limits limits;
  limits.max_header_count = 3;
  const std::string three = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n";
  auto ok = ParseRequest(three + "\r\n", limits);
  EXPECT_EQ(ok.result.kind, ParseResult::kDone) << Kind(ok.result);
  ExpectAllRefused({{"four headers", three + "C: 3\r\n\r\n", 431},
                    {"four headers, unfinished", three + "C: 3\r\nD:", 431}},
                   limits);
}

TEST(RequestHead, HeadTooLarge) {
  Limits limits;
  limits.max_header_bytes = 256;
  const std::string big = "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(300, 'x') + "\r\n";
  ExpectAllRefused({{"complete", big + "\r\n", 431},
                    {"unfinished", big, 431}},
                   limits);
  // Many small headers adding up.
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 30; ++i) many += "X-" + std::to_string(i) + ": 0123456789\r\n";
  ExpectAllRefused({{"many small", many + "\r\n", 431}}, limits);
  // A head just under the limit passes.
  std::string fits = "GET / HTTP/1.1\r\nHost: h\r\nX: ";
  fits += std::string(256 - fits.size() - 4, 'y') + "\r\n\r\n";
  ASSERT_EQ(fits.size(), 256u);
  auto o = ParseRequest(fits + "body", limits);
  EXPECT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.left, "body");
}

// ---------------------------------------------------------------------------------------------
// Response heads

TEST(ResponseHead, StatusReasonAndLength) {
  auto o = ParseResponse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.status, 200);
  EXPECT_EQ(o.head.reason, "OK");
  EXPECT_EQ(o.head.minor_version, 1);
  EXPECT_EQ(o.head.body, BodyKind::kLength);
  EXPECT_EQ(o.head.content_length, 5u);
  EXPECT_TRUE(o.head.keep_alive);
  ASSERT_EQ(o.head.headers.size(), 2u);
  EXPECT_EQ(o.head.headers[0].name, "Content-Type");
  EXPECT_EQ(o.head.headers[0].value, "text/plain");
  EXPECT_EQ(o.left, "hello");
}

TEST(ResponseHead, ReasonPhrases) {
  auto a = ParseResponse("HTTP/1.1 404 Not Found Here\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(a.result.kind, ParseResult::kDone) << Kind(a.result);
  EXPECT_EQ(a.head.status, 404);
  EXPECT_EQ(a.head.reason, "Not Found Here");
  auto b = ParseResponse("HTTP/1.1 204\r\n\r\n");
  ASSERT_EQ(b.result.kind, ParseResult::kDone) << Kind(b.result);
  EXPECT_EQ(b.head.status, 204);
  EXPECT_EQ(b.head.reason, "");
  auto c = ParseResponse("HTTP/1.1 204 \r\n\r\n");
  ASSERT_EQ(c.result.kind, ParseResult::kDone) << Kind(c.result);
  EXPECT_EQ(c.head.reason, "");
}

TEST(ResponseHead, BareLfTolerated) {
  auto o = ParseResponse("HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nhi");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.status, 200);
  EXPECT_EQ(o.head.reason, "OK");
  EXPECT_EQ(o.head.content_length, 2u);
  ASSERT_EQ(o.head.headers.size(), 2u);
  EXPECT_EQ(o.head.headers[1].value, "b");
  EXPECT_EQ(o.left, "hi");
  // Mixed endings.
  auto m = ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nhi");
  ASSERT_EQ(m.result.kind, ParseResult::kDone) << Kind(m.result);
  EXPECT_EQ(m.left, "hi");
}

TEST(ResponseHead, Chunked) {
  for (const char* te : {"chunked", "Chunked"}) {
    auto o = ParseResponse(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: ") + te + "\r\n\r\n0\r\n\r\n");
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_EQ(o.head.body, BodyKind::kChunked);
    EXPECT_TRUE(o.head.keep_alive);
    EXPECT_EQ(o.left, "0\r\n\r\n");
  }
}

TEST(ResponseHead, NoFramingReadsUntilClose) {
  auto o = ParseResponse("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.body, BodyKind::kUntilClose);
  EXPECT_FALSE(o.head.keep_alive);
  EXPECT_EQ(o.left, "<html>");
}

// A transfer coding other than chunked would reach the client undeclared once the hop-by-hop
// Transfer-Encoding is dropped, so the response is refused instead of passed on corrupted.
TEST(ResponseHead, TransferCodingOtherThanChunkedIsRefused) {
  for (const char* te : {"gzip", "gzip, chunked", "identity"}) {
    auto g = ParseResponse(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: ") + te + "\r\n\r\n");
    ASSERT_EQ(g.result.kind, ParseResult::kError) << te;
    EXPECT_EQ(g.result.status, 502) << te;
  }
}

TEST(ResponseHead, ContentLengthZeroIsNoBody) {
  auto o = ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.body, BodyKind::kNone);
  EXPECT_TRUE(o.head.keep_alive);
}

TEST(ResponseHead, BodylessResponses) {
  struct Case {
    const char* head;
    const char* method;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "HEAD"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HEAD"},
      {"HTTP/1.1 200 OK\r\n\r\n", "HEAD"},
      {"HTTP/1.1 204 No Content\r\n\r\n", "GET"},
      {"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", "GET"},
      {"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", "GET"},
      {"HTTP/1.1 304 Not Modified\r\n\r\n", "GET"},
      {"HTTP/1.1 100 Continue\r\n\r\n", "POST"},
      {"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", "GET"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.head);
    auto o = ParseResponse(std::string(c.head) + "NEXT", c.method);
    ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
    EXPECT_EQ(o.head.body, BodyKind::kNone);
    EXPECT_TRUE(o.head.keep_alive);
    EXPECT_EQ(o.left, "NEXT");
  }
}

TEST(ResponseHead, InterimThenFinal) {
  Buffer in("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
  ResponseHead interim, final_head;
  ASSERT_EQ(ParseResponseHead(in.get(), 32 << 10, "POST", &interim).kind, ParseResult::kDone);
  EXPECT_EQ(interim.status, 100);
  ASSERT_EQ(ParseResponseHead(in.get(), 32 << 10, "POST", &final_head).kind, ParseResult::kDone);
  EXPECT_EQ(final_head.status, 201);
  EXPECT_EQ(final_head.body, BodyKind::kLength);
  EXPECT_EQ(in.Contents(), "ok");
}

TEST(ResponseHead, Http10Persistence) {
  auto a = ParseResponse("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_EQ(a.result.kind, ParseResult::kDone) << Kind(a.result);
  EXPECT_EQ(a.head.minor_version, 0);
  EXPECT_EQ(a.head.body, BodyKind::kLength);
  EXPECT_FALSE(a.head.keep_alive);
  auto b = ParseResponse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_EQ(b.result.kind, ParseResult::kDone) << Kind(b.result);
  EXPECT_TRUE(b.head.keep_alive);
  // keep-alive cannot save a response delimited by close.
  auto c = ParseResponse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nhi");
  ASSERT_EQ(c.result.kind, ParseResult::kDone) << Kind(c.result);
  EXPECT_EQ(c.head.body, BodyKind::kUntilClose);
  EXPECT_FALSE(c.head.keep_alive);
  auto d = ParseResponse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_EQ(d.result.kind, ParseResult::kDone) << Kind(d.result);
  EXPECT_FALSE(d.head.keep_alive);
}

TEST(ResponseHead, Errors) {
  struct Case {
    const char* name;
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {"CL + TE", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"conflicting CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"},
      {"conflicting CL list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n"},
      {"invalid CL", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n"},
      {"two TE", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"HTTP/2", "HTTP/2 200 OK\r\n\r\n"},
      {"HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n"},
      {"non-HTTP", "ICY 200 OK\r\n\r\n"},
      {"letters in status", "HTTP/1.1 2OO OK\r\n\r\n"},
      {"two-digit status", "HTTP/1.1 20 OK\r\n\r\n"},
      {"no space after status", "HTTP/1.1 200OK\r\n\r\n"},
      {"status below 100", "HTTP/1.1 099 Odd\r\n\r\n"},
      {"bare CR in a field", "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n"},
      {"bad header name", "HTTP/1.1 200 OK\r\nX Y: 1\r\nContent-Length: 0\r\n\r\n"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto o = ParseResponse(c.bytes);
    EXPECT_EQ(o.result.kind, ParseResult::kError) << c.name << ": " << Kind(o.result);
    EXPECT_EQ(o.result.status, 502) << c.name;
  }
  // CL + TE is refused even when the response has no body by definition.
  auto head = ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "HEAD");
  EXPECT_EQ(head.result.kind, ParseResult::kError) << Kind(head.result);
}

TEST(ResponseHead, SameContentLengthTwiceIsFine) {
  auto o = ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
  EXPECT_EQ(o.head.content_length, 3u);
}

TEST(ResponseHead, OversizeHead) {
  const std::string big = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(600, 'x') + "\r\nContent-Length: 0\r\n\r\n";
  auto o = ParseResponse(big, "GET", 512);
  EXPECT_EQ(o.result.kind, ParseResult::kError) << Kind(o.result);
  EXPECT_EQ(o.result.status, 502);
  // Unfinished but already too large.
  auto p = ParseResponse(big.substr(0, 550), "GET", 512);
  EXPECT_EQ(p.result.kind, ParseResult::kError) << Kind(p.result);
  EXPECT_EQ(p.result.status, 502);
  // Unfinished status line that is already too large.
  auto q = ParseResponse("HTTP/1.1 200 " + std::string(600, 'r'), "GET", 512);
  EXPECT_EQ(q.result.kind, ParseResult::kError) << Kind(q.result);
  EXPECT_EQ(q.result.status, 502);
  // The same head with room enough.
  auto r = ParseResponse(big, "GET", 1024);
  EXPECT_EQ(r.result.kind, ParseResult::kDone) << Kind(r.result);
}

TEST(ResponseHead, EveryPrefixIsIncomplete) {
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Empty:\r\nConnection: keep-alive\r\n\r\n";
  for (size_t n = 0; n < response.size(); ++n) {
    Buffer in(std::string_view(response).substr(0, n));
    ResponseHead head;
    ParseResult r = ParseResponseHead(in.get(), 32 << 10, "GET", &head);
    EXPECT_EQ(r.kind, ParseResult::kIncomplete) << "prefix length " << n << ": " << Kind(r);
    EXPECT_EQ(in.size(), n);
  }
  auto o = ParseResponse(response);
  EXPECT_EQ(o.result.kind, ParseResult::kDone) << Kind(o.result);
}

// ---------------------------------------------------------------------------------------------
// ChunkedDecoder

struct DecodeOutcome {
  ChunkedDecoder::Step last = ChunkedDecoder::Step::kNeedMore;
  std::string output;
  std::string left;
  std::string error;
  uint64_t decoded = 0;
};

// Feeds `encoded` in pieces of `piece` bytes (0: all at once), calling Decode until it needs more.
DecodeOutcome Decode(std::string_view encoded, size_t piece = 0, size_t max_out = 1 << 20) {
  Buffer in, out;
  ChunkedDecoder decoder;
  DecodeOutcome o;
  if (piece == 0) piece = encoded.size() ? encoded.size() : 1;
  for (size_t fed = 0; fed < encoded.size() || fed == 0;) {
    size_t n = std::min(piece, encoded.size() - fed);
    in.Add(encoded.substr(fed, n));
    fed += n;
    for (int guard = 0; guard < 100000; ++guard) {
      o.last = decoder.Decode(in.get(), out.get(), max_out);
      if (o.last != ChunkedDecoder::Step::kProgress) break;
    }
    if (o.last == ChunkedDecoder::Step::kDone || o.last == ChunkedDecoder::Step::kError) break;
    if (encoded.empty()) break;
  }
  o.output = out.Contents();
  o.left = in.Contents();
  o.error = decoder.error();
  o.decoded = decoder.decoded();
  return o;
}

const std::string kEncoded =
    "5;ext=1\r\nhello\r\n"
    "6 ; name=\"quoted value\"\r\n world\r\n"
    "A\r\n0123456789\r\n"
    "00000000001a\r\nabcdefghijklmnopqrstuvwxyz\r\n"
    "0;last\r\n"
    "X-Trailer: 1\r\n"
    "Y-Trailer: two\r\n"
    "\r\n";
const std::string kDecoded = "hello world0123456789abcdefghijklmnopqrstuvwxyz";

TEST(ChunkedDecoder, DecodesChunksExtensionsAndTrailers) {
  auto o = Decode(kEncoded + "GET /next");
  EXPECT_EQ(o.last, ChunkedDecoder::Step::kDone) << o.error;
  EXPECT_EQ(o.output, kDecoded);
  EXPECT_EQ(o.decoded, kDecoded.size());
  EXPECT_EQ(o.left, "GET /next");  // bytes after the body stay
}

TEST(ChunkedDecoder, EmptyBody) {
  auto o = Decode("0\r\n\r\nrest");
  EXPECT_EQ(o.last, ChunkedDecoder::Step::kDone) << o.error;
  EXPECT_EQ(o.output, "");
  EXPECT_EQ(o.left, "rest");
}

TEST(ChunkedDecoder, DoneIsSticky) {
  Buffer in("0\r\n\r\nHTTP/1.1"), out;
  ChunkedDecoder d;
  ChunkedDecoder::Step s;
  do s = d.Decode(in.get(), out.get(), 100);
  while (s == ChunkedDecoder::Step::kProgress);
  ASSERT_EQ(s, ChunkedDecoder::Step::kDone);
  EXPECT_EQ(d.Decode(in.get(), out.get(), 100), ChunkedDecoder::Step::kDone);
  EXPECT_EQ(in.Contents(), "HTTP/1.1");
  EXPECT_EQ(out.size(), 0u);
}

// Property: how the encoded bytes are split does not change the result.
TEST(ChunkedDecoder, AnySplitGivesTheSameOutput) {
  const std::string with_tail = kEncoded + "TAIL";
  for (size_t piece : {1, 2, 3, 5, 7, 16}) {
    SCOPED_TRACE("piece " + std::to_string(piece));
    auto o = Decode(with_tail, piece);
    EXPECT_EQ(o.last, ChunkedDecoder::Step::kDone) << o.error;
    EXPECT_EQ(o.output, kDecoded);
    // Feeding stops at kDone; whatever was fed past the end stays unread.
    EXPECT_TRUE(std::string_view("TAIL").starts_with(o.left)) << o.left;
  }
  // Every two-piece split.
  for (size_t cut = 0; cut <= kEncoded.size(); ++cut) {
    Buffer in, out;
    ChunkedDecoder d;
    ChunkedDecoder::Step s = ChunkedDecoder::Step::kNeedMore;
    for (const std::string_view part : {std::string_view(kEncoded).substr(0, cut), std::string_view(kEncoded).substr(cut)}) {
      in.Add(part);
      do s = d.Decode(in.get(), out.get(), 1 << 20);
      while (s == ChunkedDecoder::Step::kProgress);
      ASSERT_NE(s, ChunkedDecoder::Step::kError) << "cut " << cut << ": " << d.error();
      if (s == ChunkedDecoder::Step::kDone) break;
    }
    EXPECT_EQ(s, ChunkedDecoder::Step::kDone) << "cut " << cut;
    EXPECT_EQ(out.Contents(), kDecoded) << "cut " << cut;
  }
}

// Byte by byte, kDone arrives exactly with the last byte of the encoding and not before.
TEST(ChunkedDecoder, ByteByByteDoneOnlyAtTheEnd) {
  Buffer in, out;
  ChunkedDecoder d;
  for (size_t i = 0; i < kEncoded.size(); ++i) {
    in.Add(std::string_view(kEncoded).substr(i, 1));
    ChunkedDecoder::Step s;
    do s = d.Decode(in.get(), out.get(), 1 << 20);
    while (s == ChunkedDecoder::Step::kProgress);
    ASSERT_NE(s, ChunkedDecoder::Step::kError) << "byte " << i << ": " << d.error();
    if (i + 1 < kEncoded.size()) {
      ASSERT_EQ(s, ChunkedDecoder::Step::kNeedMore) << "byte " << i;
    } else {
      EXPECT_EQ(s, ChunkedDecoder::Step::kDone);
    }
  }
  EXPECT_EQ(out.Contents(), kDecoded);
  EXPECT_EQ(in.size(), 0u);
}

TEST(ChunkedDecoder, MaxOutLimitsEachCall) {
  Buffer in("14\r\n" + std::string(20, 'z') + "\r\n0\r\n\r\n"), out;
  ChunkedDecoder d;
  size_t before = 0;
  int calls = 0;
  ChunkedDecoder::Step s;
  do {
    s = d.Decode(in.get(), out.get(), 3);
    EXPECT_LE(out.size() - before, 3u) << "call " << calls;
    before = out.size();
    ++calls;
  } while (s == ChunkedDecoder::Step::kProgress && calls < 1000);
  EXPECT_EQ(s, ChunkedDecoder::Step::kDone) << d.error();
  EXPECT_EQ(out.Contents(), std::string(20, 'z'));
  EXPECT_EQ(d.decoded(), 20u);
  EXPECT_GE(calls, 7);  // 20 bytes at 3 per call needs at least 7 data calls

  // With a budget of one call: exactly max_out bytes move and the rest waits.
  Buffer in2("a\r\n0123456789\r\n0\r\n\r\n"), out2;
  ChunkedDecoder d2;
  ASSERT_EQ(d2.Decode(in2.get(), out2.get(), 4), ChunkedDecoder::Step::kProgress);  // size line
  ASSERT_EQ(d2.Decode(in2.get(), out2.get(), 4), ChunkedDecoder::Step::kProgress);
  EXPECT_EQ(out2.Contents(), "0123");
}

TEST(ChunkedDecoder, LargestAcceptedSize) {
  // 15 hex digits are accepted (data would follow).
  Buffer in("fffffffffffffff\r\nabc"), out;
  ChunkedDecoder d;
  EXPECT_EQ(d.Decode(in.get(), out.get(), 100), ChunkedDecoder::Step::kProgress) << d.error();
  EXPECT_EQ(d.Decode(in.get(), out.get(), 100), ChunkedDecoder::Step::kProgress) << d.error();
  EXPECT_EQ(out.Contents(), "abc");
  EXPECT_EQ(d.Decode(in.get(), out.get(), 100), ChunkedDecoder::Step::kNeedMore);
}

TEST(ChunkedDecoder, Errors) {
  struct Case {
    const char* name;
    std::string encoded;
  };
  std::string many_trailers = "0\r\n";
  for (int i = 0; i < 65; ++i) many_trailers += "X-T" + std::to_string(i) + ": v\r\n";
  many_trailers += "\r\n";
  const std::vector<Case> cases = {
      {"invalid size zz", "zz\r\nhello\r\n0\r\n\r\n"},
      {"empty size line", "\r\nhello\r\n0\r\n\r\n"},
      {"negative size", "-5\r\nhello\r\n0\r\n\r\n"},
      {"0x prefix", "0x5\r\nhello\r\n0\r\n\r\n"},
      {"junk after size", "5 x\r\nhello\r\n0\r\n\r\n"},
      {"control char in extension", "5;a\x01\r\nhello\r\n0\r\n\r\n"},
      {"missing CRLF after data", "5\r\nhelloXY0\r\n\r\n"},
      {"LF only after data", "5\r\nhello\n0\r\n\r\n"},
      {"junk then LF after data", "5\r\nhelloX\n0\r\n\r\n"},
      {"CR then junk after data", "5\r\nhello\rX0\r\n\r\n"},
      {"bare LF in size line", "5\nhello\r\n0\r\n\r\n"},
      {"bare CR in size line", "5\rx\r\nhello\r\n0\r\n\r\n"},
      {"bare LF in last-chunk line", "5\r\nhello\r\n0\n\r\n"},
      {"bare LF in trailer", "0\r\nX: y\n\r\n"},
      {"bare LF ending trailers", "0\r\n\n"},
      {"size overflow (17 hex digits)", "10000000000000000\r\nx\r\n0\r\n\r\n"},
      {"size line too long, unfinished", "1;" + std::string(5000, 'e')},
      {"size line too long, finished", "1;" + std::string(5000, 'e') + "\r\nx\r\n0\r\n\r\n"},
      {"too many trailers", many_trailers},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (size_t piece : {size_t{0}, size_t{1}}) {
      auto o = Decode(c.encoded, piece);
      EXPECT_EQ(o.last, ChunkedDecoder::Step::kError) << c.name << " (piece " << piece << ")";
      EXPECT_FALSE(o.error.empty()) << c.name;
    }
  }
}

TEST(ChunkedDecoder, SixtyFourTrailersAreFine) {
  std::string encoded = "1\r\nx\r\n0\r\n";
  for (int i = 0; i < 64; ++i) encoded += "X-T" + std::to_string(i) + ": v\r\n";
  encoded += "\r\nafter";
  auto o = Decode(encoded);
  EXPECT_EQ(o.last, ChunkedDecoder::Step::kDone) << o.error;
  EXPECT_EQ(o.output, "x");
  EXPECT_EQ(o.left, "after");
}

// ---------------------------------------------------------------------------------------------
// Hop-by-hop

TEST(HopByHop, StandardNamesAnyCase) {
  const std::vector<std::string> none;
  for (const char* name : {"Connection", "connection", "CONNECTION", "Keep-Alive", "keep-alive", "TE", "te",
                           "Trailer", "Transfer-Encoding", "transfer-encoding", "Upgrade", "UPGRADE",
                           "Proxy", "proxy", "Proxy-Authorization", "Proxy-Authenticate", "proxy-connection",
                           "PROXY-Anything"}) {
    EXPECT_TRUE(IsHopByHop(name, none)) << name;
  }
  for (const char* name : {"Host", "Content-Length", "Content-Type", "Cache-Control", "Cookie", "X-Proxy-Id",
                           "Proxyfoo", "Tea", "Trailers-X", "Upgrade-Insecure-Requests", "Keep", "Connection-Id", ""}) {
    EXPECT_FALSE(IsHopByHop(name, none)) << name;
  }
}

TEST(HopByHop, ConnectionTokens) {
  const std::vector<Header> headers = {
      {"Host", "h"},
      {"Connection", "close, X-Foo"},
      {"X-Foo", "1"},
      {"connection", " Keep-Alive ,,x-BAR , "},
      {"X-Connection", "x-not-a-token"},
  };
  const auto tokens = ConnectionTokens(headers);
  EXPECT_EQ(tokens, (std::vector<std::string>{"close", "x-foo", "keep-alive", "x-bar"}));
  EXPECT_TRUE(IsHopByHop("X-Foo", tokens));
  EXPECT_TRUE(IsHopByHop("X-FOO", tokens));
  EXPECT_TRUE(IsHopByHop("x-bar", tokens));
  EXPECT_FALSE(IsHopByHop("X-Baz", tokens));
  EXPECT_FALSE(IsHopByHop("x-not-a-token", tokens));
  EXPECT_FALSE(IsHopByHop("Host", tokens));
  EXPECT_TRUE(ConnectionTokens({{"Host", "h"}}).empty());
}

TEST(Helpers, ReasonPhrase) {
  EXPECT_STREQ(ReasonPhrase(200), "OK");
  EXPECT_STREQ(ReasonPhrase(414), "URI Too Long");
  EXPECT_STREQ(ReasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_STREQ(ReasonPhrase(502), "Bad Gateway");
  EXPECT_STREQ(ReasonPhrase(505), "HTTP Version Not Supported");
  EXPECT_STREQ(ReasonPhrase(299), "Unknown");
}

// ---------------------------------------------------------------------------------------------
// proxy::DecodeContent (proxy/page_object.h): gzip/deflate coded bodies from the backend.

std::string Zlib(std::string_view body, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, body.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Found by fuzz/content_decoding.cc: a body decoding to exactly `limit` bytes was refused as
// larger than the limit (zlib had filled the buffer and not yet read the trailer).
TEST(DecodeContent, BodyOfExactlyTheLimitDecodes) {
  for (const std::string& body : {std::string(), std::string("x"), std::string(5000, 'y')}) {
    for (const int window : {16 + MAX_WBITS, MAX_WBITS}) {
      const std::string coding = window == MAX_WBITS ? "deflate" : "gzip";
      std::string decoded = Zlib(body, window), why;
      EXPECT_TRUE(proxy::DecodeContent(coding, body.size(), &decoded, &why))
          << coding << " " << body.size() << ": " << why;
      EXPECT_EQ(decoded, body);
      if (body.empty()) continue;
      decoded = Zlib(body, window);
      EXPECT_FALSE(proxy::DecodeContent(coding, body.size() - 1, &decoded, &why));
      EXPECT_EQ(why, "decoded body larger than " + std::to_string(body.size() - 1) + " bytes");
    }
  }
}

TEST(DecodeContent, GzipMembersOneAfterAnotherAreConcatenated) {
  std::string decoded = Zlib("first ", 16 + MAX_WBITS) + Zlib("second", 16 + MAX_WBITS), why;
  ASSERT_TRUE(proxy::DecodeContent("x-gzip", 1 << 20, &decoded, &why)) << why;
  EXPECT_EQ(decoded, "first second");
  // Bytes after the last member that do not start another are ignored, as browsers ignore them.
  decoded = Zlib("body", 16 + MAX_WBITS) + std::string(4, '\0');
  ASSERT_TRUE(proxy::DecodeContent("gzip", 1 << 20, &decoded, &why)) << why;
  EXPECT_EQ(decoded, "body");
  // A second member cut short is a truncated body.
  const std::string second = Zlib("second", 16 + MAX_WBITS);
  decoded = Zlib("first", 16 + MAX_WBITS) + second.substr(0, second.size() - 3);
  EXPECT_FALSE(proxy::DecodeContent("gzip", 1 << 20, &decoded, &why));
  EXPECT_EQ(why, "corrupt or truncated gzip body");
}

TEST(DecodeContent, CorruptTruncatedAndUnknownCodingsAreRefused) {
  std::string why;
  std::string decoded = "not gzip at all";
  EXPECT_FALSE(proxy::DecodeContent("gzip", 1 << 20, &decoded, &why));
  EXPECT_EQ(why, "corrupt or truncated gzip body");
  const std::string whole = Zlib(std::string(1000, 'z'), MAX_WBITS);
  decoded = whole.substr(0, whole.size() - 1);
  EXPECT_FALSE(proxy::DecodeContent("deflate", 1 << 20, &decoded, &why));
  EXPECT_EQ(why, "corrupt or truncated deflate body");
  decoded = whole;
  EXPECT_FALSE(proxy::DecodeContent("br", 1 << 20, &decoded, &why));
  EXPECT_EQ(why, "cannot decode Content-Encoding 'br'");
  EXPECT_EQ(decoded, whole) << "left as it was";
}


// ---------------------------------------------------------------------------------------------
// proxy::MakePageObject for a page made for one request (PageSpec::transient) without ESI: the
// chrome other pages repeat comes from the render thread's memo once seen twice, the rest is
// compressed in a chain that knows it, and an identity client's object holds stored blocks only.

std::string Identity(const shellac::cache::Object& object) {
  struct Sink : shellac::cache::ByteSink {
    void Copy(std::string_view bytes) override { text.append(bytes); }
    std::string text;
  } sink;
  std::vector<shellac::cache::SegmentView> segments;
  for (const auto& segment : object.segments()) segments.push_back(segment);
  EXPECT_TRUE(shellac::cache::Inflater().InflateAll(segments, sink).ok());
  return sink.text;
}

shellac::cache::ObjectRef TransientPage(std::string_view body, bool compress,
                                        std::span<const std::pair<uint64_t, uint64_t>> shared) {
  proxy::PageSpec spec;
  spec.level = 1;
  spec.transient = true;
  spec.compress = compress;
  spec.shared = shared;
  shellac::cache::Status status;
  shellac::cache::ObjectRef object = proxy::MakePageObject("tag", body, spec, &status);
  EXPECT_TRUE(object) << status.message();
  return object;
}

TEST(MakePageObject, TransientPageWithChromeDecodesToItsBody) {
  const std::string head = "<html><head><title>fork-0007.git - tag</title></head><body>" +
                           std::string(600, 'h');
  const std::string branches = "<select>" + std::string(900, 'b') + "</select>";
  for (int page = 0; page < 4; ++page) {
    const std::string own = "<p>tag v1." + std::to_string(page) + " " + head.substr(0, 40) + "</p>";
    const std::string body = head + branches + own + branches.substr(0, 30);
    const std::vector<std::pair<uint64_t, uint64_t>> shared{
        {0, head.size()}, {head.size(), head.size() + branches.size()}};
    auto gzip = TransientPage(body, /*compress=*/true, shared);
    ASSERT_TRUE(gzip);
    EXPECT_EQ(Identity(*gzip), body) << "page " << page;
    EXPECT_LT(gzip->deflate_bytes(), body.size() / 2) << "page " << page;
    auto identity = TransientPage(body, /*compress=*/false, shared);
    ASSERT_TRUE(identity);
    EXPECT_EQ(Identity(*identity), body);
    EXPECT_GE(identity->deflate_bytes(), body.size()) << "stored blocks, nothing compressed";
  }
}

TEST(MakePageObject, TransientPageWithoutChromeCompressesOnlyForGzip) {
  std::string body;
  for (int i = 0; i < 3000; ++i) body += "0123456789abcdef refs/tags/v" + std::to_string(i) + "\n";
  auto gzip = TransientPage(body, /*compress=*/true, {});
  ASSERT_TRUE(gzip);
  EXPECT_EQ(Identity(*gzip), body);
  EXPECT_LT(gzip->deflate_bytes(), body.size() / 3);
  auto identity = TransientPage(body, /*compress=*/false, {});
  ASSERT_TRUE(identity);
  EXPECT_EQ(Identity(*identity), body);
  EXPECT_GE(identity->deflate_bytes(), body.size());
  EXPECT_TRUE(TransientPage("", /*compress=*/false, {}));
}

// A stored part at level 1 that names shared ranges (a file view's line numbers): each range is
// a segment of its own, compressed once per thread and the same bytes in every part that repeats
// it; the text between is compressed as a body of its own (several 64 KiB segments when long);
// every part inflates to its body. Ranges out of order or past the body are left out.
TEST(MakePageObject, StoredPartTakesItsSharedRangesFromTheMemo) {
  std::string run;
  for (int line = 1; line <= 256; ++line) {
    const std::string n = std::to_string(line);
    run += "<a id='n" + n + "' href='#n" + n + "'>" + n + "</a>\n";
  }
  auto part = [](std::string_view body, std::span<const std::pair<uint64_t, uint64_t>> shared) {
    proxy::PageSpec spec;
    spec.level = 1;
    spec.shared = shared;
    shellac::cache::Status status;
    shellac::cache::ObjectRef object = proxy::MakePageObject("gitfrag/blob/x", body, spec, &status);
    EXPECT_TRUE(object) << status.message();
    return object;
  };
  std::string text;
  for (int i = 0; i < 12000; ++i) text += "line " + std::to_string(i * 7919 % 100003) + " &lt;\n";
  const std::string a = "<table>" + run + run + "tail one", b = "<table>" + run + text;
  const std::vector<std::pair<uint64_t, uint64_t>> a_shared{{0, 7 + run.size()},
                                                            {7 + run.size(), 7 + 2 * run.size()}};
  const std::vector<std::pair<uint64_t, uint64_t>> b_shared{
      {0, 7 + run.size()}, {3, 10}, {7 + run.size() + 10, b.size() + 1}};
  const shellac::cache::ObjectRef pa = part(a, a_shared), pb = part(b, b_shared);
  ASSERT_TRUE(pa && pb);
  EXPECT_EQ(Identity(*pa), a);
  EXPECT_EQ(Identity(*pb), b);
  const std::vector<shellac::cache::SegmentView> sa(pa->segments().begin(), pa->segments().end());
  const std::vector<shellac::cache::SegmentView> sb(pb->segments().begin(), pb->segments().end());
  ASSERT_EQ(sa.size(), 3u) << "two runs and the tail";
  EXPECT_EQ(sa[0].length, 7 + run.size());
  EXPECT_EQ(sa[1].length, run.size());
  ASSERT_GE(sb.size(), 3u) << "the run, then the text in 64 KiB segments";
  EXPECT_EQ(sb[0].deflate, sa[0].deflate) << "compressed once";
  EXPECT_EQ(sb[1].length, 64u << 10);
  EXPECT_LT(pb->deflate_bytes(), b.size() / 3);
}

// A page whose shared pieces outgrow the memo's bound (4096 pieces) is made whole: the memo is
// cleared between pages, never while one page's pieces are being gathered.
TEST(MakePageObject, ManySharedPiecesOutlastTheMemosBound) {
  for (const bool transient : {true, false}) {
    std::string body;
    std::vector<std::pair<uint64_t, uint64_t>> shared;
    for (int i = 0; i < 5000; ++i) {
      const uint64_t begin = body.size();
      body += "<piece " + std::to_string(i) + (transient ? "t" : "s") + ">";
      shared.emplace_back(begin, body.size());
      body += " ";
    }
    proxy::PageSpec spec;
    spec.level = 1;
    spec.transient = transient;
    spec.shared = shared;
    shellac::cache::Status status;
    shellac::cache::ObjectRef object = proxy::MakePageObject("page", body, spec, &status);
    ASSERT_TRUE(object) << status.message();
    EXPECT_EQ(Identity(*object), body) << (transient ? "transient" : "stored");
  }
}

TEST(Compressible, CompressedAndUnknownBytesAreNot) {
  for (const char* type : {"text/plain; charset=UTF-8", "text/html; charset=UTF-8",
                           "application/atom+xml; charset=UTF-8", "image/svg+xml", "TEXT/CSS"}) {
    EXPECT_TRUE(proxy::Compressible(type)) << type;
  }
  for (const char* type : {"application/octet-stream", "image/png", "IMAGE/JPEG; charset=UTF-8",
                           "application/zip", "application/gzip", "video/mp4", "audio/ogg",
                           "application/pdf", " application/x-xz ; charset=UTF-8"}) {
    EXPECT_FALSE(proxy::Compressible(type)) << type;
  }
}

}  // namespace
}  // namespace shellac::http

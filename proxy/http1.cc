#include "proxy/http1.h"

#include <event2/buffer.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/text.h"

namespace shellac::http {
namespace {

using base::AsciiLower;
using base::EqualsIgnoreCase;
using base::TrimOws;

constexpr size_t kMaxChunkLine = 4096;
constexpr unsigned kMaxTrailerLines = 64;
constexpr size_t kMaxLeadingEmptyLines = 4;

bool IsTokenChar(unsigned char c) {
  // RFC 9110 5.6.2 tchar.
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTokenChar(c); });
}

// Field values: visible ASCII, SP, HTAB and obs-text; no other control bytes.
bool IsFieldValue(std::string_view s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}


// Splits the head in `buf` into lines. `strict`: every line must end in CRLF (client side);
// otherwise a bare LF ends a line too (origin side). Stops at the empty line that ends the head.
struct LineScanner {
  std::string_view buf;
  size_t pos = 0;
  bool strict = true;

  enum Result { kLine, kIncomplete, kBareLf, kBareCr };
  Result Next(std::string_view* line) {
    size_t eol = buf.find('\n', pos);
    if (eol == std::string_view::npos) {
      // A CR that is followed by anything but LF is malformed, even before the line completes.
      size_t cr = buf.find('\r', pos);
      if (cr != std::string_view::npos && cr + 1 < buf.size()) return kBareCr;
      return kIncomplete;
    }
    size_t end = eol;
    if (end > pos && buf[end - 1] == '\r') {
      --end;
    } else if (strict) {
      return kBareLf;
    }
    *line = buf.substr(pos, end - pos);
    if (line->find('\r') != std::string_view::npos) return kBareCr;
    pos = eol + 1;
    return kLine;
  }
};

struct ParsedFields {
  std::vector<Header> headers;
  size_t head_bytes = 0;
};

// Reads header lines after the start line. kDone when the empty line was read.
ParseResult ParseFields(LineScanner& scanner, uint64_t max_count, int too_many_status,
                        std::vector<Header>* headers) {
  for (;;) {
    std::string_view line;
    switch (scanner.Next(&line)) {
      case LineScanner::kIncomplete:
        return ParseResult{};
      case LineScanner::kBareLf:
        return ParseResult::Error(400, "bare LF line ending in the header section");
      case LineScanner::kBareCr:
        return ParseResult::Error(400, "bare CR in the header section");
      case LineScanner::kLine:
        break;
    }
    if (line.empty()) return ParseResult{ParseResult::kDone, 0, {}};
    if (line.front() == ' ' || line.front() == '\t') {
      return ParseResult::Error(400, "obsolete line folding in a header field");
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return ParseResult::Error(400, "header line without a colon");
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) {
      return ParseResult::Error(400, name.find_first_of(" \t") != std::string_view::npos
                                         ? "whitespace in or after a header name"
                                         : "invalid header name");
    }
    std::string_view value = TrimOws(line.substr(colon + 1));
    if (!IsFieldValue(value)) return ParseResult::Error(400, "control character in a header value");
    if (headers->size() >= max_count) {
      return ParseResult::Error(too_many_status, "more than " + std::to_string(max_count) + " header fields");
    }
    headers->push_back(Header{std::string(name), std::string(value)});
  }
}

// Content-Length: every occurrence (and list element) must be the same decimal number, at most
// kMaxContentLength.
bool CombinedContentLength(const std::vector<Header>& headers, bool* present, uint64_t* length,
                           std::string* why) {
  *present = false;
  for (const auto& h : headers) {
    if (!EqualsIgnoreCase(h.name, "content-length")) continue;
    bool ok = true;
    bool any = false;
    ForEachListElement(h.value, [&](std::string_view element) {
      uint64_t v = 0;
      any = true;
      if (!base::ParseDecimal(element, &v) || v > kMaxContentLength) {
        ok = false;
        *why = "invalid Content-Length";
      } else if (*present && v != *length) {
        ok = false;
        *why = "conflicting Content-Length values";
      } else {
        *present = true;
        *length = v;
      }
    });
    if (!any) *why = "invalid Content-Length";
    if (!ok || !any) return false;
  }
  return true;
}

std::string_view PulledHead(evbuffer* in, size_t limit) {
  size_t avail = evbuffer_get_length(in);
  size_t window = std::min(avail, limit);
  if (window == 0) return {};
  const auto* data = reinterpret_cast<const char*>(evbuffer_pullup(in, static_cast<ssize_t>(window)));
  return std::string_view(data, window);
}

}  // namespace

const Header* RequestHead::Find(std::string_view name) const {
  for (const auto& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return &h;
  }
  return nullptr;
}

std::vector<std::string> ConnectionTokens(const std::vector<Header>& headers) {
  std::vector<std::string> tokens;
  for (const auto& h : headers) {
    if (!EqualsIgnoreCase(h.name, "connection")) continue;
    ForEachListElement(h.value, [&](std::string_view t) {
      tokens.push_back(base::ToLower(t));
    });
  }
  return tokens;
}

bool IsHopByHop(std::string_view name, const std::vector<std::string>& connection_tokens) {
  static constexpr std::string_view kHopByHop[] = {
      "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy",
  };
  for (auto h : kHopByHop) {
    if (EqualsIgnoreCase(name, h)) return true;
  }
  // Proxy-Authorization, Proxy-Authenticate, Proxy-Connection and any other Proxy-*.
  if (name.size() > 6 && EqualsIgnoreCase(name.substr(0, 6), "proxy-")) return true;
  for (const auto& t : connection_tokens) {
    if (EqualsIgnoreCase(name, t)) return true;
  }
  return false;
}

namespace {

// The steps of ParseRequestHead, in the order it takes them. Each returns nullopt to go on, or
// the result to return (incomplete or an error).
using Outcome = std::optional<ParseResult>;

ParseResult HeadTooLarge(const Limits& limits) {
  return ParseResult::Error(431, "request head larger than " + std::to_string(limits.max_header_bytes) + " bytes");
}

ParseResult RequestLineTooLong(const Limits& limits) {
  return ParseResult::Error(414, "request line longer than " + std::to_string(limits.max_request_line) + " bytes");
}

// Skips the few empty lines a server ignores before the request line (RFC 9112 2.2), then reads
// the request line into *line.
Outcome ReadRequestLine(std::string_view buf, const Limits& limits, LineScanner* scanner, std::string_view* line) {
  for (size_t i = 0; i < kMaxLeadingEmptyLines && buf.substr(scanner->pos).starts_with("\r\n"); ++i) {
    scanner->pos += 2;
  }
  const size_t line_start = scanner->pos;
  switch (scanner->Next(line)) {
    case LineScanner::kIncomplete:
      // A CR at the end may be the start of the line's CRLF, not part of the line.
      if (buf.size() - line_start - (buf.ends_with('\r') ? 1 : 0) > limits.max_request_line) {
        return RequestLineTooLong(limits);
      }
      if (buf.size() - line_start > limits.max_header_bytes) return HeadTooLarge(limits);
      return ParseResult{};
    case LineScanner::kBareLf:
      return ParseResult::Error(400, "bare LF after the request line");
    case LineScanner::kBareCr:
      return ParseResult::Error(400, "bare CR in the request line");
    case LineScanner::kLine:
      break;
  }
  if (line->size() > limits.max_request_line) return RequestLineTooLong(limits);
  return std::nullopt;
}

struct RequestLine {
  std::string_view method;
  std::string_view target;
  int minor_version = 1;
};

// request-line = method SP request-target SP HTTP-version, single spaces.
Outcome SplitRequestLine(std::string_view line, RequestLine* out) {
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos) {
    return ParseResult::Error(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return ParseResult::Error(400, "invalid method");
  if (target.empty()) return ParseResult::Error(400, "empty request target");
  for (unsigned char c : target) {
    if (c <= 0x20 || c == 0x7f) return ParseResult::Error(400, "control character in the request target");
  }
  if (version.size() != 8 || !version.starts_with("HTTP/") || version[6] != '.' ||
      !std::isdigit(static_cast<unsigned char>(version[5])) ||
      !std::isdigit(static_cast<unsigned char>(version[7]))) {
    return ParseResult::Error(400, "malformed HTTP version");
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    return ParseResult::Error(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  }
  out->method = method;
  out->target = target;
  out->minor_version = version[7] - '0';
  return std::nullopt;
}

// The header fields after the request line, up to the empty line; *head_bytes: the head's length.
Outcome ReadRequestFields(std::string_view buf, const Limits& limits, LineScanner* scanner, RequestHead* head,
                       size_t* head_bytes) {
  ParseResult fields = ParseFields(*scanner, limits.max_header_count, 431, &head->headers);
  if (fields.kind == ParseResult::kIncomplete) {
    if (buf.size() > limits.max_header_bytes) return HeadTooLarge(limits);
    return fields;
  }
  if (fields.kind == ParseResult::kError) return fields;
  *head_bytes = scanner->pos;
  if (*head_bytes > limits.max_header_bytes) return HeadTooLarge(limits);
  return std::nullopt;
}

// Target forms (RFC 9112 3.2): origin-form, "*" for OPTIONS, absolute-form (whose authority goes
// to *absolute_host).
Outcome ResolveTarget(const RequestLine& line, RequestHead* head, std::string* absolute_host) {
  const std::string_view target = line.target;
  if (line.method == "CONNECT") return ParseResult::Error(405, "CONNECT is not supported");
  if (target.front() == '/') {
    head->target = std::string(target);
  } else if (target == "*" && line.method == "OPTIONS") {
    head->target = "*";
  } else {
    size_t scheme_end = 0;
    if (target.size() > 7 && base::StartsWithIgnoreCase(target, "http://")) scheme_end = 7;
    else if (target.size() > 8 && base::StartsWithIgnoreCase(target, "https://")) scheme_end = 8;
    if (scheme_end == 0) return ParseResult::Error(400, "request target is neither a path nor an http URL");
    std::string_view rest = target.substr(scheme_end);
    auto slash = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, slash);
    if (authority.empty() || authority.find('@') != std::string_view::npos) {
      return ParseResult::Error(400, "invalid authority in the request target");
    }
    *absolute_host = std::string(authority);
    if (slash == std::string_view::npos) head->target = "/";
    else if (rest[slash] == '?') head->target = "/" + std::string(rest.substr(slash));
    else head->target = std::string(rest.substr(slash));
  }
  return std::nullopt;
}

struct TransferEncodingSeen {
  bool present = false;
  int count = 0;
  bool chunked = false;  // the last one says exactly "chunked"
};

// Host: exactly one in HTTP/1.1 (RFC 9112 3.2); an absolute-form target overrides it. Also notes
// Transfer-Encoding and takes Expect: 100-continue.
Outcome CheckHostAndExpect(const std::string& absolute_host, RequestHead* head, TransferEncodingSeen* te) {
  int host_count = 0;
  for (const auto& h : head->headers) {
    if (EqualsIgnoreCase(h.name, "host")) {
      ++host_count;
      head->host = h.value;
    } else if (EqualsIgnoreCase(h.name, "transfer-encoding")) {
      te->present = true;
      ++te->count;
      te->chunked = EqualsIgnoreCase(h.value, "chunked");
    } else if (EqualsIgnoreCase(h.name, "expect")) {
      if (!EqualsIgnoreCase(h.value, "100-continue")) {
        return ParseResult::Error(417, "unsupported Expect value");
      }
      head->expect_continue = true;
    }
  }
  if (host_count > 1) return ParseResult::Error(400, "more than one Host header");
  if (host_count == 0 && head->minor_version == 1 && absolute_host.empty()) {
    return ParseResult::Error(400, "HTTP/1.1 request without Host");
  }
  for (unsigned char c : head->host) {
    if (c <= 0x20 || c == '/' || c == '\\' || c == '@' || c == 0x7f) {
      return ParseResult::Error(400, "invalid Host header");
    }
  }
  if (!absolute_host.empty()) head->host = absolute_host;
  return std::nullopt;
}

// Framing (RFC 9112 6): refuse every shape on which two parsers could disagree.
Outcome DecideRequestFraming(const TransferEncodingSeen& te, RequestHead* head) {
  bool cl_present = false;
  std::string why;
  if (!CombinedContentLength(head->headers, &cl_present, &head->content_length, &why)) {
    return ParseResult::Error(400, why);
  }
  if (te.present) {
    if (head->minor_version == 0) return ParseResult::Error(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (cl_present) return ParseResult::Error(400, "both Content-Length and Transfer-Encoding");
    if (te.count > 1) return ParseResult::Error(400, "more than one Transfer-Encoding header");
    if (!te.chunked) return ParseResult::Error(400, "Transfer-Encoding other than chunked");
    head->body = BodyKind::kChunked;
  } else if (cl_present && head->content_length > 0) {
    head->body = BodyKind::kLength;
  }
  // RFC 9110 10.1.1: an HTTP/1.0 client would take "100 Continue" for the final response.
  if (head->body == BodyKind::kNone || head->minor_version == 0) head->expect_continue = false;
  return std::nullopt;
}

// Persistence (RFC 9112 9.3).
void DecidePersistence(RequestHead* head) {
  auto tokens = ConnectionTokens(head->headers);
  auto has = [&](std::string_view t) { return std::find(tokens.begin(), tokens.end(), t) != tokens.end(); };
  head->keep_alive = !has("close") && (head->minor_version == 1 || has("keep-alive"));
}

}  // namespace

ParseResult ParseRequestHead(evbuffer* in, const Limits& limits, RequestHead* out) {
  std::string_view buf = PulledHead(in, limits.max_header_bytes + 2 * kMaxLeadingEmptyLines + 1);
  if (buf.empty()) return ParseResult{};

  LineScanner scanner{buf, 0, /*strict=*/true};
  std::string_view line_text;
  if (Outcome r = ReadRequestLine(buf, limits, &scanner, &line_text)) return std::move(*r);
  RequestLine line;
  if (Outcome r = SplitRequestLine(line_text, &line)) return std::move(*r);

  RequestHead head;
  head.method = std::string(line.method);
  head.minor_version = line.minor_version;
  size_t head_bytes = 0;
  if (Outcome r = ReadRequestFields(buf, limits, &scanner, &head, &head_bytes)) return std::move(*r);
  std::string absolute_host;
  if (Outcome r = ResolveTarget(line, &head, &absolute_host)) return std::move(*r);
  TransferEncodingSeen te;
  if (Outcome r = CheckHostAndExpect(absolute_host, &head, &te)) return std::move(*r);
  if (Outcome r = DecideRequestFraming(te, &head)) return std::move(*r);
  DecidePersistence(&head);

  evbuffer_drain(in, head_bytes);
  *out = std::move(head);
  return ParseResult{ParseResult::kDone, 0, {}};
}

ParseResult ParseResponseHead(evbuffer* in, uint64_t max_header_bytes, std::string_view method,
                              ResponseHead* out) {
  std::string_view buf = PulledHead(in, max_header_bytes + 1);
  if (buf.empty()) return ParseResult{};
  LineScanner scanner{buf, 0, /*strict=*/false};
  std::string_view line;
  switch (scanner.Next(&line)) {
    case LineScanner::kIncomplete:
      if (buf.size() > max_header_bytes) return ParseResult::Error(502, "upstream response head too large");
      return ParseResult{};
    case LineScanner::kLine:
      break;
    default:
      return ParseResult::Error(502, "upstream sent a malformed status line");
  }
  // status-line = HTTP-version SP 3DIGIT SP [reason-phrase]
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || line[8] != ' ' ||
      (line[7] != '0' && line[7] != '1') || (line.size() > 12 && line[12] != ' ') ||
      !std::all_of(line.begin() + 9, line.begin() + 12, [](char c) { return c >= '0' && c <= '9'; })) {
    return ParseResult::Error(502, "upstream sent a malformed status line");
  }
  ResponseHead head;
  head.minor_version = line[7] - '0';
  head.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (head.status < 100) return ParseResult::Error(502, "upstream sent an invalid status code");
  if (line.size() > 13 && IsFieldValue(line.substr(13))) head.reason = std::string(line.substr(13));

  ParseResult fields = ParseFields(scanner, 1000, 502, &head.headers);
  if (fields.kind == ParseResult::kIncomplete) {
    if (buf.size() > max_header_bytes) return ParseResult::Error(502, "upstream response head too large");
    return fields;
  }
  if (fields.kind == ParseResult::kError) {
    return ParseResult::Error(502, "upstream sent a malformed header: " + fields.detail);
  }
  const size_t head_bytes = scanner.pos;
  if (head_bytes > max_header_bytes) return ParseResult::Error(502, "upstream response head too large");

  auto tokens = ConnectionTokens(head.headers);
  auto has = [&](std::string_view t) { return std::find(tokens.begin(), tokens.end(), t) != tokens.end(); };
  head.keep_alive = !has("close") && (head.minor_version == 1 || has("keep-alive"));

  bool cl_present = false;
  std::string why;
  if (!CombinedContentLength(head.headers, &cl_present, &head.content_length, &why)) {
    return ParseResult::Error(502, "upstream sent " + why);
  }
  const Header* te = nullptr;
  for (const auto& h : head.headers) {
    if (EqualsIgnoreCase(h.name, "transfer-encoding")) {
      if (te != nullptr) return ParseResult::Error(502, "upstream sent two Transfer-Encoding headers");
      te = &h;
    }
  }
  const bool no_body = head.status < 200 || head.status == 204 || head.status == 304 || method == "HEAD";
  if (te != nullptr && cl_present) {
    return ParseResult::Error(502, "upstream sent both Content-Length and Transfer-Encoding");
  }
  if (no_body) {
    head.body = BodyKind::kNone;
  } else if (te != nullptr) {
    // Any other transfer coding (gzip, "gzip, chunked") would reach the client undeclared once the
    // hop-by-hop Transfer-Encoding is removed, so it is refused rather than passed on corrupted.
    if (!EqualsIgnoreCase(te->value, "chunked")) {
      return ParseResult::Error(502, "upstream sent an unsupported Transfer-Encoding");
    }
    head.body = BodyKind::kChunked;
  } else if (cl_present) {
    head.body = head.content_length > 0 ? BodyKind::kLength : BodyKind::kNone;
  } else {
    head.body = BodyKind::kUntilClose;
    head.keep_alive = false;
  }
  evbuffer_drain(in, head_bytes);
  *out = std::move(head);
  return ParseResult{ParseResult::kDone, 0, {}};
}

ChunkedDecoder::Step ChunkedDecoder::Decode(evbuffer* in, evbuffer* out, size_t max_out) {
  // Reads one CRLF-terminated line (without the CRLF) of at most kMaxChunkLine bytes.
  auto read_line = [&](std::string* line) -> Step {
    size_t eol_len = 0;
    evbuffer_ptr p = evbuffer_search_eol(in, nullptr, &eol_len, EVBUFFER_EOL_LF);
    if (p.pos < 0) {
      if (evbuffer_get_length(in) > kMaxChunkLine) {
        error_ = "chunk line too long";
        return Step::kError;
      }
      return Step::kNeedMore;
    }
    size_t n = static_cast<size_t>(p.pos);
    if (n > kMaxChunkLine) {
      error_ = "chunk line too long";
      return Step::kError;
    }
    line->resize(n);
    evbuffer_remove(in, line->data(), n);
    evbuffer_drain(in, 1);  // the LF
    if (line->empty() || line->back() != '\r') {
      error_ = "bare LF in chunked framing";
      return Step::kError;
    }
    line->pop_back();
    if (line->find('\r') != std::string::npos) {
      error_ = "bare CR in chunked framing";
      return Step::kError;
    }
    return Step::kProgress;
  };

  std::string line;
  switch (state_) {
    case State::kSize: {
      Step s = read_line(&line);
      if (s != Step::kProgress) return s;
      size_t i = 0;
      uint64_t size = 0;
      for (; i < line.size() && std::isxdigit(static_cast<unsigned char>(line[i])); ++i) {
        if (i >= 15) {
          error_ = "chunk size too large";
          return Step::kError;
        }
        char c = AsciiLower(line[i]);
        size = size * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
      }
      if (i == 0) {
        error_ = "invalid chunk size";
        return Step::kError;
      }
      std::string_view rest = TrimOws(std::string_view(line).substr(i));
      if (!rest.empty() && (rest.front() != ';' || !IsFieldValue(rest))) {
        error_ = "invalid chunk size";
        return Step::kError;
      }
      framing_seen_ = true;
      if (size == 0) {
        state_ = State::kTrailer;
      } else {
        remaining_ = size;
        state_ = State::kData;
      }
      return Step::kProgress;
    }
    case State::kData: {
      size_t avail = evbuffer_get_length(in);
      size_t n = static_cast<size_t>(std::min<uint64_t>({avail, remaining_, max_out}));
      if (n == 0) return Step::kNeedMore;
      evbuffer_remove_buffer(in, out, n);
      remaining_ -= n;
      decoded_ += n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      return Step::kProgress;
    }
    case State::kDataEnd: {
      if (evbuffer_get_length(in) < 2) return Step::kNeedMore;
      char crlf[2];
      evbuffer_remove(in, crlf, 2);
      if (crlf[0] != '\r' || crlf[1] != '\n') {
        error_ = "chunk data not followed by CRLF";
        return Step::kError;
      }
      state_ = State::kSize;
      return Step::kProgress;
    }
    case State::kTrailer: {
      Step s = read_line(&line);
      if (s != Step::kProgress) return s;
      if (line.empty()) {
        state_ = State::kDone;
        return Step::kDone;
      }
      if (++trailer_lines_ > kMaxTrailerLines) {
        error_ = "too many trailer fields";
        return Step::kError;
      }
      return Step::kProgress;
    }
    case State::kDone:
      return Step::kDone;
  }
  return Step::kError;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

}  // namespace shellac::http

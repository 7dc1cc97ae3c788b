#include "gitfrag/writer.h"

#include <cstring>

#include "gitfrag/byte_scan.h"

namespace shellac::gitfrag {

Writer::Writer(std::string* sink) : sink_(sink), buffer_(new char[kBufferSize]) {}

Writer& Writer::RawAcrossFlush(std::string_view s) {
  if (s.size() >= kDirectBytes) {
    Flush();
    sink_->append(s);
    flushed_ += s.size();
    return *this;
  }
  while (!s.empty()) {
    if (used_ == kBufferSize) Flush();
    const size_t n = std::min(s.size(), kBufferSize - used_);
    std::memcpy(buffer_.get() + used_, s.data(), n);
    used_ += n;
    s.remove_prefix(n);
  }
  return *this;
}

Writer& Writer::Include(std::string_view url) {
  const uint64_t begin = size();
  Raw("<esi:include src=\"").Raw(url).Raw("\"/>");
  includes_.emplace_back(begin, size());
  return *this;
}

Writer& Writer::Text(std::string_view s) {
  // Runs of safe bytes go in one copy; only the five special bytes are replaced one at a time.
  EscapeRuns(
      s, FindAnyOf<'&', '<', '>', '\'', '"'>, [this](std::string_view run) { Raw(run); },
      [this](char c) {
        switch (c) {
          case '&':
            Raw("&amp;");
            break;
          case '<':
            Raw("&lt;");
            break;
          case '>':
            Raw("&gt;");
            break;
          case '\'':
            Raw("&#39;");
            break;
          default:  // '"'
            Raw("&quot;");
            break;
        }
      });
  return *this;
}

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

// The bytes a URL escapes: all but [A-Za-z0-9._~-], and '/' unless `keep_slash`.
constexpr ByteSet UrlUnsafeBytes(bool keep_slash) {
  ByteSet unsafe{};
  for (int c = 0; c < 256; ++c)
    unsafe[c] = !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'));
  return unsafe;
}
constexpr ByteSet kUrlUnsafe = UrlUnsafeBytes(false), kUrlUnsafeButSlash = UrlUnsafeBytes(true);

// Percent-encodes `s` onto `out`: each run of bytes a URL keeps in one `out(run)`, each other byte
// as its three bytes. (A tree page writes a few links per entry, each with its path.)
template <typename Out>
void UrlEncode(std::string_view s, bool keep_slash, Out out) {
  const ByteSet& unsafe = keep_slash ? kUrlUnsafeButSlash : kUrlUnsafe;
  EscapeRuns(
      s, [&unsafe](const char* p, const char* end) { return FindInSet(p, end, unsafe); }, out,
      [&out](char byte) {
        const auto c = static_cast<unsigned char>(byte);
        const char escape[3] = {'%', kHex[c >> 4], kHex[c & 15]};
        out(std::string_view(escape, 3));
      });
}

}  // namespace

void AppendUrlEncoded(std::string* out, std::string_view s, bool keep_slash) {
  UrlEncode(s, keep_slash, [out](std::string_view piece) { out->append(piece); });
}

Writer& Writer::UrlPart(std::string_view s, bool keep_slash) {
  UrlEncode(s, keep_slash, [this](std::string_view piece) { Raw(piece); });
  return *this;
}

Writer& Writer::Number(uint64_t n) {
  char digits[24];
  size_t i = sizeof digits;
  do {
    digits[--i] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  return Raw(std::string_view(digits + i, sizeof digits - i));
}

void Writer::Flush() {
  if (used_ == 0) return;
  sink_->append(buffer_.get(), used_);
  flushed_ += used_;
  used_ = 0;
}

}  // namespace shellac::gitfrag

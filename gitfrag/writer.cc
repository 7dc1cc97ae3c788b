#include "gitfrag/writer.h"

#include <cstring>

#include "gitfrag/byte_scan.h"

namespace shellac::gitfrag {

Writer::Writer(std::string* sink) : sink_(sink), buffer_(new char[kBufferSize]) {}

Writer& Writer::Raw(std::string_view s) {
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
  const char* p = s.data();
  const char* const end = p + s.size();
  for (;;) {
    const char* const run = p;
    p = FindAnyOf<'&', '<', '>', '\'', '"'>(p, end);
    Raw(std::string_view(run, static_cast<size_t>(p - run)));
    if (p == end) return *this;
    switch (*p++) {
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
  }
}

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

bool UrlSafe(unsigned char c, bool keep_slash) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
}

}  // namespace

void AppendUrlEncoded(std::string* out, std::string_view s, bool keep_slash) {
  for (unsigned char c : s) {
    if (UrlSafe(c, keep_slash)) {
      out->push_back(static_cast<char>(c));
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
}

Writer& Writer::UrlPart(std::string_view s, bool keep_slash) {
  // Runs of bytes a URL keeps go in one copy (a tree page writes a few links per entry, each with
  // its path); only the others are escaped one at a time.
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (UrlSafe(c, keep_slash)) continue;
    Raw(s.substr(start, i - start));
    const char escape[3] = {'%', kHex[c >> 4], kHex[c & 15]};
    Raw(std::string_view(escape, 3));
    start = i + 1;
  }
  return Raw(s.substr(start));
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

// Writer: the one place HTML is produced and escaped. A render owns one Writer; bytes collect in
// a 64 KiB buffer and reach the sink in large chunks, so a page of many small pieces costs a few
// appends, never one allocation or syscall per piece.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shellac::gitfrag {

// Percent-encodes `s` onto `out`: bytes outside [A-Za-z0-9._~-] (and '/' unless `keep_slash` is
// false) become %XX. The result is plain ASCII with nothing HTML would interpret. For short
// strings built outside a render (routing, cache keys, include URLs).
void AppendUrlEncoded(std::string* out, std::string_view s, bool keep_slash);

class Writer {
 public:
  static constexpr size_t kBufferSize = 64 << 10;
  // A piece of Raw bytes at least this large goes to the sink in one copy (after what is
  // buffered), not through the buffer: a plain file's bytes, a file view's made line numbers.
  static constexpr size_t kDirectBytes = 4 << 10;

  explicit Writer(std::string* sink);
  ~Writer() { Flush(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Trusted bytes: markup written by the renderer itself. Never git data. Inline: a page makes
  // hundreds of these calls, most of a few bytes that fit the buffer, and a literal's length is
  // then known where it is called.
  Writer& Raw(std::string_view s) {
    if (s.size() > kBufferSize - used_ || s.size() >= kDirectBytes) return RawAcrossFlush(s);
    if (s.empty()) return *this;  // its data() may be null, which memcpy must not be given
    std::memcpy(buffer_.get() + used_, s.data(), s.size());
    used_ += s.size();
    return *this;
  }
  // Git data as HTML text or attribute value: & < > ' " escaped.
  Writer& Text(std::string_view s);
  // Git data inside a URL query or path inside an attribute: bytes outside the URL-safe set are
  // percent-encoded (so the URL is ASCII), then the result is HTML-escaped.
  Writer& UrlPart(std::string_view s, bool keep_slash);
  Writer& Number(uint64_t n);

  // Marks where a run of bytes that other pages repeat byte for byte (page chrome: the head, the
  // branch list, the option panels, the footer) begins and ends. The proxy compresses such a run
  // once and reuses it. Only hints: a wrong mark costs speed, never correctness.
  void BeginShared() { shared_begin_ = size(); }
  void EndShared() {
    if (size() > shared_begin_) shared_.emplace_back(shared_begin_, size());
  }
  std::vector<std::pair<uint64_t, uint64_t>> TakeShared() { return std::move(shared_); }

  // Writes an `<esi:include src="URL"/>` tag (`url`: trusted bytes that need no escaping, as Raw)
  // and notes where it stands, so that the proxy makes the frame's template from these places
  // instead of parsing the page (gitfrag::Page::includes). Every include a page carries is
  // written here.
  Writer& Include(std::string_view url);
  std::vector<std::pair<uint64_t, uint64_t>> TakeIncludes() { return std::move(includes_); }

  // Moves buffered bytes to the sink.
  void Flush();
  // Makes room in the sink for `more` bytes past those written so far, so that a page whose size
  // is known ahead (a file's bytes, its numbered lines) is not copied again each time the sink
  // grows. Only a hint: writing more or less is fine.
  void Reserve(size_t more) { sink_->reserve(size() + more); }
  // Bytes written so far (buffered + flushed).
  uint64_t size() const { return flushed_ + used_; }

 private:
  Writer& RawAcrossFlush(std::string_view s);

  std::string* sink_;
  std::unique_ptr<char[]> buffer_;
  size_t used_ = 0;
  uint64_t flushed_ = 0;
  uint64_t shared_begin_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> shared_;
  std::vector<std::pair<uint64_t, uint64_t>> includes_;
};

}  // namespace shellac::gitfrag

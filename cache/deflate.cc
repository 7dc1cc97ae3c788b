#include "cache/deflate.h"

#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <new>

#include "cache/markup_histogram.h"

namespace shellac::cache {
namespace {

constexpr int kRawWindowBits = -MAX_WBITS;  // negative: raw deflate, no zlib/gzip wrapper
constexpr int kMemLevel = 8;                // zlib's default; what gzip -6 uses
constexpr size_t kMaxSegmentLength = std::numeric_limits<uint32_t>::max();

// libdeflate's crc32 (the same function as zlib's) folds with carry-less multiplies where the CPU
// has them: several times fewer instructions than zlib 1.2's, on every byte a segment holds. Like
// zlib's, it answers a null buffer with the initial value, 0: an empty view (whose data() may be
// null) must leave the crc as it is.
uint32_t Crc32(uint32_t crc, std::string_view bytes) {
  return bytes.empty() ? crc : libdeflate_crc32(crc, bytes.data(), bytes.size());
}

std::string ZlibMessage(const char* what, int rc, const z_stream* stream) {
  std::string m = what;
  m += ": ";
  m += (stream != nullptr && stream->msg != nullptr) ? stream->msg : zError(rc);
  return m;
}

Status NewDeflateStream(int level, DeflateStream* out, int mem_level = kMemLevel,
                        int window_bits = kRawWindowBits) {
  if (level < 0 || level > 9) return Status::Error("deflate level must be 0..9");
  if (mem_level < 1 || mem_level > 9) return Status::Error("deflate memLevel must be 1..9");
  DeflateStream stream(new z_stream{});
  int rc =
      deflateInit2(stream.get(), level, Z_DEFLATED, window_bits, mem_level, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    // deflateInit2 failed: there is no state to end, only the struct to free.
    delete stream.release();
    return Status::Error(ZlibMessage("deflateInit2", rc, nullptr));
  }
  *out = std::move(stream);
  return Status::Ok();
}

// Compresses all of `in` with `flush` and appends the output to *out. Returns when zlib has
// consumed the input and, for a flush, emitted everything up to the flush point (avail_out left
// non-zero). `in` must fit zlib's 32-bit avail_in.
Status Pump(z_stream* stream, std::string_view in, int flush, std::string* out) {
  stream->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  stream->avail_in = static_cast<uInt>(in.size());
  // Room for the typical output; grows (doubling) only for incompressible input or a big block that
  // zlib had buffered from earlier writes. More than 6 bytes, so a flush marker is never split.
  size_t room = std::max<size_t>(1024, in.size() / 2 + 64);
  for (;;) {
    size_t used = out->size();
    out->resize(used + room);
    stream->next_out = reinterpret_cast<Bytef*>(out->data() + used);
    stream->avail_out = static_cast<uInt>(room);
    int rc = deflate(stream, flush);
    out->resize(used + room - stream->avail_out);
    // Z_BUF_ERROR only means "no progress possible": nothing was left to do.
    if (rc != Z_OK && rc != Z_BUF_ERROR) return Status::Error(ZlibMessage("deflate", rc, stream));
    if (stream->avail_out != 0) break;
    room = std::min<size_t>(room * 2, 1u << 30);
  }
  if (stream->avail_in != 0) return Status::Error("deflate: input left over");
  return Status::Ok();
}

int ZlibFlush(FlushMode mode) {
  return mode == FlushMode::kFull ? Z_FULL_FLUSH : Z_SYNC_FLUSH;
}

void PutLittleEndian32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

void EndDeflateStream(z_stream_s* stream) {
  deflateEnd(stream);
  delete stream;
}

void EndInflateStream(z_stream_s* stream) {
  inflateEnd(stream);
  delete stream;
}

// ---- SegmentEncoder ----------------------------------------------------------------------------

SegmentEncoder::SegmentEncoder(Options options) : options_(options) {
  if (options_.segment_size == 0 || options_.segment_size > kMaxSegmentLength) {
    options_.segment_size = kMaxSegmentLength;  // a segment's length must fit its 32-bit field
  }
}
SegmentEncoder::SegmentEncoder(SegmentEncoder&&) noexcept = default;
SegmentEncoder& SegmentEncoder::operator=(SegmentEncoder&&) noexcept = default;
SegmentEncoder::~SegmentEncoder() = default;

Status SegmentEncoder::Start() {
  if (stream_) return Status::Ok();
  if (options_.size_hint == 0) return NewDeflateStream(options_.level, &stream_);
  // The smallest window that holds the body (zlib's raw deflate takes 9..15 bits), and a hash
  // table of as many entries (memLevel + 7 bits; zlib's default pairs 15 with 8).
  int bits = 9;
  while (bits < MAX_WBITS && (uint64_t{1} << bits) < options_.size_hint) ++bits;
  return NewDeflateStream(options_.level, &stream_, std::clamp(bits - 7, 1, kMemLevel), -bits);
}

Status SegmentEncoder::Write(std::string_view data) {
  if (failed_) return Status::Error("SegmentEncoder: write after an error");
  if (finished_) return Status::Error("SegmentEncoder: write after Finish()");
  while (!data.empty()) {
    size_t room = options_.segment_size - current_.length;
    size_t take = std::min(room, data.size());
    Status s = Feed(data.substr(0, take), take == room);
    if (!s.ok()) return s;
    data.remove_prefix(take);
  }
  return Status::Ok();
}

Status SegmentEncoder::Cut() {
  if (failed_) return Status::Error("SegmentEncoder: cut after an error");
  if (finished_) return Status::Ok();
  if (current_.length == 0) return Status::Ok();  // no input since the last cut: nothing pending
  return Feed({}, true);
}

Status SegmentEncoder::Finish() {
  if (failed_) return Status::Error("SegmentEncoder: finish after an error");
  if (finished_) return Status::Ok();
  Status s = Cut();
  finished_ = true;
  stream_.reset();  // the window (~256 KiB of zlib state) is not needed any more
  return s;
}

Status SegmentEncoder::Feed(std::string_view data, bool cut) {
  Status s = Start();
  if (s.ok()) {
    s = Pump(stream_.get(), data, cut ? ZlibFlush(options_.flush) : Z_NO_FLUSH, &current_.deflate);
  }
  if (!s.ok()) {
    failed_ = true;  // the current segment is unusable: refuse further input
    stream_.reset();
    return s;
  }
  current_.crc = Crc32(current_.crc, data);
  current_.length += static_cast<uint32_t>(data.size());
  bytes_in_ += data.size();
  if (cut) {
    bytes_out_ += current_.deflate.size();
    done_.push_back(std::move(current_));
    current_ = Segment{};
  }
  return Status::Ok();
}

std::vector<Segment> SegmentEncoder::TakeSegments() {
  std::vector<Segment> out;
  out.swap(done_);
  return out;
}

// ---- LiteralEncoder ----------------------------------------------------------------------------

Status EncodeStored(std::string_view text, Segment* out) {
  if (text.size() > kMaxSegmentLength) return Status::Error("literal longer than 4 GiB");
  std::string& d = out->deflate;
  d.reserve(d.size() + text.size() + 5 * (text.size() / 65535 + 1));
  out->crc = Crc32(out->crc, text);
  out->length += static_cast<uint32_t>(text.size());
  while (!text.empty()) {
    const size_t n = std::min<size_t>(text.size(), 65535);
    // BFINAL 0, BTYPE 00, the rest of the byte padding; LEN and NLEN little-endian.
    const char header[5] = {0, static_cast<char>(n & 0xff), static_cast<char>(n >> 8),
                            static_cast<char>(~n & 0xff), static_cast<char>((~n >> 8) & 0xff)};
    d.append(header, 5);
    d.append(text.data(), n);
    text.remove_prefix(n);
  }
  return Status::Ok();
}

LiteralEncoder::LiteralEncoder(int level) : level_(level) {}
LiteralEncoder::LiteralEncoder(LiteralEncoder&&) noexcept = default;
LiteralEncoder& LiteralEncoder::operator=(LiteralEncoder&&) noexcept = default;
LiteralEncoder::~LiteralEncoder() = default;

Status LiteralEncoder::Encode(std::string_view text, SegmentView* out) {
  scratch_.deflate.clear();  // keeps its capacity: no allocation once warmed up
  scratch_.crc = 0;
  scratch_.length = 0;
  if (text.size() > kMaxSegmentLength) return Status::Error("literal longer than 4 GiB");
  if (!text.empty()) {
    Status s;
    if (!stream_) {
      s = NewDeflateStream(level_, &stream_);
    } else if (deflateReset(stream_.get()) != Z_OK) {
      s = Status::Error("deflateReset failed");
    }
    // A fresh (or reset) stream per literal: the literal must not refer back into whatever precedes
    // it in the stitched document, which this encoder never saw.
    if (s.ok()) s = Pump(stream_.get(), text, Z_SYNC_FLUSH, &scratch_.deflate);
    if (!s.ok()) {
      stream_.reset();
      return s;
    }
    scratch_.crc = Crc32(0, text);
    scratch_.length = static_cast<uint32_t>(text.size());
  }
  *out = scratch_.view();
  return Status::Ok();
}

// ---- FlushEncoder ------------------------------------------------------------------------------

namespace {

// The kMarkup codes, made on first use and kept for the process (igzip only reads them).
const isal_hufftables* MarkupCodes() {
  static const isal_hufftables* const codes = [] {
    auto histogram = std::make_unique<isal_huff_histogram>();
    std::copy(kMarkupLiteralLengths.begin(), kMarkupLiteralLengths.end(),
              histogram->lit_len_histogram);
    std::copy(kMarkupDistances.begin(), kMarkupDistances.end(), histogram->dist_histogram);
    auto* made = new isal_hufftables{};
    // Fails only for a histogram it cannot make a code of; this one is fixed and tested.
    [[maybe_unused]] const int rc = isal_create_hufftables(made, histogram.get());
    assert(rc == 0 && "isal_create_hufftables refused the markup histogram");
    return made;
  }();
  return codes;
}

}  // namespace

struct FlushEncoder::State {
  static constexpr uint32_t kLevelBuffer = ISAL_DEF_LVL1_DEFAULT;
  static constexpr size_t kOut = 64 << 10;  // igzip writes through this; any size works
  isal_zstream z{};
  std::unique_ptr<uint8_t[]> level_buffer;  // level 1's
  std::unique_ptr<uint8_t[]> out = std::make_unique_for_overwrite<uint8_t[]>(kOut);
  bool started = false;
};

FlushEncoder::FlushEncoder(Codes codes) : codes_(codes) {}
FlushEncoder::FlushEncoder(FlushEncoder&&) noexcept = default;
FlushEncoder& FlushEncoder::operator=(FlushEncoder&&) noexcept = default;
FlushEncoder::~FlushEncoder() = default;

Status FlushEncoder::Encode(std::string_view text, size_t segment_size,
                            std::vector<Segment>* out) {
  out->clear();
  if (text.empty()) return Status::Ok();
  if (!state_) {
    state_ = std::make_unique<State>();
    if (codes_ == Codes::kPerBlock) {
      state_->level_buffer = std::make_unique_for_overwrite<uint8_t[]>(State::kLevelBuffer);
    }
  }
  isal_zstream& z = state_->z;
  // A new stream: nothing before this body is referred to.
  if (!state_->started) {
    isal_deflate_init(&z);
    state_->started = true;
  } else {
    isal_deflate_reset(&z);
  }
  if (codes_ == Codes::kPerBlock) {
    z.level = 1;
    z.level_buf = state_->level_buffer.get();
    z.level_buf_size = State::kLevelBuffer;
  } else {
    z.level = 0;
    if (isal_deflate_set_hufftables(&z, const_cast<isal_hufftables*>(MarkupCodes()),
                                    IGZIP_HUFFTABLE_CUSTOM) != COMP_OK) {
      state_->started = false;
      return Status::Error("igzip: the markup codes were refused");
    }
  }
  z.end_of_stream = 0;
  const size_t step = segment_size == 0 ? kMaxSegmentLength : std::min(segment_size, kMaxSegmentLength);
  for (size_t at = 0; at < text.size(); at += step) {
    const std::string_view piece = text.substr(at, step);
    Segment& segment = out->emplace_back();
    // The last segment ends on a full flush: the same marker as a sync flush, but igzip drops the
    // window instead of copying up to 32 KiB of the input into its state for a call that never
    // comes (~1 instruction a byte under callgrind, 19 K of a 19 KB feed's 266 K;
    // bench/results/pagegzip-callgrind.md). Earlier segments keep the window for the next one.
    z.flush = text.size() - at <= step ? FULL_FLUSH : SYNC_FLUSH;
    z.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(piece.data()));
    z.avail_in = static_cast<uint32_t>(piece.size());
    for (;;) {
      z.next_out = state_->out.get();
      z.avail_out = static_cast<uint32_t>(State::kOut);
      if (isal_deflate(&z) != COMP_OK) {
        // A failed stream is started afresh by the next call.
        state_->started = false;
        out->clear();
        return Status::Error("igzip: deflate failed");
      }
      segment.deflate.append(reinterpret_cast<const char*>(state_->out.get()),
                             State::kOut - z.avail_out);
      // All of it in, and room left: the flush is out (igzip's rule).
      if (z.avail_in == 0 && z.avail_out != 0) break;
    }
    // Level 0 never falls back to stored blocks itself, and codes made for markup make binary
    // bytes ~45 % larger; a text of a few bytes is shorter stored too. A stored segment decodes
    // to the same window, so the stream goes on.
    if (segment.deflate.size() > piece.size() + 5 * (piece.size() / 65535 + 1)) {
      segment.deflate.clear();
      Status s = EncodeStored(piece, &segment);
      if (!s.ok()) {
        out->clear();
        return s;
      }
      continue;
    }
    segment.crc = Crc32(0, piece);
    segment.length = static_cast<uint32_t>(piece.size());
  }
  return Status::Ok();
}

// ---- ChainEncoder ------------------------------------------------------------------------------

Status ChainEncoder::Begin() {
  if (!stream_) return NewDeflateStream(level_, &stream_, mem_level_);
  if (deflateReset(stream_.get()) != Z_OK) {
    stream_.reset();
    return Status::Error("deflateReset failed");
  }
  return Status::Ok();
}

Status ChainEncoder::Add(std::string_view text, Segment* out) {
  if (!stream_) return Status::Error("ChainEncoder: Add() before Begin()");
  if (text.size() > kMaxSegmentLength) return Status::Error("literal longer than 4 GiB");
  Status s = Pump(stream_.get(), text, Z_SYNC_FLUSH, &out->deflate);
  if (!s.ok()) {
    stream_.reset();
    return s;
  }
  out->crc = Crc32(out->crc, text);
  out->length += static_cast<uint32_t>(text.size());
  return Status::Ok();
}

Status ChainEncoder::Known(std::string_view text) {
  if (!stream_) return Status::Error("ChainEncoder: Known() before Begin()");
  // Only the last 32 KiB can be referred to; zlib keeps just that much of a longer dictionary.
  if (text.size() > (1u << 15)) text.remove_prefix(text.size() - (1u << 15));
  if (text.empty()) return Status::Ok();
  const int rc = deflateSetDictionary(stream_.get(), reinterpret_cast<const Bytef*>(text.data()),
                                      static_cast<uInt>(text.size()));
  if (rc != Z_OK) {
    stream_.reset();
    return Status::Error(ZlibMessage("deflateSetDictionary", rc, nullptr));
  }
  return Status::Ok();
}

// ---- GzipStitcher ------------------------------------------------------------------------------

void GzipStitcher::Start() {
  if (started_) return;
  started_ = true;
  // RFC 1952 header: magic 1f 8b, CM=8 (deflate), FLG=0 (no name, comment, extra or header crc),
  // MTIME=0 (no time: the member must be the same bytes for every request), XFL=0, OS=3 (Unix).
  static constexpr std::array<char, 10> kHeader = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};
  sink_.Copy({kHeader.data(), kHeader.size()});
  bytes_written_ += kHeader.size();
}

uint32_t CombineCrc(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
  // crc32_combine costs O(log len(B)) to make the operator for len(B), then one cheap step. The
  // same lengths recur (the same stored segments go out request after request), so each thread
  // keeps the operators it made last, in a small direct-mapped table.
  if (length_b == 0) return crc_a;
  struct Entry {
    uint64_t length = 0;
    uLong op = 0;
  };
  thread_local std::array<Entry, 256> operators;
  Entry& e = operators[(length_b * 0x9E3779B97F4A7C15ull) >> 56];
  if (e.length != length_b) {
    e.length = length_b;
    e.op = crc32_combine_gen64(static_cast<z_off64_t>(length_b));
  }
  return static_cast<uint32_t>(crc32_combine_op(crc_a, crc_b, e.op));
}

void GzipStitcher::Account(const SegmentView& segment) {
  // crc of A||B from crc(A), crc(B) and len(B): stored bytes are never touched.
  crc_ = CombineCrc(crc_, segment.crc, segment.length);
  length_ += segment.length;
  bytes_written_ += segment.deflate.size();
}

void GzipStitcher::AddStored(const SegmentView& segment) {
  assert(!finished_ && "GzipStitcher: part added after the end");
  Start();
  if (!segment.deflate.empty()) sink_.Borrow(segment.deflate);
  Account(segment);
}

void GzipStitcher::AddTransient(const SegmentView& segment) {
  assert(!finished_ && "GzipStitcher: part added after the end");
  Start();
  if (!segment.deflate.empty()) sink_.Copy(segment.deflate);
  Account(segment);
}

Status GzipStitcher::AddLiteral(std::string_view text, LiteralEncoder& encoder) {
  if (text.empty()) return Status::Ok();
  SegmentView segment;
  Status s = encoder.Encode(text, &segment);
  if (!s.ok()) return s;
  AddTransient(segment);
  return Status::Ok();
}

void GzipStitcher::Finish() {
  if (finished_) return;
  Start();
  finished_ = true;
  // Every segment ended with a flush, so the stream is byte-aligned between non-final blocks. The
  // member still needs a block with BFINAL=1. The shortest one is an empty fixed-Huffman block:
  //   bit 0      BFINAL = 1
  //   bits 1-2   BTYPE  = 01 (fixed Huffman), written LSB first: bit 1 = 1, bit 2 = 0
  //   bits 3-9   end-of-block, symbol 256, whose fixed code is seven 0 bits
  // = bits 1,1,0,0,0,0,0,0 | 0,0 + 6 padding bits -> bytes 0x03 0x00 (zlib's Z_FINISH on an empty,
  // aligned stream emits the same two bytes). An empty final stored block would take 5 bytes.
  std::array<uint8_t, 10> tail = {0x03, 0x00};
  // Trailer: CRC32 then ISIZE (length mod 2^32), both little-endian.
  PutLittleEndian32(&tail[2], crc_);
  PutLittleEndian32(&tail[6], static_cast<uint32_t>(length_));
  sink_.Copy({reinterpret_cast<const char*>(tail.data()), tail.size()});
  bytes_written_ += tail.size();
}

// ---- Inflater ----------------------------------------------------------------------------------

Inflater::Inflater() = default;
Inflater::Inflater(Inflater&&) noexcept = default;
Inflater& Inflater::operator=(Inflater&&) noexcept = default;
Inflater::~Inflater() = default;

Status Inflater::Start() {
  if (!stream_) {
    InflateStream stream(new z_stream{});
    int rc = inflateInit2(stream.get(), kRawWindowBits);
    if (rc != Z_OK) {
      delete stream.release();
      return Status::Error(ZlibMessage("inflateInit2", rc, nullptr));
    }
    stream_ = std::move(stream);
  } else if (needs_reset_) {
    if (inflateReset(stream_.get()) != Z_OK) return Status::Error("inflateReset failed");
  }
  needs_reset_ = false;
  return Status::Ok();
}

void Inflater::Reset() {
  active_ = false;
  needs_reset_ = true;
}

void Inflater::Feed(const SegmentView& segment) {
  segment_ = segment;
  crc_ = 0;
  produced_ = 0;
  active_ = true;
  if (stream_) {
    stream_->next_in = nullptr;  // Read() points zlib at the segment (the stream may not exist yet)
    stream_->avail_in = 0;
  }
  fresh_input_ = true;
}

Status Inflater::Read(std::span<char> out, size_t* produced) {
  *produced = 0;
  if (!active_) return Status::Ok();
  Status s = Start();
  if (!s.ok()) return s;
  z_stream* z = stream_.get();
  if (fresh_input_) {
    fresh_input_ = false;
    if (segment_.deflate.size() > kMaxSegmentLength) return Status::Error("segment too large");
    z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(segment_.deflate.data()));
    z->avail_in = static_cast<uInt>(segment_.deflate.size());
  }
  size_t room = std::min<size_t>(out.size(), kMaxSegmentLength);
  z->next_out = reinterpret_cast<Bytef*>(out.data());
  z->avail_out = static_cast<uInt>(room);
  int rc = inflate(z, Z_NO_FLUSH);
  size_t n = room - z->avail_out;
  crc_ = Crc32(crc_, {out.data(), n});
  produced_ += n;
  *produced = n;

  auto fail = [this](std::string message) {
    active_ = false;
    needs_reset_ = true;  // zlib's state is unusable after an error
    return Status::Error(std::move(message));
  };
  if (rc == Z_STREAM_END) return fail("stored segment contains a final block");
  if (rc != Z_OK && rc != Z_BUF_ERROR) {
    return fail(ZlibMessage("inflate", rc, z));
  }
  if (produced_ > segment_.length) return fail("stored segment inflates to more than its length");
  // A segment ends when all its input is consumed with output room to spare: at its flush point,
  // so every byte it encodes has been written.
  if (z->avail_in == 0 && z->avail_out != 0) {
    active_ = false;
    if (produced_ != segment_.length)
      return fail("stored segment inflates to less than its length");
    if (crc_ != segment_.crc) return fail("stored segment crc32 mismatch");
  }
  return Status::Ok();
}

Status Inflater::InflateAll(std::span<const SegmentView> segments, ByteSink& sink, size_t piece) {
  std::array<char, 16 << 10> buffer;
  piece = std::clamp<size_t>(piece, 1, buffer.size());
  for (const SegmentView& segment : segments) {
    Feed(segment);
    while (!NeedsInput()) {
      size_t n = 0;
      Status s = Read({buffer.data(), piece}, &n);
      if (!s.ok()) return s;
      if (n != 0) sink.Copy({buffer.data(), n});
    }
  }
  return Status::Ok();
}

}  // namespace shellac::cache

// deflate: how the store keeps bodies compressed, and the three things done with them:
// encode once (SegmentEncoder), serve gzip without recompressing (GzipStitcher), serve identity by
// inflating while streaming (Inflater).
//
// A body is a sequence of segments. A segment is raw deflate (RFC 1951: no zlib or gzip wrapper)
// that ends with a sync or full flush, so its last block is non-final and its bytes end on a byte
// boundary. Byte-wise concatenation of such segments is therefore one valid deflate stream, and a
// gzip member is made by framing that stream (see GzipStitcher).
//
// Rules that keep every stitched stream valid:
// - The segments of one body share the compressor's 32 KiB window (a sync flush keeps it), so a
//   segment may refer back into earlier segments of the same body. A body is emitted whole, in
//   order, contiguously. (FlushMode::kFull makes each segment independent, at some cost in size.)
// - Every body starts from a fresh compressor, so it never refers to bytes before its first
//   segment. So any sequence of whole bodies (fragments, per-request literals) is valid deflate.
// - No segment contains a final block; GzipStitcher appends the one final (empty) block.
//
// Threads: every class here is a single-threaded value; use one per request or per worker.
// Allocation: none per byte. Buffers grow geometrically and are reused (LiteralEncoder, Inflater).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/owned.h"
#include "cache/status.h"

struct z_stream_s;  // zlib's stream state; zlib.h stays out of this header

namespace shellac::cache {

// A segment whose bytes live elsewhere (in an Object, or in a Segment).
struct SegmentView {
  std::string_view deflate;  // raw deflate ending in a sync/full flush
  uint32_t crc = 0;          // crc32 of the uncompressed bytes
  uint32_t length = 0;       // number of uncompressed bytes
};

// A segment that owns its bytes; what SegmentEncoder produces.
struct Segment {
  std::string deflate;
  uint32_t crc = 0;
  uint32_t length = 0;

  SegmentView view() const { return {deflate, crc, length}; }
};

// crc32 of A||B from crc32(A), crc32(B) and the length of B (zlib's crc32_combine, with the
// length-dependent operator kept per thread for lengths seen before).
uint32_t CombineCrc(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);

// Owning handles for zlib streams: deflateEnd/inflateEnd run exactly once. The z_stream lives on
// the heap because zlib keeps a pointer back to it, so the owner may move.
void EndDeflateStream(z_stream_s* stream);  // deflateEnd, then delete
void EndInflateStream(z_stream_s* stream);  // inflateEnd, then delete
using DeflateStream = base::Owned<EndDeflateStream>;
using InflateStream = base::Owned<EndInflateStream>;

enum class FlushMode {
  kSync,  // Z_SYNC_FLUSH: keeps the window across segments; segments of a body depend on each other
  kFull,  // Z_FULL_FLUSH: resets the window; each segment decodes on its own (costs a few percent)
};

// Compresses one body incrementally into segments: feed chunks as they arrive from an upstream or a
// renderer; a segment is cut every `segment_size` uncompressed bytes and on Cut().
class SegmentEncoder {
 public:
  struct Options {
    int level = 6;                   // zlib level 0..9
    size_t segment_size = 64 << 10;  // uncompressed bytes per segment; 0: cut only on Cut()
    FlushMode flush = FlushMode::kSync;
    // The whole body's length when it is known before the first Write (0: unknown). A body
    // smaller than zlib's 32 KiB window gets a window and a hash table of its own size: zlib
    // clears the hash table of every new stream, and for a page of a few KiB that setup cost as
    // much as compressing it. The output decodes with any inflater (a smaller window only limits
    // how far back a match reaches, and the body is shorter than that).
    uint64_t size_hint = 0;
  };

  SegmentEncoder() : SegmentEncoder(Options{}) {}
  explicit SegmentEncoder(Options options);
  SegmentEncoder(SegmentEncoder&&) noexcept;
  SegmentEncoder& operator=(SegmentEncoder&&) noexcept;
  ~SegmentEncoder();

  // Compresses `data`, cutting segments at every segment_size boundary it crosses.
  Status Write(std::string_view data);
  // Ends the current segment here (a flush), so everything written so far is in finished segments.
  // Does nothing when the current segment is empty.
  Status Cut();
  // Cut() and close: no more Write() is accepted. After any error every call fails: the body is
  // incomplete and must not be stored.
  Status Finish();

  // Hands over the segments finished so far (callers may stream them before Finish()).
  std::vector<Segment> TakeSegments();

  uint64_t bytes_in() const { return bytes_in_; }    // uncompressed bytes written
  uint64_t bytes_out() const { return bytes_out_; }  // deflate bytes in finished segments

 private:
  Status Start();
  Status Feed(std::string_view data, bool cut);

  Options options_;
  DeflateStream stream_;  // created by the first Write/Cut
  Segment current_;
  std::vector<Segment> done_;
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;
  bool finished_ = false;
  bool failed_ = false;  // a zlib error: the body is incomplete, every later call fails
};

// Appends `text` to *out as raw deflate stored blocks (no compression: a 5-byte header per 64 KiB),
// a segment that any stitched stream may hold: it starts and ends on a byte-aligned block
// boundary and refers to nothing. For bytes never sent, or too short to be worth compressing.
Status EncodeStored(std::string_view text, Segment* out);

// Compresses a whole body into segments that end on a sync flush (never a final block), so they
// may be stored, sent over the wire and stitched like SegmentEncoder's, for a fraction of zlib's
// instructions on a page of a few KiB (ISA-L's igzip; zlib sets up, clears and flushes a stream per
// body). A segment is cut every `segment_size` uncompressed bytes (0: one segment); the window
// carries across them (the last ends on a full flush: the same end marker, and igzip keeps no copy
// of the window for a next call). A segment that would come out larger than its text is stored
// instead (EncodeStored). Keeps its igzip state between calls: keep one per thread.
class FlushEncoder {
 public:
  enum class Codes {
    // igzip level 1: each block gets Huffman codes of its own, built from its symbols (~55 K
    // instructions a block whatever its size). For bytes kept and sent many times (stored parts).
    kPerBlock,
    // igzip level 0 with codes made once per process from the histogram of cgit pages
    // (markup_histogram.h): no tree built per call and a cheaper match search, 0.69-0.82x the
    // instructions of kPerBlock on pages of 5-20 KB for 2-8 % more bytes (text unlike the sample,
    // e.g. binary, loses more: it falls back to stored). For pages made for one request.
    kMarkup,
  };

  explicit FlushEncoder(Codes codes = Codes::kPerBlock);
  FlushEncoder(FlushEncoder&&) noexcept;
  FlushEncoder& operator=(FlushEncoder&&) noexcept;
  ~FlushEncoder();

  // Replaces *out with `text`'s segments (none for empty text).
  Status Encode(std::string_view text, size_t segment_size, std::vector<Segment>* out);

 private:
  struct State;
  Codes codes_;
  std::unique_ptr<State> state_;
};

// Compresses per-request text (ESI frame literals) into one-segment bodies at a fast level.
// Keeps its zlib stream and output buffer between calls: keep one per worker thread.
class LiteralEncoder {
 public:
  explicit LiteralEncoder(int level = 1);
  LiteralEncoder(LiteralEncoder&&) noexcept;
  LiteralEncoder& operator=(LiteralEncoder&&) noexcept;
  ~LiteralEncoder();

  // Compresses `text` into one segment. *out views this encoder's buffer and stays valid until the
  // next Encode() or the encoder's destruction. Empty text gives an empty segment (no bytes).
  Status Encode(std::string_view text, SegmentView* out);

 private:
  int level_;
  DeflateStream stream_;
  Segment scratch_;
};

// Compresses the texts of one run into segments that are emitted in order and contiguously, with
// segments made elsewhere between them whose text is passed to Known(): the compressor's window
// then holds what the decoder's will (deflateSetDictionary on raw deflate, after a sync flush), so
// later texts may refer back into all of it. Begin() starts a run that refers to nothing before it.
// Keeps its zlib stream between runs: keep one per thread.
//
// `mem_level` is zlib's memLevel (1..9): the hash table has 2^(mem_level + 7) entries, and every
// Begin() clears it (deflateReset). zlib's default, 8, clears 64 KiB a run; short runs (a frame's
// literal spans, a few KiB) compress as well with 5, which clears 8 KiB.
class ChainEncoder {
 public:
  static constexpr int kShortTextMemLevel = 5;
  explicit ChainEncoder(int level = 1, int mem_level = 8) : level_(level), mem_level_(mem_level) {}
  Status Begin();
  // Compresses `text` into *out (appended), ending with a sync flush.
  Status Add(std::string_view text, Segment* out);
  // The decoder gets `text` from another segment here.
  Status Known(std::string_view text);

 private:
  int level_;
  int mem_level_;
  DeflateStream stream_;
};

// Where stitched or inflated bytes go. Two kinds of bytes arrive:
// - Copy(): bytes valid only during the call (gzip header, trailer, literals, inflated output).
// - Borrow(): stored segment bytes, valid while the caller holds the object they belong to; a
//   sink may reference them instead of copying (e.g. evbuffer_add_reference plus an ObjectRef
//   released in the cleanup callback). The default copies.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void Copy(std::string_view bytes) = 0;
  virtual void Borrow(std::string_view bytes) { Copy(bytes); }
};

// Writes one gzip member (RFC 1952) made of segments: a 10-byte header, each segment's deflate
// bytes exactly as given, one empty final block, then crc32 and length of everything, the crc built
// with crc32_combine from the segments' crcs (nothing is inflated or recompressed).
//
// Usage: AddStored()/AddLiteral() in document order, then Finish(). The header goes out with the
// first part (or with Finish() for an empty member). Mind the ordering rules at the top.
class GzipStitcher {
 public:
  // Bytes the member adds around its segments: header 10, final block 2, trailer 8. With every part
  // known up front, Content-Length = kFramingBytes + the sum of the parts' deflate sizes.
  static constexpr size_t kFramingBytes = 20;

  explicit GzipStitcher(ByteSink& sink) : sink_(sink) {}

  // A stored segment: its bytes are passed to sink.Borrow().
  void AddStored(const SegmentView& segment);
  // A segment whose bytes are about to go away (e.g. a LiteralEncoder's buffer): sink.Copy().
  void AddTransient(const SegmentView& segment);
  // Compresses `text` with `encoder` and adds it as a transient segment.
  Status AddLiteral(std::string_view text, LiteralEncoder& encoder);
  // Final block and trailer. No Add*() afterwards.
  void Finish();

  uint32_t crc() const { return crc_; }        // crc32 of the uncompressed bytes so far
  uint64_t length() const { return length_; }  // uncompressed bytes so far
  uint64_t bytes_written() const { return bytes_written_; }  // gzip bytes given to the sink

 private:
  void Start();
  void Account(const SegmentView& segment);

  ByteSink& sink_;
  uint32_t crc_ = 0;
  uint64_t length_ = 0;
  uint64_t bytes_written_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

// Inflates stored segments for clients that do not accept gzip, in pieces of the caller's size, so
// a slow client is fed as its socket drains. Segments are fed in stitching order (the rules above);
// each segment's length and crc32 are checked as it completes. A final block in a segment is an
// error.
//
//   inflater.Feed(segment);
//   while (!inflater.NeedsInput()) { inflater.Read(buffer, &n); send(buffer, n); }
class Inflater {
 public:
  Inflater();
  Inflater(Inflater&&) noexcept;
  Inflater& operator=(Inflater&&) noexcept;
  ~Inflater();

  // Starts over with a new deflate stream (reuses zlib state).
  void Reset();
  // True when the current segment is fully inflated and checked: Feed() the next one.
  bool NeedsInput() const { return !active_; }
  // Gives the next segment; NeedsInput() must be true. Its bytes must stay valid until then.
  void Feed(const SegmentView& segment);
  // Writes up to out.size() identity bytes into `out` and sets *produced. *produced may be 0 when
  // the segment ended; check NeedsInput(). Errors: corrupt data, crc or length mismatch, no memory.
  Status Read(std::span<char> out, size_t* produced);

  // Convenience: inflates `segments` into sink.Copy() in pieces of at most `piece` bytes.
  Status InflateAll(std::span<const SegmentView> segments, ByteSink& sink, size_t piece = 16 << 10);

 private:
  Status Start();

  InflateStream stream_;
  SegmentView segment_;
  uint32_t crc_ = 0;       // of this segment's output so far
  uint64_t produced_ = 0;  // of this segment's output so far
  bool active_ = false;
  bool fresh_input_ = false;  // Feed() was called; Read() hands the segment to zlib
  bool needs_reset_ = false;
};

}  // namespace shellac::cache

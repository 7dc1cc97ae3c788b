#include "proxy/page_object.h"

#include <zlib.h>

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/fixed_deflate.h"
#include "base/text.h"
#include "cache/cache.h"
#include "proxy/http1.h"

namespace shellac::proxy {
namespace {

// Segments of text that many frames repeat, compressed once and kept per render thread, keyed by
// the text itself. Bounded: cleared when it passes kMaxEntries or kMaxBytes.
class SegmentMemo {
 public:
  const cache::Segment* Find(std::string_view text) {
    auto it = memo_.find(text);
    return it == memo_.end() ? nullptr : &it->second;
  }
  const cache::Segment* Add(std::string_view text, cache::Status* status) {
    // igzip at level 1, its state kept for the thread (cache::FlushEncoder): a piece is a fork's
    // head or branch list (~600 bytes) as often as the footer every page shares, and a thread meets
    // every fork's pieces once. zlib's level 6 took ~113 K instructions a piece (a stream reset and a
    // tree per piece), igzip ~54 K for 2 % more bytes; fixed codes ~13 K for 25 % more, on every
    // page that repeats the piece (bench/results/framezip2-callgrind.md).
    *status = encoder_.Encode(text, 0, &pieces_);
    if (!status->ok()) return nullptr;
    if (pieces_.size() != 1) {
      *status = cache::Status::Error("a shared piece is not one segment");
      return nullptr;
    }
    cache::Segment segment = std::move(pieces_[0]);
    bytes_ += text.size() + segment.deflate.size();
    return &memo_.emplace(std::string(text), std::move(segment)).first->second;
  }
  // Called before a page's pieces are looked up, never between them: what Find and Add gave for
  // a page stays valid until its object is made (a page of many pieces may pass the bound).
  void Trim() {
    if (memo_.size() >= kMaxEntries || bytes_ >= kMaxBytes) {
      memo_.clear();
      bytes_ = 0;
    }
  }

 private:
  static constexpr size_t kMaxEntries = 4096;
  static constexpr size_t kMaxBytes = 8 << 20;
  // A long text is hashed by its length and its first and last kHashedEnds bytes: a file view's
  // line numbers are ~10 KB a piece, hashing all of it cost more than the look-up saved. Texts
  // alike at both ends (a fork's branch lists, with another branch selected) only share a bucket;
  // the map still compares whole texts.
  static constexpr size_t kHashedEnds = 512;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      if (s.size() <= 2 * kHashedEnds) return std::hash<std::string_view>()(s);
      const size_t ends = std::hash<std::string_view>()(s.substr(0, kHashedEnds)) * 31 +
                          std::hash<std::string_view>()(s.substr(s.size() - kHashedEnds));
      return ends ^ (s.size() * 0x9e3779b97f4a7c15ull);
    }
  };
  std::unordered_map<std::string, cache::Segment, Hash, std::equal_to<>> memo_;
  size_t bytes_ = 0;
  cache::FlushEncoder encoder_;
  std::vector<cache::Segment> pieces_;  // the encoder's output, one segment
};

// The render thread's memo: frames' chrome and stored parts' shared ranges.
SegmentMemo& ThreadSegmentMemo() {
  thread_local SegmentMemo memo;
  return memo;
}

// A transient page: each literal span cut at the shared ranges (a page without ESI is one
// literal span). A shared piece comes from the memo; the others of a literal span are compressed
// in one chain that knows the memo pieces' text, so they refer back across them as one stream
// would. Each literal span starts a fresh chain: an include (or a skipped span) may come between
// spans. Markup between literals is never sent: stored, not compressed.
//
// The chain is base::FixedChain (fixed codes, a greedy match finder): a frame's own pieces are a
// few hundred bytes each (a title, a path, the tabs' links), and zlib's level 1 built a Huffman
// tree and flushed a block for each, ~90 instructions a byte; fixed codes take an eighth of that,
// for a gzip page 0.5 % (a file view) to 3.5 % (a commit) larger (bench/results/pagezip-callgrind.md).
// A piece of 1 KiB or more (a commit's message and diffstat) takes the block's own codes where
// they are smaller: a commit page 2.5 % smaller for 1.4 % more instructions
// (bench/results/framezip2-callgrind.md).
cache::Status EncodeTransient(std::string_view body, const PageSpec& spec, bool esi,
                              std::vector<cache::Segment>* owned,
                              std::vector<cache::SegmentView>* views) {
  SegmentMemo& memo = ThreadSegmentMemo();
  memo.Trim();
  thread_local base::FixedChain chain;
  std::vector<uint64_t> cuts{0, body.size()};
  std::vector<std::pair<uint64_t, uint64_t>> literals;
  if (esi) {
    for (const esi::Instruction& in : spec.esi_template->instructions()) {
      if (in.op != esi::Op::kLiteral || in.length == 0) continue;
      literals.emplace_back(in.offset, in.offset + in.length);
      cuts.push_back(in.offset);
      cuts.push_back(in.offset + in.length);
    }
  } else if (!body.empty()) {
    literals.emplace_back(0, body.size());
  }
  for (const auto& [begin, end] : spec.shared) {
    if (end > body.size() || begin >= end) continue;
    cuts.push_back(begin);
    cuts.push_back(end);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  owned->reserve(cuts.size());
  auto inside = [](const auto& ranges, uint64_t begin, uint64_t end) {
    for (const auto& [b, e] : ranges) {
      if (b <= begin && end <= e) return true;
    }
    return false;
  };
  auto starts_literal = [&literals](uint64_t at) {
    return std::any_of(literals.begin(), literals.end(), [at](const auto& l) { return l.first == at; });
  };
  cache::Status s;
  for (size_t i = 0; i + 1 < cuts.size() && s.ok(); ++i) {
    const uint64_t begin = cuts[i], end = cuts[i + 1];
    const std::string_view text = body.substr(begin, end - begin);
    const bool sent = spec.compress && inside(literals, begin, end);
    if (sent && starts_literal(begin)) chain.Begin();
    if (sent && inside(spec.shared, begin, end)) {
      const cache::Segment* segment = memo.Find(text);
      if (segment == nullptr) segment = memo.Add(text, &s);
      if (segment == nullptr) return s;
      views->push_back(segment->view());  // Object::Create copies it
      // The chain learns the piece's text only when more of its literal span follows (info/refs
      // ends with its shared tags: 32 KiB of dictionary a page for nothing).
      const bool chain_goes_on = i + 2 < cuts.size() && !starts_literal(end) &&
                                 inside(literals, end, cuts[i + 2]);
      if (chain_goes_on) chain.Known(text);
      continue;
    }
    cache::Segment& segment = owned->emplace_back();
    if (sent) {
      if (text.size() > UINT32_MAX) return cache::Status::Error("literal longer than 4 GiB");
      chain.Add(text, &segment.deflate);
      segment.crc = static_cast<uint32_t>(
          crc32_z(0, reinterpret_cast<const Bytef*>(text.data()), text.size()));
      segment.length = static_cast<uint32_t>(text.size());
    } else {
      s = cache::EncodeStored(text, &segment);
    }
    views->push_back(segment.view());
  }
  return s;
}

// A stored part at level 1 that names shared ranges (a file view's line numbers, which every
// file of as many lines repeats): each shared range a segment from the thread's memo, compressed
// once; the text between them by `encoder` (igzip level 1), each stretch a body of its own (it
// refers to nothing before it), in 64 KiB segments. Ranges out of order, overlapping or past the
// body are ignored (the bytes between go with the rest).
cache::Status EncodeStoredShared(std::string_view body, const PageSpec& spec,
                                 cache::FlushEncoder& encoder, std::vector<cache::Segment>* owned,
                                 std::vector<cache::SegmentView>* views) {
  SegmentMemo& memo = ThreadSegmentMemo();
  memo.Trim();
  // Each piece of the body in order: a memo segment, or the count of `owned` segments it made.
  struct Piece {
    const cache::Segment* memo = nullptr;
    size_t owned = 0;
  };
  std::vector<Piece> pieces;
  std::vector<cache::Segment> made;
  const size_t segment_size = cache::SegmentEncoder::Options{}.segment_size;
  auto encode = [&](uint64_t begin, uint64_t end) {
    if (begin == end) return cache::Status();
    cache::Status s = encoder.Encode(body.substr(begin, end - begin), segment_size, &made);
    pieces.push_back({nullptr, made.size()});
    for (cache::Segment& segment : made) owned->push_back(std::move(segment));
    return s;
  };
  uint64_t at = 0;
  cache::Status s;
  for (const auto& [begin, end] : spec.shared) {
    if (begin < at || begin >= end || end > body.size()) continue;
    if (s = encode(at, begin); !s.ok()) return s;
    const std::string_view text = body.substr(begin, end - begin);
    const cache::Segment* segment = memo.Find(text);
    if (segment == nullptr) segment = memo.Add(text, &s);
    if (segment == nullptr) return s;
    pieces.push_back({segment, 0});
    at = end;
  }
  if (s = encode(at, body.size()); !s.ok()) return s;
  // `owned` is complete: its segments stay where they are while the views are taken.
  size_t next = 0;
  for (const Piece& piece : pieces) {
    if (piece.memo != nullptr) {
      views->push_back(piece.memo->view());
      continue;
    }
    for (size_t i = 0; i < piece.owned; ++i) views->push_back((*owned)[next++].view());
  }
  return s;
}

// The object for `spec` with the body `views` (and its ESI template when `esi`).
cache::ObjectRef CreateObject(std::string_view key, const PageSpec& spec,
                              std::span<const cache::SegmentView> views, bool esi,
                              cache::Status* status) {
  cache::ObjectSpec object;
  object.status = spec.status;
  object.headers = spec.headers;
  object.stored_at = spec.stored_at;
  object.ttl = spec.ttl;
  object.grace = spec.grace;
  object.body = views;
  if (esi) {
    object.esi_template = spec.esi_template;
    object.esi_template_bytes = spec.esi_template->memory_bytes();
  }
  return cache::Object::Create(key, object, status);
}

// CreateObject over the segments `encode(&owned, &views)` gives: Object::Create copies every
// segment's bytes into the object, so views into the memo and into `owned` need only last until
// it returns.
template <typename Encode>
cache::ObjectRef ObjectOfPieces(std::string_view key, const PageSpec& spec, bool esi,
                                Encode encode, cache::Status* status) {
  std::vector<cache::Segment> owned;
  std::vector<cache::SegmentView> views;
  if (cache::Status s = encode(&owned, &views); !s.ok()) {
    *status = s;
    return {};
  }
  return CreateObject(key, spec, views, esi, status);
}

// CreateObject over owned segments (Object::Create copies their bytes).
cache::ObjectRef ObjectOfSegments(std::string_view key, const PageSpec& spec,
                                  const std::vector<cache::Segment>& segments, bool esi,
                                  cache::Status* status) {
  std::vector<cache::SegmentView> views;
  views.reserve(segments.size());
  for (const auto& segment : segments) views.push_back(segment.view());
  return CreateObject(key, spec, views, esi, status);
}

}  // namespace

bool Compressible(std::string_view content_type) {
  const std::string_view type = base::TrimOws(content_type.substr(0, content_type.find(';')));
  auto is = [type](std::string_view prefix) { return base::StartsWithIgnoreCase(type, prefix); };
  if (is("image/")) return is("image/svg") || is("image/x-xbitmap") || is("image/bmp");
  if (is("audio/") || is("video/") || is("font/woff")) return false;
  for (std::string_view packed :
       {"application/octet-stream", "application/zip", "application/gzip", "application/x-gzip",
        "application/x-bzip2", "application/x-xz", "application/zstd", "application/x-7z",
        "application/x-rar", "application/pdf", "application/java-archive"}) {
    if (is(packed)) return false;
  }
  return true;
}

cache::ObjectRef MakePageObject(std::string_view key, std::string_view body, const PageSpec& spec,
                                cache::Status* status) {
  const bool esi = spec.esi_template && spec.esi_template->esi();
  // A page made for one request: compressed only as far as its client needs (a frame's chrome
  // from the thread's memo, the rest fast), or not at all (stored blocks). A page without ESI is
  // compressed whole below (cut at its chrome, each piece would end a deflate block: measured
  // costlier and larger for pages of forks seen a few times each, bench/results/kinds-callgrind.md),
  // unless it names shared ranges itself (info/refs: the tags a fork farm's forks list alike,
  // ~160 KB, bench/results/kinds-callgrind-2.md).
  if (spec.transient && (esi || !spec.compress || !spec.shared.empty())) {
    return ObjectOfPieces(
        key, spec, esi,
        [&](auto* owned, auto* views) { return EncodeTransient(body, spec, esi, owned, views); },
        status);
  }
  if ((spec.transient && spec.compress) || (!esi && spec.level == 1)) {
    // Any other page made for one request (a folder's listing, a plain file, a feed), and a
    // stored page at the fast level (resident parts: a diff fragment, a patch, a file view): igzip
    // (cache::FlushEncoder), segments ending on a sync flush as the store and the wire need. A
    // page made for one request takes level 0 with codes made once from cgit markup (0.69-0.81x
    // the instructions of level 1, whose tree per call was ~55 K of them, for 2-8 % more bytes
    // that go to one client: bench/results/onezip-callgrind.md); a stored part, whose bytes every
    // fork's pages share, keeps level 1 (a third of zlib's instructions on a page of a few KiB,
    // less than a cheaper level or the fixed chain at a size fit for a part every fork shares:
    // bench/results/framezip2-callgrind.md).
    thread_local cache::FlushEncoder markup(cache::FlushEncoder::Codes::kMarkup);
    thread_local cache::FlushEncoder per_block(cache::FlushEncoder::Codes::kPerBlock);
    cache::FlushEncoder& flush = spec.transient ? markup : per_block;
    if (!spec.transient && !spec.shared.empty()) {
      return ObjectOfPieces(
          key, spec, false,
          [&](auto* owned, auto* views) {
            return EncodeStoredShared(body, spec, flush, owned, views);
          },
          status);
    }
    std::vector<cache::Segment> segments;  // not kept: a large part's bytes would stay behind
    cache::Status s = flush.Encode(body, cache::SegmentEncoder::Options{}.segment_size, &segments);
    if (!s.ok()) {
      *status = s;
      return {};
    }
    return ObjectOfSegments(key, spec, segments, false, status);
  }
  cache::SegmentEncoder::Options options;
  options.level = spec.level;
  options.size_hint = body.size();
  if (esi) options.flush = cache::FlushMode::kFull;
  cache::SegmentEncoder encoder(options);
  cache::Status s;
  if (esi) {
    // Cut at both ends of every literal; literals come in document order.
    uint64_t at = 0;
    for (const esi::Instruction& in : spec.esi_template->instructions()) {
      if (in.op != esi::Op::kLiteral || in.length == 0) continue;
      if (in.offset > at && s.ok()) {
        s = encoder.Write(body.substr(at, in.offset - at));
        if (s.ok()) s = encoder.Cut();
      }
      if (s.ok()) s = encoder.Write(body.substr(in.offset, in.length));
      if (s.ok()) s = encoder.Cut();
      at = in.offset + in.length;
    }
    if (s.ok() && at < body.size()) s = encoder.Write(body.substr(at));
  } else {
    s = encoder.Write(body);
  }
  if (s.ok()) s = encoder.Finish();
  if (!s.ok()) {
    *status = s;
    return {};
  }
  return ObjectOfSegments(key, spec, encoder.TakeSegments(), esi, status);
}

bool DecodeContent(std::string_view coding, size_t limit, std::string* body, std::string* why) {
  int window = 0;
  if (base::EqualsIgnoreCase(coding, "gzip") || base::EqualsIgnoreCase(coding, "x-gzip")) {
    window = 16 + MAX_WBITS;
  } else if (base::EqualsIgnoreCase(coding, "deflate")) {
    window = MAX_WBITS;  // zlib-wrapped, as RFC 9110 defines it
  } else {
    *why = "cannot decode Content-Encoding '" + std::string(coding) + "'";
    return false;
  }
  cache::InflateStream stream(new z_stream{});
  if (inflateInit2(stream.get(), window) != Z_OK) {
    delete stream.release();  // initialisation failed: nothing for inflateEnd
    *why = "out of memory";
    return false;
  }
  z_stream& z = *stream;
  // Room for one byte more than the limit: a body of exactly `limit` bytes must be seen to end
  // (zlib reports the end only once it has read the trailer, which may take a call of its own).
  const size_t room = limit + 1;
  std::string out;
  out.resize(std::min<size_t>(room, std::max<size_t>(body->size() * 4, 4096)));
  z.next_in = reinterpret_cast<Bytef*>(body->data());
  z.avail_in = static_cast<uInt>(body->size());
  size_t produced = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (produced == out.size()) {
      if (out.size() >= room) break;
      out.resize(std::min(room, out.size() * 2));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(out.size() - produced);
    rc = inflate(&z, Z_NO_FLUSH);
    produced = out.size() - z.avail_out;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated
    if (rc == Z_BUF_ERROR) rc = Z_OK;
    // A gzip body may be several members one after another (RFC 1952 2.2): it is their
    // concatenation, as gzip -d gives it. Other bytes after a member are ignored, as browsers do.
    if (rc == Z_STREAM_END && window != MAX_WBITS && z.avail_in >= 2 && z.next_in[0] == 0x1f &&
        z.next_in[1] == 0x8b) {
      rc = inflateReset(&z);
    }
  }
  if (rc != Z_STREAM_END || produced > limit) {
    *why = produced > limit ? "decoded body larger than " + std::to_string(limit) + " bytes"
                            : "corrupt or truncated " + std::string(coding) + " body";
    return false;
  }
  out.resize(produced);
  *body = std::move(out);
  return true;
}

}  // namespace shellac::proxy

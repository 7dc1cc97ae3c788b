// Tests for cache/: deflate segments and gzip stitching, objects, the store, cache keys.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tests/harness.h"

#include "base/fixed_deflate.h"
#include "cache/deflate.h"
#include "cache/freshness.h"
#include "cache/ghost.h"
#include "cache/hash.h"
#include "cache/index.h"
#include "cache/key.h"
#include "cache/object.h"
#include "cache/store.h"
#include "cache/wire.h"

namespace shellac::cache {
namespace {

using test::Gunzip;
using test::Gzip;

using std::chrono::seconds;
using std::chrono::sys_seconds;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// ---- helpers -----------------------------------------------------------------------------------

class StringSink : public ByteSink {
 public:
  void Copy(std::string_view bytes) override {
    out.append(bytes);
    ++copies;
  }
  void Borrow(std::string_view bytes) override {
    out.append(bytes);
    ++borrows;
  }
  std::string out;
  int copies = 0;
  int borrows = 0;
};

std::vector<Segment> Encode(std::string_view text, SegmentEncoder::Options options) {
  SegmentEncoder encoder(options);
  EXPECT_TRUE(encoder.Write(text).ok());
  EXPECT_TRUE(encoder.Finish().ok());
  return encoder.TakeSegments();
}

std::vector<SegmentView> Views(const std::vector<Segment>& segments) {
  std::vector<SegmentView> views;
  for (const Segment& s : segments) views.push_back(s.view());
  return views;
}

uint32_t Crc(std::string_view s) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

class TempFile {
 public:
  explicit TempFile(std::string_view contents) {
    char name[] = "/tmp/shellac_cache_test_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    path_ = name;
    EXPECT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool GzipTestPasses(std::string_view gz) {
  TempFile file(gz);
  std::string command = "gzip -t < " + file.path() + " 2>/dev/null";
  return std::system(command.c_str()) == 0;
}

// Documents of the kinds a store sees: random bytes (incompressible), highly repetitive text, and
// code-like text (cgit diffs).
std::string RandomBinary(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string RepetitiveText(std::mt19937_64& rng, size_t n) {
  static const char* kWords[] = {"lorem ",   "ipsum ",       "dolor ",
                                 "<tr><td>", "</td></tr>\n", "aaaaaaaa"};
  std::string s;
  while (s.size() < n) s += kWords[rng() % 6];
  s.resize(n);
  return s;
}

std::string DiffLikeText(std::mt19937_64& rng, size_t n) {
  static const char* kTokens[] = {"int",       "return",
                                  "struct",    "if (",
                                  "} else {",  "->next",
                                  "sizeof",    "kmalloc",
                                  "spin_lock", "unlock",
                                  "(void)",    "NULL",
                                  "0x",        "err",
                                  "goto out;", "static",
                                  "const",     "u64",
                                  "size_t",    "dev",
                                  "&amp;",     "<span class='add'>",
                                  "</span>",   "<div class='hunk'>"};
  std::string s;
  while (s.size() < n) {
    s += "+\t";
    int tokens = 2 + static_cast<int>(rng() % 8);
    for (int i = 0; i < tokens; ++i) {
      s += kTokens[rng() % std::size(kTokens)];
      s += ' ';
      if (rng() % 4 == 0) s += std::to_string(rng() % 1000);
    }
    s += ";\n";
  }
  s.resize(n);
  return s;
}

std::string Document(std::mt19937_64& rng, size_t n) {
  switch (rng() % 4) {
    case 0:
      return RandomBinary(rng, n);
    case 1:
      return RepetitiveText(rng, n);
    case 2:
      return DiffLikeText(rng, n);
    default:
      return DiffLikeText(rng, n / 2) + RandomBinary(rng, n / 4) +
             RepetitiveText(rng, n - n / 2 - n / 4);
  }
}

// Real text: C++ headers, as a stand-in for source diffs.
std::string RealCorpus(size_t n) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/include/c++/12/bits", ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text += buffer.str();
    if (text.size() >= n) break;
  }
  if (text.size() < n) {
    std::mt19937_64 rng(7);
    text += DiffLikeText(rng, n - text.size());
  }
  text.resize(n);
  return text;
}

// ---- deflate: segments and stitching ------------------------------------------------------------

TEST(Deflate, FinalEmptyBlockIsWhatZlibEmits) {
  // The stitcher's final block, 03 00, is what zlib itself writes to end an aligned raw stream.
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  unsigned char out[16];
  z.next_out = out;
  z.avail_out = sizeof(out);
  ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  ASSERT_EQ(sizeof(out) - z.avail_out, 2u);
  EXPECT_EQ(out[0], 0x03);
  EXPECT_EQ(out[1], 0x00);
  deflateEnd(&z);
}

TEST(Deflate, EncoderCutsAtSegmentSize) {
  std::mt19937_64 rng(1);
  std::string text = DiffLikeText(rng, 100'000);
  SegmentEncoder encoder({.level = 6, .segment_size = 16 << 10});
  // Feed in odd chunks, as an upstream would deliver them.
  for (size_t i = 0; i < text.size(); i += 1000)
    ASSERT_TRUE(encoder.Write(std::string_view(text).substr(i, 1000)).ok());
  ASSERT_TRUE(encoder.Finish().ok());
  EXPECT_FALSE(encoder.Write("more").ok());
  std::vector<Segment> segments = encoder.TakeSegments();
  ASSERT_EQ(segments.size(), 7u);  // 6 x 16 KiB + the rest
  size_t offset = 0;
  for (const Segment& s : segments) {
    EXPECT_EQ(s.crc, Crc(std::string_view(text).substr(offset, s.length)));
    offset += s.length;
  }
  EXPECT_EQ(offset, text.size());
  EXPECT_EQ(segments[0].length, 16u << 10);
  EXPECT_EQ(encoder.bytes_in(), text.size());
}

TEST(Deflate, EmptyBodyStitchesToEmptyGzip) {
  std::vector<Segment> segments = Encode("", {});
  EXPECT_TRUE(segments.empty());
  StringSink sink;
  GzipStitcher stitcher(sink);
  stitcher.Finish();
  EXPECT_EQ(sink.out.size(), GzipStitcher::kFramingBytes);
  EXPECT_EQ(Gunzip(sink.out), "");
  EXPECT_TRUE(GzipTestPasses(sink.out));
}

// The central property: random documents, cut into random segments at random levels and flush
// modes, interleaved with literals compressed per request, stitch into a gzip member that zlib and
// gzip -t accept and that decodes to exactly the concatenated identity bytes; the Inflater agrees.
TEST(Deflate, StitchingProperty) {
  std::mt19937_64 rng(20240601);
  LiteralEncoder literals;
  Inflater inflater;
  int gzip_checked = 0;
  for (int iteration = 0; iteration < 300; ++iteration) {
    // One response: stored bodies and per-request literals, in document order.
    struct Part {
      std::string text;             // identity bytes
      std::vector<Segment> stored;  // empty for a literal
      FlushMode flush = FlushMode::kSync;
    };
    std::vector<Part> parts;
    int part_count = 1 + static_cast<int>(rng() % 6);
    for (int p = 0; p < part_count; ++p) {
      Part part;
      bool literal = rng() % 3 == 0;
      size_t size = literal ? rng() % 3000 : rng() % 4 == 0 ? rng() % 300'000 : rng() % 20'000;
      part.text = Document(rng, size);
      if (!literal) {
        SegmentEncoder::Options options;
        options.level = static_cast<int>(rng() % 10);
        options.flush = rng() % 4 == 0 ? FlushMode::kFull : FlushMode::kSync;
        options.segment_size = rng() % 3 == 0 ? 0 : 1 + rng() % 40'000;
        part.flush = options.flush;
        SegmentEncoder encoder(options);
        // Random chunks, as an upstream delivers them, and random cuts besides the size-based ones.
        for (size_t at = 0; at < part.text.size();) {
          size_t n = std::min<size_t>(part.text.size() - at, 1 + rng() % 9000);
          ASSERT_TRUE(encoder.Write(std::string_view(part.text).substr(at, n)).ok());
          if (rng() % 5 == 0) {
            ASSERT_TRUE(encoder.Cut().ok());
          }
          at += n;
        }
        ASSERT_TRUE(encoder.Finish().ok());
        part.stored = encoder.TakeSegments();
      }
      parts.push_back(std::move(part));
    }

    StringSink sink;
    GzipStitcher stitcher(sink);
    std::string want;                // the identity body
    std::vector<SegmentView> order;  // what the Inflater is fed: the same segments, same order
    std::deque<std::string> kept;    // literal deflate bytes the Inflater reads later
    auto add_literal = [&](const std::string& text) {
      ASSERT_TRUE(stitcher.AddLiteral(text, literals).ok());
      want += text;
      if (text.empty()) return;
      SegmentView v;
      ASSERT_TRUE(literals.Encode(text, &v).ok());
      kept.emplace_back(v.deflate);
      order.push_back({kept.back(), v.crc, v.length});
    };
    for (const Part& part : parts) {
      if (part.stored.empty()) {
        add_literal(part.text);
        continue;
      }
      size_t offset = 0;
      for (size_t i = 0; i < part.stored.size(); ++i) {
        const Segment& s = part.stored[i];
        stitcher.AddStored(s.view());
        order.push_back(s.view());
        want.append(part.text, offset, s.length);
        offset += s.length;
        // Full-flush segments are independent, so a literal may even go between two of them. (Not
        // inside a sync-flush body: its segments refer back into each other; see deflate.h.)
        if (part.flush == FlushMode::kFull && i + 1 < part.stored.size() && rng() % 3 == 0) {
          add_literal("<!--" + std::to_string(rng()) + "-->");
        }
      }
      ASSERT_EQ(offset, part.text.size());
    }
    stitcher.Finish();

    const std::string& gz = sink.out;
    ASSERT_EQ(Gunzip(gz), want) << "iteration " << iteration;
    EXPECT_EQ(stitcher.crc(), Crc(want));
    EXPECT_EQ(stitcher.length(), want.size());
    EXPECT_EQ(stitcher.bytes_written(), gz.size());
    // The trailer carries the same crc and length.
    uint32_t trailer_crc = 0, trailer_size = 0;
    for (int i = 3; i >= 0; --i) {
      trailer_crc = (trailer_crc << 8) | static_cast<uint8_t>(gz[gz.size() - 8 + i]);
      trailer_size = (trailer_size << 8) | static_cast<uint8_t>(gz[gz.size() - 4 + i]);
    }
    EXPECT_EQ(trailer_crc, Crc(want));
    EXPECT_EQ(trailer_size, static_cast<uint32_t>(want.size()));
    if (iteration % 10 == 0) {
      EXPECT_TRUE(GzipTestPasses(gz)) << "iteration " << iteration;
      ++gzip_checked;
    }

    // Identity delivery: the Inflater, in random piece sizes, gives the same bytes.
    inflater.Reset();
    StringSink identity;
    ASSERT_TRUE(inflater.InflateAll(order, identity, 1 + rng() % 20000).ok());
    ASSERT_EQ(identity.out, want) << "iteration " << iteration;
  }
  EXPECT_EQ(gzip_checked, 30);
}

// A chain's three calls, for the frame check below: zlib's ChainEncoder, or base::FixedChain.
struct ChainCalls {
  std::function<void()> begin;
  std::function<void(std::string_view, Segment*)> add;
  std::function<void(std::string_view)> known;
};

// A frame as page_object makes it: pieces known from elsewhere (compressed alone, level 6), pieces
// of a chain that refers back across them, stored blocks; stitched with foreign segments between
// chains, it decodes (zlib, gzip -t and the Inflater) to exactly the text.
void CheckFramesOfChain(const std::function<ChainCalls(int iteration)>& chain_for, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Inflater inflater;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const ChainCalls chain = chain_for(iteration);
    std::string want;
    std::vector<Segment> parts;
    const int runs = 1 + static_cast<int>(rng() % 3);
    for (int run = 0; run < runs; ++run) {
      chain.begin();
      const int pieces = 1 + static_cast<int>(rng() % 6);
      for (int p = 0; p < pieces; ++p) {
        const std::string text = DiffLikeText(rng, 1 + rng() % 5000);
        want += text;
        switch (rng() % 3) {
          case 0: {  // known: made by another compressor, told to the chain
            std::vector<Segment> alone = Encode(text, {.level = 6, .segment_size = 0});
            ASSERT_EQ(alone.size(), 1u);
            parts.push_back(alone[0]);
            chain.known(text);
            break;
          }
          case 1: {
            Segment segment;
            chain.add(text, &segment);
            parts.push_back(std::move(segment));
            break;
          }
          default: {  // stored blocks (as long as 70,000 bytes: two blocks)
            const std::string big = text + std::string(rng() % 2 ? 70'000 : 0, 'x');
            want.resize(want.size() - text.size());
            want += big;
            Segment segment;
            ASSERT_TRUE(EncodeStored(big, &segment).ok());
            parts.push_back(std::move(segment));
            chain.known(big);
            break;
          }
        }
      }
      // A foreign body between runs (an include), from a fresh compressor.
      const std::string foreign = DiffLikeText(rng, 1 + rng() % 3000);
      want += foreign;
      for (Segment& segment : Encode(foreign, {})) parts.push_back(std::move(segment));
    }
    StringSink sink;
    GzipStitcher stitcher(sink);
    for (const Segment& segment : parts) stitcher.AddStored(segment.view());
    stitcher.Finish();
    ASSERT_EQ(Gunzip(sink.out), want) << "iteration " << iteration;
    if (iteration % 20 == 0) {
      EXPECT_TRUE(GzipTestPasses(sink.out));
    }
    StringSink identity;
    std::vector<SegmentView> views;
    for (const Segment& segment : parts) views.push_back(segment.view());
    inflater.Reset();
    ASSERT_TRUE(inflater.InflateAll(views, identity).ok());
    ASSERT_EQ(identity.out, want);
  }
}

// zlib's chain, with its default hash table and with the small one, turn about.
TEST(Deflate, ChainsAcrossKnownSegmentsAndStoredBlocks) {
  ChainEncoder chains[] = {ChainEncoder(1), ChainEncoder(1, ChainEncoder::kShortTextMemLevel)};
  CheckFramesOfChain(
      [&chains](int iteration) {
        ChainEncoder* chain = &chains[iteration % 2];
        return ChainCalls{[chain] { ASSERT_TRUE(chain->Begin().ok()); },
                          [chain](std::string_view text, Segment* out) {
                            ASSERT_TRUE(chain->Add(text, out).ok());
                          },
                          [chain](std::string_view text) { ASSERT_TRUE(chain->Known(text).ok()); }};
      },
      77);
}

// Fixed codes (the transient frames' chain, proxy/page_object.cc): one chain for every frame, its
// runs growing past the 256 KiB where it trims its text (the 70,000-byte stored pieces).
TEST(Deflate, FixedChainsAcrossKnownSegmentsAndStoredBlocks) {
  base::FixedChain chain;
  CheckFramesOfChain(
      [&chain](int) {
        return ChainCalls{[&chain] { chain.Begin(); },
                          [&chain](std::string_view text, Segment* out) {
                            chain.Add(text, &out->deflate);
                            out->crc = Crc(text);
                            out->length = static_cast<uint32_t>(text.size());
                          },
                          [&chain](std::string_view text) { chain.Known(text); }};
      },
      78);
}

// A fixed chain's text refers back to what it was told (a frame's own piece to the chrome before
// it, 2 KiB apart): a piece repeating a known one costs a few bytes, and one repeating a text of
// an earlier run (after Begin) costs as much as on its own. Trimming past 256 KiB keeps the last
// 32 KiB within reach.
TEST(Deflate, FixedChainRefersBackOnlyWithinItsRun) {
  std::mt19937_64 rng(5);
  std::string text(2000, '\0');
  for (char& c : text) c = static_cast<char>('a' + rng() % 26);
  base::FixedChain chain;
  std::string alone, again, after_begin, after_trim;
  chain.Begin();
  chain.Add(text, &alone);
  EXPECT_GT(alone.size(), text.size() / 2);
  chain.Begin();
  chain.Known(text);
  chain.Add(text, &again);
  EXPECT_LT(again.size(), 40u) << "matches into the text the chain was told";
  chain.Begin();
  chain.Add(text, &after_begin);
  EXPECT_EQ(after_begin, alone) << "nothing of an earlier run is referred to";
  chain.Known(std::string(300'000, 'q'));
  chain.Known(text);
  chain.Add(text, &after_trim);
  EXPECT_LT(after_trim.size(), 40u);
  z_stream in{};
  ASSERT_EQ(inflateInit2(&in, -MAX_WBITS), Z_OK);
  std::string out(1 << 20, '\0');
  in.next_in = reinterpret_cast<Bytef*>(alone.data());
  in.avail_in = static_cast<uInt>(alone.size());
  in.next_out = reinterpret_cast<Bytef*>(out.data());
  in.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&in, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(std::string_view(out).substr(0, out.size() - in.avail_out), text);
  inflateEnd(&in);
}

// The raw deflate `deflate` (a run's blocks, no final one) inflated by zlib.
std::string InflateRaw(std::string_view deflate, size_t limit) {
  z_stream in{};
  EXPECT_EQ(inflateInit2(&in, -MAX_WBITS), Z_OK);
  std::string out(limit, '\0');
  in.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(deflate.data()));
  in.avail_in = static_cast<uInt>(deflate.size());
  in.next_out = reinterpret_cast<Bytef*>(out.data());
  in.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&in, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(in.avail_in, 0u);
  out.resize(out.size() - in.avail_out);
  inflateEnd(&in);
  return out;
}

// A block's type, from its first byte (BTYPE: 1 fixed codes, 2 the block's own).
int BlockType(std::string_view deflate) { return (static_cast<unsigned char>(deflate[0]) >> 1) & 3; }

// A chain's text of 1 KiB or more takes the block's own codes where they are smaller (a diff's
// text: over 5 % fewer bytes than fixed codes), and keeps fixed ones where a tree's header would
// cost more than it saves or the text is short.
TEST(Deflate, FixedChainTakesItsOwnCodesWhereTheyAreSmaller) {
  std::mt19937_64 rng(11);
  const std::string text = DiffLikeText(rng, 6000);
  std::string fixed;
  base::DeflateFixed(text, /*final=*/false, &fixed);
  ASSERT_EQ(BlockType(fixed), 1);
  base::FixedChain chain;
  std::string own;
  chain.Begin();
  chain.Add(text, &own);
  EXPECT_EQ(BlockType(own), 2);
  EXPECT_LT(own.size(), fixed.size() * 95 / 100) << own.size() << " vs " << fixed.size();
  EXPECT_EQ(InflateRaw(own, 1 << 20), text);

  // Bytes 0-143 twice as likely as 144-255, each: what fixed codes are made for (8 and 9 bits),
  // so a tree saves nothing and its header is a loss.
  std::string fixed_law(1100, '\0');
  for (char& c : fixed_law) c = static_cast<char>(rng() % 400 < 288 ? rng() % 144 : 144 + rng() % 112);
  std::string law, law_fixed, repeats, repeats_fixed, short_text;
  chain.Begin();
  chain.Add(fixed_law, &law);
  EXPECT_EQ(BlockType(law), 1);
  base::DeflateFixed(fixed_law, /*final=*/false, &law_fixed);
  EXPECT_EQ(law, law_fixed);
  // Long repeats: a tree of three symbols and its header still beat 13 bits a match.
  chain.Begin();
  chain.Add(std::string(5000, 'a'), &repeats);
  base::DeflateFixed(std::string(5000, 'a'), /*final=*/false, &repeats_fixed);
  EXPECT_LE(repeats.size(), repeats_fixed.size());
  chain.Begin();
  chain.Add(text.substr(0, 1000), &short_text);
  EXPECT_EQ(BlockType(short_text), 1);
  EXPECT_EQ(InflateRaw(law + repeats + short_text, 1 << 20),
            fixed_law + std::string(5000, 'a') + text.substr(0, 1000));
}

// Texts whose bytes follow skewed laws (geometric: a tree deeper than deflate's 15 bits unless
// limited; a few symbols; every byte value), 1 KiB to 64 KiB, in chains of several texts with
// known ones between: each block decodes (zlib) to its text, with its own codes or fixed ones.
TEST(Deflate, FixedChainOwnCodesDecodeForSkewedTexts) {
  std::mt19937_64 rng(12);
  base::FixedChain chain;
  int own = 0;
  for (int iteration = 0; iteration < 60; ++iteration) {
    chain.Begin();
    std::string want, deflate;
    for (int piece = 0; piece < 3; ++piece) {
      const size_t n = 1024 + rng() % (63 << 10);
      std::string text(n, '\0');
      const int law = static_cast<int>(rng() % 3);
      std::geometric_distribution<int> geometric(0.3 + 0.08 * static_cast<double>(rng() % 4));
      for (char& c : text) {
        switch (law) {
          case 0: c = static_cast<char>(std::min(geometric(rng), 255)); break;
          case 1: c = static_cast<char>("ab\n"[rng() % 3]); break;
          default: c = static_cast<char>(rng()); break;
        }
      }
      want += text;
      if (piece == 1 && rng() % 2 == 0) {
        // Known: stored elsewhere; here, as a stored block, as a frame's memo piece would be.
        Segment stored;
        ASSERT_TRUE(EncodeStored(text, &stored).ok());
        deflate += stored.deflate;
        chain.Known(text);
        continue;
      }
      const size_t at = deflate.size();
      chain.Add(text, &deflate);
      own += BlockType(std::string_view(deflate).substr(at)) == 2;
    }
    ASSERT_EQ(InflateRaw(deflate, want.size() + 1), want) << "iteration " << iteration;
  }
  EXPECT_GT(own, 60);
}

TEST(Deflate, StoredBytesAreBorrowedNotCopied) {
  std::vector<Segment> segments = Encode(std::string(200'000, 'x'), {.segment_size = 50'000});
  StringSink sink;
  GzipStitcher stitcher(sink);
  for (const Segment& s : segments) stitcher.AddStored(s.view());
  stitcher.Finish();
  EXPECT_EQ(sink.borrows, 4);
  EXPECT_EQ(sink.copies, 2);  // header, final block + trailer
  size_t deflate = 0;
  for (const Segment& s : segments) deflate += s.deflate.size();
  EXPECT_EQ(sink.out.size(), deflate + GzipStitcher::kFramingBytes);
}

TEST(Deflate, InflaterDetectsCorruption) {
  std::mt19937_64 rng(3);
  std::string text = DiffLikeText(rng, 10'000);
  std::vector<Segment> segments = Encode(text, {});
  ASSERT_EQ(segments.size(), 1u);
  Inflater inflater;
  StringSink sink;
  SegmentView bad_crc = segments[0].view();
  bad_crc.crc ^= 1;
  EXPECT_FALSE(inflater.InflateAll({&bad_crc, 1}, sink).ok());
  inflater.Reset();
  SegmentView bad_length = segments[0].view();
  bad_length.length -= 1;
  EXPECT_FALSE(inflater.InflateAll({&bad_length, 1}, sink).ok());
  inflater.Reset();
  std::string garbage = segments[0].deflate;
  garbage[garbage.size() / 2] ^= 0x55;
  SegmentView bad_bytes{garbage, segments[0].crc, segments[0].length};
  EXPECT_FALSE(inflater.InflateAll({&bad_bytes, 1}, sink).ok());
  // After Reset() it works again.
  inflater.Reset();
  sink.out.clear();
  SegmentView good = segments[0].view();
  ASSERT_TRUE(inflater.InflateAll({&good, 1}, sink).ok());
  EXPECT_EQ(sink.out, text);
}

TEST(Deflate, InflaterPullInSmallPieces) {
  std::mt19937_64 rng(4);
  std::string text = RepetitiveText(rng, 300'000);  // 1000:1 compressible: output >> input per call
  std::vector<Segment> segments = Encode(text, {.segment_size = 100'000});
  Inflater inflater;
  std::string out;
  char piece[777];
  for (const Segment& s : segments) {
    inflater.Feed(s.view());
    while (!inflater.NeedsInput()) {
      size_t n = 0;
      ASSERT_TRUE(inflater.Read(piece, &n).ok());
      ASSERT_LE(n, sizeof(piece));
      out.append(piece, n);
    }
  }
  EXPECT_EQ(out, text);
}

// A stored segment never holds the stream's final block (deflate.h's rules): the Inflater refuses
// one that does, as it refuses damage, bytes after the flush and a length that lies.
TEST(Deflate, InflaterRefusesAFinalBlockAndDamage) {
  std::mt19937_64 rng(11);
  const std::string text = DiffLikeText(rng, 10'000);
  std::vector<Segment> flushed = Encode(text, {});
  ASSERT_EQ(flushed.size(), 1u);
  const Segment good = flushed[0];
  auto refused = [&](const Segment& bad) {
    Inflater fresh;
    StringSink ignored;
    const SegmentView v = bad.view();
    return !fresh.InflateAll({&v, 1}, ignored).ok();
  };
  EXPECT_FALSE(refused(good));
  Segment ended = good;  // the same text, ending with a final block instead of a flush
  ended.deflate.clear();
  base::DeflateFixed(text, /*final=*/true, &ended.deflate);
  EXPECT_TRUE(refused(ended));
  Segment open = ended;  // the same, not final: accepted, so the refusal above is the final bit's
  open.deflate.clear();
  base::DeflateFixed(text, /*final=*/false, &open.deflate);
  EXPECT_FALSE(refused(open));
  Segment truncated = good;
  truncated.deflate.resize(truncated.deflate.size() / 2);
  EXPECT_TRUE(refused(truncated));
  Segment short_length = good;
  short_length.length -= 1;
  EXPECT_TRUE(refused(short_length));
  Segment bad_crc = good;
  bad_crc.crc ^= 1;
  EXPECT_TRUE(refused(bad_crc));
}

// A body compressed by igzip (FlushEncoder), with either codes, is cut every segment_size bytes,
// each segment ending on a byte-aligned block boundary (a sync flush, or a stored block where
// compressing did not pay) with its own crc and length; stitched alone, after another body's
// segments, or inflated by the Inflater, the text comes back. Each call starts a new stream
// (nothing refers to an earlier body), and empty text gives no segment.
TEST(Deflate, FlushEncoderSegmentsEndOnASyncFlush) {
  for (const FlushEncoder::Codes codes :
       {FlushEncoder::Codes::kPerBlock, FlushEncoder::Codes::kMarkup}) {
    SCOPED_TRACE(codes == FlushEncoder::Codes::kMarkup ? "markup codes" : "per-block codes");
    std::mt19937_64 rng(12);
    FlushEncoder flush(codes);
    std::vector<Segment> first;
    const std::string first_text = Document(rng, 9'000);
    ASSERT_TRUE(flush.Encode(first_text, 0, &first).ok());
    ASSERT_EQ(first.size(), 1u);
    for (const size_t size :
         {size_t{1}, size_t{300}, size_t{7'000}, size_t{70'000}, size_t{300'000}}) {
      for (const size_t segment_size : {size_t{0}, size_t{4'096}, size_t{64} << 10}) {
        for (const bool binary : {false, true}) {
          const std::string text = binary ? RandomBinary(rng, size) : Document(rng, size);
          std::vector<Segment> segments;
          ASSERT_TRUE(flush.Encode(text, segment_size, &segments).ok());
          const size_t step = segment_size == 0 ? text.size() : segment_size;
          ASSERT_EQ(segments.size(), (text.size() + step - 1) / step);
          for (size_t i = 0; i < segments.size(); ++i) {
            const std::string_view piece = std::string_view(text).substr(i * step, step);
            EXPECT_EQ(segments[i].length, piece.size());
            EXPECT_EQ(segments[i].crc, Crc(piece));
            // Never larger than stored blocks: random bytes and a text of a few bytes are stored
            // (igzip's level 1 stores random bytes itself; the markup codes lose ~45 % on them).
            EXPECT_LE(segments[i].deflate.size(), piece.size() + 5 * (piece.size() / 65535 + 1));
            Segment stored;
            ASSERT_TRUE(EncodeStored(piece, &stored).ok());
            EXPECT_TRUE(segments[i].deflate.ends_with(std::string_view("\0\0\xff\xff", 4)) ||
                        segments[i].deflate == stored.deflate);
          }
          StringSink sink;
          GzipStitcher stitcher(sink);
          for (const Segment& s : first) stitcher.AddStored(s.view());
          for (const Segment& s : segments) stitcher.AddStored(s.view());
          stitcher.Finish();
          EXPECT_EQ(Gunzip(sink.out), first_text + text) << size << " bytes by " << segment_size;
          if (size == 7'000) {
            EXPECT_TRUE(GzipTestPasses(sink.out));
          }
          Inflater inflater;
          StringSink inflated;
          ASSERT_TRUE(inflater.InflateAll(Views(segments), inflated).ok());
          EXPECT_EQ(inflated.out, text);
        }
      }
    }
    std::vector<Segment> none{Segment{}};
    ASSERT_TRUE(flush.Encode("", 0, &none).ok());
    EXPECT_TRUE(none.empty());
    // The last segment ends the stream's use (a full flush): a body encoded after a long one, of
    // several segments, comes out as a fresh encoder makes it, every segment refers only to its
    // own body, and the earlier segments still refer back across their cuts.
    const std::string long_text = Document(rng, 150'000), page = Document(rng, 20'000);
    std::vector<Segment> long_segments, after_long, fresh;
    ASSERT_TRUE(flush.Encode(long_text, 32 << 10, &long_segments).ok());
    ASSERT_TRUE(flush.Encode(page, 8 << 10, &after_long).ok());
    FlushEncoder other(codes);
    ASSERT_TRUE(other.Encode(page, 8 << 10, &fresh).ok());
    ASSERT_EQ(after_long.size(), fresh.size());
    for (size_t i = 0; i < fresh.size(); ++i) EXPECT_EQ(after_long[i].deflate, fresh[i].deflate);
    for (const auto* segments : {&long_segments, &after_long}) {
      EXPECT_TRUE(segments->back().deflate.ends_with(std::string_view("\0\0\xff\xff", 4)));
      Inflater inflater;
      StringSink inflated;
      ASSERT_TRUE(inflater.InflateAll(Views(*segments), inflated).ok());
      EXPECT_EQ(inflated.out, segments == &long_segments ? long_text : page);
    }
  }
}

// The markup codes are made for cgit's pages: on markup they compress within a few percent of
// level 1's codes made per block (which they replace to skip building a tree per page), and much
// better than deflate's fixed codes. A body that is partly markup and partly random bytes keeps
// the markup compressed in its own segments and stores the random ones.
TEST(Deflate, FlushEncoderMarkupCodesFitMarkup) {
  std::mt19937_64 rng(13);
  const std::string page = DiffLikeText(rng, 20'000);
  auto size = [](const std::vector<Segment>& segments) {
    size_t n = 0;
    for (const Segment& s : segments) n += s.deflate.size();
    return n;
  };
  FlushEncoder markup(FlushEncoder::Codes::kMarkup), per_block(FlushEncoder::Codes::kPerBlock);
  std::vector<Segment> by_markup, by_block;
  ASSERT_TRUE(markup.Encode(page, 0, &by_markup).ok());
  ASSERT_TRUE(per_block.Encode(page, 0, &by_block).ok());
  std::string fixed;
  base::DeflateFixed(page, /*final=*/false, &fixed);
  EXPECT_LT(size(by_markup), size(by_block) * 115 / 100)
      << size(by_markup) << " vs " << size(by_block);
  EXPECT_LT(size(by_markup), fixed.size() * 90 / 100) << size(by_markup) << " vs " << fixed.size();

  const std::string mixed =
      page.substr(0, 8'192) + RandomBinary(rng, 8'192) + page.substr(0, 8'192);
  std::vector<Segment> segments;
  ASSERT_TRUE(markup.Encode(mixed, 8'192, &segments).ok());
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[1].deflate.size(), 8'192u + 5);  // one stored block
  EXPECT_LT(segments[0].deflate.size(), 8'192u / 2);
  // The first segment's text again: it refers back past the stored one.
  EXPECT_LT(segments[2].deflate.size(), segments[0].deflate.size() / 4);
  StringSink sink;
  Inflater inflater;
  ASSERT_TRUE(inflater.InflateAll(Views(segments), sink).ok());
  EXPECT_EQ(sink.out, mixed);
}

TEST(Deflate, LevelsAndBadLevel) {
  SegmentEncoder bad({.level = 12});
  EXPECT_FALSE(bad.Write("x").ok());
  LiteralEncoder bad_literal(-3);
  SegmentView v;
  EXPECT_FALSE(bad_literal.Encode("x", &v).ok());
  EXPECT_TRUE(bad_literal.Encode("", &v).ok());  // nothing to compress: no stream needed
}

// Body size: segment encoding at level 6 with the default segment size stays within 1.05x of a
// single-shot gzip -6 of the same content.
TEST(Deflate, SegmentedSizeCloseToGzip6) {
  std::mt19937_64 rng(5);
  struct Case {
    const char* name;
    std::string text;
  };
  std::vector<Case> cases = {
      {"5 KB code", RealCorpus(5 << 10)},
      {"1.4 MB code", RealCorpus(1'400'000)},
      {"5 KB diff-like", DiffLikeText(rng, 5 << 10)},
      {"1.4 MB diff-like", DiffLikeText(rng, 1'400'000)},
  };
  for (const Case& c : cases) {
    std::vector<Segment> segments = Encode(c.text, {});  // level 6, 64 KiB segments
    size_t stitched = GzipStitcher::kFramingBytes;
    for (const Segment& s : segments) stitched += s.deflate.size();
    size_t gzip6 = Gzip(c.text, 6).size();
    double ratio = static_cast<double>(stitched) / static_cast<double>(gzip6);
    std::printf(
        "[ size     ] %-18s %8zu bytes -> %zu segments, %zu bytes stitched vs %zu gzip -6: %.4fx\n",
        c.name, c.text.size(), segments.size(), stitched, gzip6, ratio);
    EXPECT_LE(ratio, 1.05) << c.name;
  }
  // The same against the gzip program itself, on the real-text case.
  std::string text = RealCorpus(1'400'000);
  TempFile file(text);
  std::string command = "gzip -6 -n -c < " + file.path() + " | wc -c > " + file.path() + ".size";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(file.path() + ".size");
  size_t gzip_size = 0;
  in >> gzip_size;
  std::remove((file.path() + ".size").c_str());
  std::vector<Segment> segments = Encode(text, {});
  size_t stitched = GzipStitcher::kFramingBytes;
  for (const Segment& s : segments) stitched += s.deflate.size();
  std::printf("[ size     ] gzip(1) -6 -n: %zu bytes, stitched %zu: %.4fx\n", gzip_size, stitched,
              static_cast<double>(stitched) / static_cast<double>(gzip_size));
  EXPECT_LE(static_cast<double>(stitched), 1.05 * static_cast<double>(gzip_size));
}

// ---- hashing -----------------------------------------------------------------------------------

TEST(Hash, SipHashReferenceVectors) {
  // From the SipHash paper (appendix A) and its reference implementation: key 00..0f.
  SipKey key{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
  EXPECT_EQ(SipHash24(key, ""), 0x726fdb47dd0e0e31ull);
  std::string message;
  for (int i = 0; i < 15; ++i) message.push_back(static_cast<char>(i));
  EXPECT_EQ(SipHash24(key, message), 0xa129ca6149be45e5ull);
  EXPECT_NE(SipHash13(key, "a"), SipHash13(key, "b"));
}

// ---- objects -----------------------------------------------------------------------------------

ObjectRef MakeObject(std::string_view key, const std::vector<Segment>& body, ObjectSpec spec = {}) {
  std::vector<SegmentView> views = Views(body);
  spec.body = views;
  Status status;
  ObjectRef object = Object::Create(key, spec, &status);
  EXPECT_TRUE(status.ok()) << status.message();
  return object;
}

TEST(Object, RoundTrip) {
  std::mt19937_64 rng(6);
  std::string text = DiffLikeText(rng, 150'000);
  std::vector<Segment> body = Encode(text, {});
  Header headers[] = {{"content-type", "text/html; charset=UTF-8"},  // whole-header table entry
                      {"Last-Modified", "Tue, 01 Jul 2025 10:00:00 GMT"},  // table name
                      {"X-Repo", "linux"}};                                // literal
  ObjectSpec spec;
  spec.status = 203;
  spec.headers = headers;
  spec.stored_at = sys_seconds(seconds(1'700'000'000));
  spec.ttl = seconds(60);
  spec.grace = seconds(30);
  ObjectRef object = MakeObject("diff/abc/context=3", body, spec);
  ASSERT_TRUE(object);
  EXPECT_EQ(object->key(), "diff/abc/context=3");
  EXPECT_EQ(object->status(), 203);
  std::vector<std::pair<std::string, std::string>> got;
  for (const Header& h : object->headers()) got.emplace_back(h.name, h.value);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0],
            (std::pair<std::string, std::string>{"Content-Type", "text/html; charset=UTF-8"}));
  EXPECT_EQ(got[1], (std::pair<std::string, std::string>{"Last-Modified",
                                                         "Tue, 01 Jul 2025 10:00:00 GMT"}));
  EXPECT_EQ(got[2], (std::pair<std::string, std::string>{"X-Repo", "linux"}));
  EXPECT_EQ(object->header("x-repo").value_or(""), "linux");
  EXPECT_FALSE(object->header("Location").has_value());

  ASSERT_EQ(object->segments().size(), body.size());
  size_t i = 0;
  for (const SegmentView& s : object->segments()) {
    EXPECT_EQ(s.deflate, body[i].deflate);
    EXPECT_EQ(s.crc, body[i].crc);
    EXPECT_EQ(s.length, body[i].length);
    ++i;
  }
  EXPECT_EQ(object->body_length(), text.size());
  EXPECT_EQ(object->body_crc(), Crc(text));
  EXPECT_EQ(object->esi_template(), nullptr);

  // Served from the object, the gzip member decodes to the text.
  StringSink sink;
  GzipStitcher stitcher(sink);
  for (const SegmentView& s : object->segments()) stitcher.AddStored(s);
  stitcher.Finish();
  EXPECT_EQ(Gunzip(sink.out), text);

  char expected_etag[32];
  std::snprintf(expected_etag, sizeof(expected_etag), "\"%08x-%zx\"", Crc(text), text.size());
  EXPECT_EQ(object->etag().view(), expected_etag);

  EXPECT_EQ(object->FreshnessAt(spec.stored_at + seconds(59)), Freshness::kFresh);
  EXPECT_EQ(object->FreshnessAt(spec.stored_at + seconds(60)), Freshness::kStale);
  EXPECT_EQ(object->FreshnessAt(spec.stored_at + seconds(89)), Freshness::kStale);
  EXPECT_EQ(object->FreshnessAt(spec.stored_at + seconds(90)), Freshness::kExpired);
}

TEST(Object, TemplateIsKeptAndReleased) {
  // esi::Template is opaque here; any type stands in for it through the shared_ptr's deleter.
  struct Fake {
    std::atomic<int>* destroyed;
    ~Fake() { ++*destroyed; }
  };
  std::atomic<int> destroyed{0};
  auto fake = std::make_shared<Fake>(Fake{&destroyed});
  fake->destroyed = &destroyed;
  destroyed = 0;
  std::shared_ptr<const esi::Template> handle(fake,
                                              reinterpret_cast<const esi::Template*>(fake.get()));
  fake.reset();
  ObjectSpec spec;
  spec.esi_template = std::move(handle);
  spec.esi_template_bytes = 1000;
  ObjectRef object = MakeObject("frame", Encode("<esi:include src=x/>", {}), spec);
  spec.esi_template.reset();  // the object holds the only reference now
  EXPECT_NE(object->esi_template(), nullptr);
  EXPECT_GE(object->charge(), 1000u);
  EXPECT_EQ(object->key(), "frame");
  EXPECT_EQ(destroyed, 0);
  object.reset();
  EXPECT_EQ(destroyed, 1);
}

TEST(Object, Limits) {
  Status status;
  EXPECT_FALSE(Object::Create("", {}, &status));
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(Object::Create(std::string(70'000, 'k'), {}, &status));
  ObjectSpec bad_status;
  bad_status.status = 42;
  EXPECT_FALSE(Object::Create("k", bad_status, &status));
  std::string big(70'000, 'v');
  Header headers[] = {{"X-Big", big}};
  ObjectSpec big_headers;
  big_headers.headers = headers;
  EXPECT_FALSE(Object::Create("k", big_headers, &status));
  // Forever.
  ObjectSpec forever;
  forever.ttl = Object::kForever;
  ObjectRef object = Object::Create("k", forever, &status);
  ASSERT_TRUE(object);
  EXPECT_EQ(object->FreshnessAt(sys_seconds(seconds(4'000'000'000))), Freshness::kFresh);
  EXPECT_EQ(object->body_length(), 0u);
  EXPECT_EQ(object->segments().size(), 0u);
}

// ---- index and ghost (internals of the store) ---------------------------------------------------

TEST(Index, MatchesAReferenceMap) {
  std::mt19937_64 rng(8);
  SipKey key = RandomSipKey();
  ObjectIndex index;
  std::unordered_map<std::string, ObjectRef> reference;
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i) keys.push_back("key/" + std::to_string(rng()));
  for (int step = 0; step < 60'000; ++step) {
    const std::string& k = keys[rng() % keys.size()];
    uint64_t hash = SipHash13(key, k);
    size_t slot = index.Find(k, hash);
    auto it = reference.find(k);
    ASSERT_EQ(slot != ObjectIndex::kNotFound, it != reference.end()) << step;
    if (it == reference.end()) {
      Status status;
      ObjectRef object = Object::Create(k, {}, &status);
      ASSERT_TRUE(ObjectIndex::Storable(object.get()));
      index.Insert(object.get(), hash);
      reference.emplace(k, std::move(object));
    } else {
      ASSERT_EQ(index.At(slot), it->second.get());
      if (rng() % 2 == 0) {
        EXPECT_EQ(index.Erase(slot), it->second.get());
        reference.erase(it);
      }
    }
    ASSERT_EQ(index.size(), reference.size());
    if (step % 10'000 == 0) index.ShrinkToFit();
  }
  size_t seen = 0;
  for (size_t s = 0; s < index.capacity(); ++s) seen += index.At(s) != nullptr;
  EXPECT_EQ(seen, reference.size());
}

TEST(Ghost, RemembersRecentAndForgetsOld) {
  GhostFilter ghost;
  std::mt19937_64 rng(9);
  std::vector<uint64_t> first, second, never;
  for (int i = 0; i < 10'000; ++i)
    first.push_back(rng()), second.push_back(rng()), never.push_back(rng());
  auto add = [&](const std::vector<uint64_t>& hashes) {
    for (uint64_t h : hashes) {
      if (ghost.Full()) ghost.Rotate(10'000);
      ghost.Add(h);
    }
  };
  add(first);
  add(second);
  size_t recalled = 0, false_positives = 0;
  for (uint64_t h : first) recalled += ghost.Contains(h);
  for (uint64_t h : never) false_positives += ghost.Contains(h);
  EXPECT_EQ(recalled, first.size());
  EXPECT_LT(false_positives, never.size() * 4 / 100);  // two generations at ~1% each
  add(never);                                          // a third generation: `first` is forgotten
  recalled = 0;
  for (uint64_t h : first) recalled += ghost.Contains(h);
  EXPECT_LT(recalled, first.size() * 4 / 100);
  EXPECT_EQ(ghost.bytes(), 2 * GhostFilter::BytesFor(10'000));
}

// ---- store -------------------------------------------------------------------------------------

const sys_seconds kNow(seconds(1'750'000'000));

ObjectRef Fragment(std::string_view key, const std::vector<SegmentView>& body,
                   seconds ttl = Object::kForever, seconds grace = seconds(0),
                   std::span<const Header> headers = {}) {
  ObjectSpec spec;
  spec.stored_at = kNow;
  spec.ttl = ttl;
  spec.grace = grace;
  spec.body = body;
  spec.headers = headers;
  Status status;
  ObjectRef object = Object::Create(key, spec, &status);
  EXPECT_TRUE(status.ok()) << status.message();
  return object;
}

TEST(Store, LookupInsertPurgeBan) {
  Store store({.budget = 8 << 20});
  std::vector<Segment> body = Encode("hello, world", {});
  std::vector<SegmentView> views = Views(body);
  EXPECT_EQ(store.Lookup("a", kNow).state, LookupState::kMiss);
  ASSERT_TRUE(store.Insert(Fragment("diff/1111/context=3", views)).ok());
  ASSERT_TRUE(store.Insert(Fragment("diff/1111/context=5", views)).ok());
  ASSERT_TRUE(store.Insert(Fragment("diff/2222/context=3", views)).ok());
  LookupResult hit = store.Lookup("diff/1111/context=3", kNow);
  ASSERT_EQ(hit.state, LookupState::kFresh);
  EXPECT_EQ(hit.object->key(), "diff/1111/context=3");

  // Replacing: a second insert under the same key wins; the first stays valid for its holder.
  ObjectRef replacement = Fragment("diff/1111/context=3", views);
  const Object* replacement_ptr = replacement.get();
  ASSERT_TRUE(store.Insert(replacement).ok());
  EXPECT_EQ(store.Lookup("diff/1111/context=3", kNow).object.get(), replacement_ptr);
  EXPECT_EQ(hit.object->key(), "diff/1111/context=3");  // still readable (ASan would object)
  EXPECT_FALSE(store.Insert(replacement).ok()) << "an object is stored at most once";

  EXPECT_EQ(store.Ban("diff/1111/"), 2u);
  EXPECT_EQ(store.Lookup("diff/1111/context=5", kNow).state, LookupState::kMiss);
  EXPECT_EQ(store.Lookup("diff/2222/context=3", kNow).state, LookupState::kFresh);
  EXPECT_TRUE(store.Purge("diff/2222/context=3"));
  EXPECT_FALSE(store.Purge("diff/2222/context=3"));
  EXPECT_EQ(store.Lookup("diff/2222/context=3", kNow).state, LookupState::kMiss);

  StoreStats stats = store.Stats();
  EXPECT_EQ(stats.objects, 0u);
  EXPECT_EQ(stats.inserts, 4u);
  EXPECT_EQ(stats.replaced, 1u);
  EXPECT_EQ(stats.banned, 2u);
  EXPECT_EQ(stats.purged, 1u);
  EXPECT_EQ(stats.refused, 1u);
  EXPECT_EQ(stats.hits, 3u);
  EXPECT_EQ(stats.key_bytes, 0u) << "purged and banned objects are released at once";
  EXPECT_LE(stats.bytes, stats.budget);
}

TEST(Store, FreshStaleExpired) {
  Store store({.budget = 8 << 20});
  std::vector<Segment> body = Encode("page", {});
  std::vector<SegmentView> views = Views(body);
  ASSERT_TRUE(store.Insert(Fragment("page", views, seconds(10), seconds(20))).ok());
  EXPECT_EQ(store.Lookup("page", kNow + seconds(5)).state, LookupState::kFresh);
  EXPECT_EQ(store.Lookup("page", kNow + seconds(15)).state, LookupState::kStale);
  EXPECT_EQ(store.Lookup("page", kNow + seconds(30)).state, LookupState::kMiss);
  EXPECT_EQ(store.Lookup("page", kNow + seconds(5)).state, LookupState::kMiss)
      << "removed when expired";
  StoreStats stats = store.Stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.stale_hits, 1u);
  EXPECT_EQ(stats.expired, 1u);
  EXPECT_EQ(stats.misses, 2u);
}

TEST(Store, RefusesObjectsOverTheLimit) {
  Store store({.budget = 2 << 20, .shards = 2});
  std::mt19937_64 rng(10);
  std::vector<Segment> body = Encode(RandomBinary(rng, 400'000), {});
  std::vector<SegmentView> views = Views(body);
  ASSERT_GT(400'000u, store.max_object_bytes());
  Status s = store.Insert(Fragment("big", views));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceeds"), std::string::npos) << s.message();
  EXPECT_EQ(store.Stats().refused, 1u);
}

// A pool of pre-encoded bodies of various sizes, so tests can make many objects quickly.
struct BodyPool {
  explicit BodyPool(std::mt19937_64& rng, size_t count, size_t min_size, size_t max_size) {
    for (size_t i = 0; i < count; ++i) {
      size_t n = min_size + rng() % (max_size - min_size + 1);
      segments.push_back(Encode(DiffLikeText(rng, n), {}));
    }
    for (const auto& s : segments) views.push_back(Views(s));
  }
  const std::vector<SegmentView>& Pick(std::mt19937_64& rng) const {
    return views[rng() % views.size()];
  }
  std::vector<std::vector<Segment>> segments;
  std::vector<std::vector<SegmentView>> views;
};

std::string ShaKey(std::mt19937_64& rng) {
  char sha[41];
  for (int i = 0; i < 40; ++i) sha[i] = "0123456789abcdef"[rng() % 16];
  sha[40] = 0;
  return std::string("diff/") + sha + "/context=3";
}

size_t HeapInUse() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Objects above a hashed shard's share go to the large shard: found, replaced, purged, evicted
// among themselves, and what they hold is taken from the other shards so the budget still holds.
TEST(Store, LargeObjectsAreStoredWithinTheBudget) {
  const size_t budget = 96 << 20;  // large objects: up to 24 MiB in all, 12 MiB each
  Store store({.budget = budget, .shards = 16});
  ASSERT_LT(store.max_hashed_object_bytes(), 1u << 20) << "1/8 of a hashed slice";
  ASSERT_GE(store.max_object_bytes(), 8u << 20);
  std::mt19937_64 rng(12);
  // Fill the hashed shards first with small objects.
  BodyPool small_pool(rng, 16, 500, 40'000);
  std::vector<std::string> small_keys;
  while (store.Stats().bytes < budget * 95 / 100) {
    small_keys.push_back(ShaKey(rng));
    ASSERT_TRUE(store.Insert(Fragment(small_keys.back(), small_pool.Pick(rng))).ok());
  }
  const uint64_t small_objects = store.Stats().objects;

  std::vector<Segment> big = Encode(RandomBinary(rng, 9 << 20), {});
  std::vector<SegmentView> big_views = Views(big);
  ObjectRef first = Fragment("big/1", big_views);
  ASSERT_GT(first->charge(), 8u << 20);
  ASSERT_GT(first->charge(), store.max_hashed_object_bytes());
  ASSERT_TRUE(store.Insert(first).ok());
  StoreStats stats = store.Stats();
  EXPECT_LE(stats.bytes, budget) << "hashed shards evicted to make room for the large object";
  EXPECT_LT(stats.objects, small_objects + 1) << "small objects made room for it";
  LookupResult hit = store.Lookup("big/1", kNow);
  ASSERT_EQ(hit.state, LookupState::kFresh);
  EXPECT_EQ(hit.object.get(), first.get());
  EXPECT_EQ(store.Lookup("big/2", kNow).state, LookupState::kMiss);
  EXPECT_EQ(store.Lookup(small_keys.back(), kNow).state, LookupState::kFresh)
      << "small objects are still found while large ones are held";

  // A small object under the same key replaces the large one, and the other way round.
  std::vector<Segment> tiny = Encode("tiny", {});
  ASSERT_TRUE(store.Insert(Fragment("big/1", Views(tiny))).ok());
  EXPECT_NE(store.Lookup("big/1", kNow).object.get(), first.get());
  EXPECT_LT(store.Lookup("big/1", kNow).object->charge(), 4096u);
  ASSERT_TRUE(store.Insert(Fragment("big/1", big_views)).ok());
  EXPECT_GT(store.Lookup("big/1", kNow).object->charge(), 8u << 20);

  // The large shard holds a quarter of the budget: the oldest large objects are evicted.
  for (int i = 2; i <= 6; ++i) {
    ASSERT_TRUE(store.Insert(Fragment("big/" + std::to_string(i), big_views)).ok());
    ASSERT_LE(store.Stats().bytes, budget);
  }
  EXPECT_EQ(store.Lookup("big/6", kNow).state, LookupState::kFresh);
  size_t held = 0;
  for (int i = 1; i <= 6; ++i) held += static_cast<bool>(store.Lookup("big/" + std::to_string(i), kNow).object);
  EXPECT_LT(held, 6u);
  EXPECT_GE(held, 1u);

  // Purging them gives the budget back to the hashed shards.
  for (int i = 1; i <= 6; ++i) store.Purge("big/" + std::to_string(i));
  const uint64_t before = store.Stats().objects;
  for (int i = 0; i < 4000; ++i) ASSERT_TRUE(store.Insert(Fragment(ShaKey(rng), small_pool.Pick(rng))).ok());
  stats = store.Stats();
  EXPECT_LE(stats.bytes, budget);
  EXPECT_GT(stats.bytes, budget * 9 / 10) << "the hashed shards use the whole budget again";
  EXPECT_GT(stats.objects, before);
}

TEST(Store, BudgetHoldsAndMatchesTheHeap) {
  std::mt19937_64 rng(11);
  BodyPool pool(rng, 64, 500, 40'000);  // ~150 B .. 8 KB of deflate each
  malloc_trim(0);
  const size_t heap_before = HeapInUse();
  const size_t budget = 8 << 20;
  auto store = std::make_unique<Store>(StoreOptions{.budget = budget});
  size_t inserted_bytes = 0;
  size_t steps = 0;
  while (inserted_bytes < 10 * budget) {
    ObjectRef object = Fragment(ShaKey(rng), pool.Pick(rng));
    inserted_bytes += object->charge();
    ASSERT_TRUE(store->Insert(std::move(object)).ok());
    StoreStats stats = store->Stats();
    ASSERT_LE(stats.bytes, budget) << "after insert " << steps;
    ++steps;
  }
  StoreStats stats = store->Stats();
  std::printf(
      "[ budget   ] %zu inserts, %.1f MiB offered to a %.1f MiB budget: %lu objects, %lu bytes "
      "held "
      "(%.1f%% of budget), %lu evictions\n",
      steps, inserted_bytes / 1048576.0, budget / 1048576.0, stats.objects, stats.bytes,
      100.0 * stats.bytes / budget, stats.evictions);
  EXPECT_GT(stats.bytes, budget * 9 / 10) << "the store should use its budget";
  EXPECT_GT(stats.evictions, 0u);
  if (!kSanitized) {
    // What the store says it holds is what the heap says is in use (the pool and the test's own
    // allocations existed before `heap_before`).
    size_t heap = HeapInUse() - heap_before;
    double ratio = static_cast<double>(stats.bytes) / static_cast<double>(heap);
    std::printf("[ budget   ] heap in use for the store: %zu bytes; accounted %lu: %.4fx\n", heap,
                stats.bytes, ratio);
    EXPECT_GT(ratio, 0.97);
    EXPECT_LT(ratio, 1.03);
  }
  store.reset();
  if (!kSanitized) {
    // glibc's per-thread cache keeps up to 7 freed chunks per small size class counted as in use.
    EXPECT_LT(HeapInUse(), heap_before + (512 << 10)) << "the store gives everything back";
  }
}

// Per-object overhead beyond key and body bytes, with realistic fragments (a cgit diff: ~8 KB of
// HTML, ~1.5 KB gzipped; key diff/SHA/context=3), both while the store fills and in steady state.
TEST(Store, PerObjectOverhead) {
  std::mt19937_64 rng(12);
  BodyPool pool(rng, 64, 4000, 14'000);
  auto overhead = [](const StoreStats& s) {
    return static_cast<double>(s.bytes - s.key_bytes - s.body_bytes) /
           static_cast<double>(s.objects);
  };
  struct Variant {
    const char* name;
    std::vector<Header> headers;
  };
  std::vector<Variant> variants = {
      {"no kept headers", {}},
      {"Content-Type", {{"Content-Type", "text/html; charset=UTF-8"}}},
  };
  for (const Variant& v : variants) {
    const size_t budget = 64 << 20;
    Store store({.budget = budget});
    // Filling: about 60% of the budget, no evictions yet.
    while (store.Stats().bytes < budget * 6 / 10) {
      for (int i = 0; i < 1000; ++i)
        ASSERT_TRUE(store
                        .Insert(Fragment(ShaKey(rng), pool.Pick(rng), Object::kForever, seconds(0),
                                         v.headers))
                        .ok());
    }
    StoreStats filling = store.Stats();
    ASSERT_EQ(filling.evictions, 0u);
    // Steady state: three budgets' worth more, with lookups so that S, M and G all take part.
    std::vector<std::string> recent;
    while (store.Stats().evictions < 3 * filling.objects) {
      for (int i = 0; i < 1000; ++i) {
        std::string key = ShaKey(rng);
        ASSERT_TRUE(
            store.Insert(Fragment(key, pool.Pick(rng), Object::kForever, seconds(0), v.headers))
                .ok());
        recent.push_back(key);
        if (recent.size() > 5000) recent.erase(recent.begin(), recent.begin() + 1000);
        store.Lookup(recent[rng() % recent.size()], kNow);
      }
    }
    StoreStats steady = store.Stats();
    for (const auto& [phase, s] : {std::pair{"filling", filling}, std::pair{"steady ", steady}}) {
      double n = static_cast<double>(s.objects);
      std::printf(
          "[ overhead ] %-16s %s: %6lu objects, avg key %.1f B, body %.0f B; overhead %.1f "
          "B/object = "
          "object %.1f + index %.1f + queue %.1f + ghost %.1f + shards %.1f%s\n",
          v.name, phase, s.objects, s.key_bytes / n, s.body_bytes / n, overhead(s),
          (s.object_bytes - s.key_bytes - s.body_bytes) / n, s.index_bytes / n, s.queue_bytes / n,
          s.ghost_bytes / n,
          (s.bytes - s.object_bytes - s.index_bytes - s.queue_bytes - s.ghost_bytes) / n,
          kSanitized ? " (sanitizer build: no allocator rounding)" : "");
    }
    EXPECT_LE(overhead(filling), 64.0) << v.name;
    EXPECT_LE(overhead(steady), 64.0) << v.name;
  }
}

// A hot set looked up many times survives a crawler's one-pass scan of 100k cold keys. In a full
// store, objects nobody asked for again (the control set) do not. (Into an empty store they pass to
// the main queue unfiltered while there is room, and stay until something better needs it.)
TEST(Store, ScanResistance) {
  std::mt19937_64 rng(13);
  BodyPool pool(rng, 32, 2000, 6000);  // ~0.5-1.3 KB deflate
  enum Start { kEmpty, kFull, kFullWithHotTraffic };
  for (Start start : {kEmpty, kFull, kFullWithHotTraffic}) {
    Store store({.budget = 16 << 20});
    if (start != kEmpty) {  // a store already full of objects seen once
      for (int i = 0; store.Stats().evictions == 0; ++i) {
        ASSERT_TRUE(store.Insert(Fragment("//old/" + std::to_string(i), pool.Pick(rng))).ok());
      }
    }
    // The hot set (~2 MB, an eighth of the store): each requested a few times as it arrives, then
    // many times more. The control set: same size, stored once, never asked for again.
    std::vector<std::string> hot, control;
    for (int i = 0; i < 2000; ++i) {
      hot.push_back(ShaKey(rng));
      ASSERT_TRUE(store.Insert(Fragment(hot.back(), pool.Pick(rng))).ok());
      for (int r = 0; r < 3; ++r)
        ASSERT_NE(store.Lookup(hot.back(), kNow).state, LookupState::kMiss);
      control.push_back(ShaKey(rng));
      ASSERT_TRUE(store.Insert(Fragment(control.back(), pool.Pick(rng))).ok());
    }
    for (int round = 0; round < 5; ++round) {
      for (const std::string& k : hot) ASSERT_NE(store.Lookup(k, kNow).state, LookupState::kMiss);
    }
    size_t scanned_bytes = 0;
    for (int i = 0; i < 100'000; ++i) {
      std::string key = "//crawler.example/linux/commit/?id=" + std::to_string(i);
      ASSERT_EQ(store.Lookup(key, kNow).state,
                LookupState::kMiss);  // a crawler's miss, then the fill
      ObjectRef object = Fragment(key, pool.Pick(rng));
      scanned_bytes += object->charge();
      ASSERT_TRUE(store.Insert(std::move(object)).ok());
      if (start == kFullWithHotTraffic && i % 50 == 0) store.Lookup(hot[rng() % hot.size()], kNow);
    }
    size_t hot_left = 0, control_left = 0;
    for (const std::string& k : control)
      control_left += store.Lookup(k, kNow).state != LookupState::kMiss;
    for (const std::string& k : hot) hot_left += store.Lookup(k, kNow).state != LookupState::kMiss;
    StoreStats stats = store.Stats();
    const char* names[] = {"into an empty store", "into a full store", "full, with hot traffic"};
    std::printf(
        "[ scan     ] %-22s: scan of %.0f MiB through a %.0f MiB store: %zu/%zu hot survive, "
        "%zu/%zu control (%lu evictions)\n",
        names[start], scanned_bytes / 1048576.0, stats.budget / 1048576.0, hot_left, hot.size(),
        control_left, control.size(), stats.evictions);
    EXPECT_GE(hot_left, hot.size() * 9 / 10);
    if (start != kEmpty) {
      EXPECT_LE(control_left, control.size() / 10);
    }
    EXPECT_GE(scanned_bytes, 5 * stats.budget) << "the scan must be much larger than the store";
  }
}

// Four threads look up, insert, purge and ban until enough has happened (counted, not timed: a
// busy machine only makes it slower); every object read is intact.
TEST(Store, ConcurrencySmoke) {
  std::mt19937_64 seed_rng(14);
  BodyPool pool(seed_rng, 16, 100, 30'000);
  std::vector<std::string> texts;
  Store store({.budget = 4 << 20});
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> operations{0};
  std::atomic<uint64_t> verified{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> done{0};  // operations so far, all threads
  auto worker = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    Inflater inflater;
    StringSink sink;
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      std::string key = "k" + std::to_string(rng() % 4) + "/" + std::to_string(rng() % 3000);
      unsigned op = rng() % 100;
      if (op < 70) {
        LookupResult r = store.Lookup(key, kNow);
        if (r.object) {
          hits.fetch_add(1, std::memory_order_relaxed);
          // Read the whole object while others may evict it.
          EXPECT_EQ(r.object->key(), key);
          if (rng() % 8 == 0) {
            std::vector<SegmentView> segs(r.object->segments().begin(), r.object->segments().end());
            inflater.Reset();
            sink.out.clear();
            EXPECT_TRUE(inflater.InflateAll(segs, sink).ok());
            EXPECT_EQ(sink.out.size(), r.object->body_length());
            verified.fetch_add(1, std::memory_order_relaxed);
          }
        }
      } else if (op < 92) {
        EXPECT_TRUE(store.Insert(Fragment(key, pool.Pick(rng))).ok());
      } else if (op < 99) {
        store.Purge(key);
      } else {
        store.Ban("k" + std::to_string(rng() % 4) + "/" + std::to_string(rng() % 10));
      }
      ++n;
      done.fetch_add(1, std::memory_order_relaxed);
    }
    operations.fetch_add(n);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, 100 + t);
  // Until enough bodies were inflated concurrently with the writers (60 s at most).
  constexpr uint64_t kVerify = 500, kOperations = 20'000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((verified.load() < kVerify || done.load() < kOperations) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  for (auto& t : threads) t.join();
  StoreStats stats = store.Stats();
  std::printf(
      "[ threads  ] %lu operations on 4 threads, %lu hits, %lu bodies inflated and checked; %lu "
      "objects, %lu evictions\n",
      operations.load(), hits.load(), verified.load(), stats.objects, stats.evictions);
  EXPECT_LE(stats.bytes, stats.budget);
  EXPECT_GE(operations.load(), kOperations);
  EXPECT_GE(verified.load(), kVerify) << "too few objects were read back to call this checked";
  EXPECT_GT(stats.evictions, 0u) << "the budget was never under pressure";
}

// ---- freshness ---------------------------------------------------------------------------------

FreshnessDecision Decide(int status, std::vector<Header> headers, FreshnessPolicy policy = {}) {
  return DecideFreshness(status, headers, kNow, policy);
}

TEST(Freshness, HttpDates) {
  auto imf = ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT");
  ASSERT_TRUE(imf.has_value());
  EXPECT_EQ(imf->time_since_epoch().count(), 784111777);
  EXPECT_EQ(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"), imf);
  EXPECT_EQ(ParseHttpDate("Sun Nov  6 08:49:37 1994"), imf);
  EXPECT_EQ(ParseHttpDate("  Sun, 06 Nov 1994 08:49:37 GMT "), imf);
  EXPECT_FALSE(ParseHttpDate("0"));
  EXPECT_FALSE(ParseHttpDate("-1"));
  EXPECT_FALSE(ParseHttpDate("Mon, 30 Feb 2015 00:00:00 GMT"));
  EXPECT_FALSE(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 PST"));
  EXPECT_FALSE(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT trailing"));
  EXPECT_FALSE(ParseHttpDate(""));
}

TEST(Freshness, HeaderCases) {
  FreshnessDecision d = Decide(200, {});
  EXPECT_TRUE(d.storable);
  EXPECT_EQ(d.ttl, seconds(120));
  EXPECT_EQ(d.grace, seconds(10));
  EXPECT_EQ(d.reason, "default-ttl");

  d = Decide(200, {{"Cache-Control", "public, max-age=60"}});
  EXPECT_EQ(d.ttl, seconds(60));
  EXPECT_EQ(d.reason, "max-age");
  d = Decide(200, {{"cache-control", "max-age=10, s-maxage=300"}});
  EXPECT_EQ(d.ttl, seconds(300)) << "s-maxage wins for a shared cache";
  d = Decide(200, {{"Cache-Control", "community=\"UCI, x\", MAX-AGE=\"5\""}});
  EXPECT_EQ(d.ttl, seconds(5)) << "quoted commas and quoted values";
  d = Decide(200, {{"Cache-Control", "max-age=soon"}});
  EXPECT_TRUE(d.storable);
  EXPECT_EQ(d.ttl, seconds(0)) << "invalid freshness: stale";
  d = Decide(200, {{"Cache-Control", "max-age=99999999999999"}});
  EXPECT_EQ(d.ttl, seconds(2147483648));

  d = Decide(200, {{"Date", "Sun, 06 Nov 1994 08:49:37 GMT"},
                   {"Expires", "Sun, 06 Nov 1994 09:49:37 GMT"}});
  EXPECT_EQ(d.ttl, seconds(3600)) << "Expires - Date, whatever our clock says";
  EXPECT_EQ(d.reason, "Expires");
  d = Decide(200, {{"Expires", "0"}});
  EXPECT_TRUE(d.storable);
  EXPECT_EQ(d.ttl, seconds(0));
  d = Decide(200, {{"Cache-Control", "max-age=100"}, {"Expires", "Sun, 06 Nov 1994 09:49:37 GMT"}});
  EXPECT_EQ(d.ttl, seconds(100)) << "max-age wins over Expires";
  d = Decide(200, {{"Cache-Control", "max-age=100"}, {"Age", "30"}});
  EXPECT_EQ(d.ttl, seconds(70));
  d = Decide(200, {{"Cache-Control", "max-age=100"}, {"Age", "300"}});
  EXPECT_EQ(d.ttl, seconds(0));

  for (const char* cc : {"no-store", "private", "no-cache", "private=\"Set-Cookie\""}) {
    d = Decide(200, {{"Cache-Control", std::string("max-age=60, ") + cc}});
    EXPECT_FALSE(d.storable) << cc;
    FreshnessPolicy rule;
    rule.store_uncacheable = true;
    EXPECT_TRUE(Decide(200, {{"Cache-Control", std::string("max-age=60, ") + cc}}, rule).storable)
        << cc;
  }
  d = Decide(200, {{"Set-Cookie", "session=1"}});
  EXPECT_FALSE(d.storable);
  EXPECT_EQ(d.reason, "Set-Cookie");

  EXPECT_TRUE(Decide(200, {{"Vary", "Accept-Encoding"}}).storable);
  EXPECT_TRUE(Decide(200, {{"Vary", "accept-encoding, Accept-Encoding"}}).storable);
  EXPECT_FALSE(Decide(200, {{"Vary", "Cookie"}}).storable);
  EXPECT_FALSE(Decide(200, {{"Vary", "*"}}).storable);

  EXPECT_FALSE(Decide(302, {}).storable) << "not cacheable by default";
  EXPECT_TRUE(Decide(302, {{"Cache-Control", "max-age=60"}}).storable);
  EXPECT_TRUE(Decide(404, {}).storable);
  EXPECT_FALSE(Decide(503, {{"Cache-Control", "max-age=60"}}).storable);
  EXPECT_FALSE(Decide(206, {{"Cache-Control", "max-age=60"}}).storable);

  d = Decide(200, {{"Cache-Control", "max-age=60, stale-while-revalidate=30, stale-if-error=600"}});
  EXPECT_EQ(d.grace, seconds(600));
  d = Decide(200, {{"Cache-Control", "max-age=60, stale-while-revalidate=30"}});
  EXPECT_EQ(d.grace, seconds(30));
}

TEST(Freshness, DecisionFeedsTheObject) {
  // A decision's ttl and grace go into the object; long durations round down to whole hours.
  FreshnessDecision d = Decide(200, {{"Cache-Control", "max-age=31536000, stale-if-error=86400"}});
  ObjectSpec spec;
  spec.stored_at = kNow;
  spec.ttl = d.ttl;
  spec.grace = d.grace;
  Status status;
  ObjectRef object = Object::Create("k", spec, &status);
  ASSERT_TRUE(object);
  EXPECT_EQ(object->ttl(), seconds(31536000));
  EXPECT_EQ(object->grace(), seconds(86400));
  spec.ttl = seconds(40000);  // 11h 6m 40s
  object = Object::Create("k", spec, &status);
  EXPECT_EQ(object->ttl(), seconds(39600));
  spec.ttl = seconds(32767);
  object = Object::Create("k", spec, &status);
  EXPECT_EQ(object->ttl(), seconds(32767));
}

// ---- keys --------------------------------------------------------------------------------------

TEST(Key, DefaultKeyNormalizesHostAndQuery) {
  KeyRules rules;
  std::string key;
  EXPECT_EQ(rules.MakeKey("Git.Example.ORG", "/linux/commit/?id=abc&h=master", &key), -1);
  EXPECT_EQ(key, "//git.example.org/linux/commit/?h=master&id=abc");
  rules.MakeKey("git.example.org", "/linux/commit/?h=master&id=abc", &key);
  EXPECT_EQ(key, "//git.example.org/linux/commit/?h=master&id=abc");
  rules.MakeKey("h", "/p?b=2&&a=1&b=1&", &key);
  EXPECT_EQ(key, "//h/p?a=1&b=2&b=1") << "empty parameters dropped; same names keep their order";
  rules.MakeKey("h", "/p?", &key);
  EXPECT_EQ(key, "//h/p");
  rules.MakeKey("h", "/p", &key);
  EXPECT_EQ(key, "//h/p");
  // More parameters than the inline buffer holds.
  std::string target = "/p?";
  for (int i = 99; i >= 0; --i)
    target += "x" + std::to_string(1000 + i) + "=" + std::to_string(i) + (i ? "&" : "");
  rules.MakeKey("h", target, &key);
  EXPECT_TRUE(key.starts_with("//h/p?x1000=0&x1001=1&x1002=2&")) << key;
  EXPECT_TRUE(key.ends_with("&x1099=99")) << key;
}

TEST(Key, EsiDiffAcrossForksIsOneKey) {
  KeyRules rules;
  ASSERT_TRUE(
      rules.Add(R"(^/[^?]+/esi-diff/\?(.*)$ => diff/${arg:id}/${args:context,ignorews,dt})").ok());
  std::string a, b, c;
  EXPECT_EQ(rules.MakeKey("git.kernel.org", "/linux/esi-diff/?id=0123abcd&context=3", &a), 0);
  EXPECT_EQ(rules.MakeKey("git.kernel.org", "/other-fork/esi-diff/?context=3&id=0123abcd", &b), 0);
  EXPECT_EQ(a, "diff/0123abcd/context=3");
  EXPECT_EQ(b, a);
  // Parameters outside the list (the branch) do not split the object.
  rules.MakeKey("git.kernel.org", "/pub/scm/linux/esi-diff/?h=for-next&context=3&id=0123abcd", &c);
  EXPECT_EQ(c, a);
  rules.MakeKey("x", "/r/esi-diff/?id=0123abcd&ignorews=1&context=3", &c);
  EXPECT_EQ(c, "diff/0123abcd/context=3&ignorews=1");
}

TEST(Key, CapturesSeeTheSortedQuery) {
  KeyRules rules;
  ASSERT_TRUE(
      rules.Add(R"(^/[^?]+/esi-diff/\?context=(\d+)&id=([0-9a-f]+)$ => diff/$2/context=$1)").ok());
  ASSERT_TRUE(rules.Add(R"(^/([^/]+)/tree/ => tree/$1/${path}?${query} $$ ${host} ${0})").ok());
  std::string key;
  EXPECT_EQ(rules.MakeKey("h", "/linux/esi-diff/?id=abc123&context=3", &key), 0);
  EXPECT_EQ(key, "diff/abc123/context=3");
  EXPECT_EQ(rules.MakeKey("H", "/git/tree/?b=2&a=1", &key), 1);
  EXPECT_EQ(key, "tree/git//git/tree/?a=1&b=2 $ h /git/tree/");
  EXPECT_EQ(rules.MakeKey("h", "/git/log/", &key), -1) << "first match wins; none here";
  EXPECT_EQ(key, "//h/git/log/");
}

TEST(Key, RuleKeysCannotLookLikeDefaultKeys) {
  KeyRules rules;
  ASSERT_TRUE(rules.Add(R"(^/raw(/.*)$ => /$1)").ok());
  std::string key;
  rules.MakeKey("h", "/raw/x", &key);
  EXPECT_EQ(key, "=//x");
}

TEST(Key, BadRules) {
  KeyRules rules;
  EXPECT_FALSE(rules.Add("no arrow").ok());
  EXPECT_FALSE(rules.Add(" => x").ok());
  EXPECT_FALSE(rules.Add("^/x =>   ").ok());
  Status s = rules.Add("^/(x => $1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad regex"), std::string::npos) << s.message();
  EXPECT_FALSE(rules.Add("^/(x)$ => $2").ok());
  EXPECT_FALSE(rules.Add("^/x => ${nope}").ok());
  EXPECT_FALSE(rules.Add("^/x => ${arg:").ok());
  EXPECT_FALSE(rules.Add("^/x => a$").ok());
  EXPECT_FALSE(rules.Add("^/x => a$b").ok());
  EXPECT_FALSE(rules.Add("^/x => ${args:a,,b}").ok());
  EXPECT_EQ(rules.size(), 0u);
}

}  // namespace
}  // namespace shellac::cache

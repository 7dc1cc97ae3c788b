#include "base/fixed_deflate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace shellac::base {

namespace {

// A code's bits as they go out (least significant first), and how many.
struct Code {
  uint32_t bits = 0;
  uint32_t count = 0;
};

constexpr uint32_t Reverse(uint32_t code, uint32_t count) {
  uint32_t r = 0;
  for (uint32_t i = 0; i < count; ++i, code >>= 1) r = (r << 1) | (code & 1);
  return r;
}

constexpr std::array<uint8_t, 256> MakeReversedBytes() {
  std::array<uint8_t, 256> r{};
  for (uint32_t b = 0; b < 256; ++b) r[b] = static_cast<uint8_t>(Reverse(b, 8));
  return r;
}
constexpr std::array<uint8_t, 256> kReversedBytes = MakeReversedBytes();

// Reverse() for the codes a block's own tree gives at run time (up to 15 bits).
uint32_t ReverseCode(uint32_t code, uint32_t count) {
  const uint32_t r = (uint32_t{kReversedBytes[code & 0xff]} << 8) | kReversedBytes[(code >> 8) & 0xff];
  return r >> (16 - count);
}

// RFC 1951 3.2.6: the fixed literal/length code of symbol `s`.
constexpr Code FixedSymbol(uint32_t s) {
  if (s < 144) return {Reverse(0x30 + s, 8), 8};
  if (s < 256) return {Reverse(0x190 + s - 144, 9), 9};
  if (s < 280) return {Reverse(s - 256, 7), 7};
  return {Reverse(0xc0 + s - 280, 8), 8};
}

constexpr uint32_t kLiteralLengthSymbols = 286, kDistanceSymbols = 30, kEndOfBlock = 256;

struct Tables {
  std::array<Code, 256> literal{};
  std::array<Code, 259> length{};  // a match length's symbol and extra bits, 3..258
  // For a block's own codes: a match length's symbol (257..285) and its extra bits alone.
  std::array<uint16_t, 259> length_symbol{};
  std::array<Code, 259> length_extra{};
  std::array<Code, kLiteralLengthSymbols> fixed_symbol{};  // every symbol's fixed code
};

constexpr Tables MakeTables() {
  Tables t;
  for (uint32_t s = 0; s < 256; ++s) t.literal[s] = FixedSymbol(s);
  constexpr uint32_t kBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                  31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  constexpr uint32_t kExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                   2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  for (uint32_t code = 0; code < 29; ++code) {
    const uint32_t end = code == 28 ? 259 : kBase[code + 1];
    for (uint32_t len = kBase[code]; len < end; ++len) {
      const Code symbol = FixedSymbol(257 + code);
      t.length[len] = {symbol.bits | ((len - kBase[code]) << symbol.count), symbol.count + kExtra[code]};
      t.length_symbol[len] = static_cast<uint16_t>(257 + code);
      t.length_extra[len] = {len - kBase[code], kExtra[code]};
    }
  }
  for (uint32_t s = 0; s < kLiteralLengthSymbols; ++s) t.fixed_symbol[s] = FixedSymbol(s);
  return t;
}

constexpr Tables kTables = MakeTables();

// A distance's symbol (0..29) and extra bits, 1..32768.
struct DistanceParts {
  uint32_t symbol;
  Code extra;
};

DistanceParts DistanceOf(uint32_t distance) {
  const uint32_t x = distance - 1;
  if (x < 4) return {x, {0, 0}};
  const uint32_t top = 31 - static_cast<uint32_t>(__builtin_clz(x));  // x's highest bit, >= 2
  const uint32_t extra = top - 1;
  return {2 * top + ((x >> extra) & 1), {x & ((1u << extra) - 1), extra}};
}

// A distance's fixed code (5 bits) and extra bits, 1..32768.
Code DistanceCode(uint32_t distance) {
  const DistanceParts d = DistanceOf(distance);
  return {Reverse(d.symbol, 5) | (d.extra.bits << 5), 5 + d.extra.count};
}

// Bits least significant first into a buffer sized beforehand.
class BitWriter {
 public:
  explicit BitWriter(char* at) : at_(at) {}
  void Put(Code c) {
    acc_ |= uint64_t{c.bits} << count_;
    count_ += c.count;
    if (count_ >= 32) {
      const auto word = static_cast<uint32_t>(acc_);
      std::memcpy(at_, &word, 4);  // little-endian, as deflate's bytes
      at_ += 4;
      acc_ >>= 32;
      count_ -= 32;
    }
  }
  // Zero bits to the next byte boundary; returns the end.
  char* Align() {
    for (; count_ > 0; count_ = count_ > 8 ? count_ - 8 : 0, acc_ >>= 8) *at_++ = static_cast<char>(acc_);
    return at_;
  }

 private:
  char* at_;
  uint64_t acc_ = 0;
  uint32_t count_ = 0;
};

// Code lengths of a Huffman code for `freq` (0: a symbol not used), none longer than `limit`. At
// least two symbols get a code, as zlib's deflate gives them: some decoders refuse a code of one.
// Past the limit the counts are halved (each at least 1) and the code built again; with counts of
// 1 alone the code is balanced, within every limit used here.
template <size_t N>
void CodeLengths(std::array<uint32_t, N> freq, uint32_t limit, std::array<uint8_t, N>* lengths) {
  lengths->fill(0);
  size_t used = 0;
  for (uint32_t f : freq) used += f != 0;
  for (size_t s = 0; used < 2 && s < N; ++s) {
    if (freq[s] == 0) {
      freq[s] = 1;
      ++used;
    }
  }
  std::array<uint16_t, N> order;  // the used symbols, least frequent first
  size_t m = 0;
  for (size_t s = 0; s < N; ++s) {
    if (freq[s] != 0) order[m++] = static_cast<uint16_t>(s);
  }
  // Nodes: the m leaves in order, then the inner nodes as they are made (two queues, each in
  // ascending weight: the two lightest are always at their fronts).
  std::array<uint32_t, 2 * N> weight;
  std::array<uint16_t, 2 * N> parent;
  std::array<uint16_t, 2 * N> depth;
  for (;;) {
    std::sort(order.begin(), order.begin() + m, [&freq](uint16_t a, uint16_t b) {
      return freq[a] != freq[b] ? freq[a] < freq[b] : a < b;
    });
    for (size_t i = 0; i < m; ++i) weight[i] = freq[order[i]];
    size_t leaf = 0, inner = m, next = m;
    auto lightest = [&]() {
      if (leaf < m && (inner == next || weight[leaf] <= weight[inner])) return leaf++;
      return inner++;
    };
    for (; next < 2 * m - 1; ++next) {
      const size_t a = lightest(), b = lightest();
      weight[next] = weight[a] + weight[b];
      parent[a] = parent[b] = static_cast<uint16_t>(next);
    }
    depth[2 * m - 2] = 0;
    uint32_t longest = 0;
    for (size_t i = 2 * m - 2; i-- > 0;) {
      depth[i] = static_cast<uint16_t>(depth[parent[i]] + 1);
      if (i < m) longest = std::max<uint32_t>(longest, depth[i]);
    }
    if (longest <= limit) {
      for (size_t i = 0; i < m; ++i) (*lengths)[order[i]] = static_cast<uint8_t>(depth[i]);
      return;
    }
    for (size_t i = 0; i < m; ++i) freq[order[i]] = (freq[order[i]] >> 1) | 1;
  }
}

// The canonical codes (RFC 1951 3.2.2) of `lengths`, bits reversed as they go out.
template <size_t N>
void CanonicalCodes(const std::array<uint8_t, N>& lengths, std::array<Code, N>* codes) {
  uint32_t count[16] = {};
  for (uint8_t l : lengths) ++count[l];
  count[0] = 0;
  uint32_t next[16] = {};
  for (uint32_t bits = 1, code = 0; bits < 16; ++bits) {
    code = (code + count[bits - 1]) << 1;
    next[bits] = code;
  }
  for (size_t s = 0; s < N; ++s) {
    const uint32_t l = lengths[s];
    (*codes)[s] = l == 0 ? Code{} : Code{ReverseCode(next[l]++, l), l};
  }
}

// A block's own codes (BTYPE 10) for the symbol counts of its text, and the bits its header takes.
class DynamicCodes {
 public:
  DynamicCodes(const std::array<uint32_t, kLiteralLengthSymbols>& literal_freq,
               const std::array<uint32_t, kDistanceSymbols>& distance_freq) {
    CodeLengths(literal_freq, 15, &literal_lengths_);
    CodeLengths(distance_freq, 15, &distance_lengths_);
    CanonicalCodes(literal_lengths_, &literal_);
    CanonicalCodes(distance_lengths_, &distance_);
    literal_count_ = kLiteralLengthSymbols;
    while (literal_count_ > 257 && literal_lengths_[literal_count_ - 1] == 0) --literal_count_;
    distance_count_ = kDistanceSymbols;
    while (distance_count_ > 1 && distance_lengths_[distance_count_ - 1] == 0) --distance_count_;
    // Both lengths' lists as one, run-length coded (16: the previous length 3-6 times more; 17:
    // 3-10 zeros; 18: 11-138 zeros).
    std::array<uint8_t, kLiteralLengthSymbols + kDistanceSymbols> all;
    std::copy_n(literal_lengths_.begin(), literal_count_, all.begin());
    std::copy_n(distance_lengths_.begin(), distance_count_, all.begin() + literal_count_);
    const size_t total = literal_count_ + distance_count_;
    std::array<uint32_t, kLengthSymbols> length_freq{};
    auto put = [&](uint32_t symbol, uint32_t extra) {
      runs_[runs_count_++] = {static_cast<uint8_t>(symbol), static_cast<uint8_t>(extra)};
      ++length_freq[symbol];
    };
    for (size_t i = 0; i < total;) {
      const uint8_t v = all[i];
      size_t run = 1;
      while (i + run < total && all[i + run] == v) ++run;
      i += run;
      if (v == 0) {
        for (; run >= 11; run -= std::min<size_t>(run, 138)) put(18, std::min<size_t>(run, 138) - 11);
        if (run >= 3) {
          put(17, run - 3);
          run = 0;
        }
      } else {
        put(v, 0);
        for (--run; run >= 3; run -= std::min<size_t>(run, 6)) put(16, std::min<size_t>(run, 6) - 3);
      }
      for (; run > 0; --run) put(v, 0);
    }
    CodeLengths(length_freq, 7, &length_lengths_);
    CanonicalCodes(length_lengths_, &length_codes_);
    order_count_ = kLengthSymbols;
    while (order_count_ > 4 && length_lengths_[kLengthOrder[order_count_ - 1]] == 0) --order_count_;
    header_bits_ = 3 + 5 + 5 + 4 + 3 * order_count_;
    for (size_t i = 0; i < runs_count_; ++i) {
      header_bits_ += length_codes_[runs_[i].symbol].count + ExtraBits(runs_[i].symbol);
    }
  }

  // The bits the block's symbols take with these codes, less their extra bits (the same with any
  // codes), and with the header.
  uint64_t Bits(const std::array<uint32_t, kLiteralLengthSymbols>& literal_freq,
                const std::array<uint32_t, kDistanceSymbols>& distance_freq) const {
    uint64_t bits = header_bits_;
    for (size_t s = 0; s < kLiteralLengthSymbols; ++s) bits += uint64_t{literal_freq[s]} * literal_[s].count;
    for (size_t s = 0; s < kDistanceSymbols; ++s) bits += uint64_t{distance_freq[s]} * distance_[s].count;
    return bits;
  }

  // The block's header, from BFINAL on.
  void PutHeader(bool final, BitWriter* bits) const {
    bits->Put({final ? 5u : 4u, 3});  // BFINAL, BTYPE 10: the block's own codes
    bits->Put({static_cast<uint32_t>(literal_count_ - 257), 5});
    bits->Put({static_cast<uint32_t>(distance_count_ - 1), 5});
    bits->Put({static_cast<uint32_t>(order_count_ - 4), 4});
    for (size_t i = 0; i < order_count_; ++i) bits->Put({length_lengths_[kLengthOrder[i]], 3});
    for (size_t i = 0; i < runs_count_; ++i) {
      bits->Put(length_codes_[runs_[i].symbol]);
      if (runs_[i].symbol >= 16) bits->Put({runs_[i].extra, ExtraBits(runs_[i].symbol)});
    }
  }

  const std::array<Code, kLiteralLengthSymbols>& literal() const { return literal_; }
  const std::array<Code, kDistanceSymbols>& distance() const { return distance_; }

 private:
  static constexpr size_t kLengthSymbols = 19;
  static constexpr uint8_t kLengthOrder[kLengthSymbols] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                                           11, 4,  12, 3, 13, 2, 14, 1, 15};
  static uint32_t ExtraBits(uint32_t symbol) { return symbol == 16 ? 2 : symbol == 17 ? 3 : symbol == 18 ? 7 : 0; }
  struct Run {
    uint8_t symbol;
    uint8_t extra;
  };

  std::array<uint8_t, kLiteralLengthSymbols> literal_lengths_;
  std::array<uint8_t, kDistanceSymbols> distance_lengths_;
  std::array<Code, kLiteralLengthSymbols> literal_;
  std::array<Code, kDistanceSymbols> distance_;
  size_t literal_count_ = 0, distance_count_ = 0, order_count_ = 0;
  std::array<Run, kLiteralLengthSymbols + kDistanceSymbols> runs_;
  size_t runs_count_ = 0;
  std::array<uint8_t, kLengthSymbols> length_lengths_;
  std::array<Code, kLengthSymbols> length_codes_;
  uint64_t header_bits_ = 0;
};

uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

constexpr uint32_t kHashBits = 11;
constexpr size_t kMaxDistance = 32768, kMaxLength = 258, kMinLength = 4;
// FixedChain keeps at least this much of a run's text, and trims it once it passes kRunLimit.
constexpr size_t kRunLimit = 256 << 10;
// A chain's text at least this long may take a block of its own codes: below it, a tree's header
// (~60-90 bytes for text) rarely pays for itself, and building one costs more than coding the text.
// Building them costs ~35 K instructions a block (bench/results/framezip2-callgrind.md).
constexpr size_t kOwnCodesFrom = 1024;
// A block with its own codes covers at most this much text (its symbols are kept until written).
constexpr size_t kOwnCodesBlock = 64 << 10;

uint32_t HashOf(uint32_t v) { return (v * 2654435761u) >> (32 - kHashBits); }

}  // namespace

// A match finder kept from run to run so that a run clears nothing: a slot holds `base` + a
// position + 1 of the run that wrote it, and a run's base is past every earlier run's entries, so
// theirs read as empty.
struct FixedChain::Finder {
  uint32_t slots[1u << kHashBits] = {};
  uint32_t base = 0;
  std::unique_ptr<char[]> out;  // the bits, before they are appended (a grown string is zeroed)
  size_t out_size = 0;
  std::vector<uint32_t> tokens;  // a block's symbols, when it may take its own codes

  // Room for `n` more positions in this run (`used` so far): the slots start afresh when the
  // positions would wrap.
  void Reserve(size_t used, size_t n) {
    if (used + n < UINT32_MAX - 1 - base) return;
    std::fill(std::begin(slots), std::end(slots), 0);
    base = 0;
  }
  void Enter(const unsigned char* p, size_t at) { slots[HashOf(Load32(p + at))] = base + static_cast<uint32_t>(at) + 1; }

  // Appends p[begin, n) as one block (then an empty stored block unless `final`), its matches
  // reaching back to any position of p entered in this run (and before `begin`). Fixed codes,
  // unless `own_codes` and the block is at least kOwnCodesFrom long: then the block's own codes
  // where they take fewer bits, header included.
  void Encode(const unsigned char* p, size_t begin, size_t n, bool final, bool own_codes,
              std::string* sink);

  // p[begin, n) as one block with its own codes, or fixed ones where those take fewer bits.
  void OwnCodesBlock(const unsigned char* p, size_t begin, size_t n, bool final, BitWriter* bits);

  // The greedy parse of p[begin, n): literal(byte) and match(length, distance) in order.
  template <typename Literal, typename Match>
  void Parse(const unsigned char* p, size_t begin, size_t n, Literal literal, Match match);
};

template <typename Literal, typename Match>
void FixedChain::Finder::Parse(const unsigned char* p, size_t begin, size_t n, Literal literal,
                               Match match) {
  size_t i = begin;
  while (i + kMinLength <= n) {
    const uint32_t v = Load32(p + i);
    const uint32_t h = HashOf(v);
    const uint32_t entry = slots[h];
    slots[h] = base + static_cast<uint32_t>(i) + 1;
    const size_t from = entry > base ? entry - base - 1 : i;
    if (from < i && i - from <= kMaxDistance && Load32(p + from) == v) {
      const size_t max = std::min(kMaxLength, n - i);
      size_t len = kMinLength;
      for (;;) {
        if (len + 8 <= max) {
          const uint64_t diff = Load64(p + from + len) ^ Load64(p + i + len);
          if (diff == 0) {
            len += 8;
            continue;
          }
          len += static_cast<size_t>(__builtin_ctzll(diff)) / 8;
          break;
        }
        while (len < max && p[from + len] == p[i + len]) ++len;
        break;
      }
      match(static_cast<uint32_t>(len), static_cast<uint32_t>(i - from));
      i += len;
      continue;
    }
    literal(p[i]);
    ++i;
  }
  for (; i < n; ++i) literal(p[i]);
}

void FixedChain::Finder::OwnCodesBlock(const unsigned char* p, size_t begin, size_t n, bool final,
                                       BitWriter* out_bits) {
  BitWriter& bits = *out_bits;
  // The symbols first (a literal: its byte; a match: kMatch, its length, its distance - 1),
  // counted, then written with whichever codes take fewer bits.
  constexpr uint32_t kMatch = 1u << 31;
  tokens.clear();
  tokens.reserve(n - begin);
  std::array<uint32_t, kLiteralLengthSymbols> literal_freq{};
  std::array<uint32_t, kDistanceSymbols> distance_freq{};
  Parse(
      p, begin, n,
      [&](unsigned char c) {
        tokens.push_back(c);
        ++literal_freq[c];
      },
      [&](uint32_t len, uint32_t distance) {
        tokens.push_back(kMatch | (len << 16) | (distance - 1));
        ++literal_freq[kTables.length_symbol[len]];
        ++distance_freq[DistanceOf(distance).symbol];
      });
  literal_freq[kEndOfBlock] = 1;
  const DynamicCodes own(literal_freq, distance_freq);
  uint64_t fixed_bits = 3;
  for (size_t s = 0; s < kLiteralLengthSymbols; ++s) {
    fixed_bits += uint64_t{literal_freq[s]} * kTables.fixed_symbol[s].count;
  }
  for (uint32_t f : distance_freq) fixed_bits += uint64_t{f} * 5;
  static constexpr std::array<Code, kDistanceSymbols> kFixedDistance = [] {
    std::array<Code, kDistanceSymbols> d{};
    for (uint32_t s = 0; s < kDistanceSymbols; ++s) d[s] = {Reverse(s, 5), 5};
    return d;
  }();
  const Code* literal_codes = kTables.fixed_symbol.data();
  const Code* distance_codes = kFixedDistance.data();
  if (own.Bits(literal_freq, distance_freq) < fixed_bits) {
    own.PutHeader(final, &bits);
    literal_codes = own.literal().data();
    distance_codes = own.distance().data();
  } else {
    bits.Put({final ? 3u : 2u, 3});  // BFINAL, BTYPE 01: fixed codes
  }
  for (const uint32_t t : tokens) {
    if ((t & kMatch) == 0) {
      bits.Put(literal_codes[t]);
      continue;
    }
    const uint32_t len = (t >> 16) & 0x1ff;
    const DistanceParts d = DistanceOf((t & 0xffff) + 1);
    bits.Put(literal_codes[kTables.length_symbol[len]]);
    bits.Put(kTables.length_extra[len]);
    bits.Put(distance_codes[d.symbol]);
    bits.Put(d.extra);
  }
  bits.Put(literal_codes[kEndOfBlock]);
}

void FixedChain::Finder::Encode(const unsigned char* p, size_t begin, size_t n, bool final,
                                bool own_codes, std::string* sink) {
  // At most 9 bits a byte, each block's header and end, an empty stored block (a block with its
  // own codes is written only when it is shorter than with fixed ones).
  const size_t bound = (n - begin) + (n - begin) / 8 + 16 + 4 * ((n - begin) / kOwnCodesBlock);
  if (out_size < bound) {
    out_size = std::max(bound, size_t{64} << 10);
    out = std::make_unique_for_overwrite<char[]>(out_size);
  }
  BitWriter bits(out.get());
  if (!own_codes || n - begin < kOwnCodesFrom) {
    bits.Put({final ? 3u : 2u, 3});  // BFINAL, BTYPE 01: fixed codes
    Parse(
        p, begin, n, [&bits](unsigned char c) { bits.Put(kTables.literal[c]); },
        [&bits](uint32_t len, uint32_t distance) {
          bits.Put(kTables.length[len]);
          bits.Put(DistanceCode(distance));
        });
    bits.Put({0, 7});  // end of block (256)
  } else {
    // Blocks of at most kOwnCodesBlock bytes (the symbols of one are kept: bounded memory).
    for (size_t at = begin; at < n; at += kOwnCodesBlock) {
      const size_t stop = std::min(n, at + kOwnCodesBlock);
      OwnCodesBlock(p, at, stop, final && stop == n, &bits);
    }
  }
  if (!final) bits.Put({0, 3});  // an empty stored block: BFINAL 0, BTYPE 00, ...
  char* end = bits.Align();
  if (!final) {
    std::memcpy(end, "\x00\x00\xff\xff", 4);  // ... LEN 0, NLEN
    end += 4;
  }
  sink->append(out.get(), static_cast<size_t>(end - out.get()));
}

namespace {
thread_local FixedChain::Finder finder;
}  // namespace

void DeflateFixed(std::string_view in, bool final, std::string* out) {
  FixedChain::Finder& f = finder;
  f.Reserve(0, in.size());
  f.Encode(reinterpret_cast<const unsigned char*>(in.data()), 0, in.size(), final,
           /*own_codes=*/false, out);
  f.base += static_cast<uint32_t>(in.size()) + 1;  // the next run's entries start past these
}

FixedChain::FixedChain() : finder_(std::make_unique<Finder>()) {}
FixedChain::~FixedChain() = default;

void FixedChain::Begin() {
  finder_->base += static_cast<uint32_t>(run_.size()) + 1;
  run_.clear();
  hashed_ = 0;
}

void FixedChain::Hash(size_t end) {
  const size_t stop = std::min(end, run_.size() >= kMinLength ? run_.size() - kMinLength + 1 : 0);
  const auto* p = reinterpret_cast<const unsigned char*>(run_.data());
  for (; hashed_ < stop; ++hashed_) finder_->Enter(p, hashed_);
}

void FixedChain::Add(std::string_view text, std::string* out) {
  Known(text);
  const size_t begin = run_.size() - text.size();
  Hash(begin);  // the run's positions before `text`, entered only now that a text may use them
  const auto* p = reinterpret_cast<const unsigned char*>(run_.data());
  finder_->Encode(p, begin, run_.size(), /*final=*/false, /*own_codes=*/true, out);
  // Encode entered (or matched over) every position of `text` that has 4 bytes after it.
  hashed_ = std::max(hashed_, run_.size() >= kMinLength ? run_.size() - kMinLength + 1 : 0);
}

void FixedChain::Known(std::string_view text) {
  if (run_.size() + text.size() > kRunLimit) {
    // Keep the last 32 KiB: positions move down by `drop`, and so does the base, so the entries
    // of kept positions stay right and those of dropped ones read as empty.
    const size_t drop = run_.size() > kMaxDistance ? run_.size() - kMaxDistance : 0;
    run_.erase(0, drop);
    finder_->base += static_cast<uint32_t>(drop);
    hashed_ = hashed_ > drop ? hashed_ - drop : 0;
  }
  finder_->Reserve(run_.size(), text.size());
  run_.append(text);
  // Entered by the next Add, and only the last 32 KiB: no text may refer further back.
  if (run_.size() > kMaxDistance) hashed_ = std::max(hashed_, run_.size() - kMaxDistance);
}
}  // namespace shellac::base

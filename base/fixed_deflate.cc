#include "base/fixed_deflate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

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

// RFC 1951 3.2.6: the fixed literal/length code of symbol `s`.
constexpr Code FixedSymbol(uint32_t s) {
  if (s < 144) return {Reverse(0x30 + s, 8), 8};
  if (s < 256) return {Reverse(0x190 + s - 144, 9), 9};
  if (s < 280) return {Reverse(s - 256, 7), 7};
  return {Reverse(0xc0 + s - 280, 8), 8};
}

struct Tables {
  std::array<Code, 256> literal{};
  std::array<Code, 259> length{};  // a match length's symbol and extra bits, 3..258
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
    }
  }
  return t;
}

constexpr Tables kTables = MakeTables();

// A distance's fixed code (5 bits) and extra bits, 1..32768.
Code DistanceCode(uint32_t distance) {
  const uint32_t x = distance - 1;
  if (x < 4) return {Reverse(x, 5), 5};
  const uint32_t top = 31 - static_cast<uint32_t>(__builtin_clz(x));  // x's highest bit, >= 2
  const uint32_t extra = top - 1;
  const uint32_t code = 2 * top + ((x >> extra) & 1);
  return {Reverse(code, 5) | ((x & ((1u << extra) - 1)) << 5), 5 + extra};
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

  // Room for `n` more positions in this run (`used` so far): the slots start afresh when the
  // positions would wrap.
  void Reserve(size_t used, size_t n) {
    if (used + n < UINT32_MAX - 1 - base) return;
    std::fill(std::begin(slots), std::end(slots), 0);
    base = 0;
  }
  void Enter(const unsigned char* p, size_t at) { slots[HashOf(Load32(p + at))] = base + static_cast<uint32_t>(at) + 1; }

  // Appends p[begin, n) as one fixed-code block (then an empty stored block unless `final`),
  // its matches reaching back to any position of p entered in this run (and before `begin`).
  void Encode(const unsigned char* p, size_t begin, size_t n, bool final, std::string* sink);
};

void FixedChain::Finder::Encode(const unsigned char* p, size_t begin, size_t n, bool final,
                                std::string* sink) {
  // At most 9 bits a byte, the block's header and end, an empty stored block.
  const size_t bound = (n - begin) + (n - begin) / 8 + 16;
  if (out_size < bound) {
    out_size = std::max(bound, size_t{64} << 10);
    out = std::make_unique_for_overwrite<char[]>(out_size);
  }
  BitWriter bits(out.get());
  bits.Put({final ? 3u : 2u, 3});  // BFINAL, BTYPE 01: fixed codes
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
      bits.Put(kTables.length[len]);
      bits.Put(DistanceCode(static_cast<uint32_t>(i - from)));
      i += len;
      continue;
    }
    bits.Put(kTables.literal[p[i]]);
    ++i;
  }
  for (; i < n; ++i) bits.Put(kTables.literal[p[i]]);
  bits.Put({0, 7});  // end of block (256)
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
  f.Encode(reinterpret_cast<const unsigned char*>(in.data()), 0, in.size(), final, out);
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
  finder_->Encode(p, begin, run_.size(), /*final=*/false, out);
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

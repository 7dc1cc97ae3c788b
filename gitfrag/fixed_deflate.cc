#include "gitfrag/fixed_deflate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

namespace shellac::gitfrag {

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

// A thread's match finder, kept from run to run so that a run clears nothing: a slot holds
// `base` + a position + 1 of the run that wrote it, and a run's base is past every earlier run's
// entries, so theirs read as empty.
struct Finder {
  uint32_t slots[1u << kHashBits] = {};
  uint32_t base = 0;
  std::unique_ptr<char[]> out;  // the bits, before they are appended (a grown string is zeroed)
  size_t out_size = 0;
};
thread_local Finder finder;

}  // namespace

void DeflateFixed(std::string_view in, bool final, std::string* out) {
  Finder& f = finder;
  const size_t n = in.size();
  // At most 9 bits a byte, the block's header and end, an empty stored block.
  const size_t bound = n + n / 8 + 16;
  if (f.out_size < bound) {
    f.out_size = std::max(bound, size_t{64} << 10);
    f.out = std::make_unique_for_overwrite<char[]>(f.out_size);
  }
  if (n >= UINT32_MAX - 1 - f.base) {  // positions would wrap: start the slots afresh
    std::fill(std::begin(f.slots), std::end(f.slots), 0);
    f.base = 0;
  }
  const uint32_t base = f.base;
  f.base = base + static_cast<uint32_t>(n) + 1;
  BitWriter bits(f.out.get());
  bits.Put({final ? 3u : 2u, 3});  // BFINAL, BTYPE 01: fixed codes
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  size_t i = 0;
  while (i + kMinLength <= n) {
    const uint32_t v = Load32(p + i);
    const uint32_t h = (v * 2654435761u) >> (32 - kHashBits);
    const uint32_t entry = f.slots[h];
    f.slots[h] = base + static_cast<uint32_t>(i) + 1;
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
  out->append(f.out.get(), static_cast<size_t>(end - f.out.get()));
}

}  // namespace shellac::gitfrag

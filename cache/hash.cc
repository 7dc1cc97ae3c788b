#include "cache/hash.h"

#include <random>

namespace shellac::cache {
namespace {

inline uint64_t Rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

inline uint64_t Load64(const char* p) {
  // Little-endian load regardless of host byte order, as the specification defines the input words.
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

struct State {
  uint64_t v0, v1, v2, v3;
  void Round() {
    v0 += v1;
    v1 = Rotl(v1, 13);
    v1 ^= v0;
    v0 = Rotl(v0, 32);
    v2 += v3;
    v3 = Rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = Rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = Rotl(v1, 17);
    v1 ^= v2;
    v2 = Rotl(v2, 32);
  }
};

}  // namespace

template <int C, int D>
uint64_t SipHash(const SipKey& key, std::string_view data) {
  State s{key.k0 ^ 0x736f6d6570736575ull, key.k1 ^ 0x646f72616e646f6dull,
          key.k0 ^ 0x6c7967656e657261ull, key.k1 ^ 0x7465646279746573ull};
  const char* p = data.data();
  size_t n = data.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t m = Load64(p);
    s.v3 ^= m;
    for (int i = 0; i < C; ++i) s.Round();
    s.v0 ^= m;
  }
  // Last word: the remaining bytes, and the length mod 256 in the top byte.
  uint64_t last = static_cast<uint64_t>(data.size() & 0xff) << 56;
  for (size_t i = 0; i < n; ++i)
    last |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  s.v3 ^= last;
  for (int i = 0; i < C; ++i) s.Round();
  s.v0 ^= last;
  s.v2 ^= 0xff;
  for (int i = 0; i < D; ++i) s.Round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

template uint64_t SipHash<1, 3>(const SipKey&, std::string_view);
template uint64_t SipHash<2, 4>(const SipKey&, std::string_view);

SipKey RandomSipKey() {
  std::random_device rd;
  auto word = [&rd] { return (static_cast<uint64_t>(rd()) << 32) ^ rd(); };
  return SipKey{word(), word()};
}

}  // namespace shellac::cache

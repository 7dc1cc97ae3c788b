// hash: keyed hashing of cache keys (internal to cache/).
//
// Keys come from request URLs, which anyone can choose. With an unkeyed hash a client could pick
// keys that all land in one shard and one probe run of the index (hash flooding). SipHash with a
// random key per Store makes that guesswork. SipHash-1-3 (1 compression, 3 finalization rounds) is
// the variant hash tables use (Rust's HashMap, Python): fast on short strings, keyed, well studied.
#pragma once

#include <cstdint>
#include <string_view>

namespace shellac::cache {

struct SipKey {
  uint64_t k0 = 0;
  uint64_t k1 = 0;
};

// SipHash with C compression and D finalization rounds (Aumasson, Bernstein 2012).
template <int C, int D>
uint64_t SipHash(const SipKey& key, std::string_view data);

inline uint64_t SipHash13(const SipKey& key, std::string_view data) {
  return SipHash<1, 3>(key, data);
}
inline uint64_t SipHash24(const SipKey& key, std::string_view data) {
  return SipHash<2, 4>(key, data);
}

// A key from the system's random source.
SipKey RandomSipKey();

// Mixes a 64-bit value (splitmix64's finalizer): derives independent-looking bits from one hash.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace shellac::cache

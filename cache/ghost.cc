#include "cache/ghost.h"

#include "cache/hash.h"

namespace shellac::cache {
namespace {

constexpr int kProbes = 4;

// Probe i of `hash` in a filter of `bit_count` bits (double hashing; Kirsch and Mitzenmacher).
template <typename F>
void ForEachProbe(uint64_t hash, size_t bit_count, F&& f) {
  uint64_t x = Mix64(hash);  // independent of the bits the index and shard choice use
  uint32_t h1 = static_cast<uint32_t>(x);
  uint32_t h2 = static_cast<uint32_t>(x >> 32) | 1;
  for (int i = 0; i < kProbes; ++i) {
    uint32_t h = h1 + static_cast<uint32_t>(i) * h2;
    f(static_cast<size_t>((static_cast<uint64_t>(h) * bit_count) >> 32));
  }
}

}  // namespace

size_t GhostFilter::BytesFor(size_t capacity) {
  if (capacity == 0) return 0;
  size_t words = (capacity * kBitsPerEntry + 63) / 64;
  return words * sizeof(uint64_t) + 16;
}

bool GhostFilter::Test(const std::vector<uint64_t>& bits, uint64_t hash) {
  if (bits.empty()) return false;
  bool all = true;
  ForEachProbe(hash, bits.size() * 64,
               [&](size_t bit) { all = all && (bits[bit / 64] >> (bit % 64)) & 1; });
  return all;
}

bool GhostFilter::Contains(uint64_t hash) const {
  return Test(current_, hash) || Test(older_, hash);
}

void GhostFilter::Add(uint64_t hash) {
  if (current_.empty()) return;
  ForEachProbe(hash, current_.size() * 64,
               [&](size_t bit) { current_[bit / 64] |= uint64_t{1} << (bit % 64); });
  ++added_;
}

void GhostFilter::Rotate(size_t capacity) {
  older_.swap(current_);
  // A new vector rather than assign(): its capacity is exactly what bytes() counts.
  current_ = std::vector<uint64_t>(capacity == 0 ? 0 : (capacity * kBitsPerEntry + 63) / 64, 0);
  capacity_ = capacity;
  added_ = 0;
}

}  // namespace shellac::cache

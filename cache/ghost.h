// ghost: S3-FIFO's ghost queue - which keys were evicted from the small queue recently (internal).
//
// S3-FIFO only needs "was this key evicted lately?", and a wrong "yes" merely admits one object
// straight to the main queue. So instead of a FIFO of hashes plus a set (12+ bytes per entry), two
// generations of Bloom filters: Add() goes to the current one; when it has taken `capacity` entries
// the older one is dropped and a fresh one starts. A key is remembered for between 1 and 2
// generations. 10 bits per entry and 4 probes: about 1% false positives per generation.
//
// Not thread-safe: the shard's mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shellac::cache {

class GhostFilter {
 public:
  static constexpr size_t kBitsPerEntry = 10;

  // Bytes a generation for `capacity` entries takes.
  static size_t BytesFor(size_t capacity);

  bool Contains(uint64_t hash) const;
  // True when the current generation is full (or none exists): time to Rotate().
  bool Full() const { return added_ >= capacity_; }
  // Adds to the current generation (a full one takes it, at a slowly rising false-positive rate).
  void Add(uint64_t hash);
  // Drops the older generation; the current one becomes older; a new one for `capacity` starts.
  void Rotate(size_t capacity);

  size_t bytes() const { return Size(current_) + Size(older_); }
  size_t older_bytes() const { return Size(older_); }

 private:
  static size_t Size(const std::vector<uint64_t>& bits) {
    return bits.empty() ? 0 : bits.size() * sizeof(uint64_t) + 16;
  }
  static bool Test(const std::vector<uint64_t>& bits, uint64_t hash);

  std::vector<uint64_t> current_;
  std::vector<uint64_t> older_;
  size_t capacity_ = 0;
  size_t added_ = 0;
};

}  // namespace shellac::cache

// index: a shard's map from key to object (internal to cache/).
//
// Open addressing with Robin Hood insertion and backward-shift deletion, 8 bytes per slot and a
// load factor kept between 0.72 and 0.9 (about 10 bytes per object). Each slot packs the object
// pointer with 20 bits of the key's hash into bits the pointer does not use: the low 4 (objects are
// 16-byte aligned) and the top 16 (user-space addresses on x86-64 and arm64 Linux fit in 48 bits;
// Storable() checks each object, so a platform where this fails refuses objects instead of
// corrupting). Those 20 bits give both the home slot and a filter for key comparisons, so probing,
// deleting and resizing never touch an object except to compare a key whose hash bits matched.
//
// Not thread-safe: the shard's mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace shellac::cache {

class Object;

class ObjectIndex {
 public:
  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  static bool Storable(const Object* object);

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  // Bytes held: the slot array (and its allocation header).
  size_t bytes() const { return slots_.empty() ? 0 : slots_.size() * sizeof(uint64_t) + 16; }
  // Bytes the index would hold after growing to take `n` objects (bytes() if it need not grow).
  size_t BytesFor(size_t n) const;

  // Slot holding `key`, or kNotFound. `hash` is the key's 64-bit hash.
  size_t Find(std::string_view key, uint64_t hash) const;
  // The object in `slot`, or null for an empty slot. Slots are 0..capacity()-1.
  const Object* At(size_t slot) const;
  // Adds an object whose key is absent; grows first if needed (Reserve).
  void Insert(const Object* object, uint64_t hash);
  // Removes and returns the object in `slot`. Later entries of its run shift back by one, so the
  // next entry to look at after an Erase(slot) is in `slot` again.
  const Object* Erase(size_t slot);
  // Grows so that `n` objects fit under the maximum load. Returns true when slots moved.
  bool Reserve(size_t n);
  // Shrinks after mass removal (Ban). Returns true when slots moved.
  bool ShrinkToFit();

 private:
  static uint32_t Fingerprint(uint64_t hash) { return static_cast<uint32_t>(hash & 0xfffff); }
  size_t Home(uint32_t fingerprint) const {
    return static_cast<size_t>((static_cast<uint64_t>(fingerprint) * slots_.size()) >> 20);
  }
  size_t Displacement(uint64_t slot_value, size_t position) const;
  void Place(uint64_t entry);
  void Rehash(size_t capacity);

  std::vector<uint64_t> slots_;  // 0 = empty
  size_t size_ = 0;
};

}  // namespace shellac::cache

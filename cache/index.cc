#include "cache/index.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "cache/object.h"

namespace shellac::cache {
namespace {

constexpr uint64_t kPointerMask = 0x0000'ffff'ffff'fff0ull;
constexpr double kMaxLoad = 0.9;      // Robin Hood keeps probe runs short up to here
constexpr double kResizeLoad = 0.72;  // load right after a resize
constexpr double kShrinkLoad = 0.3;

uint64_t Pack(const Object* object, uint32_t fingerprint) {
  return reinterpret_cast<uintptr_t>(object) | (static_cast<uint64_t>(fingerprint >> 4) << 48) |
         (fingerprint & 0xf);
}
const Object* Unpack(uint64_t slot) {
  return reinterpret_cast<const Object*>(slot & kPointerMask);
}
uint32_t FingerprintOf(uint64_t slot) {
  return static_cast<uint32_t>(((slot >> 48) << 4) | (slot & 0xf));
}

size_t CapacityFor(size_t n) {
  if (n == 0) return 0;
  return std::max<size_t>(8, static_cast<size_t>(std::ceil(static_cast<double>(n) / kResizeLoad)));
}

}  // namespace

bool ObjectIndex::Storable(const Object* object) {
  return object != nullptr && (reinterpret_cast<uintptr_t>(object) & ~kPointerMask) == 0;
}

size_t ObjectIndex::BytesFor(size_t n) const {
  if (static_cast<double>(n) <= kMaxLoad * static_cast<double>(slots_.size())) return bytes();
  return CapacityFor(n) * sizeof(uint64_t) + 16;
}

size_t ObjectIndex::Displacement(uint64_t slot_value, size_t position) const {
  size_t home = Home(FingerprintOf(slot_value));
  return position >= home ? position - home : position + slots_.size() - home;
}

size_t ObjectIndex::Find(std::string_view key, uint64_t hash) const {
  if (size_ == 0) return kNotFound;
  const uint32_t fingerprint = Fingerprint(hash);
  const size_t capacity = slots_.size();
  size_t position = Home(fingerprint);
  for (size_t distance = 0;; ++distance) {
    uint64_t slot = slots_[position];
    // Robin Hood invariant: entries of a run are ordered by home, so once an entry sits closer to
    // its home than we are to ours, the key is absent.
    if (slot == 0 || Displacement(slot, position) < distance) return kNotFound;
    if (FingerprintOf(slot) == fingerprint && Unpack(slot)->key() == key) return position;
    if (++position == capacity) position = 0;
  }
}

const Object* ObjectIndex::At(size_t slot) const {
  return Unpack(slots_[slot]);
}

void ObjectIndex::Place(uint64_t entry) {
  const size_t capacity = slots_.size();
  size_t position = Home(FingerprintOf(entry));
  for (size_t distance = 0;; ++distance) {
    uint64_t& slot = slots_[position];
    if (slot == 0) {
      slot = entry;
      return;
    }
    size_t resident = Displacement(slot, position);
    if (resident < distance) {  // take from the rich: the resident is nearer its home than we are
      std::swap(slot, entry);
      distance = resident;
    }
    if (++position == capacity) position = 0;
  }
}

void ObjectIndex::Insert(const Object* object, uint64_t hash) {
  Reserve(size_ + 1);
  Place(Pack(object, Fingerprint(hash)));
  ++size_;
}

const Object* ObjectIndex::Erase(size_t position) {
  const Object* object = Unpack(slots_[position]);
  const size_t capacity = slots_.size();
  for (;;) {
    size_t next = position + 1 == capacity ? 0 : position + 1;
    uint64_t slot = slots_[next];
    if (slot == 0 || Displacement(slot, next) == 0) break;
    slots_[position] = slot;
    position = next;
  }
  slots_[position] = 0;
  --size_;
  return object;
}

bool ObjectIndex::Reserve(size_t n) {
  if (static_cast<double>(n) <= kMaxLoad * static_cast<double>(slots_.size())) return false;
  Rehash(CapacityFor(n));
  return true;
}

bool ObjectIndex::ShrinkToFit() {
  if (static_cast<double>(size_) >= kShrinkLoad * static_cast<double>(slots_.size())) return false;
  Rehash(CapacityFor(size_));
  return true;
}

void ObjectIndex::Rehash(size_t capacity) {
  std::vector<uint64_t> old(capacity, 0);
  old.swap(slots_);
  // Fingerprints are in the slots: no object is touched and no key is hashed again.
  for (uint64_t entry : old) {
    if (entry != 0) Place(entry);
  }
}

}  // namespace shellac::cache

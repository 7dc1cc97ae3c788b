// object_access: what the store may do to an Object that nobody else may (internal to cache/).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "cache/object.h"

namespace shellac::cache::internal {

struct ObjectAccess {
  // The store's bookkeeping bits inside each object. Written only under the owning shard's mutex
  // (relaxed atomics, so a racing second Insert of one object cannot tear them).
  enum Bits : uint8_t {
    kFrequency = 0x03,  // S3-FIFO access count, 0..3
    kInMain = 0x04,     // in the main queue (else the small queue)
    kDead = 0x08,       // removed from the index, still in the small queue (freed when popped)
    kClaimed = 0x10,    // handed to a store; an object is stored at most once
  };
  static std::atomic<uint8_t>& bits(const Object* object) { return object->store_bits_; }

  // A new reference to an object the caller keeps alive (the store, under its lock).
  static ObjectRef NewRef(const Object* object) {
    object->refs_.fetch_add(1, std::memory_order_relaxed);
    return ObjectRef(object);
  }
  // Drops the reference the store's raw pointer stands for; frees the object if it was the last.
  static void Unref(const Object* object) { ObjectRef dropped(object); }
  // Keeps the reference without the wrapper: the store holds it as a raw pointer.
  static const Object* Release(ObjectRef&& ref) { return std::exchange(ref.object_, nullptr); }
};

}  // namespace shellac::cache::internal

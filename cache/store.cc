#include "cache/store.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cache/ghost.h"
#include "cache/hash.h"
#include "cache/index.h"
#include "cache/object_access.h"

namespace shellac::cache {
namespace {

using internal::ObjectAccess;

constexpr size_t kMinShardBudget = 1 << 20;
constexpr size_t kMaxShards = 256;
constexpr size_t kMaxObjectShare = 8;  // a hashed shard takes objects up to 1/8 of its slice
constexpr size_t kLargeShare = 4;      // the large-object shard: 1/4 of the budget
constexpr size_t kMaxLargeShare = 2;   // a large object may take half of the large shard
constexpr size_t kSmallShare = 10;     // S3-FIFO's small queue: 1/10 of the bytes
constexpr size_t kMinGhostEntries = 256;
constexpr uint8_t kMaxFrequency = 3;

// S3-FIFO's small queue: a ring of object pointers, oldest first. Capacity is a power of two; it
// doubles when full and halves when three quarters empty, so it costs about 8-16 bytes per object
// in S, i.e. ~1-2 bytes per stored object.
class ObjectRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t bytes() const { return slots_.empty() ? 0 : slots_.size() * sizeof(const Object*) + 16; }
  size_t BytesAfterPush() const {
    if (size_ < slots_.size()) return bytes();
    return std::max<size_t>(kMinCapacity, slots_.size() * 2) * sizeof(const Object*) + 16;
  }

  void Push(const Object* object) {
    if (size_ == slots_.size()) Resize(std::max<size_t>(kMinCapacity, slots_.size() * 2));
    slots_[(head_ + size_) & (slots_.size() - 1)] = object;
    ++size_;
  }

  const Object* Pop() {
    const Object* object = slots_[head_];
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
    if (size_ < slots_.size() / 4 && slots_.size() > kMinCapacity) Resize(slots_.size() / 2);
    return object;
  }

  // Drops (in order) every object for which `drop` returns true; `drop` disposes of it.
  template <typename F>
  void RemoveIf(F&& drop) {
    size_t kept = 0;
    for (size_t i = 0; i < size_; ++i) {
      const Object* object = slots_[(head_ + i) & (slots_.size() - 1)];
      if (!drop(object)) slots_[(head_ + kept++) & (slots_.size() - 1)] = object;
    }
    size_ = kept;
    size_t capacity = slots_.size();
    while (capacity > kMinCapacity && size_ < capacity / 4) capacity /= 2;
    if (capacity != slots_.size()) Resize(capacity);
  }

 private:
  static constexpr size_t kMinCapacity = 16;

  void Resize(size_t capacity) {
    std::vector<const Object*> slots(capacity);
    for (size_t i = 0; i < size_; ++i) slots[i] = slots_[(head_ + i) & (slots_.size() - 1)];
    slots_.swap(slots);
    head_ = 0;
  }

  std::vector<const Object*> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

uint8_t Bits(const Object* object) {
  return ObjectAccess::bits(object).load(std::memory_order_relaxed);
}
void SetBits(const Object* object, uint8_t bits) {
  ObjectAccess::bits(object).store(bits, std::memory_order_relaxed);
}

}  // namespace

// One slice of the store. Every member is guarded by `mu`.
struct alignas(64) Store::Shard {
  std::mutex mu;
  const SipKey* sip_key = nullptr;
  size_t budget = 0;
  size_t small_target = 0;  // S3-FIFO: S may hold this many bytes before it must shrink first
  size_t fixed_bytes = 0;   // the shard itself (and, for shard 0, the Store)

  ObjectIndex index;  // every findable object; also M's clock circle
  ObjectRing small;   // S, oldest first; may hold dead (purged) objects until popped
  GhostFilter ghost;  // G
  size_t hand = 0;    // M's clock hand: a slot of `index`
  size_t main_count = 0;

  size_t object_bytes = 0;  // charges of the objects held (S, M and dead ones still in S)
  size_t small_bytes = 0;   // part of object_bytes in S
  uint64_t key_bytes = 0;
  uint64_t header_bytes = 0;
  uint64_t body_bytes = 0;

  uint64_t hits = 0, stale_hits = 0, misses = 0, expired = 0, inserts = 0, replaced = 0,
           refused = 0, evictions = 0, purged = 0, banned = 0;

  size_t Charged() const {
    return fixed_bytes + object_bytes + index.bytes() + small.bytes() + ghost.bytes();
  }

  uint64_t Hash(std::string_view key) const { return SipHash13(*sip_key, key); }

  void Charge(const Object* object) {
    size_t charge = object->charge();
    object_bytes += charge;
    if (!(Bits(object) & ObjectAccess::kInMain)) small_bytes += charge;
    key_bytes += object->key().size();
    header_bytes += object->header_bytes();
    body_bytes += object->deflate_bytes();
  }

  // Drops the store's reference; the object is freed now unless a request still holds it.
  void Free(const Object* object) {
    size_t charge = object->charge();
    object_bytes -= charge;
    if (!(Bits(object) & ObjectAccess::kInMain)) small_bytes -= charge;
    key_bytes -= object->key().size();
    header_bytes -= object->header_bytes();
    body_bytes -= object->deflate_bytes();
    ObjectAccess::Unref(object);
  }

  // Takes the object in `slot` out of the index. An object in M is freed now. One in S is marked
  // dead and freed when S's queue reaches it, unless `now`: finding it in S's ring costs a scan of
  // S, fine for an admin purge, not for the request path.
  void Remove(size_t slot, bool now = false) {
    const Object* object = index.Erase(slot);
    uint8_t bits = Bits(object);
    if (bits & ObjectAccess::kInMain) {
      --main_count;
      Free(object);
    } else if (now) {
      small.RemoveIf([&](const Object* queued) {
        if (queued != object) return false;
        Free(queued);
        return true;
      });
    } else {
      SetBits(object, bits | ObjectAccess::kDead);
    }
  }

  // G's next generation: sized for half the objects held, so G remembers 0.5-1x as many keys as
  // there are objects. Insert() charges and starts it, evicting for it like for any other growth.
  size_t GhostWant() const { return std::max(kMinGhostEntries, index.size() / 2); }
  size_t GhostGrowth() const {
    if (!ghost.Full()) return 0;
    size_t next = GhostFilter::BytesFor(GhostWant());
    return next > ghost.older_bytes() ? next - ghost.older_bytes() : 0;
  }

  // A lookup that found `slot`: counts it, bumps its frequency, removes it when expired.
  LookupResult Found(size_t slot, std::chrono::sys_seconds now) {
    const Object* object = index.At(slot);
    Freshness freshness = object->FreshnessAt(now);
    if (freshness == Freshness::kExpired) {
      Remove(slot);
      ++expired;
      ++misses;
      return {};
    }
    uint8_t bits = Bits(object);
    if ((bits & ObjectAccess::kFrequency) < kMaxFrequency)
      SetBits(object, static_cast<uint8_t>(bits + 1));
    LookupResult result;
    if (freshness == Freshness::kFresh) {
      ++hits;
      result.state = LookupState::kFresh;
    } else {
      ++stale_hits;
      result.state = LookupState::kStale;
    }
    result.object = ObjectAccess::NewRef(object);
    return result;
  }

  // Evicts one object (S3-FIFO). Returns false when nothing is left to evict.
  bool EvictOne() {
    while (!small.empty() && (small_bytes >= small_target || main_count == 0)) {
      const Object* object = small.Pop();
      uint8_t bits = Bits(object);
      if (bits & ObjectAccess::kDead) {  // purged earlier: only the memory is left to release
        Free(object);
        return true;
      }
      if (bits & ObjectAccess::kFrequency) {  // looked up while in S: promote to M
        small_bytes -= object->charge();
        SetBits(object, bits | ObjectAccess::kInMain);
        ++main_count;
        continue;
      }
      uint64_t hash = Hash(object->key());
      index.Erase(index.Find(object->key(), hash));
      ghost.Add(hash);  // when the generation is full, it overfills slightly until Insert() rotates
      Free(object);
      ++evictions;
      return true;
    }
    if (main_count == 0) return false;
    // M's clock. Terminates: every object in M is passed at most kMaxFrequency times before it is
    // evicted, and M is not empty.
    for (;;) {
      if (hand >= index.capacity()) hand = 0;
      const Object* object = index.At(hand);
      if (object != nullptr) {
        uint8_t bits = Bits(object);
        if (bits & ObjectAccess::kInMain) {
          if (bits & ObjectAccess::kFrequency) {
            SetBits(object, static_cast<uint8_t>(bits - 1));
          } else {
            index.Erase(hand);  // the next entry may shift into `hand`: look at it next
            --main_count;
            Free(object);
            ++evictions;
            return true;
          }
        }
      }
      ++hand;
    }
  }
};

uint64_t Store::Hash(std::string_view key) const { return SipHash13(*sip_key_, key); }

Store::Store(StoreOptions options) : sip_key_(std::make_unique<const SipKey>(RandomSipKey())), budget_(options.budget) {
  shard_count_ = std::clamp<size_t>(options.shards, 1, kMaxShards);
  while (shard_count_ > 1 && budget_ / shard_count_ < kMinShardBudget) shard_count_ /= 2;
  shards_ = std::make_unique<Shard[]>(shard_count_ + 1);
  Shard& large = LargeShard();
  large.sip_key = sip_key_.get();
  large.fixed_bytes = sizeof(Shard);
  large.budget = budget_ / kLargeShare;
  large.small_target = large.budget / kSmallShare;
  hashed_budget_ = (budget_ - large.fixed_bytes) / shard_count_;
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& shard = shards_[i];
    shard.sip_key = sip_key_.get();
    shard.budget = hashed_budget_;
    shard.small_target = shard.budget / kSmallShare;
    shard.fixed_bytes = sizeof(Shard);
  }
  shards_[0].fixed_bytes += sizeof(Store);
}

void Store::LargeChanged() {
  Shard& large = LargeShard();
  large_objects_.store(large.index.size(), std::memory_order_relaxed);
  const size_t held = large.Charged() - large.fixed_bytes;
  const size_t share = (held + shard_count_ - 1) / shard_count_;
  if (share == lent_share_) return;
  lent_share_ = share;
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mu);
    shard.budget = hashed_budget_ - share;
    while (shard.Charged() > shard.budget && shard.EvictOne()) {
    }
  }
}

Store::~Store() {
  for (size_t i = 0; i <= shard_count_; ++i) {
    Shard& shard = shards_[i];
    // Objects in M are referenced by the index alone, objects in S by the ring (and, unless dead,
    // the index too). Release each once: M first, while S's objects can still be told apart.
    for (size_t slot = 0; slot < shard.index.capacity(); ++slot) {
      const Object* object = shard.index.At(slot);
      if (object != nullptr && (Bits(object) & ObjectAccess::kInMain)) ObjectAccess::Unref(object);
    }
    while (!shard.small.empty()) ObjectAccess::Unref(shard.small.Pop());
  }
}

Store::Shard& Store::ShardFor(uint64_t hash) const {
  // The top 32 bits pick the shard; the index uses the low 20 and the ghost a remix.
  return shards_[((hash >> 32) * shard_count_) >> 32];
}

Store::Shard& Store::LargeShard() const { return shards_[shard_count_]; }

size_t Store::max_object_bytes() const {
  return budget_ / kLargeShare / kMaxLargeShare;
}

size_t Store::max_hashed_object_bytes() const {
  return hashed_budget_ / kMaxObjectShare;
}

LookupResult Store::Lookup(std::string_view key, std::chrono::sys_seconds now) {
  const uint64_t hash = Hash(key);
  Shard& shard = ShardFor(hash);
  {
    std::lock_guard lock(shard.mu);
    size_t slot = shard.index.Find(key, hash);
    if (slot != ObjectIndex::kNotFound) return shard.Found(slot, now);
    // Large objects live apart (see store.h): look there too while it holds any.
    if (large_objects_.load(std::memory_order_relaxed) == 0) {
      ++shard.misses;
      return {};
    }
  }
  Shard& large = LargeShard();
  std::lock_guard lock(large.mu);
  size_t slot = large.index.Find(key, hash);
  LookupResult result;
  if (slot == ObjectIndex::kNotFound) {
    ++large.misses;
  } else {
    result = large.Found(slot, now);
    if (!result.object) LargeChanged();  // it expired
  }
  return result;
}

bool Store::HasFresh(std::string_view key, std::chrono::sys_seconds now) const {
  const uint64_t hash = Hash(key);
  Shard& shard = ShardFor(hash);
  std::lock_guard lock(shard.mu);
  const size_t slot = shard.index.Find(key, hash);
  return slot != ObjectIndex::kNotFound &&
         shard.index.At(slot)->FreshnessAt(now) == Freshness::kFresh;
}

Status Store::Insert(ObjectRef ref) {
  if (!ref) return Status::Error("cannot store a null object");
  const Object* object = ref.get();
  if (!ObjectIndex::Storable(object)) {
    return Status::Error("object address does not fit the index's 48-bit pointer form");
  }
  const uint64_t hash = Hash(object->key());
  const size_t charge = object->charge();
  const bool large = charge > max_hashed_object_bytes();
  Shard& shard = large ? LargeShard() : ShardFor(hash);
  // The key may be held by the other shard (a smaller or larger version): drop that one first.
  if (large || large_objects_.load(std::memory_order_relaxed) != 0) {
    Shard& other = large ? ShardFor(hash) : LargeShard();
    std::lock_guard lock(other.mu);
    if (size_t slot = other.index.Find(object->key(), hash); slot != ObjectIndex::kNotFound) {
      other.Remove(slot);
      ++other.replaced;
      if (!large) LargeChanged();
    }
  }
  std::lock_guard lock(shard.mu);
  if (charge > max_object_bytes()) {
    ++shard.refused;
    return Status::Error("object of " + std::to_string(charge) + " bytes exceeds the limit of " +
                         std::to_string(max_object_bytes()) + " (cache-size / 8)");
  }
  if (ObjectAccess::bits(object).fetch_or(ObjectAccess::kClaimed, std::memory_order_relaxed) &
      ObjectAccess::kClaimed) {
    ++shard.refused;
    return Status::Error("object was inserted before");
  }
  if (size_t slot = shard.index.Find(object->key(), hash); slot != ObjectIndex::kNotFound) {
    shard.Remove(slot);
    ++shard.replaced;
  }
  const bool recalled = shard.ghost.Contains(hash);  // evicted from S lately and wanted again
  // Make room for the object and for whatever it makes grow: index slots, S's ring, G's next
  // generation. Evictions change all three, so the sum is recomputed after each.
  for (;;) {
    size_t growth = shard.index.BytesFor(shard.index.size() + 1) - shard.index.bytes();
    if (!recalled) growth += shard.small.BytesAfterPush() - shard.small.bytes();
    growth += shard.GhostGrowth();
    if (shard.Charged() + charge + growth <= shard.budget) break;
    if (!shard.EvictOne()) {
      ++shard.refused;
      return Status::Error("cannot make room for the object");
    }
  }
  if (shard.ghost.Full()) shard.ghost.Rotate(shard.GhostWant());
  if (shard.index.Reserve(shard.index.size() + 1)) shard.hand = 0;  // slots moved
  shard.index.Insert(object, hash);
  if (recalled) {
    // Straight to M, with one frequency credit: wherever it lands on the clock, it gets a turn.
    SetBits(object, ObjectAccess::kClaimed | ObjectAccess::kInMain | 1);
    ++shard.main_count;
  } else {
    SetBits(object, ObjectAccess::kClaimed);
    shard.small.Push(object);
  }
  shard.Charge(object);
  ++shard.inserts;
  // While a tenth of the budget is still free, nothing needs filtering yet: S's overflow moves to M
  // as it is (frequency kept). S, and its ring, stay near a tenth of the store while it fills.
  while (shard.small_bytes > shard.small_target &&
         shard.Charged() < shard.budget - shard.budget / 10) {
    const Object* oldest = shard.small.Pop();
    uint8_t bits = Bits(oldest);
    if (bits & ObjectAccess::kDead) {
      shard.Free(oldest);
    } else {
      shard.small_bytes -= oldest->charge();
      SetBits(oldest, bits | ObjectAccess::kInMain);
      ++shard.main_count;
    }
  }
  if (large) LargeChanged();
  ObjectAccess::Release(std::move(ref));  // the store's reference, held as the raw pointer
  return Status::Ok();
}

bool Store::Purge(std::string_view key) {
  const uint64_t hash = Hash(key);
  bool removed = false;
  for (Shard* shard : {&ShardFor(hash), &LargeShard()}) {
    std::lock_guard lock(shard->mu);
    size_t slot = shard->index.Find(key, hash);
    if (slot == ObjectIndex::kNotFound) continue;
    shard->Remove(slot, /*now=*/true);
    ++shard->purged;
    removed = true;
    if (shard == &LargeShard()) LargeChanged();
  }
  return removed;
}

size_t Store::Ban(std::string_view prefix) {
  size_t removed = 0;
  for (size_t i = 0; i <= shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mu);
    for (size_t slot = 0; slot < shard.index.capacity();) {
      const Object* object = shard.index.At(slot);
      if (object != nullptr && object->key().starts_with(prefix)) {
        shard.Remove(slot);  // a later entry may shift into `slot`: look at it again
        ++shard.banned;
        ++removed;
      } else {
        ++slot;
      }
    }
    // Release the banned objects still queued in S now rather than when S reaches them.
    shard.small.RemoveIf([&shard](const Object* object) {
      if (!(Bits(object) & ObjectAccess::kDead)) return false;
      shard.Free(object);
      return true;
    });
    if (shard.index.ShrinkToFit()) shard.hand = 0;
    if (i == shard_count_) LargeChanged();
  }
  return removed;
}

std::vector<ObjectRef> Store::Objects() const {
  std::vector<ObjectRef> objects;
  for (size_t i = 0; i <= shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mu);
    objects.reserve(objects.size() + shard.index.size());
    for (size_t slot = 0; slot < shard.index.capacity(); ++slot) {
      if (const Object* object = shard.index.At(slot)) objects.push_back(ObjectAccess::NewRef(object));
    }
  }
  return objects;
}

StoreStats Store::Stats() const {
  StoreStats stats;
  stats.budget = budget_;
  for (size_t i = 0; i <= shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mu);
    stats.bytes += shard.Charged();
    stats.objects += shard.index.size();
    stats.key_bytes += shard.key_bytes;
    stats.header_bytes += shard.header_bytes;
    stats.body_bytes += shard.body_bytes;
    stats.object_bytes += shard.object_bytes;
    stats.index_bytes += shard.index.bytes();
    stats.queue_bytes += shard.small.bytes();
    stats.ghost_bytes += shard.ghost.bytes();
    stats.hits += shard.hits;
    stats.stale_hits += shard.stale_hits;
    stats.misses += shard.misses;
    stats.expired += shard.expired;
    stats.inserts += shard.inserts;
    stats.replaced += shard.replaced;
    stats.refused += shard.refused;
    stats.evictions += shard.evictions;
    stats.purged += shard.purged;
    stats.banned += shard.banned;
  }
  return stats;
}

}  // namespace shellac::cache

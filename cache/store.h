// store: the in-memory object store - key -> immutable Object, under a hard memory budget.
//
// Sharding. Keys are hashed (SipHash, random key per Store) to one of N shards; each shard has its
// own mutex, index, queues and a 1/N slice of the budget. Every worker thread looks up and inserts
// concurrently; two requests contend only when their keys share a shard, and nothing takes a global
// lock. (A per-shard budget makes the bound exact without cross-shard coordination; with uniform
// hashing the slices fill evenly.)
//
// Large objects. An object above 1/8 of a slice (1 MiB of the default 256 MiB) goes to the large
// shard instead, one more shard that is not picked by hash. It may hold up to a quarter of the
// budget, evicting among large objects by the same S3-FIFO rules, and one object may take half of
// that: max_object_bytes() (32 MiB of 256 MiB); bigger responses are for the proxy to pass through.
// What the large shard holds it borrows from the hashed shards, an equal share from each (each
// evicts to fit its lowered slice), and gives back as large objects leave; so the budget still
// bounds everything, and without large objects the hashed shards have all of it. A lookup that
// misses its own shard looks in the large shard too, while that holds anything. Lock order: the
// large shard, then a hashed one.
//
// Budget. Everything the store holds is charged: each object's heap chunk as the allocator sizes it
// (key, headers, segment table, deflate bytes, fixed part), ESI templates, index slot arrays,
// queues, ghost filters, the shards themselves. Insert() evicts until the new object and any growth
// of the structures fit, so Stats().bytes <= budget after every call. An evicted object stays alive
// while a request still holds an ObjectRef to it; that memory is the request's, not the store's.
//
// Eviction: S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023).
// - A new object enters the small queue S (~10% of the bytes), unless its key is in the ghost G.
// - Lookups only bump a 2-bit frequency; nothing moves on a hit (cheap under a mutex).
// - When S has to shrink, its oldest object moves to the main queue M if it was looked up since it
//   came in; otherwise it is evicted and its key hash goes to G. A key found in G on insert
//   (evicted from S recently, wanted again) goes straight to M.
// - M is a CLOCK: the hand passes objects, taking one off a non-zero frequency each time, and
//   evicts the first with zero. (FIFO with reinsertion, as in the paper, is CLOCK; here the clock's
//   circle is the index's slot array, which saves a queue link per object. Objects reach M with
//   frequency >= 1, so each gets at least one full turn of the hand wherever it lands.)
// - While a tenth of the budget is still free, S's overflow moves to M unfiltered (nothing needs
//   filtering before memory runs short; it keeps S's ring small). Such objects reach M with
//   frequency 0, so once memory is short they are the first the hand evicts.
// Why a crawler's one-pass scan cannot flush the hot set: scanned keys are each seen once. They
// enter S, are never looked up again, and leave S for G without ever reaching M; and since G only
// holds keys already evicted once, a one-pass scan does not hit it (bar G's ~2% false positives,
// which enter M with frequency 1 and are what the hand evicts first). While S churns through the
// scan, M - where every object that was looked up again lives - is not touched. LRU, by contrast,
// would move every scanned key to the front and push the hot set out after one budget of scan.
//
// Removal. Purge() and Ban() take objects out of the index and drop the store's reference at once.
// Lookups past ttl + grace and replacing inserts remove the old object from the index at once too;
// if it is in S, its memory is released when S's queue reaches it (soon: S is the short queue).
//
// Thread safety: all methods may be called from any thread. ObjectRefs handed out stay valid after
// the object is evicted, purged or replaced.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cache/object.h"
#include "cache/status.h"

namespace shellac::cache {

struct SipKey;  // cache/hash.h, internal

struct StoreOptions {
  size_t budget = 256 << 20;  // bytes; cache-size
  // Hashed shard count; halved until each shard's slice (of 3/4 of the budget: the large-object
  // shard has the rest) is at least 1 MiB, capped at 256.
  size_t shards = 32;
};

struct StoreStats {
  uint64_t budget = 0;
  uint64_t bytes = 0;       // everything charged; <= budget
  uint64_t objects = 0;     // objects in the index (findable)
  uint64_t key_bytes = 0;   // keys of the objects held
  uint64_t header_bytes = 0;  // kept headers of the objects held, as encoded
  uint64_t body_bytes = 0;  // deflate bytes of the objects held
  // Where `bytes` goes: objects (heap chunks and ESI templates), index slots, the small queue's
  // ring, ghost filters; the rest is the shards themselves.
  uint64_t object_bytes = 0;
  uint64_t index_bytes = 0;
  uint64_t queue_bytes = 0;
  uint64_t ghost_bytes = 0;
  uint64_t hits = 0;        // fresh
  uint64_t stale_hits = 0;  // in grace
  uint64_t misses = 0;      // includes expired
  uint64_t expired = 0;     // found past ttl + grace, removed
  uint64_t inserts = 0;
  uint64_t replaced = 0;  // inserts that replaced an object with the same key
  uint64_t refused = 0;   // inserts refused (too large, already stored)
  uint64_t evictions = 0;
  uint64_t purged = 0;
  uint64_t banned = 0;
};

enum class LookupState {
  kMiss,   // absent or past grace
  kFresh,  // within ttl: serve
  kStale,  // past ttl, within grace: serve while one refresh runs, or when the upstream fails
};

struct LookupResult {
  LookupState state = LookupState::kMiss;
  ObjectRef object;  // null on a miss
};

class Store {
 public:
  explicit Store(StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  LookupResult Lookup(std::string_view key, std::chrono::sys_seconds now);
  // Whether a fresh object is stored under `key`, without counting a hit or a miss and without
  // marking it used (eviction order unchanged): for pre-rendering, which asks about every commit.
  bool HasFresh(std::string_view key, std::chrono::sys_seconds now) const;

  // Stores `object` under its key, replacing any object with that key. Fails (and stores nothing)
  // when the object exceeds max_object_bytes() or was inserted before. (Two concurrent inserts of
  // one key, one large and one not, may both stay; lookups then find the smaller.)
  Status Insert(ObjectRef object);

  // Removes the object with `key`. Returns whether there was one.
  bool Purge(std::string_view key);
  // Removes every object whose key starts with `prefix` (e.g. "diff/SHA/": every variant of one
  // commit's diff). Walks every shard: an admin operation. Returns how many were removed.
  size_t Ban(std::string_view prefix);

  // A reference to every findable object (for a snapshot). Each shard is locked in turn, so
  // objects inserted meanwhile may or may not be among them. Counts no lookup.
  std::vector<ObjectRef> Objects() const;

  // Sums every shard's counters (locks each shard in turn).
  StoreStats Stats() const;

  size_t budget() const { return budget_; }
  size_t shard_count() const { return shard_count_; }  // hashed shards (the large one apart)
  size_t max_object_bytes() const;         // the largest object Insert() takes
  size_t max_hashed_object_bytes() const;  // larger ones go to the large shard

 private:
  struct Shard;

  uint64_t Hash(std::string_view key) const;
  Shard& ShardFor(uint64_t hash) const;
  Shard& LargeShard() const;
  // With the large shard's lock held: lends the hashed shards' budget to what it now holds.
  void LargeChanged();

  const std::unique_ptr<const SipKey> sip_key_;  // shared by the shards
  size_t budget_;
  size_t shard_count_;
  size_t hashed_budget_ = 0;  // a hashed shard's slice while nothing is lent to the large shard
  size_t lent_share_ = 0;     // lent by each hashed shard; guarded by the large shard's lock
  std::unique_ptr<Shard[]> shards_;  // shard_count_ hashed ones, then the large one
  std::atomic<size_t> large_objects_{0};  // the large shard's object count, read without its lock
};

}  // namespace shellac::cache

#include "gitfrag/snapshot_cache.h"

#include <algorithm>
#include <map>
#include <vector>

namespace shellac::gitfrag {

// One archive: kept, or being made. Lock order: an entry's mutex, then the cache's (and never an
// entry's while the cache's is held).
struct SnapshotCache::Entry {
  std::string key;
  uint64_t max_stored = 0;
  std::mutex mu;
  // Under mu:
  std::unique_ptr<BodyStream> source;  // makes the pieces; null once done or failed
  // Made so far (released ones null, when too large); a reader's connection may still hold one.
  std::vector<BodyStream::SharedPiece> pieces;
  uint64_t bytes = 0;                  // their length
  uint64_t held = 0;                   // the memory they hold
  bool done = false, failed = false;
  bool too_large = false;  // passed max_stored: never kept, pieces released as readers pass them
  bool unshared = false;   // its source is not Shareable(): as too_large from the start
  std::string error;
  std::map<uint64_t, size_t> readers;  // reader -> pieces it has read
  uint64_t next_reader = 0;
  size_t released = 0;  // pieces [0, released) are released

  // Under mu: releases the pieces every reader has passed (a too-large archive).
  void ReleasePassed() {
    size_t least = pieces.size();
    for (const auto& [id, read] : readers) least = std::min(least, read);
    for (; released < least; ++released) {
      held -= pieces[released]->capacity();
      pieces[released].reset();
    }
  }
};

class SnapshotReader : public BodyStream {
 public:
  // With entry->mu held.
  SnapshotReader(SnapshotCache* cache, std::shared_ptr<SnapshotCache::Entry> entry)
      : cache_(cache), entry_(std::move(entry)), id_(entry_->next_reader++) {
    entry_->readers.emplace(id_, 0);
  }

  ~SnapshotReader() override {
    bool abandoned = false;
    {
      const std::lock_guard<std::mutex> lock(entry_->mu);
      entry_->readers.erase(id_);
      if (entry_->too_large) entry_->ReleasePassed();
      // Nobody reads an archive that is not done: nobody makes it either.
      abandoned = entry_->readers.empty() && !entry_->done && !entry_->failed;
    }
    if (abandoned) cache_->Detach(entry_);
  }

  std::optional<uint64_t> Length() const override {
    const std::lock_guard<std::mutex> lock(entry_->mu);
    if (entry_->done && !entry_->failed) return entry_->bytes;
    return std::nullopt;
  }

  Result Next(std::string* out, std::string* error) override {
    SharedPiece piece;
    const Result result = NextShared(&piece, error);
    if (piece) out->append(*piece);
    return result;
  }

  // The piece itself, shared with the entry and the other readers: no copy, and N readers of an
  // archive hold its pieces once (a copy of each piece for each reader was ~2 % of a cold git/git
  // archive's time under perf, too little to see in its CPU time or instructions:
  // bench/results/snapshare-callgrind.md).
  Result NextShared(SharedPiece* out, std::string* error) override {
    bool finished = false, detach = false;
    Result result = Result::kMore;
    {
      SnapshotCache::Entry& e = *entry_;
      const std::lock_guard<std::mutex> lock(e.mu);
      size_t& read = e.readers[id_];
      // This reader is ahead of every other: it makes the next piece.
      while (read >= e.pieces.size() && !e.done && !e.failed) {
        auto piece = std::make_shared<std::string>();
        std::string why;
        const Result made = e.source->Next(piece.get(), &why);
        e.bytes += piece->size();
        e.held += piece->capacity();
        e.pieces.push_back(std::move(piece));
        if (made != Result::kMore) {
          (made == Result::kDone ? e.done : e.failed) = true;
          e.error = std::move(why);
          e.source.reset();
          finished = true;
        }
        if (!e.too_large && e.bytes > e.max_stored) e.too_large = detach = true;
      }
      if (read < e.pieces.size()) {
        *out = e.pieces[read++];
        if (e.too_large) e.ReleasePassed();
      } else {
        out->reset();
      }
      if (read == e.pieces.size() && e.done) {
        result = Result::kDone;
      } else if (read == e.pieces.size() && e.failed) {
        *error = e.error;
        result = Result::kFailed;
      }
    }
    if (detach) cache_->Detach(entry_);
    if (finished) cache_->Finished(entry_);
    return result;
  }

 private:
  SnapshotCache* const cache_;
  const std::shared_ptr<SnapshotCache::Entry> entry_;
  const uint64_t id_;
};

std::unique_ptr<BodyStream> SnapshotCache::Open(const std::string& key, const Make& make,
                                                std::string* error) {
  std::shared_ptr<Entry> entry;
  bool maker = false;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (const auto kept = kept_.find(key); kept != kept_.end()) {
      lru_.splice(lru_.begin(), lru_, kept->second);
      entry = *kept->second;
      ++counts_.hits;
    } else if (const auto making = making_.find(key); making != making_.end()) {
      entry = making->second;
    } else if (budget_ > 0) {
      entry = std::make_shared<Entry>();
      entry->key = key;
      entry->max_stored = max_stored_;
      making_[key] = entry;
      maker = true;
      ++counts_.made;
    }
  }
  if (entry) {
    std::unique_lock<std::mutex> lock(entry->mu);
    if (maker) {
      // Readers that join meanwhile wait for the listing here.
      entry->source = make(error);
      if (!entry->source) {
        entry->failed = true;
        entry->error = *error;
        lock.unlock();
        Finished(entry);
        return nullptr;
      }
      if (!entry->source->Shareable()) {
        entry->too_large = entry->unshared = true;  // the joiners waiting make their own
        Detach(entry);
      }
      return std::make_unique<SnapshotReader>(this, entry);
    }
    if (entry->failed && !entry->done && entry->pieces.empty()) {
      *error = entry->error;  // its listing failed: so would this one's
      return nullptr;
    }
    if (!entry->failed && !entry->too_large && (entry->done || entry->source)) {
      if (!entry->done) {
        const std::lock_guard<std::mutex> counts(mu_);
        ++counts_.joins;
      }
      return std::make_unique<SnapshotReader>(this, entry);
    }
  }
  // Not kept (the cache is off) or not joinable (too large, failed part way, abandoned): an
  // archive of this request's own, never kept.
  auto own = std::make_shared<Entry>();
  own->key = key;
  own->max_stored = max_stored_;
  own->too_large = true;
  own->source = make(error);
  if (!own->source) return nullptr;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    ++counts_.made;
  }
  const std::lock_guard<std::mutex> lock(own->mu);
  return std::make_unique<SnapshotReader>(this, own);
}

void SnapshotCache::Detach(const std::shared_ptr<Entry>& entry) {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto it = making_.find(entry->key);
  if (it != making_.end() && it->second == entry) {
    making_.erase(it);
    if (entry->too_large && !entry->unshared) ++counts_.too_large;
  }
}

void SnapshotCache::Finished(const std::shared_ptr<Entry>& entry) {
  // The entry's fields no longer change once it is done or failed: read without its lock.
  const std::lock_guard<std::mutex> lock(mu_);
  const auto it = making_.find(entry->key);
  if (it == making_.end() || it->second != entry) return;  // too large, or dropped meanwhile
  making_.erase(it);
  if (!entry->done || entry->failed || entry->too_large || entry->held > budget_) return;
  while (bytes_ + entry->held > budget_ && !lru_.empty()) {
    bytes_ -= lru_.back()->held;
    kept_.erase(lru_.back()->key);
    lru_.pop_back();
    ++counts_.evicted;
  }
  lru_.push_front(entry);
  kept_[entry->key] = lru_.begin();
  bytes_ += entry->held;
  ++counts_.kept;
}

void SnapshotCache::Configure(uint64_t budget, uint64_t max_stored) {
  const std::lock_guard<std::mutex> lock(mu_);
  budget_ = budget;
  max_stored_ = max_stored;
  lru_.clear();
  kept_.clear();
  making_.clear();
  bytes_ = 0;
  counts_ = {};
}

SnapshotCacheStats SnapshotCache::Stats() const {
  const std::lock_guard<std::mutex> lock(mu_);
  SnapshotCacheStats s = counts_;
  s.budget = budget_;
  s.max_stored = max_stored_;
  s.bytes = bytes_;
  s.archives = lru_.size();
  return s;
}

SnapshotCache& Snapshots() {
  static SnapshotCache cache(32 << 20, 8 << 20);
  return cache;
}

void ConfigureSnapshotCache(uint64_t budget, uint64_t max_stored) {
  Snapshots().Configure(budget, max_stored);
}

SnapshotCacheStats SnapshotCacheMetrics() { return Snapshots().Stats(); }

}  // namespace shellac::gitfrag

// SharedMemo: what an object id fixes (a commit's parents, an object's date, a commit's diff
// counts), remembered between renders. Such a value holds in every repository and fork and never
// goes stale, so one memo serves every render thread. Bounded: two generations of at most
// `generation` entries (or, with a Weigh, of entries weighing at most that much together); when
// the newer one is full the older one is dropped, and an entry found in the older one moves to the
// newer, so what was used lately stays.
#pragma once

#include <git2.h>

#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace shellac::gitfrag {

struct OidHash {
  size_t operator()(const git_oid& id) const {
    size_t h;  // object ids are uniformly distributed: their first bytes are a hash already
    std::memcpy(&h, id.id, sizeof h);
    return h;
  }
};
struct OidEqual {
  bool operator()(const git_oid& a, const git_oid& b) const {
    return std::memcmp(a.id, b.id, GIT_OID_RAWSZ) == 0;
  }
};

// Every entry weighs one: a generation holds `generation` entries.
struct UnitWeight {
  template <typename Value>
  size_t operator()(const Value&) const {
    return 1;
  }
};

template <typename Key, typename Value, typename Hash = std::hash<Key>,
          typename Equal = std::equal_to<Key>, typename Weigh = UnitWeight>
class SharedMemo {
 public:
  explicit SharedMemo(size_t generation) : generation_(generation) {}
  SharedMemo(const SharedMemo&) = delete;
  SharedMemo& operator=(const SharedMemo&) = delete;

  std::optional<Value> Find(const Key& key) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = newer_.find(key); it != newer_.end()) return it->second;
    const auto it = older_.find(key);
    if (it == older_.end()) return std::nullopt;
    Value value = it->second;
    Insert(key, value);  // used again: into the newer generation
    return value;
  }
  void Add(const Key& key, const Value& value) {
    const std::lock_guard<std::mutex> lock(mu_);
    Insert(key, value);
  }

 private:
  using Map = std::unordered_map<Key, Value, Hash, Equal>;
  void Insert(const Key& key, const Value& value) {
    const size_t weight = Weigh()(value);
    if (newer_weight_ + weight > generation_ && !newer_.empty()) {
      older_ = std::move(newer_);
      newer_ = Map();
      newer_weight_ = 0;
    }
    newer_weight_ += weight;  // (a key added again counts twice until the generation turns)
    newer_.insert_or_assign(key, value);
  }
  const size_t generation_;
  std::mutex mu_;
  Map newer_, older_;
  size_t newer_weight_ = 0;
};

}  // namespace shellac::gitfrag

// single_flight: concurrent misses for one cache key cause one upstream fetch.
//
// The first request for a key becomes the leader and fetches; later ones join as waiters. When the
// leader finishes, every waiter is woken on its own worker thread (Worker::Post) with the outcome.
// Thread-safe. A waiter whose connection went away is skipped: it holds only a weak token.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/cache.h"

namespace shellac::proxy {

class Worker;

struct FillResult {
  enum Kind {
    kStored,       // `object` is in the store: serve it
    kNotStorable,  // the response may not be shared: each waiter fetches for itself
    kAbandoned,    // the leader went away before the end: each waiter tries again
    kFailed,       // the upstream failed: answer `status` with `detail`
  } kind = kAbandoned;
  cache::ObjectRef object;
  int status = 0;
  std::string detail;
};

class SingleFlight {
 public:
  using Wake = std::function<void(const FillResult&)>;

  // Returns true when the caller leads the fetch for `key` (and must call Complete once);
  // otherwise `wake` runs on `worker`'s thread once the leader completes, if `alive` still exists.
  bool Join(const std::string& key, Worker* worker, std::weak_ptr<void> alive, Wake wake);
  // Becomes the leader for `key` when nobody leads it; never waits. For background refreshes.
  bool TryLead(const std::string& key);
  // The leader's outcome, delivered to every waiter of `key`; the key is free for a new leader.
  void Complete(const std::string& key, const FillResult& result);
  // Waiters queued now (for /metrics).
  size_t waiting() const;

  // Keys whose last fetch could not be stored are fetched directly (no waiting behind a leader)
  // until `until`, as Varnish's hit-for-miss does. Bounded: the memo is cleared when it grows past
  // kMaxPassKeys.
  void MarkPass(const std::string& key, std::chrono::steady_clock::time_point until);
  bool ShouldPass(const std::string& key, std::chrono::steady_clock::time_point now) const;
  static constexpr size_t kMaxPassKeys = 100'000;

 private:
  struct Waiter {
    Worker* worker;
    std::weak_ptr<void> alive;
    Wake wake;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<Waiter>> flights_;
  size_t waiting_ = 0;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> pass_until_;
};

}  // namespace shellac::proxy

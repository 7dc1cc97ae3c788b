// l2: the shared tier (l2=memcached://...): repository-neutral objects shared between shellac nodes
// through memcached, with libmemcached as the client. This file is the only place that knows
// memcached (tools/check_borders.py keeps libmemcached's headers in cache/).
//
// Threads. Every memcached call blocks (libmemcached), so none runs on a caller's thread: Get() and
// Put() queue a task for a small pool of tier threads, each with its own connections. A Get's answer
// is handed to its callback on a tier thread; the caller posts it wherever it must run. Gets go
// before Puts. The queue is bounded: a Get that finds it full is answered "unavailable" at once,
// and a Put that finds it full is dropped (both counted).
//
// Distribution: consistent hashing (ketama, MD5 points) over the servers, so adding or removing one
// moves about 1/N of the keys. Timeouts are short (connect 200 ms, poll 300 ms); a server that
// fails is marked dead and skipped for retry_seconds, its keys answered as misses (the caller
// renders them) rather than moved to another server.
//
// Values are objects in their wire form (wire.h: format version, crc32 of the payload) under a
// memcached key derived from the object's key (a 128-bit hash: cache keys may hold bytes memcached
// keys may not); a value that does not decode, or decodes to another key, is a miss, counted as
// corrupt, never returned. Objects whose wire form exceeds the item size are not written (counted
// as too large): splitting would need a read of every part to agree on one version, and objects of
// that size are rare (a diff of tens of thousands of lines).
//
// Trace (l2-trace=FILE, off by default): one line per lookup and per write, for checking what the
// tier held when a node rendered (bench/scenarios/cluster.sh). Written on the tier threads (and on a
// caller's thread for a Get refused at once), line-buffered, under a mutex; the cost when off is one
// null test per task. Line formats (times in microseconds since the Unix epoch, CLOCK_REALTIME):
//   TIME get OUTCOME TIER-KEY KEY asked=TIME   OUTCOME: hit miss corrupt unavailable busy
//   TIME put OUTCOME TIER-KEY KEY              OUTCOME: ok error too-large dropped
// A put line's TIME is taken once memcached acknowledged the write (ok) or failed it; a get line's
// once the answer is known, asked= when the lookup was taken off the queue (busy: when refused).
// KEY is the cache key with bytes outside '!'..'~' and '%' written as %XX.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/object.h"

namespace shellac::cache {

struct SharedTierOptions {
  std::vector<std::string> servers;  // "HOST:PORT" each
  unsigned threads = 2;
  size_t queue_limit = 4096;
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds io_timeout{300};
  std::chrono::seconds retry{5};  // a failed server is skipped this long
  size_t item_limit = (1 << 20) - 512;  // memcached's default item size less its item header
  std::string trace;  // l2-trace=: a file the trace lines are appended to; "" none
};

struct SharedTierStats {
  uint64_t gets = 0;          // lookups asked
  uint64_t hits = 0;          // ... answered with an object
  uint64_t misses = 0;        // ... the tier does not hold the key
  uint64_t errors = 0;        // ... a server failed, timed out or was marked dead: unavailable
  uint64_t corrupt = 0;       // ... a value that is not a shellac object of this version and key
  uint64_t busy = 0;          // ... refused at once: the queue was full
  uint64_t puts = 0;          // objects written
  uint64_t put_errors = 0;    // writes that failed (server down, timeout)
  uint64_t too_large = 0;     // objects not written: over the item size
  uint64_t dropped = 0;       // writes dropped: the queue was full
};

class SharedTier {
 public:
  enum class Outcome { kHit, kMiss, kUnavailable };
  using GetDone = std::function<void(Outcome, ObjectRef)>;

  // Throws std::runtime_error (naming the file) when the trace file cannot be opened.
  explicit SharedTier(SharedTierOptions options);
  ~SharedTier();  // stops the threads; queued tasks are dropped (a Get's callback gets kUnavailable)
  SharedTier(const SharedTier&) = delete;
  SharedTier& operator=(const SharedTier&) = delete;

  // Looks `key` up; `done` runs on a tier thread (or at once, on this thread, when the queue is
  // full), exactly once.
  void Get(std::string key, GetDone done);
  // Writes `object` (under its key) in the background.
  void Put(ObjectRef object);

  SharedTierStats Stats() const;
  size_t servers() const { return options_.servers.size(); }

  // The memcached key of a cache key (exposed for tests that damage values).
  static std::string TierKey(std::string_view key);

 private:
  struct Connection;
  struct Task {
    std::string key;
    GetDone done;       // a Get
    ObjectRef object;   // a Put
  };
  void Run();
  void DoGet(Connection& c, Task& task);
  void DoPut(Connection& c, Task& task);
  void Trace(const char* event, const char* outcome, std::string_view key, int64_t asked_us) const;

  SharedTierOptions options_;
  static void CloseTrace(std::FILE* f) { std::fclose(f); }
  std::unique_ptr<std::FILE, decltype(&CloseTrace)> trace_{nullptr, &CloseTrace};
  mutable std::mutex trace_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> gets_;
  std::deque<Task> puts_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;

  struct Counters;
  std::unique_ptr<Counters> counters_;
};

}  // namespace shellac::cache

#include "cache/l2.h"

#include <libmemcached/memcached.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cache/hash.h"
#include "cache/wire.h"

namespace shellac::cache {
namespace {

void FreeMemcached(memcached_st* m) { memcached_free(m); }
using MemcachedPtr = std::unique_ptr<memcached_st, decltype(&FreeMemcached)>;

// Fixed keys: every node must derive the same memcached key from a cache key.
constexpr SipKey kTierKeyA{0x7368656c6c616331ull, 0x6c32206b65792061ull};
constexpr SipKey kTierKeyB{0x7368656c6c616332ull, 0x6c32206b65792062ull};

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct SharedTier::Counters {
  std::atomic<uint64_t> gets{0}, hits{0}, misses{0}, errors{0}, corrupt{0}, busy{0}, puts{0},
      put_errors{0}, too_large{0}, dropped{0};
};

// One tier thread's client: its own memcached_st (libmemcached handles are not shared between
// threads) with every server and the behaviours above.
struct SharedTier::Connection {
  MemcachedPtr mc{nullptr, &FreeMemcached};
};

std::string SharedTier::TierKey(std::string_view key) {
  char text[48];
  std::snprintf(text, sizeof text, "shellac1/%016llx%016llx",
                static_cast<unsigned long long>(SipHash24(kTierKeyA, key)),
                static_cast<unsigned long long>(SipHash24(kTierKeyB, key)));
  return text;
}

SharedTier::SharedTier(SharedTierOptions options)
    : options_(std::move(options)), counters_(std::make_unique<Counters>()) {
  if (!options_.trace.empty()) {
    trace_.reset(std::fopen(options_.trace.c_str(), "a"));
    if (!trace_) {
      throw std::runtime_error("l2-trace=" + options_.trace + ": " + std::strerror(errno));
    }
    std::setvbuf(trace_.get(), nullptr, _IOLBF, 0);  // whole lines reach the file as they are made
  }
  for (unsigned i = 0; i < std::max(1u, options_.threads); ++i) threads_.emplace_back([this] { Run(); });
}

SharedTier::~SharedTier() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (Task& task : gets_) task.done(Outcome::kUnavailable, {});
}

void SharedTier::Get(std::string key, GetDone done) {
  counters_->gets++;
  {
    std::lock_guard lock(mu_);
    if (!stopping_ && gets_.size() + puts_.size() < options_.queue_limit) {
      gets_.push_back(Task{std::move(key), std::move(done), {}});
      cv_.notify_one();
      return;
    }
  }
  counters_->busy++;
  if (trace_) Trace("get", "busy", key, NowMicros());
  done(Outcome::kUnavailable, {});
}

void SharedTier::Put(ObjectRef object) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_ && gets_.size() + puts_.size() < options_.queue_limit) {
      puts_.push_back(Task{{}, {}, std::move(object)});
      cv_.notify_one();
      return;
    }
  }
  counters_->dropped++;
  if (trace_) Trace("put", "dropped", object->key(), 0);
}

void SharedTier::Trace(const char* event, const char* outcome, std::string_view key,
                       int64_t asked_us) const {
  std::string line = std::to_string(NowMicros());
  line.append(" ").append(event).append(" ").append(outcome).append(" ").append(TierKey(key));
  line.push_back(' ');
  for (const unsigned char ch : key) {
    if (ch > ' ' && ch < 0x7f && ch != '%') {
      line.push_back(static_cast<char>(ch));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", ch);
      line.append(hex);
    }
  }
  if (asked_us != 0) line.append(" asked=").append(std::to_string(asked_us));
  line.push_back('\n');
  std::lock_guard lock(trace_mu_);
  std::fwrite(line.data(), 1, line.size(), trace_.get());
}

void SharedTier::Run() {
  Connection c;
  c.mc.reset(memcached_create(nullptr));
  if (c.mc) {
    memcached_st* m = c.mc.get();
    for (const std::string& server : options_.servers) {
      const size_t colon = server.rfind(':');
      const std::string host = server.substr(0, colon);
      const auto port = static_cast<in_port_t>(std::atoi(server.c_str() + colon + 1));
      memcached_server_add(m, host.c_str(), port);
    }
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION, MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_HASH, MEMCACHED_HASH_MD5);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NO_BLOCK, 1);  // the timeouts apply
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT,
                           static_cast<uint64_t>(options_.connect_timeout.count()));
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_POLL_TIMEOUT,
                           static_cast<uint64_t>(options_.io_timeout.count()));
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_RCV_TIMEOUT,
                           static_cast<uint64_t>(options_.io_timeout.count()) * 1000);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_SND_TIMEOUT,
                           static_cast<uint64_t>(options_.io_timeout.count()) * 1000);
    // One failure marks a server dead for `retry`; its keys are misses meanwhile (not moved).
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_SERVER_FAILURE_LIMIT, 1);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_RETRY_TIMEOUT,
                           static_cast<uint64_t>(options_.retry.count()));
  }
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !gets_.empty() || !puts_.empty(); });
      if (stopping_) return;
      if (!gets_.empty()) {
        task = std::move(gets_.front());
        gets_.pop_front();
      } else {
        task = std::move(puts_.front());
        puts_.pop_front();
      }
    }
    if (task.done) {
      DoGet(c, task);
    } else {
      DoPut(c, task);
    }
  }
}

void SharedTier::DoGet(Connection& c, Task& task) {
  const int64_t asked = trace_ ? NowMicros() : 0;
  if (!c.mc) {
    counters_->errors++;
    if (trace_) Trace("get", "unavailable", task.key, asked);
    task.done(Outcome::kUnavailable, {});
    return;
  }
  const std::string tier_key = TierKey(task.key);
  size_t length = 0;
  uint32_t flags = 0;
  memcached_return_t rc = MEMCACHED_SUCCESS;
  char* value = memcached_get(c.mc.get(), tier_key.data(), tier_key.size(), &length, &flags, &rc);
  std::unique_ptr<char, decltype(&std::free)> owned(value, &std::free);
  if (rc == MEMCACHED_NOTFOUND) {
    counters_->misses++;
    if (trace_) Trace("get", "miss", task.key, asked);
    task.done(Outcome::kMiss, {});
    return;
  }
  if (rc != MEMCACHED_SUCCESS || value == nullptr) {
    counters_->errors++;
    if (trace_) Trace("get", "unavailable", task.key, asked);
    task.done(Outcome::kUnavailable, {});
    return;
  }
  Status status;
  ObjectRef object = DecodeObject(std::string_view(value, length), &status);
  if (!object || object->key() != task.key) {
    counters_->corrupt++;
    if (trace_) Trace("get", "corrupt", task.key, asked);
    task.done(Outcome::kMiss, {});
    return;
  }
  counters_->hits++;
  if (trace_) Trace("get", "hit", task.key, asked);
  task.done(Outcome::kHit, std::move(object));
}

void SharedTier::DoPut(Connection& c, Task& task) {
  std::string value;
  if (!EncodeObject(*task.object, &value)) return;  // no wire form (an ESI template)
  if (value.size() > options_.item_limit) {
    counters_->too_large++;
    if (trace_) Trace("put", "too-large", task.object->key(), 0);
    return;
  }
  if (!c.mc) {
    counters_->put_errors++;
    if (trace_) Trace("put", "error", task.object->key(), 0);
    return;
  }
  const std::string tier_key = TierKey(task.object->key());
  // No expiry: memcached evicts by its own LRU; the value says when it was stored and its ttl.
  const memcached_return_t rc =
      memcached_set(c.mc.get(), tier_key.data(), tier_key.size(), value.data(), value.size(), 0, 0);
  if (rc == MEMCACHED_SUCCESS) {
    counters_->puts++;
  } else {
    counters_->put_errors++;
  }
  if (trace_) Trace("put", rc == MEMCACHED_SUCCESS ? "ok" : "error", task.object->key(), 0);
}

SharedTierStats SharedTier::Stats() const {
  const Counters& k = *counters_;
  return SharedTierStats{k.gets.load(),      k.hits.load(),      k.misses.load(), k.errors.load(),
                         k.corrupt.load(),   k.busy.load(),      k.puts.load(),   k.put_errors.load(),
                         k.too_large.load(), k.dropped.load()};
}

}  // namespace shellac::cache

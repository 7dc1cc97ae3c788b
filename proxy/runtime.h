// runtime: the state every worker reads. A Runtime is what a configuration reload swaps as one unit;
// Shared is the process-wide state (the store, single-flight, the render pool, metrics) with the
// Runtime in force, published atomically.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "conf/config.h"
#include "gitfrag/gitfrag.h"
#include "proxy/metrics.h"
#include "proxy/single_flight.h"
#include "proxy/status.h"

namespace shellac::cache {
class KeyRules;
}

namespace shellac::proxy {

class AccessLogFile;
class EsiRules;
class TlsContext;
class TtlRules;

// What a configuration reload swaps as one unit.
struct Runtime {
  std::shared_ptr<const conf::Config> config;
  std::shared_ptr<AccessLogFile> access_log;  // null when access-log=off
  uint64_t generation = 1;
  std::string builtin_page;  // the HTML answered when no backend is configured
  std::shared_ptr<const cache::KeyRules> key_rules;  // compiled cache-key= rules
  std::shared_ptr<const TtlRules> ttl_rules;         // compiled ttl= rules
  std::shared_ptr<const EsiRules> esi_rules;         // compiled esi-url= / esi-allow-host= rules
  std::shared_ptr<const gitfrag::Site> site;  // the resident renderer's repositories; null: none
  std::shared_ptr<const TlsContext>
      tls;  // certificates and upstream TLS; null when TLS is not used
};

// Process-wide state read by every worker. Publish() may be called from any thread.
class Shared {
 public:
  std::shared_ptr<const Runtime> runtime() const {
    std::lock_guard lock(mu_);
    return runtime_;
  }
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Grows with every Publish, also one that keeps the generation (a log reopened on SIGUSR1):
  // workers compare it to pick up the new runtime.
  uint64_t serial() const { return serial_.load(std::memory_order_acquire); }
  void Publish(std::shared_ptr<const Runtime> runtime) {
    const uint64_t g = runtime->generation;
    {
      std::lock_guard lock(mu_);
      runtime_ = std::move(runtime);
    }
    generation_.store(g, std::memory_order_release);
    serial_.fetch_add(1, std::memory_order_acq_rel);
    global.config_generation.store(g);
  }
  std::string RenderMetrics() const;

  GlobalMetrics global;
  std::unique_ptr<cache::Store> store;  // made once at start (its budget cannot change on reload)
  // Resident pages kept whole (page_memo.h; page-memo-size): made once at start when repositories
  // are configured and the size is not 0; null otherwise.
  std::unique_ptr<cache::Store> page_memo;
  // Renders resident pages; made once at start when repositories are configured (render-threads and
  // render-queue cannot change on reload).
  std::unique_ptr<gitfrag::RenderPool> render_pool;
  // The shared tier (l2=memcached://...); null when not configured. Made once at start.
  std::unique_ptr<cache::SharedTier> l2;
  SingleFlight flights;
  std::vector<const WorkerMetrics*> shards;  // fixed before any worker starts
  // The status page's history: sampled and read on the main thread only (the admin listener's).
  std::unique_ptr<StatusHistory> status;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Runtime> runtime_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> serial_{0};
};

}  // namespace shellac::proxy

// lookup: how a request for a cacheable key is answered from the store, the one path for client
// requests and ESI includes alike.
//
//   fresh hit               served from the store
//   stale, within grace     served from the store; one background fetch refreshes it (the first
//                           request to find it stale leads the key's single-flight; a key in
//                           hit-for-miss is not refreshed)
//   hit-for-miss            the key's last response could not be stored: fetched directly
//   miss                    leads the key's single-flight (fetches and fills the store), or joins
//                           the fetch in flight and waits for its outcome, single-flight-timeout
//                           at most
//
// A waiter woken with a stored object is served it; with a response that could not be stored it
// fetches for itself; when the leader went away it looks up again; when the leader failed it is
// told the failure. The CacheLookup decides and waits; what serving, fetching and refreshing mean
// is its LookupClient's (a client connection answers the socket, an include hands the object to
// its page). Driven on one worker thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cache/cache.h"
#include "proxy/event_ptr.h"

namespace shellac::proxy {

class Worker;
struct FillResult;

class LookupClient {
 public:
  enum class Found {
    kFresh,   // a fresh object in the store
    kStale,   // a stale one within grace (a refresh was started unless the key is in hit-for-miss)
    kFilled,  // stored by the fetch this request waited for
  };
  virtual ~LookupClient() = default;
  // Answers from `object`. false when it could not (the object failed its integrity check): the
  // lookup goes on as for a miss (kFilled: fetches for this request alone).
  virtual bool ServeStored(const cache::ObjectRef& object, Found found) = 0;
  // Fetches (or renders) the request. A non-empty `fill_key` leads that key's single-flight: the
  // fetch must complete it (SingleFlight::Complete); an empty one fetches for this request alone.
  virtual void FetchFor(std::string fill_key) = 0;
  // Starts a background refresh of the stale `key`, whose single-flight it leads.
  virtual void Refresh(std::string key) = 0;
  // The fetch waited for failed: `status` with `detail`.
  virtual void FillFailed(int status, const std::string& detail) = 0;
  // Waited single-flight-timeout for another request's fetch; the lookup no longer waits.
  virtual void WaitTimedOut() = 0;
};

class CacheLookup {
 public:
  struct Options {
    bool may_lead = true;     // false: a miss is fetched directly (a HEAD cannot fill the store)
    bool may_refresh = true;  // false: a stale object is served without a refresh
    std::chrono::milliseconds wait_limit{};  // single-flight-timeout of the request's runtime
  };

  // `alive` is the owner's liveness token: a wake-up for a wait finds the owner only while it
  // lives, and a wait that timed out replaces it so that a late wake-up finds nothing.
  CacheLookup(LookupClient& client, Worker& worker, std::shared_ptr<int>& alive)
      : client_(client), worker_(worker), alive_(alive) {}
  CacheLookup(const CacheLookup&) = delete;
  CacheLookup& operator=(const CacheLookup&) = delete;

  // Looks `key` up and acts on it (see above). May call the client before returning. `key` is
  // kept (by reference) until the lookup is answered: it must outlive the wait.
  void Start(const std::string& key, Options options);
  // Waiting for another request's fetch of the key.
  bool waiting() const { return waiting_; }

 private:
  void OnFill(const FillResult& result);
  static void OnWaitTimeout(evutil_socket_t, short, void* arg);

  LookupClient& client_;
  Worker& worker_;
  std::shared_ptr<int>& alive_;
  const std::string* key_ = nullptr;
  Options options_;
  bool waiting_ = false;
  EventPtr wait_timer_;  // made at the first wait
};

}  // namespace shellac::proxy

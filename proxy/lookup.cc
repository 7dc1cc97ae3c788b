#include "proxy/lookup.h"

#include <chrono>

#include "cache/cache.h"
#include "proxy/deliver.h"
#include "proxy/single_flight.h"
#include "proxy/worker.h"

namespace shellac::proxy {

void CacheLookup::Start(const std::string& key, Options options) {
  key_ = &key;
  options_ = options;
  waiting_ = false;
  cache::LookupResult found = worker_.shared().store->Lookup(key, NowSeconds());
  if (found.state == cache::LookupState::kFresh &&
      client_.ServeStored(found.object, LookupClient::Found::kFresh)) {
    return;
  }
  SingleFlight& flights = worker_.shared().flights;
  const auto now = std::chrono::steady_clock::now();
  if (found.state == cache::LookupState::kStale) {
    // Grace: answer from the stale object now, and let one background fetch refresh it.
    if (options.may_refresh && !flights.ShouldPass(key, now) && flights.TryLead(key)) {
      client_.Refresh(key);
    }
    if (client_.ServeStored(found.object, LookupClient::Found::kStale)) return;
  }
  // A key whose last response could not be stored is not worth waiting for.
  if (!options.may_lead || flights.ShouldPass(key, now)) {
    client_.FetchFor({});
    return;
  }
  std::weak_ptr<int> alive = alive_;
  if (flights.Join(key, &worker_, std::move(alive),
                   [this](const FillResult& result) { OnFill(result); })) {
    client_.FetchFor(key);
    return;
  }
  waiting_ = true;
  WorkerMetrics::Add(worker_.metrics().cache_waits);
  if (!wait_timer_) wait_timer_.reset(evtimer_new(worker_.base(), OnWaitTimeout, this));
  const timeval limit = ToTimeval(options.wait_limit);
  evtimer_add(wait_timer_.get(), &limit);
}

void CacheLookup::OnFill(const FillResult& result) {
  if (!waiting_) return;
  waiting_ = false;
  evtimer_del(wait_timer_.get());  // only stopped: this may run inside the timer's callback
  switch (result.kind) {
    case FillResult::kStored:
      if (client_.ServeStored(result.object, LookupClient::Found::kFilled)) return;
      break;
    case FillResult::kFailed:
      client_.FillFailed(result.status, result.detail);
      return;
    case FillResult::kAbandoned:
      Start(*key_, options_);  // someone else may lead now, or this request does
      return;
    case FillResult::kNotStorable:
      break;
  }
  client_.FetchFor({});
}

void CacheLookup::OnWaitTimeout(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<CacheLookup*>(arg);
  if (!self->waiting_) return;
  self->waiting_ = false;
  WorkerMetrics::Add(self->worker_.metrics().cache_wait_timeouts);
  self->alive_ = std::make_shared<int>(0);  // a late wake-up must not find this request
  self->client_.WaitTimedOut();
}

}  // namespace shellac::proxy

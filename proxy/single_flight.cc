#include "proxy/single_flight.h"

#include "proxy/worker.h"

namespace shellac::proxy {

bool SingleFlight::Join(const std::string& key, Worker* worker, std::weak_ptr<void> alive, Wake wake) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = flights_.try_emplace(key);
  if (inserted) return true;
  it->second.push_back(Waiter{worker, std::move(alive), std::move(wake)});
  ++waiting_;
  return false;
}

bool SingleFlight::TryLead(const std::string& key) {
  std::lock_guard lock(mu_);
  return flights_.try_emplace(key).second;
}

void SingleFlight::Complete(const std::string& key, const FillResult& result) {
  std::vector<Waiter> waiters;
  {
    std::lock_guard lock(mu_);
    auto it = flights_.find(key);
    if (it == flights_.end()) return;
    waiters = std::move(it->second);
    flights_.erase(it);
    waiting_ -= waiters.size();
  }
  for (auto& w : waiters) {
    w.worker->Post([alive = std::move(w.alive), wake = std::move(w.wake), result] {
      if (alive.lock()) wake(result);
    });
  }
}

void SingleFlight::MarkPass(const std::string& key, std::chrono::steady_clock::time_point until) {
  std::lock_guard lock(mu_);
  if (pass_until_.size() >= kMaxPassKeys) pass_until_.clear();
  pass_until_[key] = until;
}

bool SingleFlight::ShouldPass(const std::string& key, std::chrono::steady_clock::time_point now) const {
  std::lock_guard lock(mu_);
  auto it = pass_until_.find(key);
  return it != pass_until_.end() && now < it->second;
}

size_t SingleFlight::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

}  // namespace shellac::proxy

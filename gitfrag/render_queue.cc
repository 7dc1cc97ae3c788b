#include "gitfrag/render_queue.h"

#include <algorithm>

namespace shellac::gitfrag {

const char* RenderClassName(RenderClass c) {
  switch (c) {
    case RenderClass::kFrame:
      return "frame";
    case RenderClass::kPart:
      return "part";
    case RenderClass::kBackground:
      return "background";
  }
  return "?";
}

const char* RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kNone:
      return "none";
    case Refusal::kFull:
      return "full";
    case Refusal::kTimeout:
      return "timeout";
    case Refusal::kStopping:
      return "stopping";
    case Refusal::kGone:
      return "gone";
  }
  return "?";
}

namespace {

constexpr size_t Index(RenderClass c) {
  return static_cast<size_t>(c);
}
constexpr size_t kFrame = Index(RenderClass::kFrame);
constexpr size_t kPart = Index(RenderClass::kPart);
constexpr size_t kBackground = Index(RenderClass::kBackground);

uint64_t Micros(RenderQueue::Clock::duration d) {
  return d.count() <= 0 ? 0
                        : static_cast<uint64_t>(
                              std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace

size_t RenderQueue::Client::Waiting() const {
  return waiting[kFrame].size() + waiting[kPart].size();
}

RenderQueue::RenderQueue(size_t limit, size_t client_max_running)
    : limit_(std::max<size_t>(1, limit)), client_max_running_(client_max_running) {}

RenderQueue::~RenderQueue() = default;

RenderQueue::Client& RenderQueue::ClientFor(const std::string& key) {
  auto [it, added] = clients_.try_emplace(key);
  if (added) {
    it->second.key = key;
    ++clients_seen_;
  }
  return it->second;
}

void RenderQueue::Forget(Client& c) {
  if (c.running > 0) return;
  for (const auto& list : c.waiting)
    if (!list.empty()) return;
  clients_.erase(c.key);  // `c` is gone from here on
}

RenderQueue::Job RenderQueue::Remove(Client& c, RenderClass cls, std::list<Entry>::iterator it) {
  const size_t i = Index(cls);
  if (it->deadline) deadlines_.erase(*it->deadline);
  Job job = std::move(it->job);
  c.waiting[i].erase(it);
  --depth_[i];
  if (c.waiting[i].empty() && c.in_ring[i]) {
    ring_[i].erase(c.ring_at[i]);
    c.in_ring[i] = false;
  }
  return job;
}

void RenderQueue::Refuse(Client& c, RenderClass cls, std::list<Entry>::iterator it, Refusal why,
                         std::vector<Job>* refused) {
  refused->push_back(Remove(c, cls, it));
  refused->back().refusal = why;
  ++refused_[static_cast<size_t>(why)];
}

size_t RenderQueue::DropGone(std::vector<Job>* gone) {
  size_t dropped = 0;
  for (size_t i = 0; i < kRenderClasses; ++i) {
    for (auto at = ring_[i].begin(); at != ring_[i].end();) {
      Client& c = **at;
      ++at;  // before Remove, which takes `c` out of the ring when its list empties
      auto& list = c.waiting[i];
      for (auto it = list.begin(); it != list.end();) {
        const auto next = std::next(it);
        if (it->job.admission.gone()) {
          Refuse(c, static_cast<RenderClass>(i), it, Refusal::kGone, gone);
          ++dropped;
        }
        it = next;
      }
      if (list.empty()) Forget(c);
    }
  }
  return dropped;
}

bool RenderQueue::Push(Job job, Clock::time_point now, std::vector<Job>* refused) {
  const RenderClass cls = job.admission.render_class;
  const size_t i = Index(cls);
  auto full = [&] {
    return cls == RenderClass::kBackground ? depth_[kBackground] >= limit_
                                           : depth_[kFrame] + depth_[kPart] >= limit_;
  };
  if (full()) DropGone(refused);  // (before ClientFor: it may forget clients)
  Client& c = ClientFor(job.admission.client);
  if (full()) {
    // Full. Background work is never worth displacing anything; otherwise a client with more
    // waiting than the newcomer's gives up its newest job (the one with the most), and when there
    // is none the newcomer is refused.
    Client* largest = &c;
    size_t most = c.Waiting();
    if (cls != RenderClass::kBackground) {
      for (auto& [key, other] : clients_) {
        if (&other != &c && other.Waiting() > most) {
          largest = &other;
          most = other.Waiting();
        }
      }
    }
    if (largest == &c) {
      ++refused_[static_cast<size_t>(Refusal::kFull)];  // (the newcomer: its caller answers)
      Forget(c);
      return false;
    }
    const RenderClass victim =
        largest->waiting[kPart].empty() ? RenderClass::kFrame : RenderClass::kPart;
    auto& list = largest->waiting[Index(victim)];
    Refuse(*largest, victim, std::prev(list.end()), Refusal::kFull, refused);
    Forget(*largest);
  }
  job.enqueued = now;
  const auto timeout = job.admission.timeout;
  auto& list = c.waiting[i];
  list.push_back(Entry{std::move(job), &c, {}, std::nullopt});
  Entry& entry = list.back();
  entry.self = std::prev(list.end());
  if (timeout.count() > 0) entry.deadline = deadlines_.emplace(now + timeout, &entry);
  ++depth_[i];
  if (!c.in_ring[i]) {
    ring_[i].push_back(&c);
    c.ring_at[i] = std::prev(ring_[i].end());
    c.in_ring[i] = true;
  }
  return true;
}

std::optional<RenderQueue::Job> RenderQueue::Pop(Clock::time_point now, std::vector<Job>* gone,
                                                 bool newcomers_only) {
  std::vector<Job> dropped;
  if (gone == nullptr) gone = &dropped;
  for (size_t i = 0; i < kRenderClasses; ++i) {
    // Background work runs only when nothing else that may run waits: reaching it means so.
    if (paused_[i]) continue;
    const RenderClass cls = static_cast<RenderClass>(i);
    if (newcomers_only && cls == RenderClass::kBackground) break;
    for (auto at = ring_[i].begin(); at != ring_[i].end();) {
      Client& c = **at;
      if ((client_max_running_ != 0 && c.running >= client_max_running_) ||
          (newcomers_only && c.running > 0)) {
        ++at;
        continue;
      }
      auto& list = c.waiting[i];
      if (list.front().job.admission.gone()) {
        // Nobody waits for it: it leaves the queue, and the client's next job is looked at.
        const bool last = list.size() == 1;
        const auto next = std::next(at);
        Refuse(c, cls, list.begin(), Refusal::kGone, gone);
        if (last) {
          Forget(c);
          at = next;
        }
        continue;
      }
      Job job = Remove(c, cls, list.begin());
      ++c.running;
      // Served: to the back of the ring, behind every client that waits in this class.
      if (c.in_ring[i]) ring_[i].splice(ring_[i].end(), ring_[i], c.ring_at[i]);
      ++started_[i];
      wait_us_[i] += Micros(now - job.enqueued);
      return job;
    }
  }
  return std::nullopt;
}

void RenderQueue::Finished(const std::string& client) {
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  if (it->second.running > 0) --it->second.running;
  Forget(it->second);
}

bool RenderQueue::NewcomerWaiting() const {
  for (size_t i : {kFrame, kPart}) {
    if (paused_[i]) continue;
    for (const Client* c : ring_[i])
      if (c->running == 0) return true;
  }
  return false;
}

void RenderQueue::Expire(Clock::time_point now, std::vector<Job>* refused) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    Entry* e = deadlines_.begin()->second;
    Client& c = *e->client;
    Refuse(c, e->job.admission.render_class, e->self, Refusal::kTimeout, refused);
    Forget(c);
  }
}

std::optional<RenderQueue::Clock::time_point> RenderQueue::NextDeadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

void RenderQueue::Drain(std::vector<Job>* refused) {
  for (size_t i = 0; i < kRenderClasses; ++i) {
    while (!ring_[i].empty()) {
      Client& c = *ring_[i].front();
      Refuse(c, static_cast<RenderClass>(i), c.waiting[i].begin(), Refusal::kStopping, refused);
      Forget(c);
    }
  }
}

size_t RenderQueue::waiting() const {
  return depth_[kFrame] + depth_[kPart] + depth_[kBackground];
}

RenderQueue::Stats RenderQueue::Snapshot(Clock::time_point now) const {
  Stats s;
  for (size_t i = 0; i < kRenderClasses; ++i) {
    s.depth[i] = depth_[i];
    s.started[i] = started_[i];
    s.wait_us[i] = wait_us_[i];
  }
  for (size_t r = 0; r < kRefusals; ++r) s.refused[r] = refused_[r];
  s.clients = clients_.size();
  s.clients_seen = clients_seen_;
  for (const auto& [key, c] : clients_) {
    for (size_t i = 0; i < kRenderClasses; ++i) {
      if (!c.waiting[i].empty()) {
        s.oldest_wait_us[i] =
            std::max(s.oldest_wait_us[i], Micros(now - c.waiting[i].front().job.enqueued));
      }
    }
    s.largest_waiting = std::max<uint64_t>(s.largest_waiting, c.Waiting());
  }
  const uint64_t all = depth_[kFrame] + depth_[kPart];
  s.largest_share =
      all == 0 ? 0.0 : static_cast<double>(s.largest_waiting) / static_cast<double>(all);
  return s;
}

}  // namespace shellac::gitfrag

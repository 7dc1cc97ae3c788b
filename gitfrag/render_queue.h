// RenderQueue: who renders next. The render pool's admission queue, bounded by count and by time,
// served in three classes and, inside a class, round-robin across clients.
//
// Classes, in strict priority order (RenderClass):
//   kFrame       a page's frame (commit, diff, index): cheap; when its parts are stored it is all
//                the work a request needs, so it goes ahead of every render of a new part.
//   kPart        renders of new parts and other expensive pages: diff fragments, patches,
//                rawdiffs, logs.
//   kBackground  pre-rendering nobody waits for (`shellac warm`): served only when no frame or part
//                that may run waits. It has its own count limit and, by default, no time limit.
//
// Fair shares: each job names its client (an address, a prefix, or any string). Inside a class
// the clients with waiting jobs form a ring; each pop serves the first client in the ring that is
// under its running cap and moves it to the back. A client that arrives while another has 400 jobs
// waiting is served after at most one job of the other client per pop, so its wait is at most one
// render per thread. A client with `client_max_running` renders running is skipped (its jobs wait,
// they are not refused) until one of them finishes. A pool's reserve threads pop only for clients
// with no render running (Pop's `newcomers_only`): a long render of a flood cannot hold them, so
// a newcomer's render starts at once.
//
// Bounds: at most `limit` frame and part jobs wait (and `limit` background jobs). A job pushed into
// a full queue refuses, with Refusal::kFull, the newest job of the client with the most waiting
// when that client has more waiting than the newcomer's, and the newcomer otherwise (a flood pays
// for its own excess, nobody else does). A job still waiting at its deadline is refused with
// Refusal::kTimeout.
//
// Not thread-safe: RenderPool (gitfrag.h) holds it under its mutex. Times are passed in, so the
// tests drive it with their own clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shellac::gitfrag {

enum class RenderClass : uint8_t { kFrame, kPart, kBackground };
inline constexpr size_t kRenderClasses = 3;
const char* RenderClassName(RenderClass c);  // "frame", "part", "background" (metrics labels)

// Why a job did not run. kNone for a job that ran.
// kGone: the request it was for went away (its client hung up) before it started; nobody sees it.
enum class Refusal : uint8_t { kNone, kFull, kTimeout, kStopping, kGone };
inline constexpr size_t kRefusals = 5;
const char* RefusalName(Refusal r);  // "none", "full", "timeout", "stopping", "gone"

// What a caller says about a job when it submits it.
struct Admission {
  std::string client;  // fair-share key: whose request this is ("" is one anonymous client)
  RenderClass render_class = RenderClass::kPart;
  // A job still waiting this long is refused (Refusal::kTimeout); zero waits for ever.
  std::chrono::milliseconds timeout{0};
  // The request that waits for this job, when nothing else would use its outcome (a frame: pages
  // made per request are not stored). Once it has expired (the client hung up) the job leaves the
  // queue without running (Refusal::kGone). Unset: the job runs whoever still waits (a part that
  // is stored for every later request, warm work).
  std::optional<std::weak_ptr<void>> requester;
  bool gone() const { return requester && requester->expired(); }
};

class RenderQueue {
 public:
  using Clock = std::chrono::steady_clock;

  struct Job {
    std::function<void()> run;            // called by whoever popped it
    std::function<void(Refusal)> refuse;  // called instead when it is refused (may be empty)
    Admission admission;
    Clock::time_point enqueued{};
    Refusal refusal = Refusal::kNone;  // why it was refused, once it was
  };

  struct Stats {
    uint64_t depth[kRenderClasses] = {};
    uint64_t oldest_wait_us[kRenderClasses] = {};  // how long the oldest waiting job has waited
    uint64_t started[kRenderClasses] = {};         // jobs popped, ever
    uint64_t wait_us[kRenderClasses] = {};         // their waits summed, ever
    uint64_t refused[kRefusals] = {};              // jobs refused, ever, by reason
    uint64_t clients = 0;                          // clients with a job waiting or running now
    uint64_t clients_seen = 0;     // arrivals of a client with nothing waiting or running, ever
    double largest_share = 0;      // the largest client's fraction of the waiting jobs (0 if none)
    uint64_t largest_waiting = 0;  // that client's waiting jobs
  };

  // `limit` >= 1; `client_max_running` 0 means no cap.
  RenderQueue(size_t limit, size_t client_max_running);
  ~RenderQueue();
  RenderQueue(const RenderQueue&) = delete;
  RenderQueue& operator=(const RenderQueue&) = delete;

  // Queues `job`. Jobs refused to make room (possibly `job` itself, then false is returned) are
  // appended to *refused, their refusal counted and set in Job::refusal; the caller calls their
  // `refuse(job.refusal)` outside its lock. A full queue first lets go of the jobs whose requester
  // is gone (Refusal::kGone, also in *refused).
  bool Push(Job job, Clock::time_point now, std::vector<Job>* refused);

  // The next job to run, removed from the queue; its client counts it as running until
  // Finished(client). nullopt when nothing waits that may run now. Jobs whose requester is gone,
  // met on the way, leave the queue into *gone (Refusal::kGone; dropped when `gone` is null).
  // `newcomers_only` (a reserve thread asking): only a frame or part of a client that has no
  // render running now.
  std::optional<Job> Pop(Clock::time_point now, std::vector<Job>* gone = nullptr,
                         bool newcomers_only = false);
  void Finished(const std::string& client);
  // Whether a newcomers-only Pop could take a job: some client with no render running waits with a
  // frame or part in a class that is not paused. Looks at no more clients than have renders running.
  bool NewcomerWaiting() const;

  // Moves every job whose deadline is at or before `now` to *refused (Refusal::kTimeout).
  void Expire(Clock::time_point now, std::vector<Job>* refused);
  // The earliest deadline of a waiting job.
  std::optional<Clock::time_point> NextDeadline() const;
  // Moves every waiting job to *refused (Refusal::kStopping).
  void Drain(std::vector<Job>* refused);

  // A paused class keeps its jobs waiting (their deadlines still run) until it is resumed.
  void Pause(RenderClass cls, bool paused) { paused_[static_cast<size_t>(cls)] = paused; }
  bool paused(RenderClass cls) const { return paused_[static_cast<size_t>(cls)]; }

  size_t waiting() const;  // all classes
  Stats Snapshot(Clock::time_point now) const;

 private:
  struct Client;
  struct Entry;
  using Deadlines = std::multimap<Clock::time_point, Entry*>;
  struct Entry {
    Job job;
    Client* client = nullptr;
    std::list<Entry>::iterator self;  // where it is in its client's list
    std::optional<Deadlines::iterator> deadline;
  };
  struct Client {
    std::string key;
    std::list<Entry> waiting[kRenderClasses];
    size_t running = 0;
    bool in_ring[kRenderClasses] = {};
    std::list<Client*>::iterator ring_at[kRenderClasses];
    size_t Waiting() const;  // frame + part
  };

  Client& ClientFor(const std::string& key);
  void Forget(Client& c);  // drops the client when it has nothing waiting or running
  // Takes the entry out of its lists (and the ring when its class list empties).
  Job Remove(Client& c, RenderClass cls, std::list<Entry>::iterator it);
  void Refuse(Client& c, RenderClass cls, std::list<Entry>::iterator it, Refusal why,
              std::vector<Job>* refused);
  // Every waiting job whose requester is gone, to *gone. Returns how many.
  size_t DropGone(std::vector<Job>* gone);

  const size_t limit_;
  const size_t client_max_running_;
  std::unordered_map<std::string, Client> clients_;
  std::list<Client*> ring_[kRenderClasses];
  size_t depth_[kRenderClasses] = {};
  Deadlines deadlines_;
  uint64_t started_[kRenderClasses] = {};
  uint64_t wait_us_[kRenderClasses] = {};
  uint64_t refused_[kRefusals] = {};
  uint64_t clients_seen_ = 0;
  bool paused_[kRenderClasses] = {};
};

}  // namespace shellac::gitfrag

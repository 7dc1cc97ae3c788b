// The render queue on its own (fair shares, classes, bounds by count and time, per-client caps),
// then the same rules through a RenderPool with real threads.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conf/config.h"
#include "gitfrag/gitfrag.h"
#include "gitfrag/render_queue.h"
#include "proxy/resident.h"

namespace shellac::gitfrag {
namespace {

using Clock = RenderQueue::Clock;
using std::chrono::milliseconds;

// A job that records its name in `log` when it runs and in `refusals` when refused.
RenderQueue::Job Named(const std::string& client, RenderClass cls, std::string name,
                       std::vector<std::string>* log, milliseconds timeout = milliseconds(0),
                       std::vector<std::pair<std::string, Refusal>>* refusals = nullptr) {
  RenderQueue::Job job;
  job.run = [log, name] { log->push_back(name); };
  job.refuse = [refusals, name](Refusal why) {
    if (refusals) refusals->emplace_back(name, why);
  };
  job.admission = Admission{client, cls, timeout};
  return job;
}

// Pops and runs one job; its client's render counts as finished at once unless `hold`.
bool RunOne(RenderQueue& q, Clock::time_point now, bool hold = false) {
  auto job = q.Pop(now);
  if (!job) return false;
  job->run();
  if (!hold) q.Finished(job->admission.client);
  return true;
}

TEST(RenderQueue, ANewClientWaitsAtMostOneRenderOfTheFloodingClient) {
  for (size_t threads : {1u, 2u, 4u}) {
    RenderQueue q(1000, 0);
    std::vector<std::string> log;
    std::vector<RenderQueue::Job> refused;
    const auto now = Clock::now();
    for (int i = 0; i < 400; ++i) {
      ASSERT_TRUE(q.Push(Named("crawler", RenderClass::kPart, "c" + std::to_string(i), &log), now,
                         &refused));
    }
    // Every thread is busy with one of the crawler's renders when the person arrives.
    std::vector<std::string> running;
    for (size_t t = 0; t < threads; ++t) running.push_back(q.Pop(now)->admission.client);
    ASSERT_TRUE(q.Push(Named("person", RenderClass::kPart, "person", &log), now, &refused));
    // Each thread, as it finishes, takes the next job.
    size_t crawler_renders_before = 0;
    bool served = false;
    while (!served) {
      for (size_t t = 0; t < threads && !served; ++t) {
        q.Finished(running[t]);
        auto job = q.Pop(now);
        ASSERT_TRUE(job);
        running[t] = job->admission.client;
        if (job->admission.client == "person")
          served = true;
        else
          ++crawler_renders_before;
      }
    }
    EXPECT_LE(crawler_renders_before, threads) << threads << " threads";
    EXPECT_TRUE(refused.empty());
  }
}

TEST(RenderQueue, ClientsTakeTurnsInsideAClass) {
  RenderQueue q(100, 0);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto now = Clock::now();
  for (int i = 0; i < 3; ++i)
    q.Push(Named("a", RenderClass::kPart, "a" + std::to_string(i), &log), now, &refused);
  for (int i = 0; i < 2; ++i)
    q.Push(Named("b", RenderClass::kPart, "b" + std::to_string(i), &log), now, &refused);
  q.Push(Named("c", RenderClass::kPart, "c0", &log), now, &refused);
  while (RunOne(q, now)) {
  }
  EXPECT_EQ(log, (std::vector<std::string>{"a0", "b0", "c0", "a1", "b1", "a2"}));
  EXPECT_EQ(q.Snapshot(now).clients, 0u) << "a client with nothing waiting or running is forgotten";
}

// A reserve thread's pop: only frames and parts of a client with nothing running, never
// background work, and the client's running count then keeps it off the reserve.
TEST(RenderQueue, ANewcomersOnlyPopSkipsClientsWithARenderRunning) {
  RenderQueue q(100, 0);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto now = Clock::now();
  for (int i = 0; i < 3; ++i)
    q.Push(Named("crawler", RenderClass::kPart, "c" + std::to_string(i), &log), now, &refused);
  q.Push(Named("warm", RenderClass::kBackground, "w0", &log), now, &refused);
  ASSERT_TRUE(RunOne(q, now, /*hold=*/true));  // c0 runs and holds its thread
  EXPECT_FALSE(q.Pop(now, nullptr, /*newcomers_only=*/true))
      << "the crawler has a render running, and background work is never a reserve thread's";
  q.Push(Named("person", RenderClass::kPart, "p0", &log), now, &refused);
  q.Push(Named("person", RenderClass::kPart, "p1", &log), now, &refused);
  auto job = q.Pop(now, nullptr, true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->admission.client, "person");
  EXPECT_FALSE(q.Pop(now, nullptr, true)) << "p1 waits: the person now has a render running";
  q.Finished("person");
  job = q.Pop(now, nullptr, true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->admission.client, "person");
  q.Finished("person");
  q.Finished("crawler");
  job = q.Pop(now, nullptr, true);  // nothing of the crawler's runs now: it is a newcomer again
  ASSERT_TRUE(job);
  EXPECT_EQ(job->admission.client, "crawler");
}

TEST(RenderQueue, FramesGoFirstAndBackgroundOnlyWhenNothingElseWaits) {
  RenderQueue q(100, 0);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto now = Clock::now();
  q.Push(Named("warm", RenderClass::kBackground, "bg1", &log), now, &refused);
  q.Push(Named("a", RenderClass::kPart, "part1", &log), now, &refused);
  q.Push(Named("warm", RenderClass::kBackground, "bg2", &log), now, &refused);
  q.Push(Named("b", RenderClass::kFrame, "frame1", &log), now, &refused);
  q.Push(Named("a", RenderClass::kPart, "part2", &log), now, &refused);
  ASSERT_TRUE(RunOne(q, now));
  ASSERT_TRUE(RunOne(q, now));
  // A frame that arrives now still goes ahead of the part that waited longer.
  q.Push(Named("c", RenderClass::kFrame, "frame2", &log), now, &refused);
  while (RunOne(q, now)) {
  }
  EXPECT_EQ(log, (std::vector<std::string>{"frame1", "part1", "frame2", "part2", "bg1", "bg2"}));
  const auto stats = q.Snapshot(now);
  EXPECT_EQ(stats.started[0], 2u);
  EXPECT_EQ(stats.started[1], 2u);
  EXPECT_EQ(stats.started[2], 2u);
}

TEST(RenderQueue, OverTheClientCapWaitsAndIsNotRefused) {
  RenderQueue q(100, 1);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto now = Clock::now();
  for (int i = 0; i < 3; ++i)
    q.Push(Named("a", RenderClass::kPart, "a" + std::to_string(i), &log), now, &refused);
  q.Push(Named("b", RenderClass::kPart, "b0", &log), now, &refused);
  q.Push(Named("warm", RenderClass::kBackground, "bg", &log), now, &refused);
  ASSERT_TRUE(RunOne(q, now, /*hold=*/true));  // a0 runs and keeps running
  ASSERT_TRUE(RunOne(q, now, /*hold=*/true));  // b0: a is at its cap
  // a's jobs wait for a's running render; an idle thread may take background work meanwhile.
  ASSERT_TRUE(RunOne(q, now, /*hold=*/true));
  EXPECT_FALSE(q.Pop(now)) << "everything left belongs to clients at their cap";
  EXPECT_EQ(log, (std::vector<std::string>{"a0", "b0", "bg"}));
  EXPECT_EQ(q.Snapshot(now).depth[1], 2u);
  q.Finished("a");
  ASSERT_TRUE(RunOne(q, now));
  EXPECT_EQ(log.back(), "a1");
  EXPECT_TRUE(refused.empty());
}

TEST(RenderQueue, AFullQueueRefusesTheLargestClientsNewestJob) {
  RenderQueue q(3, 0);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto now = Clock::now();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        q.Push(Named("crawler", RenderClass::kPart, "c" + std::to_string(i), &log), now, &refused));
  }
  // The crawler pays for the person's place.
  ASSERT_TRUE(q.Push(Named("person", RenderClass::kPart, "p0", &log), now, &refused));
  ASSERT_EQ(refused.size(), 1u);
  refused.front().run();  // tells which job it was
  EXPECT_EQ(log, (std::vector<std::string>{"c2"}));
  // The crawler's own excess is refused to the crawler.
  EXPECT_FALSE(q.Push(Named("crawler", RenderClass::kPart, "c3", &log), now, &refused));
  EXPECT_EQ(refused.size(), 1u);
  // Background work has its own room and never displaces anything.
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(q.Push(Named("warm", RenderClass::kBackground, "w", &log), now, &refused));
  EXPECT_FALSE(q.Push(Named("warm", RenderClass::kBackground, "w", &log), now, &refused));
  const auto stats = q.Snapshot(now);
  EXPECT_EQ(stats.refused[static_cast<size_t>(Refusal::kFull)], 3u);
  EXPECT_EQ(stats.depth[1], 3u);
  EXPECT_EQ(stats.largest_waiting, 2u);
  EXPECT_DOUBLE_EQ(stats.largest_share, 2.0 / 3.0);
  EXPECT_EQ(stats.clients, 3u);
  EXPECT_EQ(stats.clients_seen, 3u);
}

TEST(RenderQueue, AJobWhoseRequesterIsGoneLeavesInsteadOfRunning) {
  RenderQueue q(100, 0);
  std::vector<std::string> log;
  std::vector<std::pair<std::string, Refusal>> refusals;
  const auto now = Clock::now();
  std::vector<RenderQueue::Job> refused;
  auto alive = std::make_shared<int>(0);
  auto hung_up = std::make_shared<int>(0);
  auto with = [&](const std::string& client, std::string name, const std::shared_ptr<int>& req) {
    RenderQueue::Job job =
        Named(client, RenderClass::kFrame, std::move(name), &log, milliseconds(0), &refusals);
    job.admission.requester = std::weak_ptr<void>(req);
    return job;
  };
  ASSERT_TRUE(q.Push(with("a", "a-gone-1", hung_up), now, &refused));
  ASSERT_TRUE(q.Push(with("a", "a-gone-2", hung_up), now, &refused));
  ASSERT_TRUE(q.Push(with("a", "a-live", alive), now, &refused));
  ASSERT_TRUE(q.Push(with("b", "b-gone", hung_up), now, &refused));
  ASSERT_TRUE(q.Push(Named("c", RenderClass::kFrame, "c-no-requester", &log), now, &refused));
  hung_up.reset();
  std::vector<RenderQueue::Job> gone;
  while (auto job = q.Pop(now, &gone)) {
    job->run();
    q.Finished(job->admission.client);
  }
  EXPECT_EQ(log, (std::vector<std::string>{"a-live", "c-no-requester"}));
  ASSERT_EQ(gone.size(), 3u);
  for (const auto& g : gone) EXPECT_EQ(g.refusal, Refusal::kGone);
  EXPECT_EQ(q.waiting(), 0u);
  const auto stats = q.Snapshot(now);
  EXPECT_EQ(stats.refused[static_cast<size_t>(Refusal::kGone)], 3u);
  EXPECT_EQ(stats.clients, 0u) << "a client with only gone jobs is forgotten";
}

TEST(RenderQueue, AFullQueueLetsGoOfGoneJobsBeforeRefusingAnyone) {
  RenderQueue q(3, 0);
  std::vector<std::string> log;
  const auto now = Clock::now();
  std::vector<RenderQueue::Job> refused;
  auto hung_up = std::make_shared<int>(0);
  for (int i = 0; i < 3; ++i) {
    RenderQueue::Job job = Named("crawler", RenderClass::kFrame, "c" + std::to_string(i), &log);
    if (i < 2) job.admission.requester = std::weak_ptr<void>(hung_up);
    ASSERT_TRUE(q.Push(std::move(job), now, &refused));
  }
  hung_up.reset();
  ASSERT_TRUE(q.Push(Named("crawler", RenderClass::kFrame, "c3", &log), now, &refused));
  ASSERT_EQ(refused.size(), 2u);
  for (const auto& r : refused) EXPECT_EQ(r.refusal, Refusal::kGone);
  EXPECT_EQ(q.waiting(), 2u);
  EXPECT_EQ(q.Snapshot(now).refused[static_cast<size_t>(Refusal::kFull)], 0u);
  while (RunOne(q, now)) {
  }
  EXPECT_EQ(log, (std::vector<std::string>{"c2", "c3"}));
}

TEST(RenderQueue, AJobWaitingPastItsDeadlineIsRefused) {
  RenderQueue q(100, 0);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto t0 = Clock::now();
  q.Push(Named("a", RenderClass::kPart, "late", &log, milliseconds(100)), t0, &refused);
  q.Push(Named("a", RenderClass::kPart, "later", &log, milliseconds(200)), t0, &refused);
  q.Push(Named("warm", RenderClass::kBackground, "patient", &log), t0, &refused);
  EXPECT_EQ(q.NextDeadline(), t0 + milliseconds(100));
  q.Expire(t0 + milliseconds(99), &refused);
  EXPECT_TRUE(refused.empty());
  q.Expire(t0 + milliseconds(100), &refused);
  ASSERT_EQ(refused.size(), 1u);
  refused.front().run();
  EXPECT_EQ(log, (std::vector<std::string>{"late"}));
  EXPECT_EQ(q.NextDeadline(), t0 + milliseconds(200));
  const auto stats = q.Snapshot(t0 + milliseconds(150));
  EXPECT_EQ(stats.refused[static_cast<size_t>(Refusal::kTimeout)], 1u);
  EXPECT_EQ(stats.oldest_wait_us[1], 150'000u);
  ASSERT_TRUE(RunOne(q, t0 + milliseconds(150)));
  EXPECT_EQ(log.back(), "later");
  EXPECT_FALSE(q.NextDeadline()) << "a job that ran has no deadline left";
  EXPECT_EQ(q.Snapshot(t0).wait_us[1], 150'000u);
}

TEST(RenderQueue, APausedClassKeepsItsJobsWaitingAndTheirDeadlines) {
  RenderQueue q(100, 0);
  std::vector<std::string> log;
  std::vector<RenderQueue::Job> refused;
  const auto t0 = Clock::now();
  q.Push(Named("a", RenderClass::kPart, "part", &log, milliseconds(50)), t0, &refused);
  q.Push(Named("warm", RenderClass::kBackground, "bg", &log), t0, &refused);
  q.Pause(RenderClass::kPart, true);
  ASSERT_TRUE(RunOne(q, t0)) << "background runs: nothing else may run";
  EXPECT_EQ(log, (std::vector<std::string>{"bg"}));
  EXPECT_FALSE(q.Pop(t0));
  q.Expire(t0 + milliseconds(50), &refused);
  EXPECT_EQ(refused.size(), 1u) << "a paused job still times out";
  q.Push(Named("a", RenderClass::kPart, "part2", &log), t0, &refused);
  q.Pause(RenderClass::kPart, false);
  ASSERT_TRUE(RunOne(q, t0));
  EXPECT_EQ(log.back(), "part2");
}

// Holds every render thread of a pool until Release().
class Gate {
 public:
  void Enter() {
    std::unique_lock lock(mu_);
    ++inside_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void WaitInside(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return inside_ >= n; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool open_ = false;
};

// Two crawler renders hold both threads while 398 more and the person's wait. Every crawler render
// that starts after them keeps its thread until the person's has started, so the count is exact
// however the threads are scheduled: a fair queue starts at most kThreads - 1 of them first; an
// unfair one lets every thread take one, and the last to start says so instead of waiting.
TEST(RenderPoolQueue, ThePersonsRenderStartsWithinOneRenderPerThreadOfAFlood) {
  constexpr int kThreads = 2;
  Gate gate;
  RenderPool pool(kThreads, 1000);
  pool.SetGate([&] { gate.Enter(); });
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  int crawler_started = 0;  // after the two held ones, before the person's started
  bool person_started = false;
  bool passed_over = false;  // every thread held a crawler render while the person's waited
  auto finish = [&](std::unique_lock<std::mutex>& lock) {
    ++done;
    cv.notify_all();
    lock.unlock();
  };
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(pool.SubmitJob({"crawler", RenderClass::kPart, {}},
                             [&] {
                               std::unique_lock lock(mu);
                               finish(lock);
                             }),
              RenderPool::Submitted::kQueued);
  }
  gate.WaitInside(kThreads);  // both threads hold a crawler render
  for (int i = 0; i < 398; ++i) {
    ASSERT_EQ(pool.SubmitJob({"crawler", RenderClass::kPart, {}},
                             [&] {
                               std::unique_lock lock(mu);
                               if (!person_started && !passed_over) {
                                 if (++crawler_started == kThreads) passed_over = true;
                                 cv.notify_all();
                                 cv.wait(lock, [&] { return person_started || passed_over; });
                               }
                               finish(lock);
                             }),
              RenderPool::Submitted::kQueued);
  }
  ASSERT_EQ(pool.SubmitJob({"person", RenderClass::kPart, {}},
                           [&] {
                             std::unique_lock lock(mu);
                             person_started = true;
                             finish(lock);
                           }),
            RenderPool::Submitted::kQueued);
  EXPECT_EQ(pool.Metrics().queue.depth[1], 399u);
  gate.Release();
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done == 401; });
  EXPECT_FALSE(passed_over) << "every thread started a crawler render before the person's";
  EXPECT_LE(crawler_started, kThreads - 1);
}

// However long the flood's renders take, a reserve thread starts the person's at once.
TEST(RenderPoolQueue, AReserveThreadStartsANewcomersRenderWhileTheFloodHoldsEveryThread) {
  constexpr unsigned kThreads = 2;
  RenderPool pool(kThreads, 1000, 0, /*reserve_threads=*/1);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int crawler_running = 0;
  auto crawler = [&] {
    std::unique_lock lock(mu);
    ++crawler_running;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(pool.SubmitJob({"crawler", RenderClass::kPart, {}}, crawler),
              RenderPool::Submitted::kQueued);
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return crawler_running == static_cast<int>(kThreads); });
  }
  std::promise<void> person_ran;
  ASSERT_EQ(pool.SubmitJob({"person", RenderClass::kPart, {}}, [&] { person_ran.set_value(); }),
            RenderPool::Submitted::kQueued);
  // Runs while both crawler renders are still held (without a reserve thread it never would).
  const bool ran =
      person_ran.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  const auto m = pool.Metrics();
  int running;
  {
    std::lock_guard lock(mu);
    running = crawler_running;
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(ran) << "the person's render did not start while the flood held both threads";
  EXPECT_EQ(running, static_cast<int>(kThreads)) << "a reserve thread took a crawler's render";
  EXPECT_EQ(m.threads, kThreads);
  EXPECT_EQ(m.reserve_threads, 1u);
  EXPECT_EQ(m.reserve_started, 1u);
}

TEST(RenderPoolQueue, AQueuedRenderIsRefusedOnlyPastItsTimeout) {
  Gate gate;
  RenderPool pool(1, 10);
  pool.SetGate([&] { gate.Enter(); });
  ASSERT_EQ(pool.SubmitJob([] {}), RenderPool::Submitted::kQueued);
  gate.WaitInside(1);
  std::promise<Refusal> refused;
  const auto start = Clock::now();
  ASSERT_EQ(pool.SubmitJob(
                {"a", RenderClass::kPart, milliseconds(150)}, [] { ADD_FAILURE(); },
                [&](Refusal why) { refused.set_value(why); }),
            RenderPool::Submitted::kQueued);
  EXPECT_EQ(refused.get_future().get(), Refusal::kTimeout);
  EXPECT_GE(Clock::now() - start, milliseconds(150));
  const auto m = pool.Metrics();
  EXPECT_EQ(m.queue.refused[static_cast<size_t>(Refusal::kTimeout)], 1u);
  EXPECT_EQ(m.queue_depth, 0u);
  gate.Release();
}

TEST(RenderPoolQueue, APageRefusedAfterQueueingIsA503WithTheReason) {
  Gate gate;
  auto pool = std::make_unique<RenderPool>(1, 1);
  pool->SetGate([&] { gate.Enter(); });
  ASSERT_EQ(pool->SubmitJob([] {}), RenderPool::Submitted::kQueued);
  gate.WaitInside(1);
  // A Site is never touched by a refused page.
  conf::Config config;
  auto site = std::make_shared<const Site>(config);
  std::promise<Page> crawler_page;
  ASSERT_EQ(pool->Submit(site, Route{}, {"crawler", RenderClass::kFrame, {}},
                         [&](Page&& p) { crawler_page.set_value(std::move(p)); }),
            RenderPool::Submitted::kQueued);
  // The queue is full: the person's frame pushes the crawler's out.
  std::promise<Page> person_page;
  ASSERT_EQ(pool->Submit(site, Route{}, {"person", RenderClass::kFrame, {}},
                         [&](Page&& p) { person_page.set_value(std::move(p)); }),
            RenderPool::Submitted::kQueued);
  Page crawler = crawler_page.get_future().get();
  EXPECT_EQ(crawler.status, 503);
  EXPECT_EQ(crawler.refusal, Refusal::kFull);
  EXPECT_NE(crawler.reason.find("render-queue"), std::string::npos) << crawler.reason;
  // Destroying the pool refuses what still waits.
  std::thread destroy([&] { pool.reset(); });
  Page person = person_page.get_future().get();
  EXPECT_EQ(person.refusal, Refusal::kStopping);
  gate.Release();
  destroy.join();
}

}  // namespace
}  // namespace shellac::gitfrag

namespace shellac::proxy {
namespace {

std::shared_ptr<const conf::Config> Config(const conf::Overrides& overrides) {
  std::string error;
  auto c = conf::Load("", overrides, &error);
  EXPECT_NE(c, nullptr) << error;
  return c;
}

http::RequestHead WithForwardedFor(std::vector<std::string> values) {
  http::RequestHead r;
  for (auto& v : values) r.headers.push_back({"X-Forwarded-For", std::move(v)});
  return r;
}

TEST(ClientKey, AddressPrefixAndForwardedFor) {
  auto plain = Config({});
  EXPECT_EQ(ClientKey(*plain, "192.0.2.77", {}), "192.0.2.77");
  EXPECT_EQ(ClientKey(*plain, "2001:db8::1", {}), "2001:db8::1");
  // Nobody is trusted: X-Forwarded-For is whatever the client says, so it is not read.
  EXPECT_EQ(ClientKey(*plain, "192.0.2.77", WithForwardedFor({"203.0.113.5"})), "192.0.2.77");

  auto prefixed = Config({{"client-prefix-v4", "24"}, {"client-prefix-v6", "56"}});
  EXPECT_EQ(ClientKey(*prefixed, "192.0.2.77", {}), "192.0.2.0/24");
  EXPECT_EQ(ClientKey(*prefixed, "2001:db8:aa:bbff:1::1", {}), "2001:db8:aa:bb00::/56");
  EXPECT_EQ(ClientKey(*prefixed, "::ffff:192.0.2.77", {}), "192.0.2.0/24") << "a v4-mapped peer";

  auto proxied = Config({{"trusted-proxy", "10.0.0.0/8 ::1"}, {"client-prefix-v4", "24"}});
  EXPECT_EQ(ClientKey(*proxied, "10.1.2.3", WithForwardedFor({"198.51.100.7"})), "198.51.100.0/24");
  // The nearest untrusted hop; what lies beyond it is the client's own word.
  EXPECT_EQ(
      ClientKey(*proxied, "10.1.2.3", WithForwardedFor({"1.2.3.4, 198.51.100.7", "10.9.9.9"})),
      "198.51.100.0/24");
  EXPECT_EQ(ClientKey(*proxied, "::1", WithForwardedFor({" 203.0.113.9 "})), "203.0.113.0/24");
  // Every hop trusted: the farthest one.
  EXPECT_EQ(ClientKey(*proxied, "10.1.2.3", WithForwardedFor({"10.0.0.5"})), "10.0.0.0/24");
  // Garbage stops the walk at the last address that could be trusted.
  EXPECT_EQ(ClientKey(*proxied, "10.1.2.3", WithForwardedFor({"evil, 10.0.0.5"})), "10.0.0.0/24");
  // No header: the proxy itself.
  EXPECT_EQ(ClientKey(*proxied, "10.1.2.3", {}), "10.1.2.0/24");
}

TEST(ClientKey, RetryAfterIsTheTimeoutInSeconds) {
  EXPECT_EQ(RetryAfterSeconds(*Config({{"render-queue-timeout", "30s"}})), 30u);
  EXPECT_EQ(RetryAfterSeconds(*Config({{"render-queue-timeout", "1500ms"}})), 2u);
  EXPECT_EQ(RetryAfterSeconds(*Config({{"render-queue-timeout", "10ms"}})), 1u);
}

}  // namespace
}  // namespace shellac::proxy

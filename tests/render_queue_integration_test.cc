// The render queue behind the real binary: requests that need a render wait rather than fail, a
// 503 with Retry-After comes only past render-queue-timeout, another client's request gets
// through a flood, store hits never wait, a client that hangs up leaves the queue, an include whose render was refused leaves its frame a
// notice, and clients are told apart by address, prefix and X-Forwarded-For.
//
// Renders are held at a known point with the admin listener's /render-pause and /render-resume
// (a paused class keeps its renders waiting), and every wait is for a metric or a response.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/harness.h"

namespace shellac::test {
namespace {

// A repository with two commits; its commit page has many spellings (context=1..40,
// ignorews=0/1), each with its own diff fragment to render. The diff (2,223 changed lines) takes
// a render a few milliseconds, longer than delivering a page, so pages end in the order they
// render.
class Repo {
 public:
  Repo() {
    MakeFixture(dir_, R"SH(
set -e
git init -q -b master work
cd work
seq 1 20000 > numbers
git add . && git commit -q -m 'first'
seq 1 20010 | sed 's/^5/five/' > numbers
git add . && git commit -q -m 'second'
)SH");
    head_ = Shell("git -C " + ShellQuote(dir_.File("work")) + " rev-parse HEAD").substr(0, 40);
  }
  std::string Config(const std::string& extra) const {
    return BaseConfig(0, "cache=on\nrepo=" + dir_.File("work") + "\nrender-threads=1\n" + extra);
  }
  // A commit page whose fragment no other `n` shares.
  std::string Page(int n) const {
    return "/work/commit/?id=" + head_ + "&context=" + std::to_string(n % 40 + 1) +
           "&ignorews=" + std::to_string(n / 40 % 2);
  }
  std::string Patch() const { return "/work/patch/?id=" + head_; }

 private:
  TempDir dir_;
  std::string head_;
};

std::string Get(const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: test.local\r\nConnection: close\r\n\r\n";
}

Response AdminPost(const ShellacProcess& proxy, const std::string& target) {
  RawClient c;
  if (!c.Connect(proxy.AdminPort())) return Response{};
  return c.RoundTrip("POST " + target +
                     " HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

void Pause(const ShellacProcess& proxy, const std::string& cls) {
  Response r = AdminPost(proxy, "/render-pause?class=" + cls);
  ASSERT_EQ(r.status, 200) << r.Describe();
}

void Resume(const ShellacProcess& proxy, const std::string& cls) {
  Response r = AdminPost(proxy, "/render-resume?class=" + cls);
  ASSERT_EQ(r.status, 200) << r.Describe();
}

double Metric(const ShellacProcess& proxy, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) {
  return MetricSum(FetchMetrics(proxy.AdminPort()), name, labels);
}

// Waits until `n` renders of `cls` wait in the queue.
::testing::AssertionResult WaitQueued(const ShellacProcess& proxy, const std::string& cls,
                                      double n) {
  const std::string text = WaitForMetric(proxy.AdminPort(), "shellac_render_queue_depth",
                                         {{"class", cls}}, n, Millis(20'000));
  const double have = MetricSum(text, "shellac_render_queue_depth", {{"class", cls}});
  if (have >= n) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << have << " " << cls << " renders waiting, wanted " << n;
}

TEST(RenderQueueIntegration, BusyRenderersMakeRequestsWaitNotFail) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("")));
  Pause(proxy, "all");
  constexpr int kRequests = 24;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.push_back(std::make_unique<RawClient>());
    ASSERT_TRUE(clients.back()->Connect(proxy.Port()));
    ASSERT_TRUE(clients.back()->Send(Get(repo.Page(i))));
  }
  ASSERT_TRUE(WaitQueued(proxy, "frame", kRequests));
  for (auto& c : clients) {
    EXPECT_EQ(c->PeekAvailable(Millis(0)), "") << "nothing is answered while renders wait";
  }
  Resume(proxy, "all");
  for (auto& c : clients) {
    ReadOptions o;
    o.timeout = Millis(20'000);
    Response r = c->Read(o);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 200) << r.Describe();
    EXPECT_NE(r.body.find("five"), std::string::npos) << "the page has its diff";
  }
  EXPECT_EQ(Metric(proxy, "shellac_render_refused_total"), 0);
  EXPECT_EQ(Metric(proxy, "shellac_render_queue_started_total", {{"class", "part"}}), kRequests);
}

TEST(RenderQueueIntegration, A503WithRetryAfterOnlyPastTheTimeout) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("render-queue-timeout=700ms\n")));
  Pause(proxy, "all");
  const auto start = Clock::now();
  Response r = HttpGet(proxy.Port(), repo.Page(0), "", Millis(20'000));
  const auto waited = Clock::now() - start;
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 503) << r.Describe();
  EXPECT_EQ(r.Header("retry-after"), "1");
  EXPECT_NE(r.body.find("render-queue-timeout"), std::string::npos) << r.body;
  EXPECT_GE(waited, Millis(700)) << "refused before its wait reached render-queue-timeout";
  EXPECT_EQ(Metric(proxy, "shellac_render_refused_total", {{"reason", "timeout"}}), 1);
  EXPECT_EQ(Metric(proxy, "shellac_render_refused_total", {{"reason", "full"}}), 0);
  EXPECT_EQ(Metric(proxy, "shellac_render_queue_depth"), 0);
  Resume(proxy, "all");
  EXPECT_EQ(HttpGet(proxy.Port(), repo.Page(0)).status, 200);
}

// Reads every connection to its end at once; for each, the poll round in which it ended (-1: not
// by the deadline). Connections that end in the same round ended in an order the reader cannot
// know (it learns of them together), so only rounds are compared.
std::vector<int> EndRounds(std::vector<std::unique_ptr<RawClient>>& clients,
                           std::vector<std::string>* bodies, Millis timeout) {
  std::vector<int> rounds(clients.size(), -1);
  size_t ended = 0;
  bodies->assign(clients.size(), "");
  const auto deadline = Clock::now() + timeout;
  for (int round = 0; ended < clients.size() && Clock::now() < deadline; ++round) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < clients.size(); ++i) {
      if (rounds[i] >= 0) continue;
      fds.push_back(pollfd{clients[i]->fd(), POLLIN, 0});
      which.push_back(i);
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      char buf[16384];
      const ssize_t n = ::recv(fds[k].fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        (*bodies)[which[k]].append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        rounds[which[k]] = round;
        ++ended;
      }
    }
  }
  return rounds;
}

TEST(RenderQueueIntegration, AnotherClientsPageGetsThroughAFlood) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("")));
  // The crawler's frames render (frames go first), its 60 fragments wait.
  Pause(proxy, "part");
  constexpr int kFlood = 60;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kFlood; ++i) {
    clients.push_back(std::make_unique<RawClient>());
    ASSERT_TRUE(clients.back()->Connect(proxy.Port()));
    ASSERT_TRUE(clients.back()->Send(Get(repo.Page(i))));
  }
  ASSERT_TRUE(WaitQueued(proxy, "part", kFlood));
  // The person, from another address, arrives last.
  clients.push_back(std::make_unique<RawClient>());
  ASSERT_TRUE(clients.back()->Connect(proxy.Port(), 0, "127.0.0.3"))
      << clients.back()->last_errno();
  ASSERT_TRUE(clients.back()->Send(Get(repo.Page(kFlood))));
  ASSERT_TRUE(WaitQueued(proxy, "part", kFlood + 1));
  EXPECT_EQ(Metric(proxy, "shellac_render_clients"), 2);
  EXPECT_EQ(Metric(proxy, "shellac_render_largest_client_waiting"), kFlood);
  Resume(proxy, "part");
  std::vector<std::string> bodies;
  const std::vector<int> rounds = EndRounds(clients, &bodies, Millis(30'000));
  ASSERT_EQ(std::count(rounds.begin(), rounds.end(), -1), 0) << "a page did not end in 30 s";
  // Pages that ended before the person's, for certain (in an earlier round of reads).
  const int person_round = rounds[kFlood];
  const auto before = std::count_if(rounds.begin(), rounds.end(),
                                    [person_round](int r) { return r < person_round; });
  // In arrival order the person's page would end after all 60. Its render is the first or second
  // the thread takes; then its worker loop must run to deliver it, and on a loaded machine the
  // other worker may deliver crawler pages rendered meanwhile (each takes a render ~1 ms): a
  // bound of a quarter of the flood still tells the queue's order from arrival order.
  EXPECT_LE(before, kFlood / 4) << "the person's page ended after " << before << " of "
                                << kFlood << " crawler pages";
  std::printf("the person's page ended after %ld of %d crawler pages\n", static_cast<long>(before),
              kFlood);
  for (const auto& body : bodies) {
    EXPECT_TRUE(body.starts_with("HTTP/1.1 200 ")) << Printable(body, 200);
  }
}

TEST(RenderQueueIntegration, StoreHitsNeverWaitInTheQueue) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("")));
  ASSERT_EQ(HttpGet(proxy.Port(), repo.Patch()).status, 200);
  Pause(proxy, "all");
  RawClient waiting;
  ASSERT_TRUE(waiting.Connect(proxy.Port()));
  ASSERT_TRUE(waiting.Send(Get(repo.Page(0))));
  ASSERT_TRUE(WaitQueued(proxy, "frame", 1));
  const double started = Metric(proxy, "shellac_render_queue_started_total");
  Response hit = HttpGet(proxy.Port(), repo.Patch());
  ASSERT_TRUE(hit.ok) << hit.error;
  EXPECT_EQ(hit.status, 200);
  EXPECT_EQ(hit.Header("x-cache"), "hit");
  EXPECT_EQ(Metric(proxy, "shellac_render_queue_started_total"), started);
  EXPECT_EQ(Metric(proxy, "shellac_render_queue_depth"), 1);
  Resume(proxy, "all");
  EXPECT_EQ(waiting.Read().status, 200);
}

TEST(RenderQueueIntegration, AClientThatHangsUpLeavesTheQueue) {
  Repo repo;
  ShellacProcess proxy;
  // No page memo: each page below is asked a second time, and its frame must be rendered again.
  ASSERT_TRUE(proxy.Start(repo.Config("page-memo-size=0\n")));
  // The parts are stored first, so each page below needs only its frame rendered.
  for (int i = 0; i < 5; ++i) ASSERT_EQ(HttpGet(proxy.Port(), repo.Page(i)).status, 200);
  const double frames_before = Metric(proxy, "shellac_renders_total", {{"kind", "commit"}});
  Pause(proxy, "frame");
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<RawClient>());
    ASSERT_TRUE(clients.back()->Connect(proxy.Port()));
    ASSERT_TRUE(clients.back()->Send(Get(repo.Page(i))));
  }
  ASSERT_TRUE(WaitQueued(proxy, "frame", 5));
  const double in_flight = Metric(proxy, "shellac_requests_in_flight");
  // Three give up (as a crawler past its timeout does) while their frames wait.
  for (int i = 0; i < 3; ++i) clients[static_cast<size_t>(i)]->Close();
  const std::string text =
      WaitForMetricValue(proxy.AdminPort(), "shellac_requests_in_flight", {}, in_flight - 3,
                         Millis(20'000));
  ASSERT_EQ(MetricSum(text, "shellac_requests_in_flight"), in_flight - 3)
      << "the closed connections are still waiting";
  Resume(proxy, "frame");
  for (size_t i = 3; i < 5; ++i) {
    Response r = clients[i]->Read();
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 200) << r.Describe();
  }
  WaitForMetricValue(proxy.AdminPort(), "shellac_render_queue_depth", {}, 0);
  EXPECT_EQ(Metric(proxy, "shellac_render_refused_total", {{"reason", "gone"}}), 3);
  EXPECT_EQ(Metric(proxy, "shellac_renders_total", {{"kind", "commit"}}), frames_before + 2)
      << "a frame whose client hung up was rendered";
  EXPECT_EQ(HttpGet(proxy.Port(), repo.Page(0)).status, 200) << "the server serves on";
}

TEST(RenderQueueIntegration, AnIncludeWhoseRenderWasRefusedLeavesTheFrameANotice) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("render-queue-timeout=500ms\n")));
  Pause(proxy, "part");
  Response r = HttpGet(proxy.Port(), repo.Page(0), "", Millis(20'000));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200) << r.Describe();
  EXPECT_NE(r.body.find("second"), std::string::npos) << "the frame: the commit message";
  EXPECT_NE(r.body.find("This part of the page was not rendered: the server is busy (waited 500 "
                        "ms for a render thread (render-queue-timeout)). Reload the page in 1 s"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.find("five"), std::string::npos) << "no diff";
  EXPECT_NE(r.body.find("</html>"), std::string::npos) << "the page is whole";
  EXPECT_EQ(Metric(proxy, "shellac_esi_includes_busy_total"), 1);
  EXPECT_EQ(Metric(proxy, "shellac_esi_page_failures_total"), 0);
  // Nothing of the refusal was stored: the next view renders the diff.
  Resume(proxy, "part");
  Response again = HttpGet(proxy.Port(), repo.Page(0));
  EXPECT_EQ(again.status, 200);
  EXPECT_NE(again.body.find("five"), std::string::npos);
  EXPECT_EQ(again.body.find("not rendered"), std::string::npos);
}

TEST(RenderQueueIntegration, AWaiterForARefusedRenderRendersItself) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("render-queue-timeout=1500ms\n")));
  Pause(proxy, "part");
  RawClient first, second;
  ASSERT_TRUE(first.Connect(proxy.Port()));
  ASSERT_TRUE(first.Send(Get(repo.Patch())));
  ASSERT_TRUE(WaitQueued(proxy, "part", 1));
  // Another client asks for the same patch: it waits for the first one's render (single flight).
  ASSERT_TRUE(second.Connect(proxy.Port(), 0, "127.0.0.3"));
  ASSERT_TRUE(second.Send(Get(repo.Patch())));
  WaitForMetric(proxy.AdminPort(), "shellac_cache_single_flight_waiting", {}, 1, Millis(20'000));
  ReadOptions o;
  o.timeout = Millis(20'000);
  Response refused = first.Read(o);
  EXPECT_EQ(refused.status, 503) << refused.Describe();
  // The first render's refusal is not the second request's: it queues a render of its own.
  ASSERT_TRUE(WaitQueued(proxy, "part", 1));
  Resume(proxy, "part");
  Response served = second.Read(o);
  EXPECT_EQ(served.status, 200) << served.Describe();
  EXPECT_NE(served.body.find("\nSubject: second"), std::string::npos) << served.body.substr(0, 400);
  EXPECT_NE(served.body.find("five"), std::string::npos) << "the diff";
}

TEST(RenderQueueIntegration, ClientsAreTheirForwardedForAddressAndItsPrefix) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("trusted-proxy=127.0.0.1\nclient-prefix-v4=24\n")));
  Pause(proxy, "all");
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"", "198.51.100.7"},
      {"", "198.51.100.8"},            // the same /24: the same client
      {"", "203.0.113.9, 127.0.0.1"},  // the nearest untrusted hop counts
      {"127.0.0.3", "198.51.100.9"},   // not from a trusted proxy: the peer counts
  };
  std::vector<std::unique_ptr<RawClient>> clients;
  for (size_t i = 0; i < requests.size(); ++i) {
    clients.push_back(std::make_unique<RawClient>());
    ASSERT_TRUE(clients.back()->Connect(proxy.Port(), 0, requests[i].first));
    ASSERT_TRUE(clients.back()->Send("GET " + repo.Page(static_cast<int>(i)) +
                                     " HTTP/1.1\r\nHost: test.local\r\nX-Forwarded-For: " +
                                     requests[i].second + "\r\nConnection: close\r\n\r\n"));
  }
  ASSERT_TRUE(WaitQueued(proxy, "frame", 4));
  EXPECT_EQ(Metric(proxy, "shellac_render_clients"), 3);
  EXPECT_EQ(Metric(proxy, "shellac_render_largest_client_waiting"), 2);
  EXPECT_DOUBLE_EQ(Metric(proxy, "shellac_render_largest_client_share"), 0.5);
  Resume(proxy, "all");
  for (auto& c : clients) EXPECT_EQ(c->Read().status, 200);
}

TEST(RenderQueueIntegration, PauseNeedsAClassAndPost) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("")));
  EXPECT_EQ(AdminPost(proxy, "/render-pause?class=nope").status, 400);
  EXPECT_EQ(AdminPost(proxy, "/render-pause").status, 400);
  RawClient c;
  ASSERT_TRUE(c.Connect(proxy.AdminPort()));
  EXPECT_EQ(c.RoundTrip("GET /render-pause?class=all HTTP/1.1\r\nHost: a\r\n\r\n").status, 405);
  EXPECT_EQ(AdminPost(proxy, "/render-pause?class=background").status, 200);
  EXPECT_EQ(Metric(proxy, "shellac_render_queue_paused", {{"class", "background"}}), 1);
  EXPECT_EQ(Metric(proxy, "shellac_render_queue_paused", {{"class", "part"}}), 0);
  EXPECT_EQ(HttpGet(proxy.Port(), repo.Page(0)).status, 200) << "other classes still render";
}

}  // namespace
}  // namespace shellac::test

// The operator's side through the real binary: `shellac stat` against a running instance (its
// figures equal /metrics), and a clear message when nothing listens.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace shellac::test {
namespace {

// A bare repository "repo.git" with `commits` commits, one a day from 2021-01-01 on, each changing
// a file, so every commit has a diff.
class HistoryRepo {
 public:
  explicit HistoryRepo(int commits) {
    MakeFixture(dir_, R"SH(
set -e
git init -q -b master work
cd work
i=1
while [ $i -le $1 ]; do
  seq 1 $((i * 7)) > numbers
  echo "change $i" > "file$((i % 4)).txt"
  git add .
  d=$(printf '2021-01-%02dT12:00:00+0000' $(( (i - 1) % 28 + 1 )))
  GIT_AUTHOR_DATE=$d GIT_COMMITTER_DATE=$d git commit -q -m "commit $i"
  i=$((i + 1))
done
cd ..
git clone -q --bare work repo.git
)SH", {}, std::to_string(commits));
    head_ = Shell("git -C " + ShellQuote(dir_.File("repo.git")) + " rev-parse master").substr(0, 40);
  }
  std::string Config(const std::string& extra = "") const {
    return BaseConfig(0, "cache=on\nvirtual-root=/\nrepo.url=repo\nrepo.path=" +
                             dir_.File("repo.git") + "\n" + extra);
  }
  const std::string& head() const { return head_; }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::string head_;
};

std::string Admin(const ShellacProcess& p) { return "127.0.0.1:" + std::to_string(p.AdminPort()); }

// The number after the keys `path`, each searched for after the previous one ("null" gives -1).
// A key that ends in a quote (a route marker, `"local":{"hit"`) leaves the search just inside its
// object.
double JsonNumber(const std::string& json, const std::vector<std::string>& path) {
  size_t at = 0;
  for (const auto& key : path) {
    at = json.find(key, at);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no " << key << " in " << json;
      return -2;
    }
    at += key.size();
    if (key.back() == '"') at = json.rfind('{', at) + 1;  // a route marker: search inside it
  }
  if (json.compare(at, 4, "null") == 0) return -1;
  return std::strtod(json.c_str() + at, nullptr);
}

TEST(Stat, JsonFiguresEqualTheMetrics) {
  HistoryRepo repo(3);
  ShellacProcess proxy;
  // A cgitrc, for snapshots= (the embedded one's options are shellac's).
  const std::string cgitrc = repo.dir().File("cgitrc");
  WriteFile(cgitrc, "virtual-root=/\nsnapshots=tar\nrepo.url=repo\nrepo.path=" +
                        repo.dir().File("repo.git") + "\n");
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "cache=on\ncgitrc=" + cgitrc + "\n")));
  const std::string commit = "/repo/commit/?id=" + repo.head();
  ASSERT_EQ(HttpGet(proxy.Port(), "/repo/snapshot/repo-master.tar").status, 200);
  ASSERT_EQ(HttpGet(proxy.Port(), commit).status, 200);
  ASSERT_EQ(HttpGet(proxy.Port(), commit).status, 200);
  ASSERT_EQ(HttpGet(proxy.Port(), "/repo/patch/?id=" + repo.head()).status, 200);
  ASSERT_EQ(HttpGet(proxy.Port(), "/repo/patch/?id=" + repo.head()).status, 200);
  ASSERT_EQ(HttpGet(proxy.Port(), "/repo/log/").status, 200);
  WaitForMetric(proxy.AdminPort(), "shellac_responses_total", {{"route", "local"}}, 5);

  CommandResult stat = RunShellac({"stat", "-j", "-i", "0.2", "--admin", Admin(proxy)}, "");
  ASSERT_EQ(stat.status, 0) << stat.err;
  const std::string& j = stat.out;
  const std::string metrics = FetchMetrics(proxy.AdminPort());
  // Public counters do not move between the two reads (only admin requests happened since).
  for (const char* outcome : {"hit", "miss", "pass"}) {
    EXPECT_EQ(JsonNumber(j, {"\"requests\":", "\"local\":{\"hit\"", std::string("\"") + outcome + "\":",
                             "\"total\":"}),
              MetricSum(metrics, "shellac_responses_total", {{"route", "local"}, {"cache", outcome}}))
        << outcome << "\n" << j << "\n" << metrics;
  }
  // The patch: one miss (rendered and stored), then one hit; the commit page: rendered, then
  // answered from the page kept whole (a hit).
  EXPECT_EQ(MetricSum(metrics, "shellac_responses_total", {{"route", "local"}, {"cache", "hit"}}), 2);
  EXPECT_EQ(MetricSum(metrics, "shellac_responses_total", {{"route", "local"}, {"cache", "miss"}}), 1);
  for (const char* kind : {"commit", "diff-fragment", "patch", "log"}) {
    const double renders = MetricSum(metrics, "shellac_renders_total", {{"kind", kind}});
    EXPECT_GT(renders, 0) << kind;
    EXPECT_EQ(JsonNumber(j, {"\"renders\":", std::string("\"") + kind + "\":", "\"total\":"}), renders)
        << kind;
    EXPECT_EQ(MetricSum(metrics, "shellac_render_duration_seconds_count", {{"kind", kind}}), renders)
        << kind;
    // A quantile lies within the histogram's bounds: above 0, at most the +Inf bucket's lower
    // bound (10 s).
    const double p99 = JsonNumber(j, {"\"renders\":", std::string("\"") + kind + "\":", "\"p99_ms\":"});
    EXPECT_GT(p99, 0) << kind;
    EXPECT_LE(p99, 10'000) << kind;
  }
  EXPECT_EQ(JsonNumber(j, {"\"renders\":", "\"commit\":", "\"total\":"}), 1);
  // A snapshot's archive is made in pieces after its render: counted apart, per kind.
  const double pieces =
      MetricSum(metrics, "shellac_render_stream_pieces_total", {{"kind", "snapshot"}});
  EXPECT_GE(pieces, 1);
  EXPECT_EQ(JsonNumber(j, {"\"renders\":", "\"snapshot\":", "\"stream_pieces\":"}), pieces);
  EXPECT_EQ(JsonNumber(j, {"\"renders\":", "\"snapshot\":", "\"stream_seconds\":"}),
            MetricSum(metrics, "shellac_render_stream_seconds_total", {{"kind", "snapshot"}}));
  EXPECT_EQ(JsonNumber(j, {"\"renders\":", "\"snapshot\":", "\"render_seconds\":"}),
            MetricSum(metrics, "shellac_render_duration_seconds_sum", {{"kind", "snapshot"}}));
  EXPECT_EQ(JsonNumber(j, {"\"page_memo\":", "\"hits\":", "\"total\":"}), 1);
  EXPECT_EQ(JsonNumber(j, {"\"page_memo\":", "\"pages\":"}),
            MetricSum(metrics, "shellac_page_memo_pages"));
  EXPECT_EQ(JsonNumber(j, {"\"store\":", "\"bytes\":"}), MetricSum(metrics, "shellac_cache_bytes"));
  EXPECT_EQ(JsonNumber(j, {"\"store\":", "\"objects\":"}), MetricSum(metrics, "shellac_cache_objects"));
  EXPECT_EQ(JsonNumber(j, {"\"store\":", "\"budget_bytes\":"}),
            MetricSum(metrics, "shellac_cache_budget_bytes"));
  EXPECT_EQ(JsonNumber(j, {"\"store\":", "\"hits\":", "\"total\":"}),
            MetricSum(metrics, "shellac_cache_hits_total"));
  EXPECT_EQ(JsonNumber(j, {"\"render_queue\":", "\"threads\":"}),
            MetricSum(metrics, "shellac_render_threads"));
  // Rates are over the interval: nothing public happened in it.
  EXPECT_EQ(JsonNumber(j, {"\"requests\":", "\"local\":{\"hit\"", "\"pass\":", "\"rate\":"}), 0);
  EXPECT_GT(JsonNumber(j, {"\"requests\":", "\"admin\":{\"hit\"", "\"local\":", "\"rate\":"}), 0)
      << "the first /metrics read falls inside the interval";
}

TEST(Stat, OnceShowsRatesOverTheIntervalAndTotals) {
  HistoryRepo repo(2);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(HttpGet(proxy.Port(), "/repo/log/").status, 200);
  WaitForMetric(proxy.AdminPort(), "shellac_renders_total", {{"kind", "log"}}, 3);
  CommandResult stat = RunShellac({"stat", "-1", "--admin", Admin(proxy)}, "");
  ASSERT_EQ(stat.status, 0) << stat.err;
  EXPECT_NE(stat.out.find("REQUESTS"), std::string::npos) << stat.out;
  EXPECT_EQ(stat.out.find("\x1b["), std::string::npos) << "no terminal codes when not on a terminal";
  // "local" row: 0.0/s over the interval, 3 in total, all passed (frames are not stored).
  EXPECT_NE(stat.out.find("local          0.0          3"), std::string::npos) << stat.out;
  EXPECT_NE(stat.out.find("\nlog "), std::string::npos) << stat.out;
  EXPECT_NE(stat.out.find("STORE"), std::string::npos) << stat.out;
  // The default cache-size less the eighth kept for whole snapshot archives (repositories are
  // configured).
  EXPECT_NE(stat.out.find("of 224.0 MiB"), std::string::npos) << stat.out;
}

// Every metric /metrics writes is described in shellac(8).
TEST(Stat, EveryMetricIsInTheManual) {
  const char* man_path = std::getenv("SHELLAC_MAN");
  ASSERT_NE(man_path, nullptr) << "SHELLAC_MAN is not set";
  const std::string man = ReadFile(man_path);
  ASSERT_FALSE(man.empty()) << man_path;
  HistoryRepo repo(1);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  const std::string metrics = FetchMetrics(proxy.AdminPort());
  size_t at = 0, seen = 0;
  while ((at = metrics.find("# TYPE ", at)) != std::string::npos) {
    at += 7;
    const std::string name = metrics.substr(at, metrics.find(' ', at) - at);
    EXPECT_NE(man.find(name), std::string::npos) << name << " is not in shellac(8)";
    ++seen;
  }
  EXPECT_GT(seen, 50u);
}

TEST(Stat, SaysSoWhenNothingListens) {
  RefusingPort refusing;
  const std::string address = "127.0.0.1:" + std::to_string(refusing.port());
  for (const char* mode : {"-1", "-j"}) {
    CommandResult stat = RunShellac({"stat", mode, "--admin", address}, "");
    EXPECT_EQ(stat.status, 1) << mode;
    EXPECT_NE(stat.err.find("nothing listens on " + address + " (connection refused)"),
              std::string::npos)
        << stat.err;
    EXPECT_EQ(stat.out, "") << mode;
  }
  CommandResult bad = RunShellac({"stat", "--bogus"}, "");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("usage: shellac stat"), std::string::npos) << bad.err;
}

// A datagram socket standing in for systemd's notification socket (NOTIFY_SOCKET).
class NotifySocket {
 public:
  NotifySocket() : path_(dir_.File("notify")) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  }
  ~NotifySocket() { ::close(fd_); }
  const std::string& path() const { return path_; }
  // The next message, or "" after `timeout`.
  std::string Next(Millis timeout = Millis(10'000)) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return "";
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  TempDir dir_;
  std::string path_;
  int fd_ = -1;
};

// Type=notify: READY=1 once the listeners accept, RELOADING=1 then READY=1 around a SIGHUP reload,
// STOPPING=1 when the drain begins; the real binary with a test socket in NOTIFY_SOCKET.
TEST(Notify, ReadyReloadingAndStoppingAreSent) {
  NotifySocket notify;
  ShellacProcess proxy;
  proxy.SetEnv("NOTIFY_SOCKET", notify.path());
  ASSERT_TRUE(proxy.Start(BaseConfig()));
  const std::string ready = notify.Next();
  EXPECT_TRUE(ready.starts_with("READY=1\n")) << ready;
  EXPECT_NE(ready.find("STATUS=serving"), std::string::npos) << ready;
  EXPECT_EQ(HttpGet(proxy.Port(), "/").status, 200) << "listening when READY=1 is sent";

  proxy.Signal(SIGHUP);
  const std::string reloading = notify.Next();
  EXPECT_TRUE(reloading.starts_with("RELOADING=1\nMONOTONIC_USEC=")) << reloading;
  const std::string ready_again = notify.Next();
  EXPECT_TRUE(ready_again.starts_with("READY=1\n")) << ready_again;
  EXPECT_NE(ready_again.find("generation 2"), std::string::npos) << ready_again;
  EXPECT_TRUE(proxy.WaitForLine("reloaded configuration (generation 2)", Millis(5'000)));

  // A refused reload still ends with READY=1 (the old configuration keeps serving).
  proxy.RewriteConfig(BaseConfig() + "no-such-key=1\n");
  proxy.Signal(SIGHUP);
  EXPECT_TRUE(notify.Next().starts_with("RELOADING=1\n"));
  const std::string after_refusal = notify.Next();
  EXPECT_TRUE(after_refusal.starts_with("READY=1\n")) << after_refusal;
  EXPECT_NE(after_refusal.find("generation 2"), std::string::npos) << after_refusal;

  proxy.Signal(SIGTERM);
  EXPECT_EQ(notify.Next(), "STOPPING=1");
  EXPECT_EQ(proxy.WaitExit(Millis(10'000)), 0);
}

// SIGUSR1 reopens the access log (what logrotate's postrotate sends), whatever the configuration
// file says now, and keeps the configuration generation.
TEST(Notify, SigusrOneReopensTheAccessLog) {
  ShellacProcess proxy;
  const std::string log = proxy.Dir().File("access.log");
  std::string config = BaseConfig();
  config.replace(config.find("access-log=off"), 14, "access-log=" + log);
  ASSERT_TRUE(proxy.Start(config));
  ASSERT_EQ(HttpGet(proxy.Port(), "/first").status, 404);
  // Lines are written by each worker's periodic flush: the rotation below is of a file that has
  // /first (a line still buffered at the reopen goes to the new file).
  const auto flushed = Clock::now() + Millis(10'000);
  while (ReadFile(log).find("/first") == std::string::npos && Clock::now() < flushed)
    std::this_thread::sleep_for(Millis(20));
  ASSERT_NE(ReadFile(log).find("/first"), std::string::npos) << "/first was never logged";
  ASSERT_EQ(::rename(log.c_str(), (log + ".1").c_str()), 0);
  proxy.RewriteConfig(config + "no-such-key=1\n");  // a reload would be refused; a reopen is not
  proxy.Signal(SIGUSR1);
  ASSERT_TRUE(proxy.WaitForLine("shellac: reopened the access log", Millis(5'000)));
  ASSERT_EQ(HttpGet(proxy.Port(), "/second").status, 404);
  const auto deadline = Clock::now() + Millis(10'000);
  while (ReadFile(log).find("/second") == std::string::npos && Clock::now() < deadline)
    std::this_thread::sleep_for(Millis(20));
  EXPECT_NE(ReadFile(log).find("\"GET /second HTTP/1.1\" 404"), std::string::npos) << ReadFile(log);
  EXPECT_EQ(ReadFile(log).find("/first"), std::string::npos);
  EXPECT_NE(ReadFile(log + ".1").find("/first"), std::string::npos);
  EXPECT_EQ(ReadFile(log + ".1").find("/second"), std::string::npos);
  EXPECT_EQ(MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_config_generation"), 1);
}

// Samples in /status.json (their count), fetched from the admin port.
std::vector<std::string> StatusSamples(int admin_port, const std::string& since = "0") {
  Response r = HttpGet(admin_port, "/status.json?since=" + since);
  EXPECT_EQ(r.status, 200) << r.Describe();
  std::vector<std::string> out;
  const auto open = r.body.find("\"samples\":[");
  if (open == std::string::npos) return out;
  for (size_t at = open + 11; (at = r.body.find('[', at)) != std::string::npos;) {
    const auto end = r.body.find(']', at);
    out.push_back(r.body.substr(at + 1, end - at - 1));
    at = end;
  }
  return out;
}

// Polls /status.json until some sample satisfies `want` (field i of "time,rps,hit,p50,p99,bytes,
// errors" not null and, for rps, above 0); false after `timeout`.
bool WaitForSample(int admin_port, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    for (const auto& s : StatusSamples(admin_port)) {
      std::vector<std::string> f;
      for (size_t at = 0;;) {
        const auto comma = s.find(',', at);
        f.push_back(s.substr(at, comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
      if (f.size() == 7 && std::atof(f[1].c_str()) > 0 && f[2] != "null" && f[3] != "null")
        return true;
    }
    std::this_thread::sleep_for(Millis(100));
  }
  return false;
}

TEST(StatusPage, JsonKeepsOneSampleASecond) {
  HistoryRepo repo(2);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  ASSERT_EQ(HttpGet(proxy.Port(), "/repo/commit/?id=" + repo.head()).status, 200);
  ASSERT_EQ(HttpGet(proxy.Port(), "/repo/commit/?id=" + repo.head()).status, 200);
  ASSERT_TRUE(WaitForSample(proxy.AdminPort(), Millis(20'000)))
      << "no sample with requests, lookups and renders";
  const auto all = StatusSamples(proxy.AdminPort());
  ASSERT_GE(all.size(), 1u);
  // Times are whole seconds, increasing; ?since= gives only what is newer.
  long previous = 0;
  for (const auto& s : all) {
    const long t = std::atol(s.c_str());
    EXPECT_GT(t, previous) << s;
    previous = t;
  }
  EXPECT_TRUE(StatusSamples(proxy.AdminPort(), std::to_string(previous)).empty() ||
              std::atol(StatusSamples(proxy.AdminPort(), std::to_string(previous))[0].c_str()) > previous);
  Response json = HttpGet(proxy.AdminPort(), "/status.json");
  EXPECT_EQ(json.Header("content-type"), "application/json");
  // 256 MiB less the eighth kept for snapshot archives.
  EXPECT_NE(json.body.find("\"budget\":234881024"), std::string::npos) << json.body;
  Response page = HttpGet(proxy.AdminPort(), "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  // Self-contained: nothing is loaded from elsewhere.
  EXPECT_EQ(page.body.find("src="), std::string::npos);
  EXPECT_EQ(page.body.find("http"), std::string::npos);
  EXPECT_EQ(page.body.find("@import"), std::string::npos);
  EXPECT_EQ(HttpGet(proxy.Port(), "/status.json").status, 404) << "not on the public listener";
}

// The page in headless Chromium: once it has polled, every chart holds the samples shellac kept.
TEST(StatusPage, ChartsRenderDataInChromium) {
  HistoryRepo repo(3);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(HttpGet(proxy.Port(), "/repo/commit/?id=" + repo.head()).status, 200);
  ASSERT_TRUE(WaitForSample(proxy.AdminPort(), Millis(20'000)));
  // The last check wants two points in a chart: wait until shellac has kept two samples.
  for (const auto deadline = Clock::now() + Millis(20'000);
       StatusSamples(proxy.AdminPort()).size() < 2 && Clock::now() < deadline;)
    std::this_thread::sleep_for(Millis(50));
  ASSERT_GE(StatusSamples(proxy.AdminPort()).size(), 2u);
  TempDir profile;
  // --virtual-time-budget lets the page's timers run (it polls every second) before the DOM is
  // written out; network fetches pause virtual time, so each poll completes.
  const std::string dom = Shell(
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--no-first-run --user-data-dir=" + ShellQuote(profile.path()) +
      " --virtual-time-budget=3000 --dump-dom http://127.0.0.1:" +
      std::to_string(proxy.AdminPort()) + "/ 2>/dev/null");
  ASSERT_NE(dom.find("<div id=\"charts\">"), std::string::npos) << dom.substr(0, 3000);
  EXPECT_NE(dom.find("last sample"), std::string::npos) << dom.substr(0, 3000);
  const double samples = StatusSamples(proxy.AdminPort()).size();
  for (const char* id : {"rps", "hit", "render", "store", "errors"}) {
    const auto at = dom.find(std::string("id=\"c-") + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const auto end = dom.find("</svg>", at);
    const std::string svg = dom.substr(at, end - at);
    const auto n = svg.find("data-samples=\"");
    ASSERT_NE(n, std::string::npos) << svg;
    const double points = std::atof(svg.c_str() + n + 14);
    EXPECT_GE(points, 1) << id << ": " << svg;
    EXPECT_LE(points, 2 * samples) << id;
    EXPECT_NE(svg.find("<path class=\"line\""), std::string::npos) << id << ": " << svg;
    // The current value is shown beside the title.
    const auto v = dom.find(std::string("id=\"v-") + id + "\">");
    ASSERT_NE(v, std::string::npos);
    EXPECT_NE(dom.compare(v + 8 + std::strlen(id), 3, "\u2013"), 0) << id;
  }
  // Requests/s and the store's fill have a point for every sample the page received.
  const auto rps = dom.find("id=\"c-rps\"");
  EXPECT_GE(std::atof(dom.c_str() + dom.find("data-samples=\"", rps) + 14), 2);
}

// `shellac warm` fills a fresh instance's store with every commit's fragment; a commit page is then
// a hit for its diff, and a rerun renders nothing.
TEST(Warm, FillsTheStoreAndARerunRendersNothing) {
  HistoryRepo repo(12);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  CommandResult warm = RunShellac({"warm", "--admin", Admin(proxy)}, "", Millis(60'000));
  ASSERT_EQ(warm.status, 0) << warm.out << warm.err;
  EXPECT_NE(warm.out.find("warm: repo: 12 commits\n"), std::string::npos) << warm.out;
  EXPECT_NE(warm.out.find("warm: done: 12 commits in "), std::string::npos) << warm.out;
  EXPECT_NE(warm.out.find(": 12 rendered, 0 already stored, 0 failed\n"), std::string::npos) << warm.out;
  EXPECT_EQ(warm.out.find("\x1b["), std::string::npos) << "no terminal codes when not on a terminal";
  std::string metrics = FetchMetrics(proxy.AdminPort());
  EXPECT_EQ(MetricSum(metrics, "shellac_renders_total", {{"kind", "diff-fragment"}}), 12);
  EXPECT_EQ(MetricSum(metrics, "shellac_cache_objects"), 12);
  // Warm's "is it stored?" asks leave the store's hit and miss counts alone.
  EXPECT_EQ(MetricSum(metrics, "shellac_cache_hits_total"), 0);

  // A commit page now finds its diff in the store: no fragment render.
  const double hits = MetricSum(metrics, "shellac_esi_includes_hit_total");
  Response page = HttpGet(proxy.Port(), "/repo/commit/?id=" + repo.head());
  ASSERT_EQ(page.status, 200) << page.Describe();
  EXPECT_NE(page.body.find("commit 12"), std::string::npos);
  metrics = WaitForMetric(proxy.AdminPort(), "shellac_esi_includes_hit_total", {}, hits + 1);
  EXPECT_EQ(MetricSum(metrics, "shellac_esi_includes_hit_total"), hits + 1);
  EXPECT_EQ(MetricSum(metrics, "shellac_renders_total", {{"kind", "diff-fragment"}}), 12);

  CommandResult again = RunShellac({"warm", "repo", "--admin", Admin(proxy)}, "", Millis(60'000));
  ASSERT_EQ(again.status, 0) << again.out << again.err;
  EXPECT_NE(again.out.find(": 0 rendered, 12 already stored, 0 failed\n"), std::string::npos) << again.out;
  EXPECT_EQ(MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_renders_total", {{"kind", "diff-fragment"}}), 12)
      << "the rerun rendered nothing";
}

TEST(Warm, SinceAndLimitPickTheNewestCommits) {
  HistoryRepo repo(12);  // one commit a day, 2021-01-01 to 2021-01-12
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  CommandResult limited = RunShellac({"warm", "--limit", "4", "--admin", Admin(proxy), "repo"}, "");
  ASSERT_EQ(limited.status, 0) << limited.out << limited.err;
  EXPECT_NE(limited.out.find("warm: repo: 4 commits\n"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find(": 4 rendered, 0 already stored"), std::string::npos) << limited.out;
  // The newest four: the head's fragment is among them.
  Response listed = HttpGet(proxy.AdminPort(), "/warm/commits?repo=repo&limit=4");
  ASSERT_EQ(listed.status, 200);
  EXPECT_TRUE(listed.body.starts_with(repo.head() + "\n")) << listed.body;
  CommandResult since = RunShellac({"warm", "--since", "2021-01-07", "--admin", Admin(proxy)}, "");
  ASSERT_EQ(since.status, 0) << since.out << since.err;
  EXPECT_NE(since.out.find("warm: repo: 6 commits\n"), std::string::npos) << since.out;
  EXPECT_NE(since.out.find(": 2 rendered, 4 already stored"), std::string::npos) << since.out;
  EXPECT_EQ(MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_renders_total", {{"kind", "diff-fragment"}}), 6);
  CommandResult all_refs = RunShellac({"warm", "--all-refs", "--admin", Admin(proxy)}, "");
  EXPECT_NE(all_refs.out.find(": 6 rendered, 6 already stored"), std::string::npos) << all_refs.out;
}

TEST(Warm, ClearErrors) {
  HistoryRepo repo(1);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  CommandResult unknown = RunShellac({"warm", "nope", "--admin", Admin(proxy)}, "");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("no repository with the URL 'nope'"), std::string::npos) << unknown.err;
  CommandResult bad_since = RunShellac({"warm", "--since", "yesterday-ish", "--admin", Admin(proxy)}, "");
  EXPECT_EQ(bad_since.status, 2);
  EXPECT_NE(bad_since.err.find("--since 'yesterday-ish'"), std::string::npos) << bad_since.err;
  RefusingPort refusing;
  CommandResult nobody = RunShellac({"warm", "--admin", "127.0.0.1:" + std::to_string(refusing.port())}, "");
  EXPECT_EQ(nobody.status, 1);
  EXPECT_NE(nobody.err.find("nothing listens on"), std::string::npos) << nobody.err;

  RawClient c;
  ASSERT_TRUE(c.Connect(proxy.AdminPort()));
  Response short_id = c.RoundTrip("POST /warm/render?repo=repo&id=abc123 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(short_id.status, 400) << short_id.Describe();
  EXPECT_EQ(HttpGet(proxy.AdminPort(), "/warm/render?repo=repo&id=" + repo.head()).status, 405);
  EXPECT_EQ(HttpGet(proxy.AdminPort(), "/warm/commits").status, 400);
  EXPECT_EQ(HttpGet(proxy.Port(), "/warm/repos").status, 404) << "not on the public listener";
  RawClient d;
  ASSERT_TRUE(d.Connect(proxy.AdminPort()));
  Response unknown_id = d.RoundTrip("POST /warm/render?repo=repo&id=" + std::string(40, 'e') +
                                    " HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(unknown_id.status, 404) << unknown_id.Describe();
}

// A child process with its standard output on a pipe, for commands a test signals mid-run.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    int out[2];
    EXPECT_EQ(::pipe(out), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      std::vector<std::string> storage{ShellacBinary()};
      storage.insert(storage.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : storage) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    fd_ = out[0];
  }
  ~Child() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Reads until `needle` has been seen (true) or `timeout` passes / the output ends (false).
  bool WaitFor(const std::string& needle, Millis timeout) {
    const auto deadline = Clock::now() + timeout;
    while (out_.find(needle) == std::string::npos) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) != 1) return false;
      char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return false;
      out_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  // Reads the rest and reaps the child; its exit status (128+signal when killed).
  int Finish(Millis timeout) {
    WaitFor(std::string("\0never", 6), timeout);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    reaped_ = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  const std::string& out() const { return out_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string out_;
};

// Ctrl-C stops warm after the commit in flight, with a summary; a rerun does the rest and renders
// nothing twice. The client is stopped (SIGSTOP) right after it has listed the commits, so the
// interrupt lands with most of them still to do.
TEST(Warm, InterruptStopsCleanlyAndARerunGoesOn) {
  HistoryRepo repo(150);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  Child warm({"warm", "--admin", Admin(proxy)});
  ASSERT_TRUE(warm.WaitFor("warm: repo: 150 commits\n", Millis(30'000))) << warm.out();
  ::kill(warm.pid(), SIGSTOP);
  ::kill(warm.pid(), SIGINT);  // pending until it runs again
  ::kill(warm.pid(), SIGCONT);
  EXPECT_EQ(warm.Finish(Millis(30'000)), 130) << warm.out();
  const auto stopped = warm.out().find("warm: stopped after ");
  ASSERT_NE(stopped, std::string::npos) << warm.out();
  const long done = std::atol(warm.out().c_str() + stopped + 20);
  EXPECT_LT(done, 150) << warm.out();
  EXPECT_NE(warm.out().find(" of 150 commits in "), std::string::npos) << warm.out();
  EXPECT_NE(warm.out().find("run it again to go on"), std::string::npos) << warm.out();
  const double rendered =
      MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_renders_total", {{"kind", "diff-fragment"}});
  EXPECT_EQ(rendered, done) << "each commit it got through was rendered once";

  CommandResult rest = RunShellac({"warm", "--admin", Admin(proxy)}, "", Millis(60'000));
  ASSERT_EQ(rest.status, 0) << rest.out << rest.err;
  EXPECT_NE(rest.out.find(": " + std::to_string(150 - done) + " rendered, " + std::to_string(done) +
                          " already stored"),
            std::string::npos)
      << rest.out;
  EXPECT_EQ(MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_renders_total", {{"kind", "diff-fragment"}}), 150);
}

// The packaged service runs as its own user; a forge's repositories belong to another (git,
// www-data). They must open as they do for cgit, whatever git's safe.directory says.
TEST(Package, RepositoriesOwnedByAnotherUserAreServed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the fixture repository another owner";
  HistoryRepo repo(2);
  Shell("chown -R nobody " + ShellQuote(repo.dir().File("repo.git")));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  Response log = HttpGet(proxy.Port(), "/repo/log/");
  EXPECT_EQ(log.status, 200) << log.Describe();
  EXPECT_NE(log.body.find("commit 2"), std::string::npos);
}

// The packaged unit passes `systemd-analyze verify` (with ExecStart= pointing at the binary under
// test; `make deb-test` verifies the installed file itself), and the packaged configuration, every
// key commented out, is one the binary accepts.
TEST(Package, UnitVerifiesAndConfigurationChecks) {
  const char* source = std::getenv("SHELLAC_SOURCE");
  ASSERT_NE(source, nullptr) << "SHELLAC_SOURCE is not set";
  TempDir dir;
  std::string unit = ReadFile(std::string(source) + "/debian/shellac.service");
  ASSERT_NE(unit.find("Type=notify\n"), std::string::npos);
  for (size_t at; (at = unit.find("/usr/sbin/shellac")) != std::string::npos;)
    unit.replace(at, 17, ShellacBinary());
  WriteFile(dir.File("shellac.service"), unit);
  const std::string out = Shell("systemd-analyze verify --man=no " + ShellQuote(dir.File("shellac.service")) + " 2>&1");
  EXPECT_EQ(out, "") << out;
  CommandResult check = RunShellac({"-c", std::string(source) + "/conf/shellac.conf", "--check"}, "");
  EXPECT_EQ(check.status, 0) << check.err;
  EXPECT_EQ(check.out, "shellac: configuration ok\n");
}

}  // namespace
}  // namespace shellac::test

// The operator's side through the real binary: `shellac stat` against a running instance (its
// figures equal /metrics), and a clear message when nothing listens.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace shellac::test {
namespace {

// A bare repository "repo.git" with `commits` commits, one a day from 2021-01-01 on, each changing
// a file, so every commit has a diff.
class HistoryRepo {
 public:
  explicit HistoryRepo(int commits) {
    std::ofstream(dir_.File("make.sh")) << R"SH(
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
)SH";
    Shell("cd " + ShellQuote(dir_.path()) + " && env HOME=" + ShellQuote(dir_.path()) +
          " GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org"
          " GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org sh make.sh " +
          std::to_string(commits) + " 2>&1");
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
  ASSERT_TRUE(proxy.Start(repo.Config()));
  const std::string commit = "/repo/commit/?id=" + repo.head();
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
  // The patch: one miss (rendered and stored), then one hit.
  EXPECT_EQ(MetricSum(metrics, "shellac_responses_total", {{"route", "local"}, {"cache", "hit"}}), 1);
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
  EXPECT_EQ(JsonNumber(j, {"\"renders\":", "\"commit\":", "\"total\":"}), 2);
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
  EXPECT_NE(stat.out.find("of 256.0 MiB"), std::string::npos) << stat.out;
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
  ASSERT_EQ(::rename(log.c_str(), (log + ".1").c_str()), 0);
  proxy.RewriteConfig(config + "no-such-key=1\n");  // a reload would be refused; a reopen is not
  proxy.Signal(SIGUSR1);
  ASSERT_TRUE(proxy.WaitForLine("shellac: reopened the access log", Millis(5'000)));
  ASSERT_EQ(HttpGet(proxy.Port(), "/second").status, 404);
  // Lines are written by each worker's periodic flush: wait for the file to say so.
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
  EXPECT_NE(json.body.find("\"budget\":268435456"), std::string::npos) << json.body;
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

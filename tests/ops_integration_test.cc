// The operator's side through the real binary: `shellac stat` against a running instance (its
// figures equal /metrics), and a clear message when nothing listens.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
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

}  // namespace
}  // namespace shellac::test

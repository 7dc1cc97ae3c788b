// The page memo behind the real binary: a resident page asked again is answered from the page kept
// whole, with no render, for as long as its repository's refs, the configuration and the ages it
// shows stay the same. Fixture repositories are made with git.
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <string>
#include <thread>

#include "tests/harness.h"

namespace shellac::test {
namespace {

class Repo {
 public:
  Repo() {
    MakeFixture(dir_, R"SH(
set -e
git init -q -b master work
cd work
seq 1 200 > numbers
git add . && git commit -q -m 'first'
seq 1 210 | sed 's/^5/five/' > numbers
git add . && git commit -q -m 'second'
for i in $(seq 1 40); do seq $i 12000 > big$i.txt; done
git add . && git commit -q -m 'big files'
cd ..
git clone -q --bare work base.git
)SH",
                kThor);
  }
  std::string Config(const std::string& cgitrc_extra = "", const std::string& extra = "") const {
    WriteFile(dir_.File("cgitrc"), "virtual-root=/\n" + cgitrc_extra +
                                       "repo.url=base\nrepo.path=" + dir_.File("base.git") + "\n");
    return BaseConfig(0, "cache=on\ncgitrc=" + dir_.File("cgitrc") + "\n" + extra);
  }
  std::string Git(const std::string& args) const {
    return Shell("git -C " + ShellQuote(dir_.File("base.git")) + " " + args);
  }
  std::string Head() const { return Git("rev-parse master").substr(0, 40); }

 private:
  TempDir dir_;
};

double Metric(const ShellacProcess& proxy, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) {
  return MetricSum(FetchMetrics(proxy.AdminPort()), name, labels);
}

double Renders(const ShellacProcess& proxy, const std::string& kind) {
  return Metric(proxy, "shellac_renders_total", {{"kind", kind}});
}

constexpr char kGzip[] = "Accept-Encoding: gzip\r\n";

// Asks for `target` (gzip) until `done` holds for the page or 20 s pass; the last page.
template <typename Done>
std::string AskUntil(const ShellacProcess& proxy, const std::string& target, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string page;
  do {
    Response r = HttpGet(proxy.Port(), target, kGzip);
    EXPECT_EQ(r.status, 200) << r.Describe();
    page = r.status == 200 ? Gunzip(r.body) : std::string();
    if (done(page)) return page;
    std::this_thread::sleep_for(Millis(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return page;
}

// The refs are looked at once an hour here: every page asked again within the test is a hit,
// however slow the machine (with the default 1 s, a loaded machine can let it pass between two
// requests, and the page is rendered again, which is right but not what is tested here).
TEST(PageMemo, APageAskedAgainIsServedWithoutARenderAndTheSameBytes) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("", "refs-check-interval=1h\n")));
  const std::string target = "/base/commit/?id=" + repo.Head();
  Response first = HttpGet(proxy.Port(), target, kGzip);
  ASSERT_EQ(first.status, 200) << first.Describe();
  ASSERT_EQ(first.Header("content-encoding"), "gzip");
  WaitForMetric(proxy.AdminPort(), "shellac_renders_total", {{"kind", "commit"}}, 1);
  const double renders = Renders(proxy, "commit");
  EXPECT_EQ(Metric(proxy, "shellac_page_memo_kept_total"), 1);

  Response second = HttpGet(proxy.Port(), target, kGzip);
  ASSERT_EQ(second.status, 200) << second.Describe();
  EXPECT_EQ(second.Header("x-cache"), "hit");
  EXPECT_EQ(second.body, first.body) << "the gzip bytes as sent the first time";
  EXPECT_NE(Gunzip(second.body).find("big files"), std::string::npos);
  EXPECT_EQ(Metric(proxy, "shellac_page_memo_hits_total"), 1);

  // An identity client gets a page of its own, kept as well, and the same text.
  Response plain1 = HttpGet(proxy.Port(), target);
  Response plain2 = HttpGet(proxy.Port(), target);
  ASSERT_EQ(plain2.status, 200) << plain2.Describe();
  EXPECT_FALSE(plain2.Header("content-encoding"));
  EXPECT_EQ(plain2.Header("x-cache"), "hit");
  EXPECT_EQ(plain2.body, plain1.body);
  EXPECT_EQ(plain2.body, Gunzip(first.body));
  EXPECT_EQ(Renders(proxy, "commit"), renders + 1) << "one render for the identity page, no more";

  // A HEAD is answered without a body: the next answer on the connection is whole.
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  ReadOptions head_only;
  head_only.head_request = true;
  Response head =
      client.RoundTrip("HEAD " + target + " HTTP/1.1\r\nHost: x\r\n" + kGzip + "\r\n", head_only);
  EXPECT_EQ(head.status, 200) << head.Describe();
  EXPECT_EQ(head.Header("x-cache"), "hit");
  Response after_head =
      client.RoundTrip("GET " + target + " HTTP/1.1\r\nHost: x\r\n" + kGzip + "\r\n");
  EXPECT_EQ(after_head.status, 200) << after_head.Describe();
  EXPECT_EQ(after_head.body, first.body);

  // A page that is not a frame answers a conditional request with 304, a range with its bytes.
  const std::string file = "/base/plain/numbers?h=master";
  Response p1 = HttpGet(proxy.Port(), file, kGzip);
  ASSERT_EQ(p1.status, 200) << p1.Describe();
  Response p2 = HttpGet(proxy.Port(), file, kGzip);
  EXPECT_EQ(p2.Header("x-cache"), "hit");
  EXPECT_EQ(p2.body, p1.body);
  ASSERT_TRUE(p2.Header("etag"));
  Response not_modified = HttpGet(
      proxy.Port(), file, std::string(kGzip) + "If-None-Match: " + *p2.Header("etag") + "\r\n");
  EXPECT_EQ(not_modified.status, 304) << not_modified.Describe();
  Response range = HttpGet(proxy.Port(), file, "Range: bytes=0-3\r\n");
  EXPECT_EQ(range.status, 206) << range.Describe();
  EXPECT_EQ(range.body, "1\n2\n");
  EXPECT_EQ(Renders(proxy, "plain"), 2) << "a gzip page and an identity one";

  // Within refs-check-interval a push is not looked for: the kept page is still served.
  repo.Git("update-ref refs/heads/topic-branch master~1");
  Response kept = HttpGet(proxy.Port(), target, kGzip);
  EXPECT_EQ(kept.Header("x-cache"), "hit");
  EXPECT_EQ(kept.body, first.body);
}

// A page is kept under everything in its URL that changes it: a path log and the same log with
// follow=1 (enable-follow-links: git log --follow) are two pages, each kept and each served as
// it was made.
TEST(PageMemo, ALogAndItsFollowPageAreKeptApart) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("enable-follow-links=1\n", "refs-check-interval=1h\n")));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    for (const bool follow : {false, true}) {
      Response r = HttpGet(proxy.Port(), follow ? "/base/log/numbers?follow=1" : "/base/log/numbers",
                           kGzip);
      ASSERT_EQ(r.status, 200) << r.Describe();
      EXPECT_EQ(r.Header("x-cache"), round == 0 ? "pass" : "hit");
      const std::string page = Gunzip(r.body);
      EXPECT_NE(page.find(follow ? ">unfollow</a>)" : ">follow</a>)"), std::string::npos) << page;
      if (round == 0) WaitForMetric(proxy.AdminPort(), "shellac_page_memo_kept_total", {}, follow ? 2 : 1);
    }
  }
  EXPECT_EQ(Renders(proxy, "log"), 2);
}

TEST(PageMemo, APushOrAReloadRendersAgain) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  const std::string target = "/base/commit/?id=" + repo.Head();
  auto page = [&] { return Gunzip(HttpGet(proxy.Port(), target, kGzip).body); };
  const std::string before = page();
  ASSERT_EQ(before.find("topic-branch"), std::string::npos) << before;
  // Kept: asked again until a request lands within a second of a render's look at the refs (the
  // first one does unless the machine stalls), always the same page.
  AskUntil(proxy, target, [&](const std::string& p) {
    EXPECT_EQ(p, before);
    return Metric(proxy, "shellac_page_memo_hits_total") >= 1;
  });
  EXPECT_GE(Metric(proxy, "shellac_page_memo_hits_total"), 1);

  // A new branch shows in the header's branch list of the same commit's page.
  repo.Git("update-ref refs/heads/topic-branch master~1");
  const std::string after = AskUntil(proxy, target, [](const std::string& p) {
    return p.find("topic-branch") != std::string::npos;
  });
  EXPECT_NE(after.find("topic-branch"), std::string::npos) << after;

  // A reload that changes the cgitrc shows the change at once.
  proxy.RewriteConfig(repo.Config("css=/changed.css\n"));
  proxy.Signal(SIGHUP);
  ASSERT_TRUE(proxy.WaitForLine("shellac: reloaded configuration", Millis(5000)))
      << proxy.StderrText();
  const std::string reloaded = page();
  EXPECT_NE(reloaded.find("/changed.css"), std::string::npos) << reloaded.substr(0, 600);
  EXPECT_NE(reloaded.find("topic-branch"), std::string::npos);
}

// A log whose newest commit is 25 s old shows "0 min." until it is 30 s old, then "1 min.": the
// kept page is served meanwhile, and not once the text would read differently.
TEST(PageMemo, APageShowingAgesIsNotServedPastItsNextChange) {
  Repo repo;
  const long when = static_cast<long>(std::time(nullptr)) - 25;
  const std::string date = "@" + std::to_string(when) + " +0000";
  const std::string tree = Trimmed(repo.Git("rev-parse master^{tree}"));
  const std::string commit =
      Trimmed(Shell("GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org GIT_COMMITTER_NAME=C "
                    "GIT_COMMITTER_EMAIL=c@example.org GIT_AUTHOR_DATE=" +
                    ShellQuote(date) + " GIT_COMMITTER_DATE=" + ShellQuote(date) + " git -C " +
                    ShellQuote(Trimmed(repo.Git("rev-parse --absolute-git-dir"))) +
                    " commit-tree -p master -m recent " + tree));
  repo.Git("update-ref refs/heads/master " + commit);
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config()));
  const std::string target = "/base/log/";
  const std::string first = AskUntil(proxy, target, [](const std::string&) { return true; });
  ASSERT_NE(first.find("recent"), std::string::npos) << first;
  if (first.find(">0 min.<") == std::string::npos) {
    ADD_FAILURE() << "the machine took over 5 s to start: the first page already aged\n" << first;
    return;
  }
  const std::string later = AskUntil(
      proxy, target, [](const std::string& p) { return p.find(">1 min.<") != std::string::npos; });
  EXPECT_NE(later.find(">1 min.<"), std::string::npos) << "the page kept showing 0 min.";
  EXPECT_GE(Metric(proxy, "shellac_page_memo_hits_total"), 1) << "kept while it held";
  EXPECT_GE(static_cast<long>(std::time(nullptr)), when + 30) << "not changed before its time";
}

TEST(PageMemo, TheBudgetBoundsTheMemory) {
  Repo repo;
  ShellacProcess proxy;
  // A plain file's page is its compressed part's segments (part_store.h), ~1/4 of its text here.
  ASSERT_TRUE(proxy.Start(repo.Config("", "page-memo-size=256K\n")));
  uint64_t sent = 0;
  for (int i = 1; i <= 40; ++i) {
    Response r = HttpGet(proxy.Port(), "/base/plain/big" + std::to_string(i) + ".txt");
    ASSERT_EQ(r.status, 200) << r.Describe();
    sent += r.body.size();
  }
  ASSERT_GT(sent, 2u << 20) << "the pages add up to more than the budget";
  const std::string metrics = FetchMetrics(proxy.AdminPort());
  EXPECT_EQ(MetricSum(metrics, "shellac_page_memo_budget_bytes"), 256 << 10) << metrics;
  EXPECT_LE(MetricSum(metrics, "shellac_page_memo_bytes"), 256 << 10) << metrics;
  EXPECT_GT(MetricSum(metrics, "shellac_page_memo_pages"), 0) << metrics;
  EXPECT_GT(MetricSum(metrics, "shellac_page_memo_evictions_total"), 0) << metrics;
}

TEST(PageMemo, ZeroKeepsNothing) {
  Repo repo;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repo.Config("", "page-memo-size=0\n")));
  const std::string target = "/base/commit/?id=" + repo.Head();
  EXPECT_EQ(HttpGet(proxy.Port(), target, kGzip).status, 200);
  Response again = HttpGet(proxy.Port(), target, kGzip);
  EXPECT_EQ(again.Header("x-cache"), "pass");
  EXPECT_EQ(
      MetricSum(WaitForMetric(proxy.AdminPort(), "shellac_renders_total", {{"kind", "commit"}}, 2),
                "shellac_renders_total", {{"kind", "commit"}}),
      2);
  EXPECT_EQ(FetchMetrics(proxy.AdminPort()).find("shellac_page_memo"), std::string::npos);
}

}  // namespace
}  // namespace shellac::test

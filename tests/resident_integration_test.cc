// The resident renderer behind the real binary: commit frames rendered per request, their diff
// fragments resolved through the store without an HTTP round trip and shared by forks, patches
// stored by SHA, everything else passed to the backend. Fixture repositories are made with git.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "conf/config.h"
#include "gitfrag/gitfrag.h"
#include "tests/harness.h"

namespace shellac::test {
namespace {

// A work tree "work" with a few commits and a tag, its bare clone "base.git", and "fork.git", a
// clone that borrows base's objects through objects/info/alternates and adds a commit of its own.
class Repos {
 public:
  Repos() {
    MakeFixture(dir_, R"SH(
set -e
git init -q -b master work
cd work
seq 1 200 > numbers
printf 'int main() {\n  return 0;\n}\n' > main.c
git add . && git commit -q -m 'first'
seq 1 210 | sed 's/^5/five/' > numbers
printf 'int main() {\n  return 1;\n}\n' > main.c
git add . && git commit -q -m 'second <b>bold</b>' -m 'Body & more.'
git tag -a v1.0 -m 'one'
cd ..
git clone -q --bare work base.git
git -C base.git pack-refs --all
git clone -q --bare -s base.git fork.git
git clone -q fork.git forkwork
cd forkwork
echo fork > fork.txt && git add . && git commit -q -m 'only in the fork'
git push -q origin master
)SH", kThor);
    second_ =
        Shell("git -C " + ShellQuote(dir_.File("base.git")) + " rev-parse master").substr(0, 40);
    fork_only_ =
        Shell("git -C " + ShellQuote(dir_.File("fork.git")) + " rev-parse master").substr(0, 40);
  }

  // shellac.conf importing a cgitrc that names the two repositories, as a forge's would.
  // `extra`: cgitrc keys before the stanzas.
  std::string Config(int backend_port = 0, const std::string& extra = "") const {
    WriteFile(dir_.File("cgitrc"),
              "virtual-root=/\n" + extra + "repo.url=base\nrepo.path=" + dir_.File("base.git") +
                  "\nrepo.url=pub/forks/fork\nrepo.path=" + dir_.File("fork.git") + "\n");
    return BaseConfig(backend_port, "cache=on\ncgitrc=" + dir_.File("cgitrc") + "\n");
  }
  const TempDir& dir() const { return dir_; }
  const std::string& second() const { return second_; }
  const std::string& fork_only() const { return fork_only_; }

 private:
  TempDir dir_;
  std::string second_;
  std::string fork_only_;
};

// What gitfrag itself renders for `target` with the fragments inlined (no proxy, no store).
std::string Assembled(const ShellacProcess& proxy, const std::string& target) {
  std::string error;
  auto config = conf::Load(proxy.ConfigPath(), {}, &error);
  EXPECT_NE(config, nullptr) << error;
  if (config == nullptr) return {};
  gitfrag::Site site(*config);
  const auto q = target.find('?');
  auto route = site.Match(target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1));
  EXPECT_TRUE(route) << target;
  return route ? site.RenderAssembled(*route).body : std::string();
}

// shellac_renders_total for `kind`, once it has reached `expected` (counters are bumped by the
// render threads, possibly just after the response left) or 2 s have passed.
double Renders(const ShellacProcess& proxy, const std::string& kind, double expected) {
  return MetricSum(
      WaitForMetric(proxy.AdminPort(), "shellac_renders_total", {{"kind", kind}}, expected),
      "shellac_renders_total", {{"kind", kind}});
}

// Asks for `target` with gzip or without and expects the answer to be `want` in that coding.
void ExpectServed(const ShellacProcess& proxy, const std::string& target, bool gzip,
                  const std::string& want) {
  SCOPED_TRACE(gzip ? "gzip" : "identity");
  Response r = HttpGet(proxy.Port(), target, gzip ? "Accept-Encoding: gzip\r\n" : "");
  ASSERT_EQ(r.status, 200) << r.Describe();
  if (gzip) {
    EXPECT_EQ(r.Header("content-encoding"), "gzip");
    EXPECT_EQ(Gunzip(r.body), want);
  } else {
    EXPECT_FALSE(r.Header("content-encoding"));
    EXPECT_EQ(r.body, want);
  }
}

TEST(Resident, CommitPagesAreFramesWithOneStoredFragmentSharedByForks) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config()));
  const std::string target = "/base/commit/?id=" + repos.second();
  const std::string want = Assembled(proxy, target);
  ASSERT_NE(want.find("second &lt;b&gt;bold&lt;/b&gt;"), std::string::npos) << want.substr(0, 2000);
  ASSERT_NE(want.find("five"), std::string::npos) << "the diff is in the assembled page";

  Response identity = HttpGet(proxy.Port(), target);
  ASSERT_TRUE(identity.ok) << identity.error;
  EXPECT_EQ(identity.status, 200);
  EXPECT_EQ(identity.body, want);
  EXPECT_EQ(identity.Header("content-type"), "text/html; charset=UTF-8");
  EXPECT_EQ(identity.body.find("<esi:"), std::string::npos);

  Response gz = HttpGet(proxy.Port(), target, "Accept-Encoding: gzip\r\n");
  EXPECT_EQ(gz.Header("content-encoding"), "gzip");
  EXPECT_EQ(Gunzip(gz.body), want);

  // The fork shows its own frame around the same stored fragment.
  Response fork = HttpGet(proxy.Port(), "/pub/forks/fork/commit/?id=" + repos.second());
  ASSERT_EQ(fork.status, 200) << fork.Describe();
  EXPECT_EQ(fork.body, Assembled(proxy, "/pub/forks/fork/commit/?id=" + repos.second()));
  EXPECT_NE(fork.body, want);
  EXPECT_EQ(Renders(proxy, "commit", 3), 3);
  EXPECT_EQ(Renders(proxy, "diff-fragment", 1), 1)
      << "one render of the fragment serves every fork";

  // A commit only the fork has: the base repository does not show it.
  EXPECT_EQ(HttpGet(proxy.Port(), "/pub/forks/fork/commit/?id=" + repos.fork_only()).status, 200);
  Response missing = HttpGet(proxy.Port(), "/base/commit/?id=" + repos.fork_only());
  EXPECT_EQ(missing.status, 404) << missing.Describe();
}

// With cache=off nothing is stored: a commit frame's fragment is rendered for the one request, and
// compressed for it as any page made for one request (igzip, proxy/page_object.h), so the page
// around it takes its text and compresses it again. Both clients get gitfrag's page, every time.
TEST(Resident, WithoutTheStoreAFrameIncludesAFragmentMadeForItsRequest) {
  Repos repos;
  ShellacProcess proxy;
  std::string config = repos.Config();
  const size_t on = config.rfind("cache=on\n");
  ASSERT_NE(on, std::string::npos);
  config.replace(on, 9, "cache=off\n");
  ASSERT_TRUE(proxy.Start(config));
  const std::string target = "/base/commit/?id=" + repos.second();
  const std::string want = Assembled(proxy, target);
  ASSERT_NE(want.find("five"), std::string::npos) << "the diff is in the assembled page";
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    ExpectServed(proxy, target, /*gzip=*/true, want);
    ExpectServed(proxy, target, /*gzip=*/false, want);
  }
  EXPECT_EQ(Renders(proxy, "diff-fragment", 4), 4) << "no store: the fragment is rendered each time";
}

// A frame asked for first by a client without gzip: its part is rendered for that request and
// the client gets the part's rendered text (not its stored segments inflated); the next client of
// either kind takes the part from the store. With cache=off the part is made for each request, not
// compressed for an identity client. Every answer is gitfrag's page.
TEST(Resident, AnIdentityClientGetsAFramesPartAsRendered) {
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "cache=on" : "cache=off");
    Repos repos;
    ShellacProcess proxy;
    std::string config = repos.Config();
    if (!cache) config.replace(config.rfind("cache=on\n"), 9, "cache=off\n");
    ASSERT_TRUE(proxy.Start(config));
    for (const std::string& target :
         {"/base/commit/?id=" + repos.second(), "/base/tree/numbers?id=" + repos.second(),
          "/base/tree/?id=" + repos.second()}) {
      SCOPED_TRACE(target);
      const std::string want = Assembled(proxy, target);
      ASSERT_EQ(want.find("<esi:"), std::string::npos);
      ExpectServed(proxy, target, /*gzip=*/false, want);  // cold: the part as rendered
      ExpectServed(proxy, target, /*gzip=*/true, want);
      ExpectServed(proxy, target, /*gzip=*/false, want);  // the part from the store
    }
  }
}

// fragment-ttl: a repository-neutral part is kept that long, then rendered again on the next
// request. (Store times are whole seconds, so a part may go up to 1 s early: 3 s means 2-3 s.)
TEST(Resident, FragmentTtlBoundsHowLongAPartIsKept) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config() + "fragment-ttl=3s\n"));
  const std::string target = "/base/patch/?id=" + repos.second();
  Response first = HttpGet(proxy.Port(), target);
  const auto stored = std::chrono::steady_clock::now();
  ASSERT_EQ(first.status, 200) << first.Describe();
  EXPECT_EQ(first.Header("x-cache"), "miss");
  EXPECT_EQ(HttpGet(proxy.Port(), target).Header("x-cache"), "hit");
  // Ask until the part is gone (each hit is cheap); it must not outlive the ttl by much.
  Response again;
  const auto deadline = stored + std::chrono::seconds(15);
  do {
    again = HttpGet(proxy.Port(), target);
    ASSERT_EQ(again.status, 200) << again.Describe();
  } while (again.Header("x-cache") == "hit" && std::chrono::steady_clock::now() < deadline);
  const auto kept = std::chrono::steady_clock::now() - stored;
  EXPECT_EQ(again.Header("x-cache"), "miss") << "still stored 15 s after a 3 s fragment-ttl";
  EXPECT_GE(kept, std::chrono::milliseconds(1900)) << "gone before fragment-ttl (less 1 s rounding)";
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(Renders(proxy, "patch", 2), 2) << "rendered again once it expired";
}

// A file's tree page: a frame per request around the file's lines, stored once by the blob's id
// and included by the fork's page too; plain gives the bytes with cgit's headers. Neither reaches
// the backend.
TEST(Resident, TreePagesShareTheStoredBlobPart) {
  Repos repos;
  Origin origin;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config(origin.port())));
  const std::string target = "/base/tree/main.c";
  const std::string want = Assembled(proxy, target);
  ASSERT_NE(want.find("return 1;"), std::string::npos) << want.substr(0, 2000);
  Response first = HttpGet(proxy.Port(), target);
  ASSERT_EQ(first.status, 200) << first.Describe();
  EXPECT_EQ(first.body, want);
  EXPECT_EQ(first.body.find("<esi:"), std::string::npos);
  Response fork = HttpGet(proxy.Port(), "/pub/forks/fork/tree/main.c?h=master");
  ASSERT_EQ(fork.status, 200) << fork.Describe();
  EXPECT_EQ(fork.body, Assembled(proxy, "/pub/forks/fork/tree/main.c?h=master"));
  EXPECT_EQ(Renders(proxy, "tree", 2), 2);
  EXPECT_EQ(Renders(proxy, "blob", 1), 1) << "one render of the lines serves every fork";

  Response folder = HttpGet(proxy.Port(), "/pub/forks/fork/tree/?id=" + repos.fork_only());
  ASSERT_EQ(folder.status, 200) << folder.Describe();
  EXPECT_NE(folder.body.find("href='/pub/forks/fork/tree/fork.txt?id=" + repos.fork_only()),
            std::string::npos);

  Response plain = HttpGet(proxy.Port(), "/base/plain/main.c");
  ASSERT_EQ(plain.status, 200) << plain.Describe();
  EXPECT_EQ(plain.body, "int main() {\n  return 1;\n}\n");
  EXPECT_EQ(plain.Header("content-type"), "text/plain; charset=UTF-8");
  EXPECT_EQ(plain.Header("content-disposition"), "inline; filename=\"main.c\"");
  EXPECT_EQ(plain.Header("x-content-type-options"), "nosniff");

  Response climbing = HttpGet(proxy.Port(), "/base/tree/%2e%2e/x");
  EXPECT_EQ(climbing.status, 404) << climbing.Describe();
  EXPECT_NE(climbing.body.find("bad path"), std::string::npos) << climbing.body;
  EXPECT_EQ(HttpGet(proxy.Port(), "/base/plain/nope").status, 404);
  EXPECT_EQ(origin.RequestCount(), 0u) << "tree and plain pages never reach the backend";
}

// A plain file is a part kept once per blob id: the same blob through the fork (another
// repository, another commit) reads nothing of it and is the same bytes and headers, to gzip and
// identity clients, whole or as a HEAD; the metrics say which page read the blob.
TEST(ResidentPlain, FilesAreOneStoredPartSharedByForks) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config()));
  auto parts = [&](const std::string& which, double expected) {
    const std::string name = "shellac_plain_parts_" + which + "_total";
    return MetricSum(WaitForMetric(proxy.AdminPort(), name, {}, expected), name, {});
  };
  const std::string text = Shell("git -C " + ShellQuote(repos.dir().File("base.git")) +
                                 " cat-file blob master:numbers");
  Response first = HttpGet(proxy.Port(), "/base/plain/numbers", "Accept-Encoding: gzip\r\n");
  ASSERT_EQ(first.status, 200) << first.Describe();
  EXPECT_EQ(Gunzip(first.body), text);
  EXPECT_EQ(parts("read", 1), 1);
  EXPECT_EQ(parts("found", 0), 0);
  for (const bool gzip : {true, false}) {
    SCOPED_TRACE(gzip ? "gzip" : "identity");
    Response fork = HttpGet(proxy.Port(), "/pub/forks/fork/plain/numbers?h=master",
                            gzip ? "Accept-Encoding: gzip\r\n" : "");
    ASSERT_EQ(fork.status, 200) << fork.Describe();
    EXPECT_EQ(gzip ? Gunzip(fork.body) : fork.body, text);
    for (const char* header : {"content-type", "content-disposition", "x-content-type-options",
                               "content-security-policy"})
      EXPECT_EQ(fork.Header(header), first.Header(header)) << header;
    EXPECT_EQ(fork.Header("content-length"),
              std::to_string(gzip ? fork.body.size() : text.size()));
  }
  EXPECT_EQ(first.Header("content-type"), "text/plain; charset=UTF-8");
  EXPECT_EQ(parts("found", 2), 2) << "the fork's pages read no blob";
  EXPECT_EQ(parts("read", 1), 1);
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  ReadOptions head_only;
  head_only.head_request = true;
  Response head = client.RoundTrip(
      "HEAD /pub/forks/fork/plain/numbers?id=" + repos.fork_only() + " HTTP/1.1\r\nHost: x\r\n\r\n",
      head_only);
  EXPECT_EQ(head.status, 200) << head.Describe();
  EXPECT_EQ(head.Header("content-length"), std::to_string(text.size()));
  EXPECT_EQ(parts("found", 3), 3);
  // Another blob is another part; a path with none is a 404.
  Response other = HttpGet(proxy.Port(), "/pub/forks/fork/plain/fork.txt");
  EXPECT_EQ(other.body, "fork\n");
  EXPECT_EQ(parts("read", 2), 2);
  EXPECT_EQ(HttpGet(proxy.Port(), "/pub/forks/fork/plain/nope").status, 404);
}

// The about page is a frame around the readme part, kept by the readme's blob id: the fork's
// about page (another repository, another tip) includes the part the first rendered, the same
// text as gitfrag's page; a blob that is no readme of the repository is no part.
TEST(Resident, AboutPagesShareTheStoredReadmePart) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config(0, "readme=:main.c\n")));
  Response base = HttpGet(proxy.Port(), "/base/about/");
  ASSERT_EQ(base.status, 200) << base.Describe();
  EXPECT_EQ(base.body, Assembled(proxy, "/base/about/"));
  EXPECT_NE(base.body.find("<div id='summary'>int main() {\n  return 1;\n}\n</div>"),
            std::string::npos)
      << base.body;
  ExpectServed(proxy, "/pub/forks/fork/about/", true, Assembled(proxy, "/pub/forks/fork/about/"));
  ExpectServed(proxy, "/pub/forks/fork/about/", false, Assembled(proxy, "/pub/forks/fork/about/"));
  EXPECT_EQ(Renders(proxy, "about", 3), 3);
  EXPECT_EQ(Renders(proxy, "readme", 1), 1) << "one render of the readme serves every fork";
  const std::string numbers = Shell("git -C " + ShellQuote(repos.dir().File("base.git")) +
                                    " rev-parse master:numbers").substr(0, 40);
  EXPECT_EQ(HttpGet(proxy.Port(), "/base/esi-about/?id=" + numbers).status, 404);
}

// A repository whose readme is not found, and the about page asked without its slash: cgit's
// redirects (their Location, no body), and the connection stays open for the next request.
TEST(Resident, AboutWithoutReadmeRedirectsAsCgit) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config(0, "readme=:nope.md\n")));
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  const Response moved = client.RoundTrip("GET /base/about/ HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(moved.status, 302) << moved.Describe();
  EXPECT_EQ(moved.Header("location"), "/base/about../");
  EXPECT_EQ(moved.body, "");
  // Without its slash the about page is first sent, for good, to "about/" (the query dropped).
  const Response slash = client.RoundTrip("GET /base/about?h=master HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(slash.status, 301) << slash.Describe();
  EXPECT_EQ(slash.Header("location"), "/base/about/");
  EXPECT_EQ(slash.body, "");
  EXPECT_EQ(client.RoundTrip("GET /base/ HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
      << "the connection serves the next request";
}

// Pages made for one request that are not frames (tag, tree, plain, log, refs, summary): a gzip
// client gets the page compressed whole in one call (igzip, segments ending on a sync flush),
// an identity client the rendered text as it is; both are gitfrag's page, rendered afresh (no
// page memo) or kept whole and asked again, whole, as a range, or as a HEAD.
TEST(Resident, PagesMadeForOneRequestAreTheRenderedBytes) {
  Repos repos;
  for (const bool memo : {false, true}) {
    ShellacProcess proxy;
    std::string config = repos.Config();
    if (!memo) config += "page-memo-size=0\n";
    ASSERT_TRUE(proxy.Start(config));
    for (const std::string& target : std::vector<std::string>{
             "/base/tag/?h=v1.0", "/base/tree/", "/base/plain/numbers", "/base/log/", "/base/refs/",
          "/pub/forks/fork/", "/base/tree/?id=" + repos.second()}) {
      SCOPED_TRACE(target + (memo ? " (page memo)" : " (no page memo)"));
      const std::string want = Assembled(proxy, target);
      ASSERT_GT(want.size(), 100u);
      for (int round = 0; round < 2; ++round) {
        Response gz = HttpGet(proxy.Port(), target, "Accept-Encoding: gzip\r\n");
        ASSERT_EQ(gz.status, 200) << gz.Describe();
        EXPECT_EQ(gz.Header("content-encoding"), "gzip");
        EXPECT_EQ(gz.Header("content-length"), std::to_string(gz.body.size()));
        EXPECT_EQ(Gunzip(gz.body), want);
        EXPECT_EQ(gz.Header("x-cache"), memo && round == 1 ? "hit" : "pass");
        Response identity = HttpGet(proxy.Port(), target);
        ASSERT_EQ(identity.status, 200) << identity.Describe();
        EXPECT_FALSE(identity.Header("content-encoding"));
        EXPECT_EQ(identity.body, want);
        EXPECT_EQ(identity.Header("content-length"), std::to_string(want.size()));
        EXPECT_EQ(identity.Header("etag")->find("-gz"), std::string::npos);
        Response range = HttpGet(proxy.Port(), target, "Range: bytes=10-29\r\n");
        EXPECT_EQ(range.status, 206) << range.Describe();
        EXPECT_EQ(range.body, want.substr(10, 20));
        Response gz_range =
            HttpGet(proxy.Port(), target, "Accept-Encoding: gzip\r\nRange: bytes=-7\r\n");
        EXPECT_EQ(gz_range.status, 206) << gz_range.Describe();
        EXPECT_EQ(gz_range.body, want.substr(want.size() - 7));
      }
      RawClient client;
      ASSERT_TRUE(client.Connect(proxy.Port()));
      ReadOptions head_only;
      head_only.head_request = true;
      Response head = client.RoundTrip(
          "HEAD " + target + " HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n", head_only);
      EXPECT_EQ(head.status, 200) << head.Describe();
      Response after =
          client.RoundTrip("GET " + target + " HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
      EXPECT_EQ(after.status, 200) << after.Describe();
      EXPECT_EQ(head.Header("content-length"), after.Header("content-length"));
      EXPECT_EQ(Gunzip(after.body), want);
    }
  }
}

TEST(Resident, PatchesAreStoredBySha) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config()));
  Response first = HttpGet(proxy.Port(), "/base/patch/?id=" + repos.second());
  ASSERT_EQ(first.status, 200) << first.Describe();
  EXPECT_EQ(first.Header("x-cache"), "miss");
  EXPECT_NE(first.body.find("Subject: second <b>bold</b>"), std::string::npos) << first.body;
  Response fork = HttpGet(proxy.Port(), "/pub/forks/fork/patch/?id=" + repos.second());
  EXPECT_EQ(fork.Header("x-cache"), "hit");
  EXPECT_EQ(fork.body, first.body);
  EXPECT_EQ(Renders(proxy, "patch", 1), 1);
}

// A feed's links start with the request's Host, and https when a TLS terminator in front says so.
TEST(Resident, AFeedLinksToTheHostItWasAskedOn) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config()));
  Response plain = HttpGet(proxy.Port(), "/base/atom/?h=master");
  ASSERT_EQ(plain.status, 200) << plain.Describe();
  EXPECT_NE(plain.body.find("<id>http://test.local/base/atom?h=master</id>"), std::string::npos)
      << plain.body;
  EXPECT_NE(plain.body.find("href='http://test.local/base/commit/?id=" + repos.second() + "'"),
            std::string::npos);
  Response tls = HttpGet(proxy.Port(), "/base/atom/", "X-Forwarded-Proto: https\r\n");
  EXPECT_NE(tls.body.find("<link rel='self' href='https://test.local/base/atom'/>"),
            std::string::npos)
      << tls.body;
}

TEST(Resident, BadIdsAndOtherPages) {
  Repos repos;
  Origin origin;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config(origin.port())));
  Response unknown =
      HttpGet(proxy.Port(), "/base/commit/?id=0123456789012345678901234567890123456789");
  EXPECT_EQ(unknown.status, 404) << unknown.Describe();
  Response malformed = HttpGet(proxy.Port(), "/base/commit/?id=not-a-sha");
  EXPECT_EQ(malformed.status, 404) << malformed.Describe();
  EXPECT_EQ(origin.RequestCount(), 0u) << "resident pages never reach the backend";

  // Pages gitfrag does not render (a commit page with follow=1, whose diff cgit shows through
  // renames), and unknown repositories, go to the forge.
  const std::string followed = "/base/commit/main.c?id=" + repos.second() + "&follow=1";
  EXPECT_EQ(HttpGet(proxy.Port(), followed).body, "origin:" + followed);
  EXPECT_EQ(HttpGet(proxy.Port(), "/nope/commit/?id=" + repos.second()).body,
            "origin:/nope/commit/?id=" + repos.second());

  // Without a backend they get a 404 that says so.
  ShellacProcess alone;
  ASSERT_TRUE(alone.Start(repos.Config()));
  Response other = HttpGet(alone.Port(), followed);
  EXPECT_EQ(other.status, 404);
  EXPECT_NE(other.body.find("served by the forge"), std::string::npos) << other.body;
  // It names every page kind shellac renders (the parts are named by the pages that show them).
  for (size_t k = 0; k < gitfrag::kPageKinds; ++k) {
    const auto kind = static_cast<gitfrag::PageKind>(k);
    if (kind == gitfrag::PageKind::kDiffFragment || kind == gitfrag::PageKind::kBlob ||
        kind == gitfrag::PageKind::kReadme)
      continue;
    const std::string name = kind == gitfrag::PageKind::kClone ? "clone files"
                             : kind == gitfrag::PageKind::kIndex ? "repository index"
                                                                 : gitfrag::PageKindName(kind);
    EXPECT_NE(other.body.find(name), std::string::npos) << name << " missing: " << other.body;
  }
}

// Path-limited logs and searches are rendered resident (the backend never sees them), with the
// imported cgitrc's max-commit-count and log columns; an unknown revision is a 404.
TEST(Resident, PathLogsAndSearchesAreRendered) {
  Repos repos;
  Origin origin;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(
      repos.Config(origin.port(), "max-commit-count=1\nenable-log-filecount=1\n")));
  const std::string target = "/base/log/numbers";
  const std::string want = Assembled(proxy, target);
  ASSERT_NE(want.find("<th class='left'>Files</th>"), std::string::npos) << want;
  ASSERT_NE(want.find("[next]"), std::string::npos) << "two commits, one per page: " << want;
  Response page = HttpGet(proxy.Port(), target);
  ASSERT_EQ(page.status, 200) << page.Describe();
  EXPECT_EQ(page.body, want);
  EXPECT_NE(page.body.find("href='/base/commit/numbers?id=" + repos.second()), std::string::npos)
      << page.body;

  Response search = HttpGet(proxy.Port(), "/base/log/?qt=grep&q=BOLD");
  ASSERT_EQ(search.status, 200) << search.Describe();
  EXPECT_NE(search.body.find("second &lt;b&gt;bold&lt;/b&gt;"), std::string::npos) << search.body;
  EXPECT_EQ(search.body.find(">first<"), std::string::npos) << search.body;

  Response unknown = HttpGet(proxy.Port(), "/base/log/numbers?id=nosuchref");
  EXPECT_EQ(unknown.status, 404) << unknown.Describe();
  EXPECT_NE(unknown.body.find("nosuchref"), std::string::npos) << unknown.body;
  EXPECT_EQ(Renders(proxy, "log", 3), 3);
  EXPECT_EQ(origin.RequestCount(), 0u) << "resident pages never reach the backend";
}

// The log pages are the same bytes with a commit-graph (changed-path Bloom filters) as without:
// the base repository gets one file, the fork (whose objects are the base's through alternates,
// plus its own commit) none of its own, so its walk uses the base's graph for the shared history.
TEST(Resident, PathLogsAreTheSameWithACommitGraph) {
  Repos repos;
  const std::vector<std::string> targets = {
      "/base/log/numbers", "/base/log/main.c", "/base/log/?ofs=1", "/base/log/no/such",
      "/pub/forks/fork/log/numbers", "/pub/forks/fork/log/fork.txt", "/pub/forks/fork/log/",
      "/pub/forks/fork/log/?ofs=1&showmsg=1"};
  auto pages = [&] {
    ShellacProcess proxy;
    std::vector<std::string> bodies;
    EXPECT_TRUE(proxy.Start(repos.Config(0, "max-commit-count=1\n")));
    for (const std::string& target : targets) {
      Response page = HttpGet(proxy.Port(), target);
      EXPECT_EQ(page.status, 200) << target << page.Describe();
      bodies.push_back(page.body);
    }
    return bodies;
  };
  const std::vector<std::string> without = pages();
  Shell("env HOME=" + ShellQuote(repos.dir().path()) + " GIT_CONFIG_NOSYSTEM=1 git -C " +
        ShellQuote(repos.dir().File("base.git")) +
        " commit-graph write --reachable --changed-paths 2>&1");
  const std::vector<std::string> with = pages();
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i) EXPECT_EQ(with[i], without[i]) << targets[i];
  EXPECT_NE(with[0].find(repos.second()), std::string::npos) << with[0];
  EXPECT_NE(with[5].find(repos.fork_only()), std::string::npos) << with[5];
}

// Repositories that share objects share one history index: the fork's first path log starts the
// only build (the fork's refs and the base's, whose objects it borrows), and the base's pages are
// answered from that index without a second one; the pages are those of a walk without it.
TEST(Resident, ForksShareOneHistoryIndex) {
  Repos repos;
  const std::vector<std::string> targets = {"/base/log/numbers", "/base/log/main.c",
                                            "/pub/forks/fork/log/numbers",
                                            "/pub/forks/fork/log/fork.txt"};
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(repos.Config(0, "max-commit-count=1\n")));
  std::vector<std::string> want;
  for (const std::string& target : targets) want.push_back(Assembled(proxy, target));
  Response first = HttpGet(proxy.Port(), "/pub/forks/fork/log/fork.txt");
  ASSERT_EQ(first.status, 200) << first.Describe();
  EXPECT_EQ(first.body, want[3]);
  std::string metrics = WaitForMetricValue(proxy.AdminPort(), "shellac_history_index_stores", {},
                                           1, Millis(120'000));
  ASSERT_EQ(MetricSum(metrics, "shellac_history_index_stores"), 1) << metrics;
  for (size_t i = 0; i < targets.size(); ++i) {
    Response page = HttpGet(proxy.Port(), targets[i]);
    ASSERT_EQ(page.status, 200) << targets[i] << page.Describe();
    EXPECT_EQ(page.body, want[i]) << targets[i];
  }
  metrics = WaitForMetricValue(proxy.AdminPort(), "shellac_history_index_repositories", {}, 2);
  EXPECT_EQ(MetricSum(metrics, "shellac_history_index_repositories"), 2) << metrics;
  EXPECT_EQ(MetricSum(metrics, "shellac_history_index_stores"), 1) << metrics;
  EXPECT_EQ(MetricSum(metrics, "shellac_history_index_builds_total"), 1) << metrics;
  EXPECT_EQ(MetricSum(metrics, "shellac_history_index_failed_total"), 0) << metrics;
  // Both repositories' commits, the fork's own one included: 3.
  EXPECT_EQ(MetricSum(metrics, "shellac_history_index_commits"), 3) << metrics;
  EXPECT_NE(want[3].find(repos.fork_only()), std::string::npos) << want[3];
}

// A diff whose fragment is over 8 MiB even compressed (random base64 text): stored like any other
// (the store's large-object shard), so the second fork's page is a hit, not a second render.
TEST(Resident, FragmentsOverEightMiBAreStored) {
  TempDir dir;
  Shell("cd " + ShellQuote(dir.path()) +
        " && export HOME=$PWD GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@x"
        " GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@x && git init -q -b master work && cd work"
        " && echo small > a.txt && git add . && git commit -q -m first"
        " && head -c 10500000 /dev/urandom | base64 -w 2000 > big.txt && git add . &&"
        " git commit -q -m 'big random text' && cd .. && git clone -q --bare work base.git"
        " && git clone -q --bare -s base.git fork.git 2>&1");
  const std::string id =
      Shell("git -C " + ShellQuote(dir.File("base.git")) + " rev-parse master").substr(0, 40);
  WriteFile(dir.File("cgitrc"), "virtual-root=/\nrepo.url=base\nrepo.path=" +
                                    dir.File("base.git") + "\nrepo.url=fork\nrepo.path=" +
                                    dir.File("fork.git") + "\n");
  ShellacProcess proxy;
  ASSERT_TRUE(
      proxy.Start(BaseConfig(0, "cache=on\ncache-size=256M\ncgitrc=" + dir.File("cgitrc") + "\n")));
  const Millis slow(60'000);  // a debug or sanitizer build renders 14 MB of diff slowly
  Response first = HttpGet(proxy.Port(), "/base/commit/?id=" + id, "Accept-Encoding: gzip\r\n", slow);
  ASSERT_EQ(first.status, 200) << first.Describe();
  const std::string page = Gunzip(first.body);
  EXPECT_GT(page.size(), 13u << 20);
  EXPECT_NE(page.find("big random text"), std::string::npos);
  const std::string metrics = FetchMetrics(proxy.AdminPort());
  EXPECT_GT(MetricSum(metrics, "shellac_cache_body_bytes", {}), 8.0 * (1 << 20))
      << "the fragment is stored, and over 8 MiB compressed";
  EXPECT_EQ(Renders(proxy, "diff-fragment", 1), 1);

  Response fork = HttpGet(proxy.Port(), "/fork/commit/?id=" + id, "Accept-Encoding: gzip\r\n", slow);
  ASSERT_EQ(fork.status, 200) << fork.Describe();
  EXPECT_EQ(Gunzip(fork.body).size(), page.size());
  EXPECT_EQ(Renders(proxy, "diff-fragment", 1), 1) << "the second fork's page found it in the store";
  Response identity = HttpGet(proxy.Port(), "/base/commit/?id=" + id, "", slow);
  EXPECT_EQ(identity.body, page);
  EXPECT_EQ(Renders(proxy, "diff-fragment", 1), 1);
}

TEST(Resident, StartedInsideARepositoryWithoutConfigurationItServesIt) {
  Repos repos;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.StartWithoutConfig(
      repos.dir().File("work"),
      {"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--access-log", "off"}));
  EXPECT_TRUE(proxy.WaitForLine("serving the git repository", Millis(1'000)));
  Response index = HttpGet(proxy.Port(), "/");
  ASSERT_EQ(index.status, 200) << index.Describe();
  EXPECT_NE(index.body.find("href='/work/'"), std::string::npos) << index.body;
  // The repository's own URL is its summary, rendered here: branches and the latest commits.
  Response summary = HttpGet(proxy.Port(), "/work/");
  EXPECT_EQ(summary.status, 200) << summary.Describe();
  EXPECT_NE(summary.body.find("second &lt;b&gt;bold&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(summary.body.find("summary='repository info'"), std::string::npos);
  // With no forge behind, the pages' stylesheet and logo are shellac's own.
  Response css = HttpGet(proxy.Port(), "/cgit.css");
  EXPECT_EQ(css.status, 200) << css.Describe();
  EXPECT_NE(css.body.find("table.tabs"), std::string::npos);
  Response logo = HttpGet(proxy.Port(), "/cgit.png");
  EXPECT_EQ(logo.status, 200) << logo.Describe();
  EXPECT_NE(logo.body.find("<svg"), std::string::npos);
  Response commit = HttpGet(proxy.Port(), "/work/commit/?id=" + repos.second());
  EXPECT_EQ(commit.status, 200) << commit.Describe();
  EXPECT_NE(commit.body.find("five"), std::string::npos);
  // HTTP/1.0 without Host: the frame's include still resolves (there is no backend to name).
  RawClient old;
  ASSERT_TRUE(old.Connect(proxy.Port()));
  Response r10 = old.RoundTrip("GET /work/commit/?id=" + repos.second() + " HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(r10.ok) << r10.error;
  EXPECT_EQ(r10.status, 200);
  EXPECT_EQ(r10.body, commit.body);
}

}  // namespace
}  // namespace shellac::test

namespace shellac::test {
namespace {

// Snapshots through the binary: the formats the cgitrc enables, made by the render pool piece by
// piece and sent chunked, the tar inside equal to git's archive of the same revision.
TEST(ResidentSnapshot, StreamsGitsArchive) {
  TempDir dir;
  MakeFixture(dir, R"SH(
set -e
git init -q -b master work
cd work
for i in 1 2 3 4 5 6 7 8; do head -c 300000 /dev/urandom | od -An -tx1 > "file$i.txt"; done
git add . && git commit -q -m one
git tag -a v1.0 -m one
cd .. && git clone -q --bare work repo.git
)SH");
  WriteFile(dir.File("cgitrc"), "virtual-root=/\nsnapshots=tar.gz zip\nrepo.url=repo\nrepo.path=" +
                                    dir.File("repo.git") + "\nrepo.url=fork\nrepo.path=" +
                                    dir.File("repo.git") + "\n");
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "cache=on\ncgitrc=" + dir.File("cgitrc") + "\n")));
  Response r = HttpGet(proxy.Port(), "/repo/snapshot/repo-1.0.tar.gz", "", Millis(60'000));
  ASSERT_EQ(r.status, 200) << r.Describe();
  EXPECT_TRUE(r.chunked) << "streamed, not sent with a length";
  EXPECT_EQ(r.Header("content-type"), "application/x-gzip; charset=UTF-8");
  EXPECT_EQ(r.Header("content-disposition"), "inline; filename=\"repo-1.0.tar.gz\"");
  ASSERT_GT(r.body.size(), gitfrag::BodyStream::kPieceBytes) << "more than one piece";
  const std::string got = dir.File("got.tar.gz");
  std::ofstream(got, std::ios::binary) << r.body;
  EXPECT_EQ(Shell("gzip -dc < " + ShellQuote(got) + " > " + ShellQuote(got + ".tar") + " && git -C " +
                  ShellQuote(dir.File("repo.git")) +
                  " archive --format=tar --prefix=repo-1.0/ v1.0 | cmp - " + ShellQuote(got + ".tar") +
                  " && echo same"),
            "same\n");
  // Each file's compressed pieces were kept in the store (one object per blob), for every later
  // archive with that file: the zip below compresses nothing again.
  const std::string after_tar = FetchMetrics(proxy.AdminPort());
  const double inserts = MetricSum(after_tar, "shellac_cache_inserts_total");
  EXPECT_GE(inserts, 8);
  // The archive was made piece by piece after its render, and that time is counted: each piece
  // is counted before it is sent, so all are by the time the body has ended.
  EXPECT_GE(MetricSum(after_tar, "shellac_render_stream_pieces_total", {{"kind", "snapshot"}}), 2)
      << after_tar;
  EXPECT_GT(MetricSum(after_tar, "shellac_render_stream_seconds_total", {{"kind", "snapshot"}}), 0)
      << after_tar;
  EXPECT_EQ(MetricSum(after_tar, "shellac_render_stream_pieces_total", {{"kind", "log"}}), 0);

  // HEAD, then a GET on the same connection: the stream's end leaves it ready for the next.
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  ReadOptions head_only;
  head_only.head_request = true;
  Response head = client.RoundTrip("HEAD /repo/snapshot/repo-1.0.zip HTTP/1.1\r\nHost: x\r\n\r\n",
                                   head_only);
  EXPECT_EQ(head.status, 200) << head.Describe();
  EXPECT_EQ(head.Header("content-type"), "application/x-zip; charset=UTF-8");
  ReadOptions slow;
  slow.timeout = Millis(60'000);
  Response zip = client.RoundTrip("GET /repo/snapshot/repo-1.0.zip HTTP/1.1\r\nHost: x\r\n\r\n", slow);
  ASSERT_EQ(zip.status, 200) << zip.Describe();
  EXPECT_EQ(zip.body.substr(0, 4), std::string("PK\x03\x04", 4));
  EXPECT_EQ(MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_cache_inserts_total"), inserts)
      << "the zip's entries are the tar.gz's pieces";
  std::ofstream(got + ".zip", std::ios::binary) << zip.body;
  const std::string x = dir.File("x");
  EXPECT_EQ(Shell("unzip -tq " + ShellQuote(got + ".zip") + " >/dev/null && mkdir " + ShellQuote(x) +
                  " && cd " + ShellQuote(x) + " && unzip -q " + ShellQuote(got + ".zip") +
                  " && for i in 1 2 3 4 5 6 7 8; do cmp " + ShellQuote(dir.File("work")) +
                  "/file$i.txt repo-1.0/file$i.txt || exit 1; done && echo same"),
            "same\n");
  Response again = client.RoundTrip("GET /repo/snapshot/repo-1.0.zip HTTP/1.1\r\nHost: x\r\n\r\n", slow);
  EXPECT_EQ(again.status, 200) << again.Describe();
  EXPECT_TRUE(again.body == zip.body);
  EXPECT_EQ(again.Header("content-length"), std::to_string(zip.body.size())) << "kept whole";

  // The same archive in another repository (a fork): read from the kept copy, no tree read.
  Response mine = HttpGet(proxy.Port(), "/repo/snapshot/v1.0.tar.gz", "", Millis(60'000));
  ASSERT_EQ(mine.status, 200) << mine.Describe();
  std::string metrics = FetchMetrics(proxy.AdminPort());
  const double made = MetricSum(metrics, "shellac_archive_cache_made_total");
  const double hits = MetricSum(metrics, "shellac_archive_cache_hits_total");
  EXPECT_GE(made, 3) << metrics;
  Response theirs = HttpGet(proxy.Port(), "/fork/snapshot/v1.0.tar.gz", "", Millis(60'000));
  ASSERT_EQ(theirs.status, 200) << theirs.Describe();
  EXPECT_TRUE(theirs.body == mine.body);
  EXPECT_FALSE(theirs.chunked);
  EXPECT_EQ(theirs.Header("content-length"), std::to_string(mine.body.size()));
  metrics = FetchMetrics(proxy.AdminPort());
  EXPECT_EQ(MetricSum(metrics, "shellac_archive_cache_made_total"), made) << metrics;
  EXPECT_EQ(MetricSum(metrics, "shellac_archive_cache_hits_total"), hits + 1) << metrics;
  EXPECT_EQ(MetricSum(metrics, "shellac_archive_cache_budget_bytes"), 32 << 20)
      << "an eighth of cache-size";
  EXPECT_EQ(MetricSum(metrics, "shellac_cache_budget_bytes"), 224 << 20)
      << "the rest of cache-size is the store's";

  Response off = HttpGet(proxy.Port(), "/repo/snapshot/repo-1.0.tar.bz2");
  EXPECT_EQ(off.status, 400) << off.Describe();
  EXPECT_NE(off.body.find("Unsupported snapshot format"), std::string::npos) << off.body;
  EXPECT_EQ(HttpGet(proxy.Port(), "/repo/snapshot/repo-9.9.zip").status, 404);
}


// plain through the binary: a blob of several MiB is streamed with its length (Content-Length,
// read by that framing, not chunked, never compressed), to HTTP/1.1 and HTTP/1.0 clients and for
// HEAD on a kept-alive connection; a small file keeps cgit's content type from the cgitrc's
// mimetype.* keys and its Content-Security-Policy; a folder is cgit's html listing.
TEST(ResidentPlain, LargeBlobsAreStreamedWithTheirLength) {
  TempDir dir;
  MakeFixture(dir, R"SH(
set -e
git init -q -b master work
cd work
head -c 6000000 /dev/urandom > big.bin
seq 1 700000 > big.txt
printf '<svg/>' > pic.svg && printf '<p>x</p>' > page.html
git add . && git commit -q -m one
cd .. && git clone -q --bare work repo.git
)SH");
  WriteFile(dir.File("cgitrc"), "virtual-root=/\nmimetype.svg=image/svg+xml\n"
                                "mimetype.html=text/html\nrepo.url=repo\nrepo.path=" +
                                    dir.File("repo.git") + "\n");
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "cache=on\ncgitrc=" + dir.File("cgitrc") + "\n")));
  auto same_as = [&](const std::string& body, const std::string& file) {
    const std::string got = dir.File("got");
    std::ofstream(got, std::ios::binary) << body;
    return Shell("cmp " + ShellQuote(got) + " " + ShellQuote(dir.File("work/" + file)) +
                 " && echo same") == "same\n";
  };
  ReadOptions slow;
  slow.timeout = Millis(60'000);
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  Response big = client.RoundTrip(
      "GET /repo/plain/big.bin HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n", slow);
  ASSERT_EQ(big.status, 200) << big.Describe();
  EXPECT_FALSE(big.chunked);
  EXPECT_EQ(big.Header("content-length"), "6000000");
  EXPECT_EQ(big.Header("content-encoding"), std::nullopt) << "streamed as it is";
  EXPECT_EQ(big.Header("content-type"), "application/octet-stream");
  EXPECT_EQ(big.Header("content-security-policy"), "default-src 'none'");
  EXPECT_EQ(big.Header("content-disposition"), "inline; filename=\"big.bin\"");
  EXPECT_TRUE(same_as(big.body, "big.bin"));
  ReadOptions head_only;
  head_only.head_request = true;
  Response head =
      client.RoundTrip("HEAD /repo/plain/big.txt HTTP/1.1\r\nHost: x\r\n\r\n", head_only);
  EXPECT_EQ(head.status, 200) << head.Describe();
  const std::string text_size =
      Shell("wc -c < " + ShellQuote(dir.File("work/big.txt"))).substr(0, 7);  // 4.8 MB
  EXPECT_EQ(head.Header("content-length"), text_size);
  EXPECT_EQ(head.Header("content-type"), "text/plain; charset=UTF-8");
  Response text = client.RoundTrip("GET /repo/plain/big.txt HTTP/1.1\r\nHost: x\r\n\r\n", slow);
  ASSERT_EQ(text.status, 200) << text.Describe();
  EXPECT_TRUE(same_as(text.body, "big.txt"));

  RawClient old;
  ASSERT_TRUE(old.Connect(proxy.Port()));
  Response ten = old.RoundTrip("GET /repo/plain/big.bin HTTP/1.0\r\n\r\n", slow);
  ASSERT_EQ(ten.status, 200) << ten.Describe();
  EXPECT_EQ(ten.Header("content-length"), "6000000");
  EXPECT_TRUE(same_as(ten.body, "big.bin"));

  Response svg = HttpGet(proxy.Port(), "/repo/plain/pic.svg");
  EXPECT_EQ(svg.body, "<svg/>");
  EXPECT_EQ(svg.Header("content-type"), "image/svg+xml; charset=UTF-8");
  EXPECT_EQ(svg.Header("content-security-policy"), "default-src 'none'");
  Response html = HttpGet(proxy.Port(), "/repo/plain/page.html");
  EXPECT_EQ(html.Header("content-type"), "text/plain; charset=UTF-8") << "enable-html-serving is off";
  Response folder = HttpGet(proxy.Port(), "/repo/plain/");
  EXPECT_EQ(folder.Header("content-type"), "text/html; charset=UTF-8");
  EXPECT_NE(folder.body.find("<li><a href='/repo/plain/big.bin'>big.bin</a></li>"),
            std::string::npos) << folder.body;
  Response missing = HttpGet(proxy.Port(), "/repo/plain/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("no such path in this revision: nope"), std::string::npos);
}

// A source-filter's part through the binary: rendered once for two repositories with that filter
// (stored under a key naming it), again for a repository with another filter; a filter that
// fails is shown with its reason and rendered again on the next request (never stored).
TEST(ResidentPlain, SourceFilterPartsAreSharedByFilter) {
  Repos repos;
  const std::string upper = repos.dir().File("upper.sh"), broken = repos.dir().File("broken.sh");
  WriteFile(upper, "#!/bin/sh\necho \"<i>$1</i>\"\ntr a-z A-Z\n");
  WriteFile(broken, "#!/bin/sh\necho half\nexit 2\n");
  Shell("chmod +x " + ShellQuote(upper) + " " + ShellQuote(broken));
  WriteFile(repos.dir().File("cgitrc"),
            "virtual-root=/\nenable-filter-overrides=1\nsource-filter=" + upper +
                "\nrepo.url=base\nrepo.path=" +
                repos.dir().File("base.git") + "\nrepo.url=pub/forks/fork\nrepo.path=" +
                repos.dir().File("fork.git") + "\nrepo.url=broken\nrepo.path=" +
                repos.dir().File("base.git") + "\nrepo.source-filter=" + broken + "\n");
  ShellacProcess proxy;
  ASSERT_TRUE(
      proxy.Start(BaseConfig(0, "cache=on\ncgitrc=" + repos.dir().File("cgitrc") + "\n")));
  Response base = HttpGet(proxy.Port(), "/base/tree/main.c");
  ASSERT_EQ(base.status, 200) << base.Describe();
  EXPECT_NE(base.body.find("<i>main.c</i>\nINT MAIN() {"), std::string::npos) << base.body;
  Response fork = HttpGet(proxy.Port(), "/pub/forks/fork/tree/main.c");
  ASSERT_EQ(fork.status, 200) << fork.Describe();
  EXPECT_NE(fork.body.find("RETURN 1;"), std::string::npos);
  EXPECT_EQ(Renders(proxy, "blob", 1), 1) << "one filter run serves both repositories";
  for (int i = 0; i < 2; ++i) {
    Response half = HttpGet(proxy.Port(), "/broken/tree/main.c");
    ASSERT_EQ(half.status, 200) << half.Describe();
    EXPECT_NE(half.body.find("<code>half\n</code>"), std::string::npos) << half.body;
  }
  EXPECT_EQ(Renders(proxy, "blob", 3), 3) << "a failed filter's part is rendered each time";
}


// cgit's dumb-HTTP clone paths through the binary: a real `git clone` (the client falls back to
// dumb HTTP, since shellac does not speak smart HTTP) of a repository with a pack and loose objects
// gives the same objects and refs, with no backend; info/refs and objects/info/packs are cgit's
// bytes; files outside the objects folder are 404 with the reason; enable-http-clone=0 leaves the
// paths to the upstream.
class CloneFixture {
 public:
  CloneFixture() {
    MakeFixture(dir_, R"SH(
set -e
git init -q -b master work
cd work
for i in 1 2 3; do seq 1 $((i * 3000)) > "f$i"; git add .; git commit -q -m "c$i"; done
git tag -a v1.0 -m one
git -c advice.nestedTag=false tag -a nested -m two v1.0
git tag light HEAD~2
git branch other HEAD~1
cd ..
git clone -q --bare work repo.git
git -C repo.git repack -q -a -d
git -C repo.git update-server-info
cd work
seq 1 5000 > f4 && git add . && git commit -q -m c4
git tag -a v2.0 -m two
git push -q ../repo.git master v2.0
cd ..
mkdir -p repo.git/objects/zz
ln -s ../../config repo.git/objects/zz/config
echo secret > secret
)SH");
  }
  std::string Env() const {
    return "HOME=" + ShellQuote(dir_.path()) +
           " GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_AUTHOR_NAME=A"
           " GIT_AUTHOR_EMAIL=a@example.org GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org";
  }
  std::string Git(const std::string& repo, const std::string& args) const {
    return Shell("env " + Env() + " git -C " + ShellQuote(dir_.File(repo)) + " " + args);
  }
  std::string Cgitrc(const std::string& extra) const {
    const std::string path = dir_.File("cgitrc");
    WriteFile(path, "virtual-root=/\n" + extra + "repo.url=repo\nrepo.path=" + dir_.File("repo.git") + "\n");
    return path;
  }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

TEST(ResidentClone, GitClonesOverDumbHttp) {
  CloneFixture f;
  const std::string counts = f.Git("repo.git", "count-objects -v");
  ASSERT_EQ(counts.find("count: 0\n"), std::string::npos) << "loose objects too: " << counts;
  ASSERT_NE(counts.find("packs: 1\n"), std::string::npos) << counts;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "cache=on\ncgitrc=" + f.Cgitrc("cache-size=0\n") + "\n")));
  const std::string url = "http://127.0.0.1:" + std::to_string(proxy.Port()) + "/repo";
  Shell("cd " + ShellQuote(f.dir().path()) + " && env " + f.Env() + " git clone -q " + url +
        " got 2>&1");
  f.Git("got", "fsck --full --strict");
  EXPECT_EQ(f.Git("got", "rev-parse HEAD origin/master origin/other"),
            f.Git("repo.git", "rev-parse master master other"));
  const std::string tags = "for-each-ref --format='%(objectname) %(refname)' refs/tags";
  EXPECT_EQ(f.Git("got", tags), f.Git("repo.git", tags));
  const std::string objects = "rev-list --objects --all | sort";
  EXPECT_EQ(f.Git("got", objects), f.Git("repo.git", objects));

  // info/refs is made per request (the file update-server-info left is stale) as cgit makes it.
  Response refs = HttpGet(proxy.Port(), "/repo/info/refs?service=git-upload-pack");
  ASSERT_EQ(refs.status, 200) << refs.Describe();
  EXPECT_EQ(refs.Header("content-type"), "text/plain; charset=UTF-8");
  EXPECT_NE(refs.body.find(f.Git("repo.git", "rev-parse v2.0").substr(0, 40) + "\trefs/tags/v2.0\n"),
            std::string::npos)
      << refs.body;
  EXPECT_NE(refs.body.find(f.Git("repo.git", "rev-parse 'v1.0^{commit}'").substr(0, 40) +
                           "\trefs/tags/nested^{}\n"),
            std::string::npos)
      << "a nested tag peels to its commit: " << refs.body;
  EXPECT_NE(refs.body, ReadFile(f.dir().File("repo.git/info/refs")));
  Response packs = HttpGet(proxy.Port(), "/repo/objects/info/packs");
  ASSERT_EQ(packs.status, 200) << packs.Describe();
  const std::string pack_name =
      Shell("cd " + ShellQuote(f.dir().File("repo.git/objects/pack")) + " && ls *.pack | tr -d '\\n'");
  EXPECT_EQ(packs.body, "P " + pack_name + "\n");
  ASSERT_TRUE(CgitInstalled());
  EXPECT_EQ(refs.body, CgiBody(RunCgit(f.dir().File("cgitrc"), "/repo/info/refs")));
  EXPECT_EQ(packs.body, CgiBody(RunCgit(f.dir().File("cgitrc"), "/repo/objects/info/packs")));

  // Files: streamed from the file with its length, never stored or compressed.
  Response got_pack = HttpGet(proxy.Port(), "/repo/objects/pack/" + pack_name,
                              "Accept-Encoding: gzip\r\n");
  ASSERT_EQ(got_pack.status, 200) << got_pack.Describe();
  EXPECT_FALSE(got_pack.chunked);
  EXPECT_EQ(got_pack.Header("content-length"), std::to_string(got_pack.body.size()));
  EXPECT_EQ(got_pack.Header("content-encoding"), std::nullopt);
  EXPECT_EQ(got_pack.Header("content-type"), "application/octet-stream; charset=UTF-8");
  EXPECT_EQ(got_pack.Header("content-disposition"),
            "inline; filename=\"objects/pack/" + pack_name + "\"");
  EXPECT_TRUE(got_pack.body == ReadFile(f.dir().File("repo.git/objects/pack/" + pack_name)));
  const std::string loose = f.Git("repo.git", "rev-parse v2.0").substr(0, 40);
  Response object = HttpGet(proxy.Port(), "/repo/objects/" + loose.substr(0, 2) + "/" + loose.substr(2));
  ASSERT_EQ(object.status, 200) << object.Describe();
  EXPECT_TRUE(object.body ==
              ReadFile(f.dir().File("repo.git/objects/" + loose.substr(0, 2) + "/" + loose.substr(2))));
  Response head = HttpGet(proxy.Port(), "/repo/HEAD");
  ASSERT_EQ(head.status, 200) << head.Describe();
  EXPECT_EQ(head.body, "ref: refs/heads/master\n");

  // Nothing outside the objects folder; unknown paths.
  const std::pair<const char*, const char*> refused[] = {
      {"/repo/objects/../config", "\"..\""},
      {"/repo/objects/%2e%2e/config", "\"..\""},
      {"/repo/objects/pack/..%2f..%2f..%2fsecret", "\"..\""},
      {"/repo/objects//etc/passwd", "no file named"},
      {"/repo/objects/zz/config", "leads outside"},
      {"/repo/objects/zz/a%20b", "outside [A-Za-z0-9/.-]"},
      {"/repo/objects/pack", "not a file"},
      {"/repo/objects/ff/0000000000000000000000000000000000000", "Not found"},
      {"/repo/info/alternates", "Not found"},
  };
  for (const auto& [path, reason] : refused) {
    Response r = HttpGet(proxy.Port(), path);
    EXPECT_EQ(r.status, 404) << path << ": " << r.Describe();
    EXPECT_NE(r.body.find(reason), std::string::npos) << path << ": " << r.body;
  }
  EXPECT_GE(Renders(proxy, "clone", 20), 20) << "git's requests and these, counted as clone renders";
}

// info/refs is made once per generation of the refs and kept compressed in the store for gzip
// clients: a second request stores nothing new, and a ref created, moved or deleted shows in the
// next generation (the refs are looked at once a second), for gzip and identity clients alike.
// info/refs kept in the store is kept for one generation of the refs of one process: a restart
// that loads the store from its snapshot counts generations from 1 again, and must not serve the
// refs of the process before it (changed while it was down) for a generation of the same number.
TEST(ResidentClone, InfoRefsAfterARestartAreTheRefsOfNow) {
  CloneFixture f;
  const std::string snapshot = f.dir().File("store.snapshot");
  const std::string config =
      BaseConfig(0, "cache=on\nstore-snapshot=" + snapshot + "\ncgitrc=" + f.Cgitrc("") + "\n");
  auto expected = [&f] {
    std::string text = f.Git("repo.git", "show-ref --dereference");
    for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) text[at + 40] = '\t';
    return text;
  };
  auto gzip = [](const ShellacProcess& proxy) {
    Response r = HttpGet(proxy.Port(), "/repo/info/refs", "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(r.status, 200) << r.Describe();
    return r.status == 200 ? Gunzip(r.body) : std::string();
  };
  {
    ShellacProcess proxy;
    ASSERT_TRUE(proxy.Start(config));
    EXPECT_EQ(gzip(proxy), expected());
    proxy.Signal(SIGTERM);
    ASSERT_EQ(proxy.WaitExit(Millis(20'000)), 0) << proxy.StderrText();
    ASSERT_NE(proxy.StderrText().find(" written: "), std::string::npos) << proxy.StderrText();
  }
  f.Git("repo.git", "update-ref refs/heads/while-down master~1");
  const std::string now = expected();
  ASSERT_NE(now.find("refs/heads/while-down"), std::string::npos) << now;
  ShellacProcess again;
  ASSERT_TRUE(again.Start(config));
  EXPECT_EQ(gzip(again), now) << again.StderrText();
  EXPECT_EQ(HttpGet(again.Port(), "/repo/info/refs").body, now);
}

TEST(ResidentClone, InfoRefsFollowsTheRefs) {
  CloneFixture f;
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "cache=on\ncgitrc=" + f.Cgitrc("") + "\n")));
  // What cgit sends: every ref under refs/ by name, a tag's line followed by what it peels to.
  auto expected = [&f] {
    std::string text = f.Git("repo.git", "show-ref --dereference");
    for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) text[at + 40] = '\t';
    return text;
  };
  auto gzip = [&proxy] {
    Response r = HttpGet(proxy.Port(), "/repo/info/refs", "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(r.status, 200) << r.Describe();
    EXPECT_EQ(r.Header("content-encoding"), "gzip") << r.Describe();
    return r.status == 200 ? Gunzip(r.body) : std::string();
  };
  auto identity = [&proxy] { return HttpGet(proxy.Port(), "/repo/info/refs").body; };
  auto inserts = [&proxy] {
    return MetricSum(FetchMetrics(proxy.AdminPort()), "shellac_cache_inserts_total", {});
  };
  // Asks (gzip) until the text is `want` or 10 s have passed; the last text seen.
  auto await = [&gzip](const std::string& want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string got = gzip();
    while (got != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(Millis(20));
      got = gzip();
    }
    return got;
  };

  const std::string first = expected();
  ASSERT_NE(first.find("\trefs/tags/nested^{}\n"), std::string::npos) << first;
  EXPECT_EQ(gzip(), first);
  const double kept = inserts();
  EXPECT_EQ(kept, 1) << "the first gzip answer is kept";
  EXPECT_EQ(gzip(), first);
  EXPECT_EQ(identity(), first);
  EXPECT_EQ(inserts(), kept) << "the kept answer served, nothing made again";

  f.Git("repo.git", "update-ref refs/heads/new master~2");
  const std::string second = expected();
  ASSERT_NE(second, first);
  EXPECT_EQ(await(second), second) << "a new branch shows";
  EXPECT_EQ(identity(), second);
  EXPECT_EQ(inserts(), kept + 1) << "one more answer kept, for the new generation";

  f.Git("repo.git", "update-ref refs/heads/new master");
  f.Git("repo.git", "update-ref -d refs/heads/other");
  const std::string third = expected();
  ASSERT_EQ(third.find("refs/heads/other"), std::string::npos) << third;
  EXPECT_EQ(await(third), third) << "a moved branch and a deleted one show";
  EXPECT_EQ(identity(), third);
}

TEST(ResidentClone, OffLeavesThePathsToTheUpstream) {
  CloneFixture f;
  {
    ShellacProcess proxy;
    ASSERT_TRUE(proxy.Start(BaseConfig(0, "cgitrc=" + f.Cgitrc("enable-http-clone=0\n") + "\n")));
    EXPECT_EQ(HttpGet(proxy.Port(), "/repo/info/refs").status, 404);
    EXPECT_EQ(HttpGet(proxy.Port(), "/repo/HEAD").status, 404);
    const std::string url = "http://127.0.0.1:" + std::to_string(proxy.Port()) + "/repo";
    EXPECT_EQ(Shell("cd " + ShellQuote(f.dir().path()) + " && env " + f.Env() + " git clone -q " +
                    url + " off >/dev/null 2>&1 || echo refused"),
              "refused\n");
  }
  Origin origin;
  {
    ShellacProcess proxy;
    ASSERT_TRUE(proxy.Start(
        BaseConfig(origin.port(), "cgitrc=" + f.Cgitrc("enable-http-clone=0\n") + "\n")));
    Response packs = HttpGet(proxy.Port(), "/repo/objects/info/packs");
    EXPECT_EQ(packs.body, "origin:/repo/objects/info/packs") << packs.Describe();
  }
  // On, with an upstream: a smart client's first request goes to it (a smart-HTTP server behind
  // keeps serving clones); a dumb client's requests are answered here.
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(origin.port(), "cgitrc=" + f.Cgitrc("") + "\n")));
  Response smart = HttpGet(proxy.Port(), "/repo/info/refs?service=git-upload-pack");
  EXPECT_EQ(smart.body, "origin:/repo/info/refs?service=git-upload-pack") << smart.Describe();
  Response dumb = HttpGet(proxy.Port(), "/repo/info/refs");
  EXPECT_EQ(dumb.status, 200) << dumb.Describe();
  EXPECT_NE(dumb.body.find("\trefs/heads/master\n"), std::string::npos) << dumb.body;
  Response head = HttpGet(proxy.Port(), "/repo/HEAD");
  EXPECT_EQ(head.body, "ref: refs/heads/master\n") << head.Describe();
}

// blame-timeout through the binary: with one render thread, a blame past its budget (1 ms on a
// 3000-commit history) is answered 503 with the reason, not stored, and the thread renders the
// next page at once; with a forge behind shellac, blame is still rendered here.
TEST(Resident, ABlamePastItsBudgetFreesTheRenderThread) {
  TempDir dir;
  MakeLongHistory(dir.File("long.git"));
  WriteFile(dir.File("cgitrc"),
            "virtual-root=/\nenable-blame=1\nrepo.url=long\nrepo.path=" + dir.File("long.git") + "\n");
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "cache=on\nrender-threads=1\nrender-reserve-threads=0\n"
                                        "blame-timeout=1ms\ncgitrc=" + dir.File("cgitrc") + "\n")));
  for (int round = 1; round <= 2; ++round) {
    Response late = HttpGet(proxy.Port(), "/long/blame/f.txt");
    EXPECT_EQ(late.status, 503) << late.Describe();
    EXPECT_NE(late.body.find("blame of f.txt took longer than 1 ms"), std::string::npos) << late.body;
    EXPECT_NE(late.Header("x-cache"), "hit") << "a stopped blame is not stored";
  }
  EXPECT_EQ(Renders(proxy, "blame", 2), 2);
  Response next = HttpGet(proxy.Port(), "/long/tree/f.txt");
  EXPECT_EQ(next.status, 200) << next.Describe();
  // With a forge behind shellac, blame pages are still shellac's: the forge is never asked.
  Origin origin;
  ShellacProcess with_forge;
  ASSERT_TRUE(with_forge.Start(BaseConfig(origin.port(), "cgitrc=" + dir.File("cgitrc") + "\n")));
  Response blame = HttpGet(with_forge.Port(), "/long/blame/f.txt");
  EXPECT_EQ(blame.status, 200) << blame.Describe();
  EXPECT_NE(blame.body.find("<table class='blame blob'>"), std::string::npos) << Printable(blame.body);
  EXPECT_EQ(Renders(with_forge, "blame", 1), 1);
  EXPECT_EQ(origin.RequestCount(), 0u);
}

// How often blames use a remembered one, in /metrics. On 20 commits of the long history (f.txt
// changed by every commit, g.txt only by every 5th): g.txt at commit 19 walks back to its last
// change and is remembered there; g.txt at commit 18 passes every line whole to that commit and
// takes them all from the remembered blame (no diff); f.txt at commit 10 finds none; f.txt at
// commit 11 diffs once and takes the unchanged lines from commit 10's.
TEST(Resident, MetricsCountRememberedBlamesUsed) {
  TempDir dir;
  MakeLongHistory(dir.File("long.git"), 20);
  WriteFile(dir.File("cgitrc"),
            "virtual-root=/\nenable-blame=1\nrepo.url=long\nrepo.path=" + dir.File("long.git") + "\n");
  auto commit = [&](int n) {
    return Trimmed(Shell("git -C " + ShellQuote(dir.File("long.git")) + " rev-parse master~" +
                         std::to_string(20 - n)));
  };
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(0, "render-threads=1\ncgitrc=" + dir.File("cgitrc") + "\n")));
  struct Step {
    std::string path;
    int commit;
    double used, whole, recalls, remembered;
  };
  const Step steps[] = {{"g.txt", 19, 0, 0, 0, 1},
                        {"g.txt", 18, 1, 1, 1, 1},
                        {"f.txt", 10, 1, 1, 1, 2},
                        {"f.txt", 11, 2, 1, 2, 3}};
  double blames = 0;
  for (const Step& step : steps) {
    SCOPED_TRACE(step.path + " at commit " + std::to_string(step.commit));
    Response page = HttpGet(proxy.Port(), "/long/blame/" + step.path + "?id=" + commit(step.commit));
    ASSERT_EQ(page.status, 200) << page.Describe();
    EXPECT_NE(page.body.find("<table class='blame blob'>"), std::string::npos) << Printable(page.body);
    const std::string metrics =
        WaitForMetricValue(proxy.AdminPort(), "shellac_blames_total", {}, ++blames);
    EXPECT_EQ(MetricSum(metrics, "shellac_blames_total"), blames) << metrics;
    EXPECT_EQ(MetricSum(metrics, "shellac_blame_memo_used_total"), step.used) << metrics;
    EXPECT_EQ(MetricSum(metrics, "shellac_blame_memo_whole_total"), step.whole) << metrics;
    EXPECT_EQ(MetricSum(metrics, "shellac_blame_memo_recalls_total"), step.recalls) << metrics;
    EXPECT_EQ(MetricSum(metrics, "shellac_blame_memo_blames"), step.remembered) << metrics;
    EXPECT_GT(MetricSum(metrics, "shellac_blame_memo_bytes"), 0) << metrics;
  }
}

}  // namespace
}  // namespace shellac::test

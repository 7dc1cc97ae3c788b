// Edge Side Includes through the real binary: an in-test origin serves ESI pages and fragments,
// clients talk raw HTTP over loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace shellac::test {
namespace {

using namespace std::chrono_literals;

const Headers kEsi = {{"Content-Type", "text/html"},
                      {"Surrogate-Control", "content=\"ESI/1.0\""},
                      {"Cache-Control", "max-age=60"}};
const Headers kCacheable = {{"Content-Type", "text/html"}, {"Cache-Control", "max-age=60"}};
const Headers kNoStore = {{"Content-Type", "text/html"}, {"Cache-Control", "no-store"}};

std::string EsiConfig(int backend_port, const std::string& extra = "") {
  return BaseConfig(backend_port, "cache=on\n" + extra);
}

// A site: target -> (headers, body); anything else is 404.
struct Page {
  Headers headers;
  std::string body;
  int status = 200;
};
OriginHandler Site(std::map<std::string, Page> pages) {
  return [pages = std::move(pages)](const OriginRequest& req, OriginConnection& c) {
    auto it = pages.find(req.target);
    if (it == pages.end()) {
      c.SendFixed(404, "no such page " + req.target + "\n", {{"Content-Type", "text/plain"}});
      return;
    }
    c.SendFixed(it->second.status, it->second.body, it->second.headers);
  };
}

size_t CountTarget(Origin& origin, const std::string& target) {
  size_t n = 0;
  for (const auto& r : origin.Requests()) n += r.target == target;
  return n;
}

TEST(Esi, SurrogateControlPageIsAssembledStoredAndServedAsStitchedGzip) {
  Origin origin(Site(
      {{"/page", {kEsi, "<html><p>before</p><esi:include src=\"/frag\"/><p>after</p></html>\n"}},
       {"/frag", {kCacheable, "<div class=\"diff\">FRAGMENT</div>"}}}));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  const std::string want =
      "<html><p>before</p><div class=\"diff\">FRAGMENT</div><p>after</p></html>\n";

  Response first = HttpGet(proxy.Port(), "/page");
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, want);
  EXPECT_EQ(first.Header("x-cache"), "miss");
  EXPECT_FALSE(first.Header("surrogate-control")) << "the header is for shellac, not the client";
  EXPECT_EQ(first.Header("content-type"), "text/html");
  EXPECT_EQ(first.Header("cache-control"), "max-age=60");

  // The origin was told shellac does ESI, and asked for identity bodies.
  ASSERT_GE(origin.RequestCount(), 2u);
  const OriginRequest page_request = origin.Requests()[0];
  EXPECT_EQ(page_request.target, "/page");
  EXPECT_EQ(page_request.Header("surrogate-capability"), "shellac=\"ESI/1.0\"");

  Response gz = HttpGet(proxy.Port(), "/page", "Accept-Encoding: gzip\r\n");
  ASSERT_TRUE(gz.ok) << gz.error;
  EXPECT_EQ(gz.Header("x-cache"), "hit");
  EXPECT_EQ(gz.Header("content-encoding"), "gzip");
  EXPECT_EQ(gz.Header("vary"), "Accept-Encoding");
  EXPECT_TRUE(gz.Header("content-length"))
      << "every include came from the store: the length is known";
  EXPECT_FALSE(gz.Header("etag"))
      << "the template's validator does not describe the assembled page";
  EXPECT_EQ(Gunzip(gz.body), want);

  Response identity = HttpGet(proxy.Port(), "/page");
  EXPECT_EQ(identity.body, want);
  EXPECT_EQ(CountTarget(origin, "/page"), 1u);
  EXPECT_EQ(CountTarget(origin, "/frag"), 1u);

  const std::string metrics = WaitForMetric(proxy.AdminPort(), "shellac_esi_pages_total", {}, 3);
  EXPECT_EQ(MetricSum(metrics, "shellac_esi_pages_total"), 3);
  EXPECT_EQ(MetricSum(metrics, "shellac_esi_includes_hit_total"), 2);
  EXPECT_EQ(MetricSum(metrics, "shellac_esi_includes_fetched_total"), 1);
}

TEST(Esi, ForksShareOneStoredFragmentThroughCacheKeyRules) {
  const std::string frame = "<h1>$REPO</h1><esi:include src=\"/$REPO/esi-diff/?id=abc123\"/>";
  std::map<std::string, Page> pages;
  for (const std::string repo : {"linux", "fork1", "fork2"}) {
    std::string body = frame;
    for (auto at = body.find("$REPO"); at != std::string::npos; at = body.find("$REPO"))
      body.replace(at, 5, repo);
    pages["/" + repo + "/commit/?id=abc123"] = {kEsi, body};
    pages["/" + repo + "/esi-diff/?id=abc123"] = {kCacheable, "<pre>diff of abc123</pre>"};
  }
  Origin origin(Site(pages));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(
      EsiConfig(origin.port(), "cache-key=^/[^/]+/esi-diff/\\?id=([0-9a-f]+)$ => diff/$1\n")));
  for (const std::string repo : {"linux", "fork1", "fork2"}) {
    Response r =
        HttpGet(proxy.Port(), "/" + repo + "/commit/?id=abc123", "Accept-Encoding: gzip\r\n");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(Gunzip(r.body), "<h1>" + repo + "</h1><pre>diff of abc123</pre>");
  }
  size_t fragments = 0;
  for (const auto& r : origin.Requests())
    fragments += r.target.find("esi-diff") != std::string::npos;
  EXPECT_EQ(fragments, 1u) << "one fragment fetch serves every fork";
}

// Records how many requests the origin is handling at once, and lets the handlers wait for a
// number of them to be in flight together (a condition, not a time) and answer in a set order.
struct Concurrency {
  std::mutex mu;
  std::condition_variable cv;
  int now = 0;
  int peak = 0;
  int turn = 0;  // the part whose turn it is to answer
  // Counts this request in, then waits (10 s at most) until `together` are in flight at once.
  void EnterAndWaitFor(int together) {
    std::unique_lock lock(mu);
    peak = std::max(peak, ++now);
    cv.notify_all();
    cv.wait_for(lock, Millis(10'000), [&] { return peak >= together; });
  }
  // Waits (10 s at most) until it is part `i`'s turn.
  void WaitTurn(int i) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, Millis(10'000), [&] { return turn == i; });
  }
  // Counts the request out and hands the turn to `next`.
  void Leave(int next) {
    std::lock_guard lock(mu);
    --now;
    turn = next;
    cv.notify_all();
  }
};

TEST(Esi, AllIncludesOfAPageAreFetchedAtOnceAndOutputKeepsDocumentOrder) {
  auto load = std::make_shared<Concurrency>();
  std::string page = "<ul>";
  std::string want = "<ul>";
  for (int i = 0; i < 10; ++i) {
    page += "<li><esi:include src=\"/slow/" + std::to_string(i) + "\"/></li>";
    want += "<li>part " + std::to_string(i) + "</li>";
  }
  page += "</ul>";
  want += "</ul>";
  std::atomic<int> together{10};
  load->turn = 9;
  Origin origin([&](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, page, kEsi);
      return;
    }
    const int i = std::stoi(req.target.substr(6));
    load->EnterAndWaitFor(together);
    if (together == 10) {
      // All ten are in flight; later parts answer first: the output must still come in document
      // order.
      load->WaitTurn(i);
      c.SendFixed(200, "part " + req.target.substr(6), kNoStore);
      load->Leave(i - 1);
    } else {
      // Held a moment so a fetch past the bound would be seen in flight with them.
      c.Sleep(Millis(50));
      load->Leave(0);
      c.SendFixed(200, "part " + req.target.substr(6), kNoStore);
    }
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  Response r = HttpGet(proxy.Port(), "/page", "", Millis(10'000));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, want);
  EXPECT_TRUE(r.chunked) << "includes were not all ready at once: the length was not known";
  EXPECT_EQ(load->peak, 10) << "all ten includes should be in flight together";

  // esi-parallel bounds the fetches in flight per page.
  ShellacProcess narrow;
  ASSERT_TRUE(narrow.Start(EsiConfig(origin.port(), "esi-parallel=3\n")));
  load->peak = 0;
  together = 3;
  Response r3 = HttpGet(narrow.Port(), "/page", "", Millis(10'000));
  EXPECT_EQ(r3.body, want);
  EXPECT_EQ(load->peak, 3);
}

// A gate the origin's handler waits at until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  bool Wait(Millis limit) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, limit, [&] { return open; });
  }
};

TEST(Esi, TheFirstBytesLeaveBeforeASlowIncludeCompletes) {
  auto gate = std::make_shared<Gate>();
  Origin origin([gate](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, "<html><h1>head of the page</h1><esi:include src=\"/held\"/></html>", kEsi);
      return;
    }
    gate->Wait(Millis(10'000));
    c.SendFixed(200, "<p>held part</p>", kNoStore);
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  ASSERT_TRUE(client.Send("GET /page HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(client.WaitForBytes("head of the page", Millis(10'000)))
      << "the first bytes did not come while the include was held: " << Printable(client.Pending());
  const std::string early = client.Pending();
  EXPECT_TRUE(early.starts_with("HTTP/1.1 200")) << Printable(early);
  EXPECT_EQ(early.find("held part"), std::string::npos);
  gate->Open();
  Response r = client.Read();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, "<html><h1>head of the page</h1><p>held part</p></html>");
}

TEST(Esi, FailedIncludesFollowAltOnerrorAndAttemptExcept) {
  Origin origin(Site({
      {"/alt", {kEsi, "<i>[<esi:include src=\"/missing\" alt=\"/frag\"/>]"}},
      {"/continue", {kEsi, "<i>[<esi:include src=\"/missing\" onerror=\"continue\"/>]"}},
      {"/attempt",
       {kEsi,
        "<i>[<esi:try><esi:attempt>A<esi:include src=\"/missing\"/></esi:attempt>"
        "<esi:except>E<esi:include src=\"/frag\"/></esi:except></esi:try>]"}},
      {"/fails", {kEsi, "<esi:include src=\"/missing\"/>[rest]"}},
      {"/server-error", {kEsi, "<esi:include src=\"/error\"/>"}},
      {"/error", {kNoStore, "oops", 500}},
      {"/frag", {kCacheable, "F"}},
  }));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  EXPECT_EQ(HttpGet(proxy.Port(), "/alt").body, "<i>[F]");
  EXPECT_EQ(HttpGet(proxy.Port(), "/continue").body, "<i>[]");
  EXPECT_EQ(HttpGet(proxy.Port(), "/attempt").body, "<i>[EF]");

  // No alt, no onerror, no attempt: the page fails, and nothing was sent yet: 502 with the reason.
  for (const std::string target : {"/fails", "/server-error"}) {
    Response r = HttpGet(proxy.Port(), target);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 502) << target;
    EXPECT_NE(r.body.find("ESI include failed"), std::string::npos) << r.body;
  }
  EXPECT_NE(HttpGet(proxy.Port(), "/fails").body.find("/missing: status 404"), std::string::npos);
  const std::string metrics =
      WaitForMetric(proxy.AdminPort(), "shellac_esi_include_failures_total", {}, 6);
  EXPECT_GE(MetricSum(metrics, "shellac_esi_page_failures_total"), 3);
  EXPECT_GE(MetricSum(metrics, "shellac_esi_include_failures_total"), 6);
}

TEST(Esi, AFailureAfterTheFirstBytesCutsTheResponseShort) {
  auto gate = std::make_shared<Gate>();
  Origin origin([gate](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, "<p>sent before the failure</p><esi:include src=\"/late\"/><p>never</p>",
                  kEsi);
      return;
    }
    gate->Wait(Millis(10'000));
    c.SendFixed(503, "unavailable", kNoStore);
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  ASSERT_TRUE(client.Send("GET /page HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(client.WaitForBytes("sent before the failure", Millis(10'000)))
      << Printable(client.Pending());
  gate->Open();
  const std::string all = client.ReadUntilClose(Millis(5'000));
  EXPECT_EQ(all.find("never"), std::string::npos);
  EXPECT_EQ(all.find("\r\n0\r\n\r\n"), std::string::npos)
      << "the response must look incomplete: " << Printable(all);
}

TEST(Esi, NestedIncludesAreProcessedAndALoopIsCutAtTheDepthLimit) {
  Origin origin(Site({
      {"/a", {kEsi, "<a>(<esi:include src=\"/b\"/>)"}},
      {"/b", {kEsi, "<b>(<esi:include src=\"c\"/>)"}},
      {"/c", {kCacheable, "c"}},
      {"/loop", {kEsi, "<x><esi:include src=\"/loop\"/>y"}},
  }));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  EXPECT_EQ(HttpGet(proxy.Port(), "/a").body, "<a>(<b>(c))");
  Response loop = HttpGet(proxy.Port(), "/loop");
  ASSERT_TRUE(loop.ok) << loop.error;
  EXPECT_EQ(loop.body, "<x><x><x><x><x><x>yyyyyy")
      << "the page and 5 levels of includes, as Varnish's max_esi_depth";

  ShellacProcess shallow;
  ASSERT_TRUE(shallow.Start(EsiConfig(origin.port(), "esi-max-depth=1\n")));
  EXPECT_EQ(HttpGet(shallow.Port(), "/a").body, "<a>(<b>())");
}

TEST(Esi, IncludesReachOnlyTheBackendAndOnlyAllowedHosts) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200,
                  "<i>[<esi:include src=\"http://other.example/x\" onerror=\"continue\"/>]"
                  "[<esi:include src=\"https://t/x\"/>]"
                  "[<esi:include src=\"http://test.local/x\"/>]",
                  kEsi);
      return;
    }
    c.SendFixed(200, "host=" + req.Header("host").value_or("-"), kNoStore);
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  Response r = HttpGet(proxy.Port(), "/page");
  EXPECT_EQ(r.body, "<i>[][][host=test.local]")
      << "other hosts are refused; https:// is dropped, as Varnish does";
  for (const auto& req : origin.Requests()) EXPECT_NE(req.Header("host"), "other.example");

  ShellacProcess allowing;
  ASSERT_TRUE(allowing.Start(EsiConfig(origin.port(), "esi-allow-host=other\\.example\n")));
  EXPECT_EQ(HttpGet(allowing.Port(), "/page").body, "<i>[host=other.example][][host=test.local]");
}

TEST(Esi, WhenEsiRunsFollowsEsiAndEsiUrl) {
  const std::string markup = "<p><esi:include src=\"/frag\"/></p>";
  Origin origin(Site({{"/plain", {kCacheable, markup}},
                      {"/tpl/x", {kCacheable, markup}},
                      {"/marked", {kEsi, markup}},
                      {"/frag", {kCacheable, "F"}}}));
  ShellacProcess rules;
  ASSERT_TRUE(rules.Start(EsiConfig(origin.port(), "esi-url=^/tpl/\n")));
  EXPECT_EQ(HttpGet(rules.Port(), "/plain").body, markup)
      << "no Surrogate-Control, no rule: untouched";
  EXPECT_EQ(HttpGet(rules.Port(), "/tpl/x").body, "<p>F</p>");
  EXPECT_EQ(HttpGet(rules.Port(), "/marked").body, "<p>F</p>");

  ShellacProcess always;
  ASSERT_TRUE(always.Start(EsiConfig(origin.port(), "esi=always\n")));
  EXPECT_EQ(HttpGet(always.Port(), "/plain").body, "<p>F</p>");

  origin.Reset();
  ShellacProcess off;
  ASSERT_TRUE(off.Start(EsiConfig(origin.port(), "esi=off\n")));
  Response r = HttpGet(off.Port(), "/marked");
  EXPECT_EQ(r.body, markup);
  ASSERT_EQ(origin.RequestCount(), 1u);
  EXPECT_FALSE(origin.Requests()[0].Header("surrogate-capability"));
}

TEST(Esi, VariablesAndTheClientsHeadersReachIncludes) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    if (req.target.starts_with("/page")) {
      c.SendFixed(200,
                  "<esi:vars>user=$(HTTP_COOKIE{user}) host=$(HTTP_HOST)</esi:vars>"
                  "<esi:include src=\"/frag?lang=$(QUERY_STRING{lang})\"/>",
                  kEsi);
      return;
    }
    c.SendFixed(200, "[" + req.target + " cookie=" + req.Header("cookie").value_or("-") + "]",
                kCacheable);
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  Response r = HttpGet(proxy.Port(), "/page?lang=de", "Cookie: user=<b>ann</b>; x=1\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(
      r.body,
      "user=&lt;b&gt;ann&lt;/b&gt; host=test.local[/frag?lang=de cookie=user=<b>ann</b>; x=1]");
  Response gz = HttpGet(proxy.Port(), "/page?lang=fr", "Accept-Encoding: gzip\r\n");
  EXPECT_EQ(Gunzip(gz.body), "user= host=test.local[/frag?lang=fr cookie=-]");
}

TEST(Esi, GzipEncodedPagesAreDecodedAndMalformedMarkupIsCountedAndLogged) {
  Headers gz_headers = kEsi;
  gz_headers.push_back({"Content-Encoding", "gzip"});
  Origin origin([&](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/gz") {
      c.SendFixed(200, Gzip("<b><esi:include src=\"/frag\"/></b>"), gz_headers);
    } else if (req.target == "/bad") {
      c.SendFixed(200, "<p>x<esi:bogus/>y</esi:remove><esi:include src=\"/frag\"/></p>", kEsi);
    } else {
      c.SendFixed(200, "F", kCacheable);
    }
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(BaseConfig(origin.port(), "cache=off\naccess-log=off\n")));
  Response r =
      HttpGet(proxy.Port(), "/gz", "Cookie: a=b\r\n");  // passed, not stored: the client's coding
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, "<b>F</b>");
  EXPECT_EQ(r.Header("x-cache"), "pass");

  EXPECT_EQ(HttpGet(proxy.Port(), "/bad").body, "<p>xyF</p>");
  EXPECT_TRUE(proxy.WaitForLine("/bad: byte ", Millis(2'000))) << proxy.StderrText();
  const std::string metrics =
      WaitForMetric(proxy.AdminPort(), "shellac_esi_parse_errors_total", {}, 2);
  EXPECT_GE(MetricSum(metrics, "shellac_esi_parse_errors_total"), 2);
}

TEST(Esi, HeadOfAnEsiPageSendsTheHeadOnly) {
  Origin origin(
      Site({{"/page", {kEsi, "<esi:include src=\"/frag\"/>"}}, {"/frag", {kCacheable, "F"}}}));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  ASSERT_EQ(HttpGet(proxy.Port(), "/page").body, "F");
  RawClient client;
  ASSERT_TRUE(client.Connect(proxy.Port()));
  ReadOptions head;
  head.head_request = true;
  Response r = client.RoundTrip("HEAD /page HTTP/1.1\r\nHost: test.local\r\n\r\n", head);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("x-cache"), "hit");
  // The head a GET would get, without running the includes: so no length (it is not known
  // without them, and a guess would be a lie) and no chunked framing either.
  EXPECT_EQ(r.Header("content-type"), "text/html") << r.Describe();
  EXPECT_EQ(r.Header("cache-control"), "max-age=60") << r.Describe();
  EXPECT_EQ(r.Header("vary"), "Accept-Encoding") << r.Describe();
  EXPECT_EQ(r.HeaderCount("content-length"), 0) << r.Describe();
  EXPECT_EQ(r.HeaderCount("transfer-encoding"), 0) << r.Describe();
  EXPECT_FALSE(r.Header("surrogate-control")) << "a template-only header" << r.Describe();
  EXPECT_EQ(r.body_bytes, 0u);
  EXPECT_EQ(client.Pending(), "") << "bytes after the HEAD response";
  EXPECT_EQ(origin.RequestCount(), 2u) << "HEAD fetched nothing";
  // The connection is still good for another request, whose response starts right after the
  // head (a body sent after the HEAD response would be read as this one's status line).
  Response again = client.RoundTrip("GET /page HTTP/1.1\r\nHost: test.local\r\n\r\n");
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, "F");
  EXPECT_EQ(again.Header("content-length"), "1") << again.Describe();
}

TEST(Esi, AStaleIncludeIsServedWhileOneBackgroundFetchRefreshesIt) {
  std::atomic<int> version{0};
  Origin origin([&](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, "<p><esi:include src=\"/frag\"/></p>", kEsi);
      return;
    }
    c.SendFixed(200, "v" + std::to_string(++version),
                {{"Cache-Control", "max-age=1, stale-while-revalidate=30"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  EXPECT_EQ(HttpGet(proxy.Port(), "/page").body, "<p>v1</p>");
  std::this_thread::sleep_for(std::chrono::milliseconds(2'100));
  EXPECT_EQ(HttpGet(proxy.Port(), "/page").body, "<p>v1</p>")
      << "stale, within grace: served at once";
  ASSERT_TRUE(origin.WaitForRequests(3, Millis(2'000)));
  const OriginRequest refresh = origin.Requests()[2];
  EXPECT_EQ(refresh.target, "/frag") << refresh.Describe();
  EXPECT_EQ(refresh.method, "GET");
  // The refreshed fragment is stored once the background fetch completes: wait for that, not for
  // a time.
  const auto deadline = Clock::now() + Millis(5'000);
  std::string body;
  while ((body = HttpGet(proxy.Port(), "/page").body) != "<p>v2</p>" && Clock::now() < deadline) {
    EXPECT_EQ(body, "<p>v1</p>") << "before the refresh lands, the stale copy";
    std::this_thread::sleep_for(Millis(10));
  }
  EXPECT_EQ(body, "<p>v2</p>");
}

TEST(Esi, AFragmentLargerThanTheOutputWindowIsDeliveredWholeInBothCodings) {
  // 3 MB of text that compresses to well over the 256 KiB output window.
  std::string big;
  for (int i = 0; big.size() < (3u << 20); ++i)
    big += std::to_string(i * 2654435761u) + " <td>line</td>\n";
  Origin origin(Site({{"/page", {kEsi, "<main><esi:include src=\"/big\"/></main>"}},
                      {"/big", {kCacheable, big}}}));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  for (int round = 0; round < 2; ++round) {  // the fragment fetched, then from the store
    Response gz = HttpGet(proxy.Port(), "/page", "Accept-Encoding: gzip\r\n", Millis(10'000));
    ASSERT_TRUE(gz.ok) << gz.error;
    EXPECT_EQ(Gunzip(gz.body), "<main>" + big + "</main>");
    Response identity = HttpGet(proxy.Port(), "/page", "", Millis(10'000));
    ASSERT_TRUE(identity.ok) << identity.error;
    EXPECT_EQ(identity.body.size(), big.size() + 13);
  }
}

TEST(Esi, AnIncludeThatWaitedTooLongForAnotherFetchFetchesItself) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> fragments{0};
  Origin origin([&, gate](const OriginRequest& req, OriginConnection& c) {
    if (req.target.starts_with("/page")) {
      c.SendFixed(200, "<p><esi:include src=\"/frag\"/></p>", kEsi);
      return;
    }
    if (++fragments == 1) gate->Wait(Millis(10'000));  // the first fetch is held
    c.SendFixed(200, "F", kCacheable);
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port(), "single-flight-timeout=300ms\n")));
  std::thread first(
      [&] { EXPECT_EQ(HttpGet(proxy.Port(), "/page1", "", Millis(10'000)).body, "<p>F</p>"); });
  ASSERT_TRUE(origin.WaitForRequests(2, Millis(2'000)));  // /page1 and its held /frag
  Response second = HttpGet(proxy.Port(), "/page2", "", Millis(5'000));
  EXPECT_EQ(second.body, "<p>F</p>")
      << "it stopped waiting for the held fetch and fetched on its own";
  gate->Open();
  first.join();
  EXPECT_EQ(fragments.load(), 2);
  EXPECT_GE(MetricSum(WaitForMetric(proxy.AdminPort(), "shellac_cache_single_flight_timeouts_total",
                                    {}, 1),
                      "shellac_cache_single_flight_timeouts_total"),
            1);
}

TEST(Esi, AnIncludeJoinsTheFetchOfItsFragmentInFlightAndIsServedItsResult) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> fragments{0};
  Origin origin([&, gate](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, "<p><esi:include src=\"/frag\"/></p>", kEsi);
      return;
    }
    ++fragments;
    gate->Wait(Millis(10'000));  // held until the include waits behind it
    c.SendFixed(200, "F", kCacheable);
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  // A client's request for the fragment itself leads its single-flight.
  std::thread direct([&] {
    Response r = HttpGet(proxy.Port(), "/frag", "", Millis(10'000));
    EXPECT_EQ(r.body, "F");
    EXPECT_EQ(r.Header("x-cache"), "miss");
  });
  ASSERT_TRUE(origin.WaitForRequests(1, Millis(2'000)));
  Response page;
  std::thread paged([&] { page = HttpGet(proxy.Port(), "/page", "", Millis(10'000)); });
  // The page's include found the fetch in flight and waits for it.
  WaitForMetric(proxy.AdminPort(), "shellac_cache_single_flight_waits_total", {}, 1);
  gate->Open();
  direct.join();
  paged.join();
  ASSERT_TRUE(page.ok) << page.error;
  EXPECT_EQ(page.body, "<p>F</p>");
  EXPECT_EQ(fragments.load(), 1) << "the include did not fetch the fragment again";
  const std::string metrics =
      WaitForMetric(proxy.AdminPort(), "shellac_esi_pages_total", {}, 1);
  EXPECT_EQ(MetricSum(metrics, "shellac_cache_single_flight_waits_total"), 1);
  EXPECT_EQ(MetricSum(metrics, "shellac_esi_includes_fetched_total"), 0);
  EXPECT_EQ(MetricSum(metrics, "shellac_esi_include_failures_total"), 0);
}

// A client's request for /frag leads its fetch, held until /page's include waits behind it; then the
// origin answers it with `answer`. Returns the page's response and the fragment fetches.
struct JoinedInclude {
  Response page;
  int fragments = 0;
  std::string metrics;
};
JoinedInclude IncludeBehindAFetch(std::function<void(OriginConnection&)> answer) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> fragments{0};
  Origin origin([&, gate](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, "<p><esi:include src=\"/frag\"/></p>", kEsi);
      return;
    }
    if (++fragments > 1) {
      c.SendFixed(200, "G", kNoStore);  // the include's own fetch
      return;
    }
    gate->Wait(Millis(10'000));
    answer(c);
  });
  ShellacProcess proxy;
  JoinedInclude out;
  if (!proxy.Start(EsiConfig(origin.port()))) {
    ADD_FAILURE() << "shellac did not start";
    return out;
  }
  std::thread direct([&] { HttpGet(proxy.Port(), "/frag", "", Millis(10'000)); });
  EXPECT_TRUE(origin.WaitForRequests(1, Millis(2'000)));
  std::thread paged([&] { out.page = HttpGet(proxy.Port(), "/page", "", Millis(10'000)); });
  WaitForMetric(proxy.AdminPort(), "shellac_cache_single_flight_waits_total", {}, 1);
  gate->Open();
  direct.join();
  paged.join();
  out.fragments = fragments.load();
  out.metrics = WaitForMetric(proxy.AdminPort(), "shellac_esi_pages_total", {}, 1);
  return out;
}

TEST(Esi, AnIncludeBehindAFetchThatCouldNotBeStoredFetchesForItself) {
  JoinedInclude r = IncludeBehindAFetch([](OriginConnection& c) { c.SendFixed(200, "F", kNoStore); });
  ASSERT_TRUE(r.page.ok) << r.page.error;
  EXPECT_EQ(r.page.body, "<p>G</p>") << "the include's own fetch, not the other request's response";
  EXPECT_EQ(r.fragments, 2);
  EXPECT_EQ(MetricSum(r.metrics, "shellac_esi_includes_fetched_total"), 1);
}

TEST(Esi, AnIncludeBehindAFetchThatFailedFailsTooWithoutFetchingAgain) {
  JoinedInclude r = IncludeBehindAFetch([](OriginConnection& c) { c.CloseAfter(); });
  // "<p>" went out before the include ended: the failure cuts the response short.
  EXPECT_FALSE(r.page.ok) << r.page.Describe();
  EXPECT_EQ(r.page.body, "<p>");
  EXPECT_EQ(r.fragments, 1) << "the leader's failure was shared, not fetched again";
  EXPECT_EQ(MetricSum(r.metrics, "shellac_esi_include_failures_total"), 1);
  EXPECT_EQ(MetricSum(r.metrics, "shellac_esi_includes_fetched_total"), 0);
}

TEST(Esi, AStaleIncludeFoundByManyPagesStartsOneBackgroundRefresh) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> version{0};
  Origin origin([&, gate](const OriginRequest& req, OriginConnection& c) {
    if (req.target.starts_with("/page")) {
      c.SendFixed(200, "<p><esi:include src=\"/frag\"/></p>", kEsi);
      return;
    }
    const int v = ++version;
    if (v == 2) gate->Wait(Millis(10'000));  // the refresh is held while pages find it stale
    c.SendFixed(200, "v" + std::to_string(v),
                {{"Cache-Control", "max-age=1, stale-while-revalidate=30"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  EXPECT_EQ(HttpGet(proxy.Port(), "/page1").body, "<p>v1</p>");
  std::this_thread::sleep_for(std::chrono::milliseconds(2'100));  // max-age=1 runs out
  for (const char* page : {"/page2", "/page3", "/page4"}) {
    Response r = HttpGet(proxy.Port(), page);
    EXPECT_EQ(r.body, "<p>v1</p>") << page << ": stale, within grace: served at once";
  }
  EXPECT_EQ(version.load(), 2) << "one refresh for all the pages that found the fragment stale";
  gate->Open();
  const auto deadline = Clock::now() + Millis(5'000);
  std::string body;
  while ((body = HttpGet(proxy.Port(), "/page1").body) != "<p>v2</p>" &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(10));
  }
  EXPECT_EQ(body, "<p>v2</p>");
  EXPECT_EQ(version.load(), 2);
  EXPECT_EQ(CountTarget(origin, "/frag"), 2u);
}

TEST(Esi, AStaleEsiPageIsServedWhileOneBackgroundFetchStoresItsNewTemplate) {
  std::atomic<int> version{0};
  Origin origin([&](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/frag") {
      c.SendFixed(200, "F", kCacheable);
      return;
    }
    c.SendFixed(200, "<p>v" + std::to_string(++version) + "<esi:include src=\"/frag\"/></p>",
                {{"Surrogate-Control", "content=\"ESI/1.0\""},
                 {"Cache-Control", "max-age=1, stale-while-revalidate=30"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(EsiConfig(origin.port())));
  EXPECT_EQ(HttpGet(proxy.Port(), "/page").body, "<p>v1F</p>");
  std::this_thread::sleep_for(std::chrono::milliseconds(2'100));  // max-age=1 runs out
  Response stale = HttpGet(proxy.Port(), "/page");
  EXPECT_EQ(stale.body, "<p>v1F</p>") << "stale, within grace: served at once";
  EXPECT_EQ(stale.Header("x-cache"), "hit");
  const auto deadline = Clock::now() + Millis(5'000);
  std::string body;
  while ((body = HttpGet(proxy.Port(), "/page").body) != "<p>v2F</p>" &&
         Clock::now() < deadline) {
    EXPECT_EQ(body, "<p>v1F</p>") << "before the refresh lands, the stale copy";
    std::this_thread::sleep_for(Millis(10));
  }
  EXPECT_EQ(body, "<p>v2F</p>") << "the refresh stored the new page, parsed into a template";
  EXPECT_EQ(CountTarget(origin, "/page"), 2u);
  EXPECT_EQ(CountTarget(origin, "/frag"), 1u);
}

TEST(Esi, BadEsiSettingsAreConfigErrorsWithFileAndLine) {
  TempDir dir;
  WriteFile(dir.File("a.conf"), "listen=127.0.0.1:0\nesi=sometimes\n");
  CommandResult r = RunShellac({"--check", "-c", dir.File("a.conf")}, dir.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("a.conf:2: esi: expected off, surrogate or always"), std::string::npos)
      << r.err;
  WriteFile(dir.File("b.conf"), "listen=127.0.0.1:0\n\nesi-url=^/(unclosed\n");
  r = RunShellac({"--check", "-c", dir.File("b.conf")}, dir.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("b.conf:3: esi-url: bad regular expression"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shellac::test

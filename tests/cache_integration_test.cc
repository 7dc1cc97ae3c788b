// The store behind the proxy: the real binary, an in-test origin, loopback sockets.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace shellac::test {
namespace {

using namespace std::chrono_literals;

std::string CacheConfig(int backend_port, const std::string& extra = "") {
  return BaseConfig(backend_port, "cache=on\n" + extra);
}

std::string PageBody(const std::string& target) {
  std::string body = "<html><body><h1>" + target + "</h1>\n";
  for (int i = 0; i < 200; ++i)
    body += "<tr><td class='add'>+line " + std::to_string(i) + " of the diff</td></tr>\n";
  return body + "</body></html>\n";
}

OriginHandler Cacheable(const std::string& cache_control = "max-age=60") {
  return [cache_control](const OriginRequest& req, OriginConnection& c) {
    c.SendFixed(200, PageBody(req.target),
                {{"Content-Type", "text/html"},
                 {"Cache-Control", cache_control},
                 {"Last-Modified", "Sun, 01 Nov 2026 10:00:00 GMT"}});
  };
}

TEST(Cache, MissThenHitWithoutReachingTheOrigin) {
  Origin origin(Cacheable());
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));

  Response first = HttpGet(proxy.Port(), "/repo/commit/?id=abc");
  ASSERT_TRUE(first.ok) << first.Describe();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.Header("X-Cache").value_or("<none>"), "miss") << first.Describe();
  EXPECT_EQ(first.body, PageBody("/repo/commit/?id=abc"));

  Response second = HttpGet(proxy.Port(), "/repo/commit/?id=abc");
  ASSERT_TRUE(second.ok) << second.Describe();
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.Header("X-Cache").value_or("<none>"), "hit") << second.Describe();
  EXPECT_EQ(second.body, first.body);
  EXPECT_EQ(second.Header("Content-Type").value_or(""), "text/html");
  EXPECT_TRUE(second.Header("Age").has_value());
  EXPECT_TRUE(second.Header("ETag").has_value());
  EXPECT_EQ(second.Header("Vary").value_or(""), "Accept-Encoding");
  EXPECT_EQ(origin.RequestCount(), 1u) << "a hit reached the origin";

  // Another query is another object.
  Response other = HttpGet(proxy.Port(), "/repo/commit/?id=def");
  EXPECT_EQ(other.Header("X-Cache").value_or("<none>"), "miss");
  EXPECT_EQ(origin.RequestCount(), 2u);
  std::string metrics = WaitForMetric(proxy.AdminPort(), "shellac_cache_hits_total", {}, 1);
  EXPECT_GE(MetricSum(metrics, "shellac_cache_objects"), 2) << metrics;
}

TEST(Cache, GzipClientGetsStitchedMemberThatDecodesToTheBody) {
  Origin origin(Cacheable());
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));
  ASSERT_TRUE(HttpGet(proxy.Port(), "/p").ok);  // fills
  Response gz = HttpGet(proxy.Port(), "/p", "Accept-Encoding: gzip, deflate\r\n");
  ASSERT_TRUE(gz.ok) << gz.Describe();
  EXPECT_EQ(gz.Header("X-Cache").value_or(""), "hit");
  EXPECT_EQ(gz.Header("Content-Encoding").value_or("<none>"), "gzip") << gz.Describe();
  EXPECT_EQ(gz.Header("Content-Length").value_or(""), std::to_string(gz.body.size()));
  EXPECT_EQ(Gunzip(gz.body), PageBody("/p"));
  EXPECT_LT(gz.body.size(), PageBody("/p").size() / 2) << "not compressed";
  // q=0 refuses gzip: identity, inflated from the store.
  Response plain = HttpGet(proxy.Port(), "/p", "Accept-Encoding: gzip;q=0\r\n");
  EXPECT_FALSE(plain.Header("Content-Encoding").has_value()) << plain.Describe();
  EXPECT_EQ(plain.body, PageBody("/p"));
  // The two representations have different strong validators.
  EXPECT_NE(gz.Header("ETag").value_or("a"), plain.Header("ETag").value_or("a"));
  std::string metrics = WaitForMetric(proxy.AdminPort(), "shellac_cache_stitched_total", {}, 1);
  EXPECT_GE(MetricSum(metrics, "shellac_cache_inflated_total"), 1) << metrics;
}

TEST(Cache, ConditionalHeadAndRangeAnsweredFromTheStore) {
  Origin origin(Cacheable());
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));
  Response full = HttpGet(proxy.Port(), "/c");
  ASSERT_TRUE(full.ok);
  full = HttpGet(proxy.Port(), "/c");  // a hit carries the store's ETag
  const std::string etag = full.Header("ETag").value_or("");
  ASSERT_FALSE(etag.empty()) << full.Describe();

  RawClient c;
  ASSERT_TRUE(c.Connect(proxy.Port()));
  Response not_modified =
      c.RoundTrip("GET /c HTTP/1.1\r\nHost: test.local\r\nIf-None-Match: " + etag + "\r\n\r\n");
  EXPECT_EQ(not_modified.status, 304) << not_modified.Describe();
  EXPECT_EQ(not_modified.body_bytes, 0u);
  Response since = c.RoundTrip(
      "GET /c HTTP/1.1\r\nHost: test.local\r\nIf-Modified-Since: Mon, 02 Nov 2026 10:00:00 "
      "GMT\r\n\r\n");
  EXPECT_EQ(since.status, 304) << since.Describe();
  Response older = c.RoundTrip(
      "GET /c HTTP/1.1\r\nHost: test.local\r\nIf-Modified-Since: Sat, 31 Oct 2026 10:00:00 "
      "GMT\r\n\r\n");
  EXPECT_EQ(older.status, 200) << older.Describe();

  ReadOptions head_options;
  head_options.head_request = true;
  Response head = c.RoundTrip("HEAD /c HTTP/1.1\r\nHost: test.local\r\n\r\n", head_options);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("Content-Length").value_or(""), std::to_string(PageBody("/c").size()));
  EXPECT_EQ(head.Header("X-Cache").value_or(""), "hit");

  Response part = c.RoundTrip("GET /c HTTP/1.1\r\nHost: test.local\r\nRange: bytes=6-11\r\n\r\n");
  EXPECT_EQ(part.status, 206) << part.Describe();
  EXPECT_EQ(part.body, PageBody("/c").substr(6, 6));
  EXPECT_EQ(part.Header("Content-Range").value_or(""),
            "bytes 6-11/" + std::to_string(PageBody("/c").size()));
  Response beyond =
      c.RoundTrip("GET /c HTTP/1.1\r\nHost: test.local\r\nRange: bytes=999999-\r\n\r\n");
  EXPECT_EQ(beyond.status, 416) << beyond.Describe();
  EXPECT_EQ(origin.RequestCount(), 1u);
}

TEST(Cache, ConcurrentMissesFetchOnce) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.Sleep(400ms);  // every request arrives while the first is still being fetched
    c.SendFixed(200, PageBody(req.target), {{"Cache-Control", "max-age=60"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));
  // A thousand sockets on each side: lift this process's descriptor limit as shellac lifts its own.
  rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0) << std::strerror(errno);
  ASSERT_GE(limit.rlim_cur, 2200u) << "1000 clients need 2200 descriptors but the hard limit is "
                                   << limit.rlim_max << ": raise it (ulimit -Hn) to run this test";
  constexpr int kClients = 1000;
  std::vector<std::thread> clients;
  std::vector<Response> responses(kClients);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] { responses[i] = HttpGet(proxy.Port(), "/herd", "", 10'000ms); });
  }
  for (auto& t : clients) t.join();
  int ok = 0;
  for (const auto& r : responses) {
    if (r.ok && r.status == 200 && r.body == PageBody("/herd")) ++ok;
  }
  EXPECT_EQ(ok, kClients);
  EXPECT_EQ(origin.RequestCount(), 1u) << "the herd was not joined into one fetch";
  std::string metrics =
      WaitForMetric(proxy.AdminPort(), "shellac_cache_single_flight_waits_total", {}, 1);
  EXPECT_GE(MetricSum(metrics, "shellac_cache_single_flight_waits_total"), 1) << metrics;
}

TEST(Cache, UncacheableResponsesAndRequestsGoToTheOrigin) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/private") {
      c.SendFixed(200, "mine", {{"Cache-Control", "private"}});
    } else if (req.target == "/cookie") {
      c.SendFixed(200, "session", {{"Set-Cookie", "id=1"}});
    } else {
      c.SendFixed(200, "public", {{"Cache-Control", "max-age=60"}});
    }
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(HttpGet(proxy.Port(), "/private").body, "mine");
    EXPECT_EQ(HttpGet(proxy.Port(), "/cookie").body, "session");
  }
  EXPECT_EQ(origin.RequestCount(), 6u);
  // Requests with credentials or cookies are not looked up (Varnish's default).
  ASSERT_EQ(HttpGet(proxy.Port(), "/public").Header("X-Cache").value_or(""), "miss");
  Response with_cookie = HttpGet(proxy.Port(), "/public", "Cookie: a=b\r\n");
  EXPECT_EQ(with_cookie.Header("X-Cache").value_or(""), "pass") << with_cookie.Describe();
  Response with_auth = HttpGet(proxy.Port(), "/public", "Authorization: Basic eDp5\r\n");
  EXPECT_EQ(with_auth.Header("X-Cache").value_or(""), "pass");
  EXPECT_EQ(origin.RequestCount(), 9u);
}

TEST(Cache, GzipCodedResponsesAreDecodedAndStoredAsTheStoreKeepsBodies) {
  const std::string body = PageBody("/gz");
  Origin origin([&](const OriginRequest&, OriginConnection& c) {
    c.SendFixed(200, Gzip(body),
                {{"Content-Type", "text/html"},
                 {"Content-Encoding", "gzip"},
                 {"Cache-Control", "max-age=60"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));
  Response first = HttpGet(proxy.Port(), "/gz");  // an identity client: decoded for it
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.body, body);
  EXPECT_FALSE(first.Header("content-encoding"));
  EXPECT_EQ(first.Header("x-cache"), "miss");
  Response gz = HttpGet(proxy.Port(), "/gz", "Accept-Encoding: gzip\r\n");
  EXPECT_EQ(gz.Header("x-cache"), "hit");
  EXPECT_EQ(gz.Header("content-encoding"), "gzip");
  EXPECT_EQ(Gunzip(gz.body), body);
  EXPECT_EQ(origin.RequestCount(), 1u);
}

TEST(Cache, ForceStoreRulesStoreWhatTheResponseSaysNotToWithoutItsCookie) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.SendFixed(200, "body of " + req.target,
                {{"Cache-Control", "no-store, private"}, {"Set-Cookie", "session=secret"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port(), "force-store=^/static/\n")));
  // Without a rule: fetched as a miss, found unstorable, then passed (hit-for-miss).
  EXPECT_EQ(HttpGet(proxy.Port(), "/dynamic").Header("x-cache"), "miss");
  EXPECT_EQ(HttpGet(proxy.Port(), "/dynamic").Header("x-cache"), "pass");
  Response miss = HttpGet(proxy.Port(), "/static/a");
  EXPECT_EQ(miss.Header("x-cache"), "miss");
  Response hit = HttpGet(proxy.Port(), "/static/a");
  EXPECT_EQ(hit.Header("x-cache"), "hit");
  EXPECT_EQ(hit.body, "body of /static/a");
  EXPECT_FALSE(hit.Header("set-cookie")) << "one client's cookie must not reach the next";
  EXPECT_EQ(origin.RequestCount(), 3u);
}

TEST(Cache, StaleObjectStandsInWhenTheOriginFails) {
  auto origin = std::make_unique<Origin>(Cacheable("max-age=1"));
  ShellacProcess proxy;
  ASSERT_TRUE(
      proxy.Start(CacheConfig(origin->port(), "grace=30s\nupstream-connect-timeout=500ms\n")));
  ASSERT_EQ(HttpGet(proxy.Port(), "/s").status, 200);
  origin->Stop();
  origin.reset();                       // the backend port now refuses
  std::this_thread::sleep_for(2100ms);  // past max-age, within grace
  Response stale = HttpGet(proxy.Port(), "/s");
  EXPECT_EQ(stale.status, 200) << stale.Describe();
  EXPECT_EQ(stale.body, PageBody("/s"));
  // Without a stored object the failure shows.
  Response missing = HttpGet(proxy.Port(), "/never-stored");
  EXPECT_EQ(missing.status, 502) << missing.Describe();
}

TEST(Cache, StaleObjectIsServedWhileOneBackgroundFetchRefreshesIt) {
  std::atomic<int> version{0};
  Origin origin([&](const OriginRequest&, OriginConnection& c) {
    // max-age=2: stored times are whole seconds, so the refreshed copy stays fresh for at least
    // a second, long enough for the check below not to start a second refresh.
    c.SendFixed(200, "version " + std::to_string(++version), {{"Cache-Control", "max-age=2"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port(), "grace=30s\n")));
  EXPECT_EQ(HttpGet(proxy.Port(), "/v").body, "version 1");
  std::this_thread::sleep_for(2100ms);  // stale now, within grace
  Response stale = HttpGet(proxy.Port(), "/v");
  EXPECT_EQ(stale.body, "version 1") << "a stale request waited for the refresh";
  EXPECT_EQ(stale.Header("X-Cache").value_or(""), "hit");
  ASSERT_TRUE(origin.WaitForRequests(2, 10'000ms)) << "no background refresh";
  Response fresh;
  // The refresh lands a moment after the origin answered: polled until it has, not slept on.
  const auto deadline = Clock::now() + 10'000ms;
  for (;;) {
    fresh = HttpGet(proxy.Port(), "/v");
    if (fresh.body == "version 2" || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fresh.body, "version 2");
  EXPECT_EQ(origin.RequestCount(), 2u) << "more than one refresh";
}

TEST(Cache, KeyRulesMakeForksShareOneObject) {
  Origin origin(Cacheable());
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(
      origin.port(), "cache-key = ^/[^?]+/esi-diff/\\?(.*)$ => diff/${arg:id}/${args:context}\n")));
  EXPECT_EQ(
      HttpGet(proxy.Port(), "/linux/esi-diff/?id=abc&context=3").Header("X-Cache").value_or(""),
      "miss");
  Response other_fork = HttpGet(proxy.Port(), "/fork-1/esi-diff/?context=3&id=abc");
  EXPECT_EQ(other_fork.Header("X-Cache").value_or(""), "hit") << other_fork.Describe();
  EXPECT_EQ(other_fork.body, PageBody("/linux/esi-diff/?id=abc&context=3"));
  EXPECT_EQ(origin.RequestCount(), 1u);
}

TEST(Cache, AdminPurgeAndBanRemoveObjects) {
  Origin origin(Cacheable());
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(
      origin.port(), "cache-key = ^/[^?]+/esi-diff/\\?(.*)$ => diff/${arg:id}/${args:context}\n")));
  auto cached = [&](const std::string& path) {
    return HttpGet(proxy.Port(), path).Header("X-Cache").value_or("") == "hit";
  };
  for (const char* p : {"/page", "/a/esi-diff/?id=c1&context=3", "/a/esi-diff/?id=c1&context=5",
                        "/a/esi-diff/?id=c2&context=3"}) {
    ASSERT_EQ(HttpGet(proxy.Port(), p).status, 200);
    ASSERT_TRUE(cached(p)) << p;
  }
  RawClient admin;
  ASSERT_TRUE(admin.Connect(proxy.AdminPort()));
  // By URL, through the key rules and the request's Host (HttpGet sends test.local).
  Response purge = admin.RoundTrip(
      "POST /purge?url=/page HTTP/1.1\r\nHost: test.local\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(purge.status, 200) << purge.Describe();
  EXPECT_EQ(purge.body.rfind("purged", 0), 0u) << purge.body;
  EXPECT_FALSE(cached("/page")) << "purged object still served";
  // A ban by key prefix removes every variant of one commit, and only those.
  Response ban = admin.RoundTrip("BAN /ban?prefix=diff/c1/ HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(ban.status, 200) << ban.Describe();
  EXPECT_EQ(ban.body, "banned 2\n");
  EXPECT_FALSE(cached("/b/esi-diff/?id=c1&context=5"));
  EXPECT_TRUE(cached("/b/esi-diff/?id=c2&context=3"));
  Response get = admin.RoundTrip("GET /purge?key=x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(get.status, 405);
  // The public listener has no such endpoints: the request is proxied like any other.
  Response public_purge = HttpGet(proxy.Port(), "/ban?prefix=diff/");
  EXPECT_NE(public_purge.body.rfind("banned", 0), 0u);
  EXPECT_TRUE(cached("/b/esi-diff/?id=c2&context=3"));
}

TEST(Cache, TtlRulesOverrideTheResponsesFreshness) {
  Origin origin(Cacheable("max-age=600"));
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(
      CacheConfig(origin.port(), "grace=0\nttl = ^/short => 2s\nttl = ^/never => 0\n")));
  HttpGet(proxy.Port(), "/never");
  HttpGet(proxy.Port(), "/never");
  EXPECT_EQ(origin.RequestCount(), 2u) << "ttl 0 must keep it out of the store";
  HttpGet(proxy.Port(), "/short");
  EXPECT_EQ(HttpGet(proxy.Port(), "/short").Header("X-Cache").value_or(""), "hit");
  // Stored times are whole seconds, so a 2 s ttl is fresh for between 1 and 2 s: a hit just after
  // the store, a miss once 2 s have passed (the passing of time is what is tested).
  std::this_thread::sleep_for(2100ms);
  EXPECT_EQ(HttpGet(proxy.Port(), "/short").Header("X-Cache").value_or(""), "miss")
      << "the rule's 2s did not apply";
  HttpGet(proxy.Port(), "/other");
  EXPECT_EQ(HttpGet(proxy.Port(), "/other").Header("X-Cache").value_or(""), "hit")
      << "max-age=600 applies elsewhere";
}

// Incompressible bytes derived from `seed`, so each page costs its full size in the store.
std::string NoiseBody(uint64_t seed, size_t n) {
  std::string out(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 56);
  }
  return out;
}

TEST(Cache, MemoryStaysWithinTheBudgetUnderASweep) {
  constexpr size_t kPage = 16 << 10;
  constexpr int kPages = 2000;  // ~32 MB of incompressible bodies through an 8 MiB store
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.SendFixed(200, NoiseBody(std::hash<std::string>()(req.target), kPage),
                {{"Cache-Control", "max-age=600"}});
  });
  ShellacProcess proxy;
  proxy.DisableAsanQuarantine();  // a sanitizer build would otherwise keep freed blocks resident
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port(), "cache-size=8M\n")));
  RawClient warm;
  ASSERT_TRUE(warm.Connect(proxy.Port()));
  ASSERT_TRUE(warm.RoundTrip("GET /warm HTTP/1.1\r\nHost: test.local\r\n\r\n").ok);
  const long before = proxy.RssKiB();
  RawClient c;
  ASSERT_TRUE(c.Connect(proxy.Port()));
  for (int i = 0; i < kPages; ++i) {
    Response r =
        c.RoundTrip("GET /page/" + std::to_string(i) + " HTTP/1.1\r\nHost: test.local\r\n\r\n");
    ASSERT_TRUE(r.ok && r.body_bytes == kPage) << i << ": " << r.Describe();
  }
  const long growth_kib = proxy.RssKiB() - before;
  const std::string metrics = FetchMetrics(proxy.AdminPort());
  const double charged = MetricSum(metrics, "shellac_cache_bytes");
  EXPECT_LE(charged, 8 << 20) << metrics;
  EXPECT_GT(MetricSum(metrics, "shellac_cache_evictions_total"), 0)
      << "the sweep never filled the store";
  // The budget plus a fixed allowance (allocator arenas and caches, buffers): the 32 MB that passed
  // through must not show.
  EXPECT_LT(growth_kib, (8 << 10) + (12 << 10)) << "RSS grew " << growth_kib << " KiB";
  std::fprintf(
      stderr,
      "RSS growth %ld KiB for a %d-page sweep; store charged %.0f bytes of an 8 MiB budget\n",
      growth_kib, kPages, charged);
}

TEST(Cache, BadKeyRuleIsAConfigErrorWithFileAndLine) {
  TempDir dir;
  const std::string conf = dir.File("bad.conf");
  WriteFile(conf, "cache=on\ncache-key = ^(unclosed => x\n");
  CommandResult r = RunShellac({"-c", conf, "--check"}, dir.path(), Millis(10000));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(conf + ":2: cache-key: "), std::string::npos) << r.err;
  WriteFile(conf, "# ttl rules\n\nttl = ^(bad => 5s\n");
  r = RunShellac({"-c", conf, "--check"}, dir.path(), Millis(10000));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(conf + ":3: ttl: "), std::string::npos) << r.err;
}

// Several ranges in one header, or several Range headers: the whole body (200), as documented.
TEST(Cache, SeveralRangesGetTheWholeBody) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.SendFixed(200, PageBody(req.target), {{"Cache-Control", "max-age=60"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port())));
  ASSERT_EQ(HttpGet(proxy.Port(), "/r").status, 200);
  for (const std::string ranges :
       {"Range: bytes=0-1,4-5\r\n", "Range: bytes=0-1\r\nRange: bytes=4-5\r\n"}) {
    SCOPED_TRACE(ranges);
    Response r = HttpGet(proxy.Port(), "/r", ranges);
    ASSERT_TRUE(r.ok) << r.Describe();
    EXPECT_EQ(r.status, 200) << r.Describe();
    EXPECT_EQ(r.body, PageBody("/r"));
    EXPECT_FALSE(r.Header("Content-Range")) << r.Describe();
    EXPECT_EQ(r.Header("X-Cache"), "hit");
  }
  EXPECT_EQ(origin.RequestCount(), 1u);
}

// A response with no freshness of its own is fresh for default-ttl, then fetched again.
TEST(Cache, DefaultTtlAppliesToResponsesWithoutFreshness) {
  std::atomic<int> version{0};
  Origin origin([&](const OriginRequest&, OriginConnection& c) {
    c.SendFixed(200, "v" + std::to_string(++version));
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port(), "default-ttl=3s\ngrace=0s\n")));
  const auto stored = Clock::now();
  Response first = HttpGet(proxy.Port(), "/plain");
  EXPECT_EQ(first.body, "v1");
  Response hit = HttpGet(proxy.Port(), "/plain");
  EXPECT_EQ(hit.body, "v1");
  EXPECT_EQ(hit.Header("X-Cache"), "hit") << hit.Describe();
  // Poll until the copy expires: it must not be before default-ttl, and must be soon after.
  Response later;
  const auto deadline = Clock::now() + Millis(15'000);
  do {
    std::this_thread::sleep_for(Millis(50));
    later = HttpGet(proxy.Port(), "/plain");
  } while (later.body == "v1" && Clock::now() < deadline);
  EXPECT_EQ(later.body, "v2") << "still the first copy long after default-ttl=3s";
  // An object's age is counted from its Date, which has whole seconds: it may look up to a
  // second older than it is.
  EXPECT_GE(Clock::now() - stored, Millis(2'000)) << "expired well before default-ttl";
}

// A plain request waiting on another request's fetch gives up after single-flight-timeout with
// 503 and Retry-After: 5.
TEST(Cache, SingleFlightTimeoutIs503WithRetryAfter) {
  std::atomic<bool> release{false};
  Origin origin([&](const OriginRequest&, OriginConnection& c) {
    const auto limit = Clock::now() + Millis(20'000);
    while (!release && Clock::now() < limit && c.Sleep(Millis(5))) {
    }
    c.SendFixed(200, "late", {{"Cache-Control", "max-age=60"}});
  });
  ShellacProcess proxy;
  ASSERT_TRUE(proxy.Start(CacheConfig(origin.port(), "single-flight-timeout=300ms\n")));
  std::thread first([&] {
    Response r = HttpGet(proxy.Port(), "/held", "", Millis(30'000));
    EXPECT_EQ(r.body, "late") << r.Describe();
  });
  ASSERT_TRUE(origin.WaitForRequests(1, Millis(10'000)));
  Response waiter = HttpGet(proxy.Port(), "/held", "", Millis(10'000));
  ASSERT_TRUE(waiter.ok) << waiter.Describe();
  EXPECT_EQ(waiter.status, 503) << waiter.Describe();
  EXPECT_EQ(waiter.Header("Retry-After"), "5") << waiter.Describe();
  EXPECT_NE(waiter.body.find("waited 300 ms for another request's fetch"), std::string::npos)
      << waiter.body;
  release = true;
  first.join();
  EXPECT_EQ(origin.RequestCount(), 1u) << "the waiter did not fetch on its own";
}

}  // namespace
}  // namespace shellac::test

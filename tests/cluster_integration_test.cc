// More than one machine, through the real binary: the store written at a graceful stop and read
// back at start (store-snapshot=), and refused whole when damaged. Fixture repositories are made
// with git.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <sstream>
#include <string>

#include "cache/cache.h"
#include "conf/config.h"
#include "gitfrag/gitfrag.h"
#include "tests/harness.h"

namespace shellac::test {
namespace {

// A bare repository "base.git" with two commits, and its fork "fork.git" (objects borrowed).
class Repos {
 public:
  Repos() {
    MakeFixture(dir_, R"SH(
set -e
git init -q -b master work
cd work
seq 1 200 > numbers
git add . && git commit -q -m 'first'
seq 1 210 | sed 's/^5/five/' > numbers
git add . && git commit -q -m 'second'
cd ..
git clone -q --bare work base.git
git clone -q --bare -s base.git fork.git
)SH", kThor);
    second_ =
        Shell("git -C " + ShellQuote(dir_.File("base.git")) + " rev-parse master").substr(0, 40);
  }

  std::string Config(const std::string& extra = "") const {
    WriteFile(dir_.File("cgitrc"), "virtual-root=/\nrepo.url=base\nrepo.path=" +
                                       dir_.File("base.git") + "\nrepo.url=fork\nrepo.path=" +
                                       dir_.File("fork.git") + "\n");
    return BaseConfig(0, "cache=on\ncgitrc=" + dir_.File("cgitrc") + "\n" + extra);
  }
  const TempDir& dir() const { return dir_; }
  const std::string& second() const { return second_; }

 private:
  TempDir dir_;
  std::string second_;
};

// A free loopback port: bound by the kernel, then released for the caller to bind.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A real memcached on a loopback port, started by the test (Debian's memcached).
class Memcached {
 public:
  Memcached() {
    for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) {
      port_ = FreePort();
      const pid_t pid = fork();
      if (pid == 0) {
        const std::string port = std::to_string(port_);
        execlp("memcached", "memcached", "-l", "127.0.0.1", "-p", port.c_str(), "-U", "0", "-m",
               "64", "-t", "1", "-u", "root", static_cast<char*>(nullptr));
        _exit(127);
      }
      // Ready when it accepts a connection; gone when the port was taken meanwhile.
      const auto deadline = Clock::now() + Millis(5000);
      while (Clock::now() < deadline) {
        if (int fd = ConnectLoopback(port_); fd >= 0) {
          close(fd);
          pid_ = pid;
          break;
        }
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid) break;
        std::this_thread::sleep_for(Millis(10));
      }
      if (pid_ < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  }
  ~Memcached() { Kill(); }
  bool ok() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string Address() const { return "127.0.0.1:" + std::to_string(port_); }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // One text-protocol exchange: sends `request`, reads until the reply ends with one of `ends`.
  std::string Command(const std::string& request, std::initializer_list<std::string_view> ends) const {
    int fd = ConnectLoopback(port_);
    if (fd < 0) return {};
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    std::string reply;
    const auto deadline = Clock::now() + Millis(5000);
    auto done = [&] {
      for (std::string_view e : ends)
        if (reply.size() >= e.size() && reply.compare(reply.size() - e.size(), e.size(), e) == 0) return true;
      return false;
    };
    while (!done() && Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[65536];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return reply;
  }
  // The value under `key`, or nullopt.
  std::optional<std::string> Get(const std::string& key) const {
    const std::string reply = Command("get " + key + "\r\n", {"END\r\n"});
    if (!reply.starts_with("VALUE ")) return std::nullopt;
    const size_t head = reply.find("\r\n");
    return reply.substr(head + 2, reply.size() - head - 2 - 7);  // less "\r\nEND\r\n"
  }
  bool Set(const std::string& key, const std::string& value) const {
    return Command("set " + key + " 0 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\n",
                   {"STORED\r\n", "ERROR\r\n"}) == "STORED\r\n";
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

double Metric(const ShellacProcess& node, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) {
  return MetricSum(FetchMetrics(node.AdminPort()), name, labels);
}

// shellac_renders_total for `kind` once it has reached `expected` (the render thread bumps it,
// possibly just after the response left).
double Renders(const ShellacProcess& node, const std::string& kind, double expected) {
  return MetricSum(WaitForMetric(node.AdminPort(), "shellac_renders_total", {{"kind", kind}}, expected),
                   "shellac_renders_total", {{"kind", kind}});
}

// Stops `node` gracefully and waits for its snapshot to be written.
void StopWritingSnapshot(ShellacProcess& node) {
  node.Signal(SIGTERM);
  ASSERT_EQ(node.WaitExit(Millis(20'000)), 0) << node.StderrText();
  EXPECT_NE(node.StderrText().find("store snapshot"), std::string::npos) << node.StderrText();
  EXPECT_NE(node.StderrText().find(" written: "), std::string::npos) << node.StderrText();
}

TEST(Snapshot, ARestartedNodeServesItsOldHitsWithoutRendering) {
  Repos repos;
  const std::string snapshot = repos.dir().File("store.snapshot");
  const std::string config = repos.Config("store-snapshot=" + snapshot + "\n");
  const std::string commit = "/base/commit/?id=" + repos.second();
  const std::string patch = "/base/patch/?id=" + repos.second();
  std::string commit_body, patch_body;
  {
    ShellacProcess node;
    ASSERT_TRUE(node.Start(config));
    EXPECT_NE(node.StderrText().find("no store snapshot at " + snapshot), std::string::npos)
        << node.StderrText();
    Response c = HttpGet(node.Port(), commit);
    ASSERT_EQ(c.status, 200) << c.Describe();
    commit_body = c.body;
    Response p = HttpGet(node.Port(), patch);
    ASSERT_EQ(p.status, 200) << p.Describe();
    EXPECT_EQ(p.Header("x-cache"), "miss");
    patch_body = p.body;
    EXPECT_EQ(Renders(node, "diff-fragment", 1), 1);
    EXPECT_EQ(Renders(node, "patch", 1), 1);
    StopWritingSnapshot(node);
  }
  ASSERT_EQ(access(snapshot.c_str(), F_OK), 0) << "no snapshot file";
  EXPECT_NE(access((snapshot + ".tmp").c_str(), F_OK), 0) << "the temporary file was left";

  ShellacProcess again;
  ASSERT_TRUE(again.Start(config));
  EXPECT_GE(Metric(again, "shellac_snapshot_loaded_objects"), 2) << again.StderrText();
  EXPECT_EQ(Metric(again, "shellac_snapshot_refused"), 0);
  Response p = HttpGet(again.Port(), patch);
  ASSERT_EQ(p.status, 200) << p.Describe();
  EXPECT_EQ(p.Header("x-cache"), "hit");
  EXPECT_EQ(p.body, patch_body);
  // The fork's commit page: its frame is rendered, its diff comes from the snapshot.
  Response c = HttpGet(again.Port(), commit);
  ASSERT_EQ(c.status, 200) << c.Describe();
  EXPECT_EQ(c.body, commit_body);
  EXPECT_EQ(Renders(again, "commit", 1), 1);
  EXPECT_EQ(Metric(again, "shellac_renders_total", {{"kind", "patch"}}), 0);
  EXPECT_EQ(Metric(again, "shellac_renders_total", {{"kind", "diff-fragment"}}), 0)
      << "the fragment was rendered again instead of read from the snapshot";
  // And a second restart still has them (the loaded objects are written again).
  StopWritingSnapshot(again);
  ShellacProcess third;
  ASSERT_TRUE(third.Start(config));
  EXPECT_EQ(HttpGet(third.Port(), patch).Header("x-cache"), "hit");
}

// A snapshot cut short, or one that is not a snapshot, is refused whole: a message naming the file,
// an empty store, and the pages rendered again.
TEST(Snapshot, ATruncatedOrForeignSnapshotIsRefused) {
  Repos repos;
  const std::string snapshot = repos.dir().File("store.snapshot");
  const std::string config = repos.Config("store-snapshot=" + snapshot + "\n");
  const std::string patch = "/base/patch/?id=" + repos.second();
  {
    ShellacProcess node;
    ASSERT_TRUE(node.Start(config));
    ASSERT_EQ(HttpGet(node.Port(), patch).status, 200);
    ASSERT_EQ(HttpGet(node.Port(), "/base/commit/?id=" + repos.second()).status, 200);
    EXPECT_EQ(Renders(node, "diff-fragment", 1), 1);
    StopWritingSnapshot(node);
  }
  const std::string whole = ReadFile(snapshot);
  ASSERT_GT(whole.size(), 100u);
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {whole.substr(0, whole.size() / 2), "cut short"},
      {whole.substr(0, whole.size() - 3), "cut short"},
      {"GIT pack or anything else, not a snapshot\n", "not a shellac store snapshot"},
  };
  for (const auto& [bytes, why] : damaged) {
    SCOPED_TRACE(why + " (" + std::to_string(bytes.size()) + " bytes)");
    WriteFile(snapshot, bytes);
    ShellacProcess node;
    ASSERT_TRUE(node.Start(config));
    const auto line = node.WaitForLine("store snapshot refused", Millis(1000));
    ASSERT_TRUE(line) << node.StderrText();
    EXPECT_NE(line->find(snapshot), std::string::npos) << *line;
    EXPECT_NE(line->find(why), std::string::npos) << *line;
    EXPECT_NE(line->find("starting with an empty store"), std::string::npos) << *line;
    EXPECT_EQ(Metric(node, "shellac_snapshot_refused"), 1);
    EXPECT_EQ(Metric(node, "shellac_cache_objects"), 0);
    Response p = HttpGet(node.Port(), patch);
    ASSERT_EQ(p.status, 200) << p.Describe();
    EXPECT_EQ(p.Header("x-cache"), "miss");
    EXPECT_EQ(Renders(node, "patch", 1), 1);
  }
  // A flipped byte inside an object: its checksum refuses the file.
  std::string flipped = whole;
  flipped[whole.size() - 17] ^= 0x20;  // the last byte of the last object
  WriteFile(snapshot, flipped);
  ShellacProcess node;
  ASSERT_TRUE(node.Start(config));
  const auto line = node.WaitForLine("store snapshot refused", Millis(1000));
  ASSERT_TRUE(line) << node.StderrText();
  EXPECT_NE(line->find("checksum"), std::string::npos) << *line;
  EXPECT_EQ(Metric(node, "shellac_cache_objects"), 0);
}

// The store key gitfrag gives `target`'s neutral part, as the node computes it.
std::string PartKey(const ShellacProcess& node, const std::string& target) {
  std::string error;
  auto config = conf::Load(node.ConfigPath(), {}, &error);
  EXPECT_NE(config, nullptr) << error;
  if (config == nullptr) return {};
  gitfrag::Site site(*config);
  const auto q = target.find('?');
  auto route = site.Match(target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1));
  EXPECT_TRUE(route) << target;
  return route ? route->cache_key : std::string();
}

std::string L2(std::initializer_list<const Memcached*> servers) {
  std::string value = "l2=memcached://";
  for (const Memcached* m : servers) value += (value.ends_with("//") ? "" : ",") + m->Address();
  return value + "\n";
}

// Two nodes with two memcached servers: what one node rendered, the other serves without
// rendering it (the fragment of a commit page and a patch), byte for byte.
TEST(SharedTier, TwoNodesShareAFragmentRenderedOnce) {
  Repos repos;
  Memcached m1, m2;
  ASSERT_TRUE(m1.ok() && m2.ok()) << "memcached did not start (is it installed?)";
  const std::string config = repos.Config(L2({&m1, &m2}));
  ShellacProcess a, b;
  ASSERT_TRUE(a.Start(config));
  ASSERT_TRUE(b.Start(config));
  const std::string commit = "/base/commit/?id=" + repos.second();
  const std::string fork_commit = "/fork/commit/?id=" + repos.second();
  const std::string patch = "/base/patch/?id=" + repos.second();

  Response ca = HttpGet(a.Port(), commit);
  ASSERT_EQ(ca.status, 200) << ca.Describe();
  Response pa = HttpGet(a.Port(), patch);
  ASSERT_EQ(pa.status, 200) << pa.Describe();
  EXPECT_EQ(Renders(a, "diff-fragment", 1), 1);
  EXPECT_EQ(Renders(a, "patch", 1), 1);
  // The writes are in the background: wait for both.
  EXPECT_EQ(MetricSum(WaitForMetric(a.AdminPort(), "shellac_l2_puts_total", {}, 2),
                      "shellac_l2_puts_total"), 2);
  EXPECT_EQ(Metric(a, "shellac_l2_misses_total"), 2);

  Response cb = HttpGet(b.Port(), commit);
  ASSERT_EQ(cb.status, 200) << cb.Describe();
  EXPECT_EQ(cb.body, ca.body);
  Response pb = HttpGet(b.Port(), patch);
  ASSERT_EQ(pb.status, 200) << pb.Describe();
  EXPECT_EQ(pb.body, pa.body);
  Response fb = HttpGet(b.Port(), fork_commit);  // the fork's frame, the same fragment
  ASSERT_EQ(fb.status, 200) << fb.Describe();
  EXPECT_EQ(Renders(b, "commit", 2), 2);
  EXPECT_EQ(Metric(b, "shellac_renders_total", {{"kind", "diff-fragment"}}), 0)
      << "node b rendered the fragment node a had shared";
  EXPECT_EQ(Metric(b, "shellac_renders_total", {{"kind", "patch"}}), 0);
  EXPECT_EQ(Metric(b, "shellac_l2_hits_total"), 2);
  EXPECT_EQ(Metric(b, "shellac_l2_puts_total"), 0) << "what came from the tier is not written back";
  // Across both nodes: each part rendered once.
  EXPECT_EQ(Metric(a, "shellac_renders_total", {{"kind", "diff-fragment"}}) +
                Metric(b, "shellac_renders_total", {{"kind", "diff-fragment"}}), 1);
  // Each server holds part of the keys, or all of them: ketama picks; both answer.
  EXPECT_EQ(Metric(a, "shellac_l2_servers"), 2);
}

// The lines of an l2-trace= file whose event and outcome are `what` ("get hit", "put ok", ...) and
// whose tier key is `tier_key`.
std::vector<std::string> TraceLines(const std::string& path, const std::string& what,
                                    const std::string& tier_key) {
  std::vector<std::string> lines;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.find(' ');
    if (line.compare(sp + 1, what.size() + 1 + tier_key.size() + 1, what + " " + tier_key + " ") == 0) {
      lines.push_back(line);
    }
  }
  return lines;
}

// A fragment the tier holds is not rendered by a node that misses it locally: node b's only
// lookup of it is a hit (its l2-trace= says so, and no miss), it renders no diff fragment, and
// the key it looked up is the one memcached lists (what bench/scenarios/cluster.sh relies on).
TEST(SharedTier, ANodeWhoseTierHoldsAFragmentDoesNotRenderIt) {
  Repos repos;
  Memcached m;
  ASSERT_TRUE(m.ok()) << "memcached did not start (is it installed?)";
  const std::string trace_a = repos.dir().File("a.trace"), trace_b = repos.dir().File("b.trace");
  ShellacProcess a, b;
  ASSERT_TRUE(a.Start(repos.Config(L2({&m}) + "l2-trace=" + trace_a + "\n")));
  const std::string commit = "/base/commit/?id=" + repos.second();
  Response ra = HttpGet(a.Port(), commit);
  ASSERT_EQ(ra.status, 200) << ra.Describe();
  WaitForMetric(a.AdminPort(), "shellac_l2_puts_total", {}, 1);
  // Node a's trace: one lookup of the commit's diff fragment, a miss, then its write. The tier key
  // is the one SharedTier::TierKey derives from the store key.
  std::string tier_key, key;
  {
    std::istringstream in(ReadFile(trace_a));
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string time, event, outcome, tk, k;
      words >> time >> event >> outcome >> tk >> k;
      if (event == "get" && k.starts_with("gitfrag/diff/")) {
        EXPECT_TRUE(tier_key.empty()) << "a second lookup: " << line;
        EXPECT_EQ(outcome, "miss") << line;
        tier_key = tk;
        key = k;
      }
    }
  }
  ASSERT_FALSE(tier_key.empty()) << ReadFile(trace_a);
  EXPECT_EQ(cache::SharedTier::TierKey(key), tier_key);
  EXPECT_EQ(TraceLines(trace_a, "put ok", tier_key).size(), 1u) << ReadFile(trace_a);
  // memcached itself lists the key (lru_crawler metadump: one "key=K exp=..." line per item, K
  // URL-encoded: '/' is %2F).
  std::string listed = tier_key;
  listed.replace(listed.find('/'), 1, "%2F");
  const std::string dump = m.Command("lru_crawler metadump all\r\n", {"END\r\n"});
  EXPECT_NE(dump.find("key=" + listed + " "), std::string::npos) << dump;

  ASSERT_TRUE(b.Start(repos.Config(L2({&m}) + "l2-trace=" + trace_b + "\n")));
  Response rb = HttpGet(b.Port(), "/fork/commit/?id=" + repos.second());
  ASSERT_EQ(rb.status, 200) << rb.Describe();
  EXPECT_NE(rb.body.find("five"), std::string::npos) << "the fragment is on the page";
  EXPECT_EQ(Renders(b, "commit", 1), 1);
  // The trace line is written before the lookup's answer is used, so it is there by now.
  EXPECT_EQ(TraceLines(trace_b, "get hit", tier_key).size(), 1u) << ReadFile(trace_b);
  EXPECT_EQ(TraceLines(trace_b, "get miss", tier_key).size(), 0u) << ReadFile(trace_b);
  EXPECT_EQ(TraceLines(trace_b, "put ok", tier_key).size(), 0u) << ReadFile(trace_b);
  EXPECT_EQ(Metric(b, "shellac_renders_total", {{"kind", "diff-fragment"}}), 0) << b.StderrText();
  EXPECT_EQ(Metric(b, "shellac_l2_hits_total"), 1);
}

// memcached killed while nodes run: every page is still served (rendered locally), and the
// failures are counted.
TEST(SharedTier, PagesAreStillServedWhenMemcachedDies) {
  Repos repos;
  Memcached m;
  ASSERT_TRUE(m.ok());
  const std::string config = repos.Config(L2({&m}));
  ShellacProcess a;
  ASSERT_TRUE(a.Start(config));
  ASSERT_EQ(HttpGet(a.Port(), "/base/patch/?id=" + repos.second()).status, 200);
  WaitForMetric(a.AdminPort(), "shellac_l2_puts_total", {}, 1);
  m.Kill();
  const std::string first = Shell("git -C " + ShellQuote(repos.dir().File("base.git")) +
                                  " rev-parse master~1").substr(0, 40);
  for (const std::string& target : {"/base/commit/?id=" + repos.second(), "/base/patch/?id=" + first,
                                    "/base/commit/?id=" + first, "/fork/rawdiff/?id=" + first}) {
    Response r = HttpGet(a.Port(), target);
    EXPECT_EQ(r.status, 200) << target << "\n" << r.Describe();
  }
  EXPECT_GE(MetricSum(WaitForMetric(a.AdminPort(), "shellac_l2_errors_total", {}, 1),
                      "shellac_l2_errors_total"), 1);
  // A node started while the tier is down serves too.
  ShellacProcess b;
  ASSERT_TRUE(b.Start(config));
  Response r = HttpGet(b.Port(), "/base/patch/?id=" + repos.second());
  EXPECT_EQ(r.status, 200) << r.Describe();
  EXPECT_EQ(Renders(b, "patch", 1), 1);
}

// A value that is damaged, or not shellac's, is a miss: counted, never served; the node renders.
TEST(SharedTier, ACorruptValueIsAMiss) {
  Repos repos;
  Memcached m;
  ASSERT_TRUE(m.ok());
  const std::string config = repos.Config(L2({&m}));
  const std::string patch = "/base/patch/?id=" + repos.second();
  ShellacProcess a;
  ASSERT_TRUE(a.Start(config));
  Response good = HttpGet(a.Port(), patch);
  ASSERT_EQ(good.status, 200);
  WaitForMetric(a.AdminPort(), "shellac_l2_puts_total", {}, 1);
  const std::string tier_key = cache::SharedTier::TierKey(PartKey(a, patch));
  ASSERT_FALSE(tier_key.empty());
  const std::optional<std::string> value = m.Get(tier_key);
  ASSERT_TRUE(value) << "the patch is not in memcached under " << tier_key;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"a flipped byte", [&] { std::string v = *value; v[v.size() / 2] ^= 0x01; return v; }()},
      {"cut short", value->substr(0, value->size() - 10)},
      {"another format version", [&] { std::string v = *value; v[4] = 9; return v; }()},
      {"not shellac's", "hello from another program"},
  };
  for (const auto& [what, bytes] : bad) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(m.Set(tier_key, bytes));
    ShellacProcess b;
    ASSERT_TRUE(b.Start(config));
    Response r = HttpGet(b.Port(), patch);
    ASSERT_EQ(r.status, 200) << r.Describe();
    EXPECT_EQ(r.body, good.body);
    EXPECT_EQ(Renders(b, "patch", 1), 1) << "rendered, not served from the bad value";
    EXPECT_EQ(Metric(b, "shellac_l2_corrupt_total"), 1);
    EXPECT_EQ(Metric(b, "shellac_l2_hits_total"), 0);
  }
}

// Debian's haproxy running conf/haproxy.cfg.example with its bind and server lines pointed at
// loopback ports.
class Haproxy {
 public:
  Haproxy(const std::vector<const ShellacProcess*>& nodes) {
    const char* source = std::getenv("SHELLAC_SOURCE");
    std::string example = source ? ReadFile(std::string(source) + "/conf/haproxy.cfg.example") : "";
    EXPECT_FALSE(example.empty()) << "conf/haproxy.cfg.example not found (SHELLAC_SOURCE)";
    port_ = FreePort();
    std::string config, line;
    std::istringstream in(example);
    bool servers_written = false;
    while (std::getline(in, line)) {
      if (line.starts_with("    bind ")) {
        line = "    bind 127.0.0.1:" + std::to_string(port_);
      } else if (line.starts_with("    server ")) {
        if (servers_written) continue;
        servers_written = true;
        line.clear();
        for (size_t i = 0; i < nodes.size(); ++i) {
          line += "    server node" + std::to_string(i + 1) + " 127.0.0.1:" +
                  std::to_string(nodes[i]->Port()) + " port " + std::to_string(nodes[i]->AdminPort()) +
                  (i + 1 < nodes.size() ? "\n" : "");
        }
      } else if (line.starts_with("    log ")) {
        continue;  // no log lines on the test's output
      } else if (line.starts_with("    maxconn ")) {
        line = "    maxconn 1000";  // within the test's descriptor limit
      }
      config += line + "\n";
    }
    EXPECT_TRUE(servers_written);
    WriteFile(dir_.File("haproxy.cfg"), config);
    pid_ = fork();
    if (pid_ == 0) {
      const std::string file = dir_.File("haproxy.cfg");
      execlp("haproxy", "haproxy", "-db", "-f", file.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto deadline = Clock::now() + Millis(5000);
    while (Clock::now() < deadline) {
      if (int fd = ConnectLoopback(port_); fd >= 0) {
        close(fd);
        ready_ = true;
        break;
      }
      std::this_thread::sleep_for(Millis(10));
    }
  }
  ~Haproxy() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ready() const { return ready_; }
  int port() const { return port_; }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool ready_ = false;
};

// Pages each node has answered itself (resident pages; the health checks are the admin route's).
double Answered(const ShellacProcess& node) {
  return Metric(node, "shellac_requests_total", {{"route", "local"}});
}

// HAProxy with the shipped configuration in front of three nodes: every URL of one commit reaches
// the same node, and with one node killed every request still succeeds.
TEST(Balancer, OneCommitOneNodeAndNoErrorsWhenANodeDies) {
  Repos repos;
  const std::string config = repos.Config();
  std::vector<std::unique_ptr<ShellacProcess>> nodes;
  std::vector<const ShellacProcess*> view;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(std::make_unique<ShellacProcess>());
    ASSERT_TRUE(nodes.back()->Start(config));
    view.push_back(nodes.back().get());
  }
  Haproxy balancer(view);
  ASSERT_TRUE(balancer.ready()) << "haproxy did not start (is it installed?)";
  const std::string first = Shell("git -C " + ShellQuote(repos.dir().File("base.git")) +
                                  " rev-parse master~1").substr(0, 40);
  // Every URL of one commit (any repository, any page) on one node; each commit asked 12 times.
  for (const std::string& id : {repos.second(), first}) {
    std::vector<double> before;
    for (const auto& n : nodes) before.push_back(Answered(*n));
    const std::vector<std::string> targets = {"/base/commit/?id=" + id, "/fork/commit/?id=" + id,
                                              "/base/patch/?id=" + id, "/fork/rawdiff/?id=" + id};
    for (int round = 0; round < 3; ++round) {
      for (const auto& target : targets) {
        Response r = HttpGet(balancer.port(), target);
        ASSERT_EQ(r.status, 200) << target << "\n" << r.Describe();
      }
    }
    // Counters follow the responses by a moment: wait until the nodes' counts add up to 12.
    std::vector<double> delta(nodes.size());
    const auto deadline = Clock::now() + Millis(5000);
    double total = 0;
    do {
      total = 0;
      for (size_t i = 0; i < nodes.size(); ++i) total += delta[i] = Answered(*nodes[i]) - before[i];
    } while (total < 12 && Clock::now() < deadline && (std::this_thread::sleep_for(Millis(20)), true));
    EXPECT_EQ(total, 12);
    int reached = 0;
    for (double d : delta) reached += d > 0 ? 1 : 0;
    EXPECT_EQ(reached, 1) << "commit " << id << " was answered by " << reached << " nodes";
  }
  // Kill the node that holds the second commit; its requests go to the others without an error,
  // also before the health check has noticed.
  size_t victim = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (Answered(*nodes[i]) > Answered(*nodes[victim])) victim = i;
  nodes[victim]->Signal(SIGKILL);
  ASSERT_TRUE(nodes[victim]->WaitExit(Millis(5000)));
  int failed = 0;
  for (int round = 0; round < 20; ++round) {
    for (const std::string& id : {repos.second(), first}) {
      Response r = HttpGet(balancer.port(), "/base/commit/?id=" + id);
      if (r.status != 200) ++failed;
    }
  }
  EXPECT_EQ(failed, 0) << "requests failed after a node died";
}

}  // namespace
}  // namespace shellac::test

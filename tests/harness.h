// Integration-test harness: starts the real shellac binary on ephemeral loopback ports, runs
// in-test HTTP/1.1 origin servers and talks raw HTTP to the proxy.
//
// Plain POSIX sockets and std::thread only. Every blocking operation has a deadline (poll before
// each read/write), so a misbehaving proxy makes a test fail, never hang.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace shellac::test {

using Millis = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using Headers = std::vector<std::pair<std::string, std::string>>;

// ---------------------------------------------------------------------------------------------
// Files

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `content` to `path` atomically (temp file in the same folder + rename), so a process
// reading the file concurrently sees either the old or the new content, never a partial one.
void WriteFile(const std::string& path, const std::string& content);
// Whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Debian's cgit 1.2.3, the peer pages are compared with.
inline constexpr const char* kCgit = "/usr/lib/cgit/cgit.cgi";
// Whether kCgit can be run. A test that compares with cgit starts with
// ASSERT_TRUE(CgitInstalled()): `make test` installs it, so a missing cgit fails the test (a skip
// would look like a pass).
::testing::AssertionResult CgitInstalled();
// cgit's whole answer (CGI head and body) to a GET of PATH_INFO `path_info` (decoded, as a web
// server passes it) and QUERY_STRING `query`, with the cgitrc at `cgitrc`, in an empty environment
// but for `env` (more NAME=VALUE words, quoted for /bin/sh).
std::string RunCgit(const std::string& cgitrc, const std::string& path_info,
                    const std::string& query = "", const std::string& env = "");
// The body of a CGI answer: what follows its head's empty line (all of it when there is none).
std::string CgiBody(const std::string& cgi);
// Header `name` of a CGI answer (its head ends at the first empty line), "(none)" when absent.
std::string CgiHeader(const std::string& cgi, const std::string& name);

// The same of a rendered page (a gitfrag::Page: its content type, then its extra headers; a
// template so that the harness does not link gitfrag).
template <class RenderedPage>
std::string PageHeader(const RenderedPage& page, const std::string& name) {
  if (name == "Content-Type") return page.content_type;
  for (const auto& [n, v] : page.headers)
    if (n == name) return v;
  return "(none)";
}

// A real repository the tree-diff and line-count comparisons sample, when one is named:
// SHELLAC_TREE_DIFF_REPO=PATH (e.g. a clone of git/git) and SHELLAC_TREE_DIFF_EVERY=K (default
// 200): every K-th commit `git rev-list REV_LIST_OPTIONS HEAD` lists. nullopt when none is named
// (the caller skips).
struct RepositorySample {
  std::string path;
  std::vector<std::string> commits;  // full ids
};
std::optional<RepositorySample> TreeDiffRepositorySample(const std::string& rev_list_options = "");

// `s` without the newlines and blanks at its end (a command's output).
std::string Trimmed(std::string s);

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s);
// Runs `command` with /bin/sh and returns its standard output; fails the test on a non-zero exit.
std::string Shell(const std::string& command);

// Who a fixture's commits are by, and when (empty dates: git's clock). Pages show these, so a
// test that checks a name or a date picks its identity; kThor is the one most fixtures use.
struct GitIdentity {
  std::string author = "A", committer = "C";
  std::string author_date, committer_date;
};
inline const GitIdentity kThor{"A U Thor", "C O Mitter", "2021-03-04T05:06:07+0100",
                               "2021-03-04T06:07:08-0700"};
inline const GitIdentity kDated{"A", "C", kThor.author_date, kThor.committer_date};
// Runs the sh `script` in `dir` (after writing it there as make.sh) with git's environment fixed:
// HOME is `dir`, no system config, the identity `who` (e-mails a@example.org and c@example.org; an
// empty name is left to the script);
// `args` are the script's $1... (already quoted). Returns its output; fails the test on an error.
std::string MakeFixture(const TempDir& dir, const std::string& script,
                        const GitIdentity& who = {}, const std::string& args = "");

// The long-history blame fixture: a bare repository made at `bare` by git fast-import, `commits`
// commits on master (committer dates one second apart), each changing line 2 of f.txt between a
// first and a last line the root wrote (so a blame of f.txt walks every commit), and every 5th one
// editing g.txt (lines inserted, deleted, replaced, moved and repeated, from a fixed seed, so its
// blame has many entries from many commits).
void MakeLongHistory(const std::string& bare, int commits = 3000);

// ---------------------------------------------------------------------------------------------
// Bytes

// FNV-1a 64 over a byte stream; used to compare large bodies without storing them.
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
inline uint64_t FnvUpdate(uint64_t h, std::string_view data) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A deterministic byte stream of any length: byte i is PatternData()[i % kPatternPeriod]. The
// period is prime so it never lines up with buffer or chunk boundaries.
constexpr size_t kPatternPeriod = 65521;
// 2 * kPatternPeriod bytes, so [off % period, off % period + n) is contiguous for n <= period.
const char* PatternData();
// Bytes [offset, offset + n) of the stream, n <= kPatternPeriod.
inline std::string_view PatternSlice(uint64_t offset, size_t n) {
  return std::string_view(PatternData() + offset % kPatternPeriod, n);
}
// FNV-1a of the first `n` bytes of the stream.
uint64_t PatternHash(uint64_t n);

// Inflates one gzip member; fails the test on any error (corrupt data, bytes after the member).
std::string Gunzip(std::string_view data);
// One gzip member of `data` at zlib `level`, as `gzip -LEVEL` would produce (sizes match within
// bytes).
std::string Gzip(std::string_view data, int level = 6);

// Case-insensitive ASCII comparison / search.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle);
// Splits a comma-separated header value into trimmed, lower-cased tokens.
std::vector<std::string> HeaderTokens(std::string_view value);

// First value of header `name` (case-insensitive), if any.
std::optional<std::string> FindHeader(const Headers& headers, std::string_view name);
int CountHeader(const Headers& headers, std::string_view name);
std::string FormatHeaders(const Headers& headers);
// Printable form of arbitrary bytes for failure messages (controls as \xHH, long input cut).
std::string Printable(std::string_view bytes, size_t max = 600);

// ---------------------------------------------------------------------------------------------
// The shellac process

struct CommandResult {
  int status = -1;  // exit code, 128+signal when killed, -1 when it did not finish in time
  std::string out;
  std::string err;
};

// Runs $SHELLAC_BIN with `args` (argv[1..]) in `cwd`, collecting stdout and stderr; kills it after
// `timeout`.
CommandResult RunShellac(const std::vector<std::string>& args, const std::string& cwd,
                         Millis timeout = Millis(10'000));

// Path of the binary under test ($SHELLAC_BIN), or "" when unset.
std::string ShellacBinary();

// "listen=127.0.0.1:0 admin-listen=127.0.0.1:0 threads=2 access-log=off" (+ backend when
// backend_port > 0) + `extra` (more key=value lines).
std::string BaseConfig(int backend_port = 0, const std::string& extra = "");

class ShellacProcess {
 public:
  ShellacProcess();
  ~ShellacProcess();  // SIGKILL if still running
  ShellacProcess(const ShellacProcess&) = delete;
  ShellacProcess& operator=(const ShellacProcess&) = delete;

  // Writes `config` to <tempdir>/shellac.conf, starts `$SHELLAC_BIN -c FILE extra_args...` and
  // waits (10 s at most) for "shellac: ready". Fails with the captured stderr on timeout or exit.
  ::testing::AssertionResult Start(const std::string& config,
                                   const std::vector<std::string>& extra_args = {});

  // Starts `$SHELLAC_BIN args...` in `cwd` with no config file (the embedded default), and waits
  // for "shellac: ready" as Start() does.
  ::testing::AssertionResult StartWithoutConfig(const std::string& cwd,
                                                const std::vector<std::string>& args);

  // Sets an environment variable for the process (call before Start).
  void SetEnv(const std::string& name, const std::string& value) { env_[name] = value; }
  // For memory-bound tests: in a sanitizer build, ASan's quarantine of freed blocks makes VmHWM
  // grow with bytes relayed even when buffering is bounded; this turns the quarantine off for
  // this process only (no effect on a normal build).
  void DisableAsanQuarantine();

  // Rewrites the config file atomically (does not signal).
  void RewriteConfig(const std::string& config);
  const std::string& ConfigPath() const { return config_path_; }
  const TempDir& Dir() const { return dir_; }

  int Port() const { return listen_ports_.empty() ? 0 : listen_ports_[0]; }
  const std::vector<int>& ListenPorts() const { return listen_ports_; }
  // listen-tls= ports, from the "shellac: TLS on HOST:PORT" lines, in configuration order.
  const std::vector<int>& TlsPorts() const { return tls_ports_; }
  int AdminPort() const { return admin_port_; }
  pid_t Pid() const { return pid_; }

  void Signal(int sig);
  // Exit code (128+signal when killed by one), or nullopt if still running after `timeout`. Once
  // it has exited, its stderr has been read to the end (within `timeout`): Lines() holds all.
  std::optional<int> WaitExit(Millis timeout);
  bool Running();

  // Waits until a stderr line containing `needle` exists (at any time since start, counting
  // from line index `from`). Returns the line.
  std::optional<std::string> WaitForLine(const std::string& needle, Millis timeout,
                                         size_t from = 0);
  // Waits until at least `n` lines contain `needle`.
  bool WaitForLineCount(const std::string& needle, size_t n, Millis timeout);
  size_t CountLines(const std::string& needle);
  std::vector<std::string> Lines();
  std::string StderrText();  // all lines joined, for failure messages

  // From /proc/PID/status, in KiB; -1 when unavailable.
  long RssKiB() const;
  long HwmKiB() const;

 private:
  void ReaderLoop(int fd);
  ::testing::AssertionResult Launch(std::vector<std::string> argv, const std::string& cwd);

  TempDir dir_;
  std::string config_path_;
  std::map<std::string, std::string> env_;
  pid_t pid_ = -1;
  Clock::time_point started_;
  std::optional<int> exit_status_;
  std::vector<int> listen_ports_;
  std::vector<int> tls_ports_;
  int admin_port_ = 0;

  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  bool stderr_eof_ = false;
};

// ---------------------------------------------------------------------------------------------
// Raw HTTP client

struct Response {
  bool ok = false;    // a complete response was read
  std::string error;  // why not
  std::string version;
  int status = 0;
  std::string reason;
  Headers headers;
  std::string body;         // up to ReadOptions::store_limit bytes
  uint64_t body_bytes = 0;  // all body bytes (decoded when chunked)
  uint64_t body_hash = kFnvOffset;
  bool chunked = false;
  bool close_delimited = false;
  std::string raw_head;
  std::vector<int> interim_statuses;  // 1xx responses skipped before this one

  std::optional<std::string> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
  int HeaderCount(std::string_view name) const { return CountHeader(headers, name); }
  // Status line, headers and the start of the body, for failure messages.
  std::string Describe() const;
};

struct ReadOptions {
  Millis timeout{5'000};          // for the whole response
  bool head_request = false;      // the request was HEAD: no body whatever the headers say
  size_t store_limit = SIZE_MAX;  // bytes of body kept in Response::body
  // Slow reader: after every `slow_chunk` body bytes consumed, sleep `slow_sleep`.
  size_t slow_chunk = 0;
  std::chrono::microseconds slow_sleep{0};
};

enum class PeerState { kClosed, kReset, kData, kTimeout, kError };
const char* PeerStateName(PeerState s);

// Every test reads responses through this one client: the head, then the body by its framing
// (Content-Length, chunked with trailers, or close-delimited), under one deadline for the whole
// response, keeping any bytes past the response for the next Read (pipelining). TLS tests use a
// subclass that overrides the byte transport (RecvSome/SendSome) and nothing else.
class RawClient {
 public:
  RawClient() = default;
  virtual ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Connects to 127.0.0.1:port (2 s at most). rcvbuf > 0 sets SO_RCVBUF before connecting;
  // `source` (an IPv4 loopback address such as "127.0.0.3") is the address to connect from.
  // On failure returns false and remembers errno in last_errno().
  bool Connect(int port, int rcvbuf = 0, const std::string& source = "");
  bool connected() const { return fd_ >= 0; }
  int last_errno() const { return last_errno_; }
  int fd() const { return fd_; }

  bool Send(std::string_view data, Millis timeout = Millis(5'000));
  // Sends `total` bytes of the pattern stream as a request body, raw (chunked=false) or in
  // chunked framing with irregular chunk sizes (terminated by "0\r\n\r\n").
  bool SendPattern(uint64_t total, bool chunked, Millis timeout);

  Response Read(const ReadOptions& options = {});
  // Send + Read.
  Response RoundTrip(std::string_view request, const ReadOptions& options = {});

  // Waits for the peer to close. kData when bytes arrived instead (they are kept for Read).
  PeerState WaitClosed(Millis timeout);
  // Everything until EOF or reset (including buffered unread bytes). When the peer has not closed
  // by `timeout`, the test fails (the bytes so far are still returned).
  std::string ReadUntilClose(Millis timeout);
  // Bytes that arrived and were not consumed by Read.
  const std::string& Pending() const { return buf_; }
  // Polls for `timeout` and returns any bytes that arrive (kept pending too). Only for checking
  // that nothing arrives; to wait for bytes that should, use WaitForBytes.
  std::string PeekAvailable(Millis timeout);
  // Receives until the unread bytes contain `needle` (true), or EOF / `timeout` (false). The bytes
  // stay pending for Read.
  bool WaitForBytes(std::string_view needle, Millis timeout);

  virtual void Close();

 protected:
  // The byte transport, over fd_ (non-blocking). Each returns >0 bytes moved, 0 on EOF (RecvSome
  // only), or -1 with errno set; EAGAIN means "poll fd_ for *wait" and call again.
  virtual ssize_t RecvSome(char* buf, size_t n, short* wait);
  virtual ssize_t SendSome(const char* buf, size_t n, short* wait);

 private:
  // Receives more bytes into buf_; returns >0 bytes read, 0 on EOF, -1 on error/timeout
  // (err set to a description).
  ssize_t Fill(Clock::time_point deadline, size_t max, std::string* err);

  int fd_ = -1;
  int last_errno_ = 0;
  std::string buf_;
  bool eof_ = false;
};

// GET `path` on a new connection to port, with optional extra header lines ("Name: value\r\n").
Response HttpGet(int port, const std::string& path, const std::string& extra_headers = "",
                 Millis timeout = Millis(5'000));

// Fetches admin /metrics (empty on failure).
std::string FetchMetrics(int admin_port);
// Sum of every sample of metric `name` whose labels include all of `labels` (exact values).
// A metric with no sample counts 0.
double MetricSum(const std::string& metrics_text, const std::string& name,
                 const std::map<std::string, std::string>& labels = {});

// Counters are updated by worker threads as requests finish, which may be a moment after the
// client has the last byte: polls /metrics until the sum reaches `min` (or `timeout` passes) and
// returns the last text fetched, for the caller to assert on.
std::string WaitForMetric(int admin_port, const std::string& name,
                          const std::map<std::string, std::string>& labels, double min,
                          Millis timeout = Millis(5'000));

// For a gauge or a counter that must settle at an exact value: polls /metrics until the sum equals
// `value` (or `timeout` passes) and returns the last text fetched, for the caller to assert on.
std::string WaitForMetricValue(int admin_port, const std::string& name,
                               const std::map<std::string, std::string>& labels, double value,
                               Millis timeout = Millis(5'000));

// A TCP port on 127.0.0.1 where connections are refused: a socket bound but never listening,
// held open for the object's lifetime so nobody else gets the port.
class RefusingPort {
 public:
  RefusingPort();
  ~RefusingPort();
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// ---------------------------------------------------------------------------------------------
// In-test origin server

struct OriginRequest {
  int conn_id = 0;
  int index_on_conn = 0;  // 0 for the first request on its connection
  std::string method, target, version;
  Headers headers;
  std::string body;  // up to Origin's store limit
  uint64_t body_bytes = 0;
  uint64_t body_hash = kFnvOffset;
  bool chunked = false;

  std::optional<std::string> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
  int HeaderCount(std::string_view name) const { return CountHeader(headers, name); }
  std::string Describe() const;
};

class Origin;

// Handed to the handler to write one response. Writes are blocking with a deadline.
class OriginConnection {
 public:
  OriginConnection(Origin* origin, int fd, int id) : origin_(origin), fd_(fd), id_(id) {}

  bool Write(std::string_view bytes);
  // Close the connection after this response.
  void CloseAfter() { close_after_ = true; }
  bool close_after() const { return close_after_; }
  int id() const { return id_; }
  // Sleeps, waking early when the origin stops. False when it stopped.
  bool Sleep(Millis d);

  // Common responses. `extra` header lines are "Name: value" pairs.
  void SendFixed(int status, std::string_view body, const Headers& extra = {});
  void SendHeadOnly(int status, const Headers& headers);  // exactly these headers, no body
  void SendChunked(int status, const std::vector<std::string>& chunks, const Headers& extra = {});
  void SendCloseDelimited(int status, std::string_view body, const Headers& extra = {});
  // `total` pattern bytes, as fast as possible, with Content-Length or chunked.
  void SendStream(uint64_t total, bool chunked, const Headers& extra = {});
  // Never answers: blocks until the origin stops or the peer closes. Then closes.
  void NeverRespond();

 private:
  Origin* origin_;
  int fd_;
  int id_;
  bool close_after_ = false;
};

using OriginHandler = std::function<void(const OriginRequest&, OriginConnection&)>;

class Origin {
 public:
  // Default handler: 200, body "origin:" + target.
  explicit Origin(OriginHandler handler = nullptr);
  ~Origin();
  Origin(const Origin&) = delete;
  Origin& operator=(const Origin&) = delete;

  int port() const { return port_; }
  void SetHandler(OriginHandler handler);
  // Bodies longer than this are counted and hashed but not stored (default 1 MiB).
  void SetStoreLimit(size_t n) { store_limit_ = n; }
  // Slow body reads: after every `chunk` body bytes, sleep `sleep` (backpressure tests).
  void SetSlowBodyRead(size_t chunk, std::chrono::microseconds sleep) {
    slow_chunk_ = chunk;
    slow_sleep_ = sleep;
  }

  std::vector<OriginRequest> Requests();
  size_t RequestCount();
  bool WaitForRequests(size_t n, Millis timeout);
  uint64_t BytesReceived();  // raw bytes over all connections
  int ConnectionsAccepted();
  std::vector<std::string> RawConnections();  // raw bytes per connection (each capped at 1 MiB)
  std::vector<std::string> Errors();          // requests the origin could not parse
  void Reset();                               // forgets recorded requests/bytes/errors

  void Stop();
  bool stopping() const { return stopping_.load(); }

 private:
  friend class OriginConnection;
  void AcceptLoop();
  void ConnectionLoop(int fd, int id);
  void HandlerDefault(const OriginRequest& req, OriginConnection& conn);
  void RecordBytes(int id, std::string_view bytes);

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written by Stop() to wake the accept loop
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  std::mutex mu_;
  std::condition_variable cv_;
  OriginHandler handler_;
  std::vector<std::thread> threads_;
  std::set<int> open_fds_;
  std::vector<OriginRequest> requests_;
  std::map<int, std::string> raw_;
  uint64_t bytes_received_ = 0;
  int connections_ = 0;
  int next_id_ = 1;
  std::vector<std::string> errors_;

  std::atomic<size_t> store_limit_{1 << 20};
  std::atomic<size_t> slow_chunk_{0};
  std::chrono::microseconds slow_sleep_{0};
};

std::string StatusReason(int status);

// ---------------------------------------------------------------------------------------------
// Pages compared with cgit's

// The visible text of an HTML page: the generator footer removed (cgit's names its version and
// the time of rendering), tags stripped (inline <span> highlighting without a trace, other tags
// as a space), entities decoded, whitespace runs collapsed to a space. With `drop_line_numbers`
// the side-by-side line-number cells are left out.
std::string VisibleText(std::string html, bool drop_line_numbers = false);
// First position where two long strings differ, with context, for readable failures.
std::string FirstDifference(const std::string& a, const std::string& b);

}  // namespace shellac::test

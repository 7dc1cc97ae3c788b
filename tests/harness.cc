#include "tests/harness.h"

#include <zlib.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

namespace shellac::test {
namespace {

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  if (left < 0) return 0;
  if (left > 1'000'000) return 1'000'000;
  return static_cast<int>(left);
}

// poll() one fd for `events` until deadline; returns revents, 0 on timeout, -1 on error.
int PollUntil(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 0;
    return p.revents;
  }
}

void RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        RemoveTree(path + "/" + name);
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Parses "Name: value" lines (separated by CRLF) into headers. False on a line without colon.
bool ParseHeaderLines(std::string_view block, Headers* out, std::string* err) {
  size_t pos = 0;
  while (pos < block.size()) {
    size_t eol = block.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = block.size();
    std::string_view line = block.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      *err = "header line without colon: " + Printable(line);
      return false;
    }
    out->emplace_back(std::string(line.substr(0, colon)), Trim(line.substr(colon + 1)));
  }
  return true;
}

struct SigpipeIgnorer {
  SigpipeIgnorer() { ::signal(SIGPIPE, SIG_IGN); }
} sigpipe_ignorer;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Files

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/shellac-it-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  RemoveTree(path_);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp-write";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << content;
    f.flush();
    if (!f) {
      ADD_FAILURE() << "cannot write " << tmp;
      return;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ADD_FAILURE() << "rename " << tmp << " -> " << path << ": " << std::strerror(errno);
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------------------------------------
// Bytes

const char* PatternData() {
  static const std::string data = [] {
    std::string d(2 * kPatternPeriod, '\0');
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < kPatternPeriod; ++i) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      d[i] = static_cast<char>(x >> 24);
    }
    std::copy(d.begin(), d.begin() + kPatternPeriod, d.begin() + kPatternPeriod);
    return d;
  }();
  return data.data();
}

uint64_t PatternHash(uint64_t n) {
  uint64_t h = kFnvOffset;
  uint64_t off = 0;
  while (off < n) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(n - off, kPatternPeriod));
    h = FnvUpdate(h, PatternSlice(off, len));
    off += len;
  }
  return h;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  return Lower(haystack).find(Lower(needle)) != std::string::npos;
}

std::vector<std::string> HeaderTokens(std::string_view value) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string t = Lower(Trim(value.substr(pos, comma - pos)));
    if (!t.empty()) out.push_back(t);
    pos = comma + 1;
  }
  return out;
}

std::optional<std::string> FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return std::nullopt;
}

int CountHeader(const Headers& headers, std::string_view name) {
  int n = 0;
  for (const auto& [k, v] : headers) n += EqualsIgnoreCase(k, name) ? 1 : 0;
  return n;
}

std::string FormatHeaders(const Headers& headers) {
  std::string out;
  for (const auto& [k, v] : headers) out += "  " + k + ": " + Printable(v, 200) + "\n";
  return out;
}

std::string Printable(std::string_view bytes, size_t max) {
  std::string out;
  size_t n = std::min(bytes.size(), max);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char tmp[8];
      std::snprintf(tmp, sizeof tmp, "\\x%02x", c);
      out += tmp;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (bytes.size() > max) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string StatusReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 500:
      return "Internal Server Error";
    default:
      return "Status";
  }
}

// ---------------------------------------------------------------------------------------------
// Process helpers

std::string ShellacBinary() {
  const char* bin = std::getenv("SHELLAC_BIN");
  return bin ? bin : "";
}

std::string Gunzip(std::string_view data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  std::string out;
  char buf[16384];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END) << "gzip body did not decode";
  EXPECT_EQ(z.avail_in, 0u) << "bytes after the gzip member";
  inflateEnd(&z);
  return out;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "failed: " << command << "\n"
                                                             << out;
  return out;
}

::testing::AssertionResult CgitInstalled() {
  if (access(kCgit, X_OK) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << kCgit
                                       << " is missing: `make test` installs Debian's cgit, which "
                                          "these pages are compared with";
}

std::string RunCgit(const std::string& cgitrc, const std::string& path_info,
                    const std::string& query, const std::string& env) {
  return Shell("env -i " + env + " CGIT_CONFIG=" + ShellQuote(cgitrc) +
               " REQUEST_METHOD=GET PATH_INFO=" + ShellQuote(path_info) +
               " QUERY_STRING=" + ShellQuote(query) + " SCRIPT_NAME=/ " + kCgit);
}

std::string CgiBody(const std::string& cgi) {
  const size_t body = cgi.find("\n\n");
  return body == std::string::npos ? cgi : cgi.substr(body + 2);
}

std::string CgiHeader(const std::string& cgi, const std::string& name) {
  const std::string head = "\n" + cgi.substr(0, cgi.find("\n\n"));
  const size_t at = head.find("\n" + name + ": ");
  if (at == std::string::npos) return "(none)";
  const size_t from = at + name.size() + 3;
  return head.substr(from, head.find('\n', from) - from);
}

std::optional<RepositorySample> TreeDiffRepositorySample(const std::string& rev_list_options) {
  const char* path = std::getenv("SHELLAC_TREE_DIFF_REPO");
  if (path == nullptr) return std::nullopt;
  const char* every = std::getenv("SHELLAC_TREE_DIFF_EVERY");
  RepositorySample sample{path, {}};
  const std::string k = every != nullptr ? every : "200";
  std::istringstream ids(Shell("git -C " + ShellQuote(path) + " rev-list " + rev_list_options +
                               " HEAD | awk 'NR % " + k + " == 1'"));
  for (std::string id; std::getline(ids, id);)
    if (!id.empty()) sample.commits.push_back(id);
  return sample;
}

std::string MakeFixture(const TempDir& dir, const std::string& script, const GitIdentity& who,
                        const std::string& args) {
  WriteFile(dir.File("make.sh"), script);
  std::string env = "env HOME=" + ShellQuote(dir.path()) +
                    " GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_EMAIL=a@example.org GIT_COMMITTER_EMAIL=c@example.org";
  if (!who.author.empty()) env += " GIT_AUTHOR_NAME=" + ShellQuote(who.author);
  if (!who.committer.empty()) env += " GIT_COMMITTER_NAME=" + ShellQuote(who.committer);
  if (!who.author_date.empty()) env += " GIT_AUTHOR_DATE=" + ShellQuote(who.author_date);
  if (!who.committer_date.empty()) env += " GIT_COMMITTER_DATE=" + ShellQuote(who.committer_date);
  return Shell("cd " + ShellQuote(dir.path()) + " && " + env + " sh make.sh " + args + " 2>&1");
}

void MakeLongHistory(const std::string& bare, int commits) {
  std::ostringstream in;
  std::vector<std::string> g;
  for (int n = 1; n <= 40; ++n) g.push_back(n % 7 == 0 ? "}" : n % 5 == 0 ? "" : "g0-" + std::to_string(n));
  uint32_t seed = 12345;
  auto next = [&seed](uint32_t bound) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % bound;
  };
  for (int i = 1; i <= commits; ++i) {
    const std::string text = "first\nchange " + std::to_string(i) + "\nlast\n";
    in << "commit refs/heads/master\nmark :" << i << "\ncommitter C <c@example.org> "
       << 1600000000 + i << " +0000\ndata 2\nc\n";
    if (i > 1) in << "from :" << i - 1 << "\n";
    in << "M 100644 inline f.txt\ndata " << text.size() << "\n" << text << "\n";
    if (i == 1 || i % 5 == 0) {
      if (i > 1) {
        const std::string fresh = "g" + std::to_string(i) + "-";
        for (int edit = 0, edits = 1 + static_cast<int>(next(3)); edit < edits; ++edit) {
          const size_t at = next(static_cast<uint32_t>(g.size()) + 1);
          switch (next(6)) {
            case 0:  // insert a few lines
              for (uint32_t k = 0, n = 1 + next(3); k < n; ++k)
                g.insert(g.begin() + static_cast<std::ptrdiff_t>(at), fresh + std::to_string(edit) + "." + std::to_string(k));
              break;
            case 1:  // delete a line or two
              if (g.size() > 20)
                g.erase(g.begin() + static_cast<std::ptrdiff_t>(std::min(at, g.size() - 2)),
                        g.begin() + static_cast<std::ptrdiff_t>(std::min(at, g.size() - 2) + 1 + next(2)));
              break;
            case 2:  // replace a line
              if (at < g.size()) g[at] = fresh + std::to_string(edit);
              break;
            case 3: {  // move a line elsewhere
              if (at >= g.size()) break;
              const std::string moved = g[at];
              g.erase(g.begin() + static_cast<std::ptrdiff_t>(at));
              g.insert(g.begin() + static_cast<std::ptrdiff_t>(next(static_cast<uint32_t>(g.size()) + 1)), moved);
              break;
            }
            case 4:  // a repeated line (ambiguous for the diff)
              g.insert(g.begin() + static_cast<std::ptrdiff_t>(at), next(2) ? "}" : "");
              break;
            default:  // a line's text changed back to an older one
              if (at < g.size() && g.size() > 2) g[at] = g[next(static_cast<uint32_t>(g.size()))];
              break;
          }
        }
        if (g.size() > 120) g.resize(100);
      }
      std::string gtext;
      for (const std::string& line : g) gtext += line + "\n";
      in << "M 100644 inline g.txt\ndata " << gtext.size() << "\n" << gtext << "\n";
    }
  }
  WriteFile(bare + ".in", in.str());
  Shell("git init -q --bare " + ShellQuote(bare) + " && git -C " + ShellQuote(bare) +
        " fast-import --quiet < " + ShellQuote(bare + ".in"));
}

std::string Gzip(std::string_view data, int level) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

std::string BaseConfig(int backend_port, const std::string& extra) {
  std::string c =
      "# written by integration_test\n"
      "listen=127.0.0.1:0\n"
      "admin-listen=127.0.0.1:0\n"
      "threads=2\n"
      "access-log=off\n"
      "# the proxy tests check pass-through; the cache tests add cache=on\n"
      "cache=off\n";
  if (backend_port > 0) c += "backend=127.0.0.1:" + std::to_string(backend_port) + "\n";
  c += extra;
  return c;
}

namespace {

std::vector<char*> MakeArgv(std::vector<std::string>& storage) {
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  return argv;
}

int DecodeStatus(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

}  // namespace

CommandResult RunShellac(const std::vector<std::string>& args, const std::string& cwd,
                         Millis timeout) {
  CommandResult result;
  std::string bin = ShellacBinary();
  if (bin.empty()) {
    result.err = "SHELLAC_BIN is not set";
    return result;
  }
  std::vector<std::string> storage{bin};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv = MakeArgv(storage);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = "pipe failed";
    return result;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  auto deadline = Clock::now() + timeout;
  bool out_open = true, err_open = true;
  while ((out_open || err_open) && Clock::now() < deadline) {
    pollfd p[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                   {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int r = ::poll(p, 2, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (p[i].revents == 0) continue;
      ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int st = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      result.status = DecodeStatus(st);
      break;
    }
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      result.status = -1;
      result.err += "\n[harness: killed after timeout]";
      break;
    }
    std::this_thread::sleep_for(Millis(5));
  }
  return result;
}

ShellacProcess::ShellacProcess() : config_path_(dir_.File("shellac.conf")) {}

ShellacProcess::~ShellacProcess() {
  if (pid_ > 0 && !exit_status_) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  if (reader_.joinable()) reader_.join();
}

::testing::AssertionResult ShellacProcess::Start(const std::string& config,
                                                 const std::vector<std::string>& extra_args) {
  std::string bin = ShellacBinary();
  if (bin.empty()) return ::testing::AssertionFailure() << "SHELLAC_BIN is not set";
  if (::access(bin.c_str(), X_OK) != 0)
    return ::testing::AssertionFailure() << "SHELLAC_BIN=" << bin << " is not executable";
  WriteFile(config_path_, config);
  std::vector<std::string> storage{bin, "-c", config_path_};
  storage.insert(storage.end(), extra_args.begin(), extra_args.end());
  return Launch(storage, dir_.path());
}

::testing::AssertionResult ShellacProcess::StartWithoutConfig(
    const std::string& cwd, const std::vector<std::string>& args) {
  std::string bin = ShellacBinary();
  if (bin.empty()) return ::testing::AssertionFailure() << "SHELLAC_BIN is not set";
  std::vector<std::string> storage{bin};
  storage.insert(storage.end(), args.begin(), args.end());
  return Launch(storage, cwd);
}

::testing::AssertionResult ShellacProcess::Launch(std::vector<std::string> storage,
                                                  const std::string& cwd) {
  std::vector<char*> argv = MakeArgv(storage);
  // The child's environment, built before fork (nothing but async-signal-safe calls after it).
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (env_.count(name) == 0) env_storage.push_back(entry);
  }
  for (const auto& [name, value] : env_) env_storage.push_back(name + "=" + value);
  std::vector<char*> envp = MakeArgv(env_storage);

  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return ::testing::AssertionFailure() << "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(err_pipe[1], 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(err_pipe[0]);
    return ::testing::AssertionFailure() << "fork failed";
  }
  pid_ = pid;
  started_ = Clock::now();
  reader_ = std::thread([this, fd = err_pipe[0]] { ReaderLoop(fd); });

  auto deadline = Clock::now() + Millis(10'000);
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (Clock::now() < deadline) {
      bool ready = std::any_of(lines_.begin(), lines_.end(), [](const std::string& l) {
        return l.find("shellac: ready") != std::string::npos;
      });
      if (ready || stderr_eof_) break;
      cv_.wait_until(lock, deadline);
    }
  }
  bool ready = false;
  for (const std::string& l : Lines()) {
    if (l.find("shellac: ready") != std::string::npos) ready = true;
    auto port_of = [](const std::string& line) {
      size_t colon = line.rfind(':');
      return colon == std::string::npos ? 0 : std::atoi(line.c_str() + colon + 1);
    };
    if (l.find("shellac: listening on ") != std::string::npos) listen_ports_.push_back(port_of(l));
    if (l.find("shellac: admin on ") != std::string::npos) admin_port_ = port_of(l);
    if (l.find("shellac: TLS on ") != std::string::npos) tls_ports_.push_back(port_of(l));
  }
  if (!ready) {
    bool running = Running();
    return ::testing::AssertionFailure()
           << "shellac did not print \"shellac: ready\" within 10 s ("
           << (running ? "still running"
                       : "exited with " + std::to_string(exit_status_.value_or(-1)))
           << ")\nconfig:\n"
           << ReadFile(config_path_) << "\nstderr:\n"
           << StderrText();
  }
  if (listen_ports_.empty() || listen_ports_[0] <= 0)
    return ::testing::AssertionFailure()
           << "no \"shellac: listening on HOST:PORT\" line before ready\nstderr:\n"
           << StderrText();
  return ::testing::AssertionSuccess();
}

void ShellacProcess::DisableAsanQuarantine() {
  const char* current = std::getenv("ASAN_OPTIONS");
  std::string options = current != nullptr ? current : "";
  if (!options.empty()) options += ":";
  SetEnv("ASAN_OPTIONS", options + "quarantine_size_mb=0:thread_local_quarantine_size_kb=0");
}

void ShellacProcess::ReaderLoop(int fd) {
  std::string partial;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      long long ms = std::chrono::duration_cast<Millis>(Clock::now() - started_).count();
      std::fprintf(stderr, "  [shellac %d +%lldms] %s\n", static_cast<int>(pid_), ms, line.c_str());
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::move(line));
      cv_.notify_all();
    }
  }
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  if (!partial.empty()) lines_.push_back(partial);
  stderr_eof_ = true;
  cv_.notify_all();
}

void ShellacProcess::RewriteConfig(const std::string& config) {
  WriteFile(config_path_, config);
}

void ShellacProcess::Signal(int sig) {
  if (pid_ > 0 && !exit_status_) ::kill(pid_, sig);
}

bool ShellacProcess::Running() {
  if (pid_ <= 0 || exit_status_) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    exit_status_ = DecodeStatus(st);
    return false;
  }
  return true;
}

std::optional<int> ShellacProcess::WaitExit(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!Running()) break;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(Millis(5));
  }
  // The process is gone, but the reader may not have taken its last lines from the pipe yet:
  // wait for the pipe's end (within the same deadline), so Lines() has everything it wrote.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return stderr_eof_; });
  return exit_status_;
}

std::optional<std::string> ShellacProcess::WaitForLine(const std::string& needle, Millis timeout,
                                                       size_t from) {
  auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    for (size_t i = from; i < lines_.size(); ++i) {
      if (lines_[i].find(needle) != std::string::npos) return lines_[i];
    }
    if (stderr_eof_ || Clock::now() >= deadline) return std::nullopt;
    cv_.wait_until(lock, deadline);
  }
}

bool ShellacProcess::WaitForLineCount(const std::string& needle, size_t n, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    size_t count = 0;
    for (const auto& l : lines_) count += l.find(needle) != std::string::npos ? 1 : 0;
    if (count >= n) return true;
    if (stderr_eof_ || Clock::now() >= deadline) return false;
    cv_.wait_until(lock, deadline);
  }
}

size_t ShellacProcess::CountLines(const std::string& needle) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t count = 0;
  for (const auto& l : lines_) count += l.find(needle) != std::string::npos ? 1 : 0;
  return count;
}

std::vector<std::string> ShellacProcess::Lines() {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

std::string ShellacProcess::StderrText() {
  std::string out;
  for (const auto& l : Lines()) out += "    " + l + "\n";
  return out;
}

namespace {
long ProcStatusKiB(pid_t pid, const char* key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  size_t klen = std::strlen(key);
  while (std::getline(f, line)) {
    if (line.compare(0, klen, key) == 0) return std::atol(line.c_str() + klen);
  }
  return -1;
}
}  // namespace

long ShellacProcess::RssKiB() const {
  return ProcStatusKiB(pid_, "VmRSS:");
}
long ShellacProcess::HwmKiB() const {
  return ProcStatusKiB(pid_, "VmHWM:");
}

// ---------------------------------------------------------------------------------------------
// RawClient

const char* PeerStateName(PeerState s) {
  switch (s) {
    case PeerState::kClosed:
      return "closed (EOF)";
    case PeerState::kReset:
      return "reset";
    case PeerState::kData:
      return "data arrived";
    case PeerState::kTimeout:
      return "still open (timeout)";
    case PeerState::kError:
      return "error";
  }
  return "?";
}

std::string Response::Describe() const {
  std::ostringstream s;
  if (!ok) s << "[incomplete response: " << error << "]\n";
  s << version << " " << status << " " << reason << "\n" << FormatHeaders(headers);
  s << "  body (" << body_bytes << " bytes): " << Printable(body, 300) << "\n";
  return s.str();
}

RawClient::~RawClient() {
  Close();
}

void RawClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buf_.clear();
  eof_ = false;
}

bool RawClient::Connect(int port, int rcvbuf, const std::string& source) {
  Close();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    last_errno_ = errno;
    return false;
  }
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (::inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
      last_errno_ = errno == 0 ? EINVAL : errno;
      ::close(fd);
      return false;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int r = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (r != 0 && errno != EINPROGRESS) {
    last_errno_ = errno;
    ::close(fd);
    return false;
  }
  if (r != 0) {
    int ev = PollUntil(fd, POLLOUT, Clock::now() + Millis(2000));
    int soerr = 0;
    socklen_t len = sizeof soerr;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (ev <= 0 || soerr != 0) {
      last_errno_ = ev <= 0 ? ETIMEDOUT : soerr;
      ::close(fd);
      return false;
    }
  }
  fd_ = fd;
  last_errno_ = 0;
  buf_.clear();
  eof_ = false;
  return true;
}

ssize_t RawClient::RecvSome(char* buf, size_t n, short* wait) {
  *wait = POLLIN;
  return ::recv(fd_, buf, n, 0);
}

ssize_t RawClient::SendSome(const char* buf, size_t n, short* wait) {
  *wait = POLLOUT;
  return ::send(fd_, buf, n, MSG_NOSIGNAL);
}

bool RawClient::Send(std::string_view data, Millis timeout) {
  if (fd_ < 0) return false;
  auto deadline = Clock::now() + timeout;
  size_t off = 0;
  while (off < data.size()) {
    short wait = POLLOUT;
    ssize_t n = SendSome(data.data() + off, data.size() - off, &wait);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (errno == EINTR) continue;
      int ev = PollUntil(fd_, wait, deadline);
      if (ev <= 0) {
        last_errno_ = ETIMEDOUT;
        return false;
      }
      continue;
    }
    last_errno_ = errno;
    return false;
  }
  return true;
}

bool RawClient::SendPattern(uint64_t total, bool chunked, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  static const size_t kChunkSizes[] = {1, 4096, 65521, 7, 100000, 333, 32768, 65536, 12345};
  uint64_t off = 0;
  size_t turn = 0;
  while (off < total) {
    if (Clock::now() >= deadline) return false;
    size_t want = chunked ? kChunkSizes[turn++ % std::size(kChunkSizes)] : 65536;
    want = static_cast<size_t>(std::min<uint64_t>(want, total - off));
    if (chunked) {
      char head[32];
      std::snprintf(head, sizeof head, "%zx\r\n", want);
      if (!Send(head, Millis(RemainingMs(deadline)))) return false;
    }
    size_t sent = 0;
    while (sent < want) {
      size_t n = std::min(want - sent, kPatternPeriod);
      if (!Send(PatternSlice(off + sent, n), Millis(RemainingMs(deadline)))) return false;
      sent += n;
    }
    off += want;
    if (chunked && !Send("\r\n", Millis(RemainingMs(deadline)))) return false;
  }
  if (chunked && !Send("0\r\n\r\n", Millis(RemainingMs(deadline)))) return false;
  return true;
}

ssize_t RawClient::Fill(Clock::time_point deadline, size_t max, std::string* err) {
  if (fd_ < 0) {
    *err = "not connected";
    return -1;
  }
  if (eof_) return 0;
  char buf[65536];
  max = std::min(max, sizeof buf);
  for (;;) {
    short wait = POLLIN;
    ssize_t n = RecvSome(buf, max, &wait);
    if (n > 0) {
      buf_.append(buf, static_cast<size_t>(n));
      return n;
    }
    if (n == 0) {
      eof_ = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int ev = PollUntil(fd_, wait, deadline);
      if (ev == 0) {
        last_errno_ = ETIMEDOUT;
        *err = "timeout waiting for data";
        return -1;
      }
      if (ev < 0) {
        last_errno_ = errno;
        *err = "poll failed";
        return -1;
      }
      continue;
    }
    last_errno_ = errno;
    *err = std::string("recv: ") + std::strerror(errno);
    return -1;
  }
}

Response RawClient::Read(const ReadOptions& options) {
  Response r;
  auto deadline = Clock::now() + options.timeout;
  std::string err;

  // Head (skipping 1xx interim responses).
  for (;;) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = Fill(deadline, 65536, &err);
      if (n == 0) {
        r.error = "connection closed before a complete response head; got " +
                  std::to_string(buf_.size()) + " bytes: " + Printable(buf_);
        return r;
      }
      if (n < 0) {
        r.error = err + " (before a complete head; got " + std::to_string(buf_.size()) +
                  " bytes: " + Printable(buf_) + ")";
        return r;
      }
    }
    r.raw_head = buf_.substr(0, end + 4);
    buf_.erase(0, end + 4);
    size_t eol = r.raw_head.find("\r\n");
    std::string status_line = r.raw_head.substr(0, eol);
    // "HTTP/1.1 200 OK"
    size_t sp1 = status_line.find(' ');
    if (sp1 == std::string::npos || status_line.compare(0, 5, "HTTP/") != 0) {
      r.error = "bad status line: " + Printable(status_line);
      return r;
    }
    r.version = status_line.substr(0, sp1);
    size_t sp2 = status_line.find(' ', sp1 + 1);
    r.status = std::atoi(status_line.substr(sp1 + 1, sp2 - sp1 - 1).c_str());
    r.reason = sp2 == std::string::npos ? "" : status_line.substr(sp2 + 1);
    r.headers.clear();
    if (!ParseHeaderLines(std::string_view(r.raw_head).substr(eol + 2), &r.headers, &r.error))
      return r;
    if (r.status >= 100 && r.status < 200 && r.status != 101) {
      r.interim_statuses.push_back(r.status);
      continue;
    }
    break;
  }

  size_t consumed_since_sleep = 0;
  auto sink = [&](std::string_view data) {
    r.body_bytes += data.size();
    r.body_hash = FnvUpdate(r.body_hash, data);
    if (r.body.size() < options.store_limit) {
      r.body.append(data.substr(0, std::min(data.size(), options.store_limit - r.body.size())));
    }
    if (options.slow_chunk > 0) {
      consumed_since_sleep += data.size();
      while (consumed_since_sleep >= options.slow_chunk) {
        consumed_since_sleep -= options.slow_chunk;
        std::this_thread::sleep_for(options.slow_sleep);
      }
    }
  };
  size_t read_max = options.slow_chunk > 0 ? std::min<size_t>(options.slow_chunk, 65536) : 65536;

  bool no_body = options.head_request || r.status == 204 || r.status == 304 ||
                 (r.status >= 100 && r.status < 200);
  auto te = r.Header("Transfer-Encoding");
  auto cl = r.Header("Content-Length");
  if (no_body) {
    r.ok = true;
    return r;
  }
  if (te && ContainsIgnoreCase(*te, "chunked")) {
    r.chunked = true;
    for (;;) {
      size_t eol;
      while ((eol = buf_.find("\r\n")) == std::string::npos) {
        ssize_t n = Fill(deadline, read_max, &err);
        if (n <= 0) {
          r.error = (n == 0 ? std::string("EOF") : err) +
                    " while reading a chunk size line after " + std::to_string(r.body_bytes) +
                    " body bytes";
          return r;
        }
      }
      std::string size_line = buf_.substr(0, eol);
      buf_.erase(0, eol + 2);
      char* endp = nullptr;
      unsigned long long size = std::strtoull(size_line.c_str(), &endp, 16);
      if (endp == size_line.c_str()) {
        r.error = "bad chunk size line: " + Printable(size_line);
        return r;
      }
      if (size == 0) {
        // Trailers until an empty line.
        for (;;) {
          while ((eol = buf_.find("\r\n")) == std::string::npos) {
            ssize_t n = Fill(deadline, read_max, &err);
            if (n <= 0) {
              r.error = (n == 0 ? std::string("EOF") : err) + " while reading chunked trailer";
              return r;
            }
          }
          bool empty = eol == 0;
          buf_.erase(0, eol + 2);
          if (empty) break;
        }
        break;
      }
      uint64_t left = size;
      while (left > 0) {
        if (buf_.empty()) {
          ssize_t n = Fill(deadline, read_max, &err);
          if (n <= 0) {
            r.error = (n == 0 ? std::string("EOF") : err) + " inside a chunk after " +
                      std::to_string(r.body_bytes) + " body bytes";
            return r;
          }
        }
        size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf_.size()));
        sink(std::string_view(buf_).substr(0, take));
        buf_.erase(0, take);
        left -= take;
      }
      while (buf_.size() < 2) {
        ssize_t n = Fill(deadline, read_max, &err);
        if (n <= 0) {
          r.error = (n == 0 ? std::string("EOF") : err) + " after chunk data";
          return r;
        }
      }
      if (buf_.compare(0, 2, "\r\n") != 0) {
        r.error = "chunk data not followed by CRLF: " + Printable(buf_.substr(0, 20));
        return r;
      }
      buf_.erase(0, 2);
    }
    r.ok = true;
    return r;
  }
  if (cl) {
    uint64_t left = std::strtoull(cl->c_str(), nullptr, 10);
    while (left > 0) {
      if (buf_.empty()) {
        ssize_t n = Fill(deadline, read_max, &err);
        if (n <= 0) {
          r.error = (n == 0 ? std::string("EOF") : err) + " after " + std::to_string(r.body_bytes) +
                    " of " + *cl + " body bytes";
          return r;
        }
      }
      size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf_.size()));
      sink(std::string_view(buf_).substr(0, take));
      buf_.erase(0, take);
      left -= take;
    }
    r.ok = true;
    return r;
  }
  // Close-delimited.
  r.close_delimited = true;
  for (;;) {
    if (!buf_.empty()) {
      sink(buf_);
      buf_.clear();
    }
    ssize_t n = Fill(deadline, read_max, &err);
    if (n == 0) break;
    if (n < 0) {
      r.error = err + " while reading a close-delimited body after " +
                std::to_string(r.body_bytes) + " bytes";
      return r;
    }
  }
  r.ok = true;
  return r;
}

Response RawClient::RoundTrip(std::string_view request, const ReadOptions& options) {
  if (!Send(request)) {
    Response r;
    r.error = std::string("send failed: ") + std::strerror(last_errno_);
    return r;
  }
  return Read(options);
}

PeerState RawClient::WaitClosed(Millis timeout) {
  if (fd_ < 0) return PeerState::kError;
  if (eof_) return PeerState::kClosed;
  if (!buf_.empty()) return PeerState::kData;
  auto deadline = Clock::now() + timeout;
  std::string err;
  ssize_t n = Fill(deadline, 65536, &err);
  if (n > 0) return PeerState::kData;
  if (n == 0) return PeerState::kClosed;
  if (last_errno_ == ECONNRESET || last_errno_ == EPIPE) return PeerState::kReset;
  if (err.rfind("timeout", 0) == 0) return PeerState::kTimeout;
  return PeerState::kError;
}

std::string RawClient::ReadUntilClose(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::string err;
  ssize_t n;
  while ((n = Fill(deadline, 65536, &err)) > 0) {
  }
  // A reset is a close too; only a peer still open at the deadline fails.
  if (n < 0 && last_errno_ != ECONNRESET && last_errno_ != EPIPE) {
    ADD_FAILURE() << "ReadUntilClose: the peer did not close within " << timeout.count() << " ms ("
                  << err << "); got " << buf_.size() << " bytes: " << Printable(buf_);
  }
  std::string out;
  out.swap(buf_);
  return out;
}

bool RawClient::WaitForBytes(std::string_view needle, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::string err;
  while (buf_.find(needle) == std::string::npos) {
    if (Fill(deadline, 65536, &err) <= 0) return false;
  }
  return true;
}

std::string RawClient::PeekAvailable(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::string err;
  while (Clock::now() < deadline) {
    if (Fill(deadline, 65536, &err) <= 0) break;
  }
  return buf_;
}

Response HttpGet(int port, const std::string& path, const std::string& extra_headers,
                 Millis timeout) {
  RawClient c;
  if (!c.Connect(port)) {
    Response r;
    r.error =
        "connect to port " + std::to_string(port) + " failed: " + std::strerror(c.last_errno());
    return r;
  }
  ReadOptions o;
  o.timeout = timeout;
  return c.RoundTrip("GET " + path + " HTTP/1.1\r\nHost: test.local\r\n" + extra_headers +
                         "Connection: close\r\n\r\n",
                     o);
}

std::string FetchMetrics(int admin_port) {
  Response r = HttpGet(admin_port, "/metrics");
  return r.ok && r.status == 200 ? r.body : "";
}

double MetricSum(const std::string& text, const std::string& name,
                 const std::map<std::string, std::string>& labels) {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, name.size(), name) != 0) continue;
    size_t p = name.size();
    std::map<std::string, std::string> have;
    if (p < line.size() && line[p] == '{') {
      size_t close = line.find('}', p);
      if (close == std::string::npos) continue;
      std::string inner = line.substr(p + 1, close - p - 1);
      size_t q = 0;
      while (q < inner.size()) {
        size_t eq = inner.find('=', q);
        if (eq == std::string::npos) break;
        std::string key = Trim(inner.substr(q, eq - q));
        size_t v1 = inner.find('"', eq);
        size_t v2 = v1 == std::string::npos ? v1 : inner.find('"', v1 + 1);
        if (v2 == std::string::npos) break;
        have[key] = inner.substr(v1 + 1, v2 - v1 - 1);
        q = inner.find(',', v2);
        if (q == std::string::npos) break;
        ++q;
      }
      p = close + 1;
    } else if (p < line.size() && line[p] != ' ') {
      continue;  // a longer metric name with this prefix
    }
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = have.find(k);
      if (it == have.end() || it->second != v) match = false;
    }
    if (!match) continue;
    sum += std::atof(line.c_str() + p);
  }
  return sum;
}

std::string WaitForMetric(int admin_port, const std::string& name,
                          const std::map<std::string, std::string>& labels, double min,
                          Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::string text;
  for (;;) {
    text = FetchMetrics(admin_port);
    if (MetricSum(text, name, labels) >= min || Clock::now() >= deadline) return text;
    std::this_thread::sleep_for(Millis(10));
  }
}

std::string WaitForMetricValue(int admin_port, const std::string& name,
                               const std::map<std::string, std::string>& labels, double value,
                               Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::string text;
  for (;;) {
    text = FetchMetrics(admin_port);
    if (MetricSum(text, name, labels) == value || Clock::now() >= deadline) return text;
    std::this_thread::sleep_for(Millis(10));
  }
}

RefusingPort::RefusingPort() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::abort();
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
}

RefusingPort::~RefusingPort() {
  if (fd_ >= 0) ::close(fd_);
}

// ---------------------------------------------------------------------------------------------
// Origin

std::string OriginRequest::Describe() const {
  std::ostringstream s;
  s << method << " " << target << " " << version << " (conn " << conn_id << ")\n"
    << FormatHeaders(headers) << "  body (" << body_bytes << " bytes): " << Printable(body, 200)
    << "\n";
  return s.str();
}

bool OriginConnection::Write(std::string_view bytes) {
  auto deadline = Clock::now() + Millis(20'000);
  size_t off = 0;
  while (off < bytes.size()) {
    if (origin_->stopping()) return false;
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (Clock::now() >= deadline) return false;
      PollUntil(fd_, POLLOUT, std::min(deadline, Clock::now() + Millis(100)));
      continue;
    }
    return false;
  }
  return true;
}

bool OriginConnection::Sleep(Millis d) {
  std::unique_lock<std::mutex> lock(origin_->mu_);
  return !origin_->cv_.wait_for(lock, d, [this] { return origin_->stopping(); });
}

namespace {
std::string HeadLines(int status, const Headers& headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + StatusReason(status) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  return out;
}
}  // namespace

void OriginConnection::SendFixed(int status, std::string_view body, const Headers& extra) {
  Headers h = extra;
  h.emplace_back("Content-Length", std::to_string(body.size()));
  std::string out = HeadLines(status, h) + "\r\n";
  out.append(body);
  Write(out);
}

void OriginConnection::SendHeadOnly(int status, const Headers& headers) {
  Write(HeadLines(status, headers) + "\r\n");
}

void OriginConnection::SendChunked(int status, const std::vector<std::string>& chunks,
                                   const Headers& extra) {
  Headers h = extra;
  h.emplace_back("Transfer-Encoding", "chunked");
  std::string out = HeadLines(status, h) + "\r\n";
  for (const auto& c : chunks) {
    if (c.empty()) continue;
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", c.size());
    out += size + c + "\r\n";
  }
  out += "0\r\n\r\n";
  Write(out);
}

void OriginConnection::SendCloseDelimited(int status, std::string_view body, const Headers& extra) {
  Headers h = extra;
  h.emplace_back("Connection", "close");
  std::string out = HeadLines(status, h) + "\r\n";
  out.append(body);
  Write(out);
  CloseAfter();
}

void OriginConnection::SendStream(uint64_t total, bool chunked, const Headers& extra) {
  Headers h = extra;
  if (chunked) {
    h.emplace_back("Transfer-Encoding", "chunked");
  } else {
    h.emplace_back("Content-Length", std::to_string(total));
  }
  if (!Write(HeadLines(200, h) + "\r\n")) return;
  uint64_t off = 0;
  std::string block;
  while (off < total) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(total - off, 65536));
    block.clear();
    if (chunked) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", n);
      block += size;
    }
    // n may exceed the pattern period: split.
    size_t done = 0;
    while (done < n) {
      size_t m = std::min(n - done, kPatternPeriod);
      block.append(PatternSlice(off + done, m));
      done += m;
    }
    if (chunked) block += "\r\n";
    if (!Write(block)) {
      CloseAfter();
      return;
    }
    off += n;
  }
  if (chunked && !Write("0\r\n\r\n")) CloseAfter();
}

void OriginConnection::NeverRespond() {
  while (!origin_->stopping()) {
    int ev = PollUntil(fd_, POLLIN, Clock::now() + Millis(50));
    if (ev > 0) {
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
      if (n > 0) origin_->RecordBytes(id_, std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  CloseAfter();
}

Origin::Origin(OriginHandler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 512) != 0) {
    std::perror("origin bind/listen");
    std::abort();
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) std::abort();
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

Origin::~Origin() {
  Stop();
}

void Origin::Stop() {
  if (stopping_.exchange(true)) {
    if (acceptor_.joinable()) acceptor_.join();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  if (::write(wake_pipe_[1], "x", 1) < 0) {
    // The accept loop also polls with a timeout; nothing else to do.
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  for (int& fd : wake_pipe_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void Origin::SetHandler(OriginHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

std::vector<OriginRequest> Origin::Requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t Origin::RequestCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

bool Origin::WaitForRequests(size_t n, Millis timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

uint64_t Origin::BytesReceived() {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_received_;
}

int Origin::ConnectionsAccepted() {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_;
}

std::vector<std::string> Origin::RawConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, bytes] : raw_) out.push_back(bytes);
  return out;
}

std::vector<std::string> Origin::Errors() {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

void Origin::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
  raw_.clear();
  bytes_received_ = 0;
  connections_ = 0;
  errors_.clear();
}

void Origin::RecordBytes(int id, std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  bytes_received_ += bytes.size();
  std::string& raw = raw_[id];
  if (raw.size() < (1u << 20)) raw.append(bytes.substr(0, (1u << 20) - raw.size()));
}

void Origin::AcceptLoop() {
  while (!stopping_) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int ev = ::poll(p, 2, 200);
    if (ev <= 0 || !(p[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      break;
    }
    int id = next_id_++;
    ++connections_;
    raw_[id];
    open_fds_.insert(fd);
    threads_.emplace_back([this, fd, id] { ConnectionLoop(fd, id); });
  }
}

void Origin::HandlerDefault(const OriginRequest& req, OriginConnection& conn) {
  conn.SendFixed(200, "origin:" + req.target, {{"Content-Type", "text/plain"}});
}

namespace {

// Buffered reader over one origin-side connection, recording raw bytes.
class ConnReader {
 public:
  ConnReader(Origin* origin, int fd, int id, std::function<void(std::string_view)> record,
             const std::atomic<bool>* stopping)
      : fd_(fd), record_(std::move(record)), stopping_(stopping) {
    (void)origin;
    (void)id;
  }
  // >0 read, 0 EOF, -1 error/stop.
  ssize_t Fill() {
    char buf[65536];
    for (;;) {
      if (stopping_->load()) return -1;
      ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        record_(std::string_view(buf, static_cast<size_t>(n)));
        buf_.append(buf, static_cast<size_t>(n));
        return n;
      }
      if (n == 0) return 0;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        PollUntil(fd_, POLLIN, Clock::now() + Millis(50));
        continue;
      }
      return -1;
    }
  }
  std::string& buf() { return buf_; }

 private:
  int fd_;
  std::function<void(std::string_view)> record_;
  const std::atomic<bool>* stopping_;
  std::string buf_;
};

}  // namespace

void Origin::ConnectionLoop(int fd, int id) {
  ConnReader reader(
      this, fd, id, [this, id](std::string_view b) { RecordBytes(id, b); }, &stopping_);
  std::string& buf = reader.buf();
  int index = 0;
  auto fail = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back("conn " + std::to_string(id) + ": " + why);
  };
  for (;;) {
    size_t end;
    bool closed = false;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (reader.Fill() <= 0) {
        if (!buf.empty()) fail("connection ended inside a request head: " + Printable(buf));
        closed = true;
        break;
      }
    }
    if (closed) break;
    OriginRequest req;
    req.conn_id = id;
    req.index_on_conn = index++;
    std::string head = buf.substr(0, end);
    buf.erase(0, end + 4);
    size_t eol = head.find("\r\n");
    std::string line = head.substr(0, eol);
    size_t s1 = line.find(' ');
    size_t s2 = s1 == std::string::npos ? s1 : line.find(' ', s1 + 1);
    if (s2 == std::string::npos) {
      fail("bad request line: " + Printable(line));
      break;
    }
    req.method = line.substr(0, s1);
    req.target = line.substr(s1 + 1, s2 - s1 - 1);
    req.version = line.substr(s2 + 1);
    std::string err;
    if (eol != std::string::npos &&
        !ParseHeaderLines(std::string_view(head).substr(eol + 2), &req.headers, &err)) {
      fail(err);
      break;
    }
    size_t limit = store_limit_.load();
    size_t slow = slow_chunk_.load();
    size_t since_sleep = 0;
    auto sink = [&](std::string_view data) {
      req.body_bytes += data.size();
      req.body_hash = FnvUpdate(req.body_hash, data);
      if (req.body.size() < limit)
        req.body.append(data.substr(0, std::min(data.size(), limit - req.body.size())));
      if (slow > 0) {
        since_sleep += data.size();
        while (since_sleep >= slow) {
          since_sleep -= slow;
          std::this_thread::sleep_for(slow_sleep_);
        }
      }
    };
    auto te = req.Header("Transfer-Encoding");
    auto cl = req.Header("Content-Length");
    bool ok = true;
    if (te) {
      req.chunked = true;
      for (;;) {
        size_t e;
        while ((e = buf.find("\r\n")) == std::string::npos) {
          if (reader.Fill() <= 0) {
            ok = false;
            break;
          }
        }
        if (!ok) break;
        std::string size_line = buf.substr(0, e);
        buf.erase(0, e + 2);
        char* endp = nullptr;
        unsigned long long size = std::strtoull(size_line.c_str(), &endp, 16);
        if (endp == size_line.c_str()) {
          fail("bad chunk size from proxy: " + Printable(size_line));
          ok = false;
          break;
        }
        if (size == 0) {
          for (;;) {
            while ((e = buf.find("\r\n")) == std::string::npos) {
              if (reader.Fill() <= 0) {
                ok = false;
                break;
              }
            }
            if (!ok) break;
            bool empty = e == 0;
            buf.erase(0, e + 2);
            if (empty) break;
          }
          break;
        }
        uint64_t left = size;
        while (left > 0 && ok) {
          if (buf.empty() && reader.Fill() <= 0) {
            ok = false;
            break;
          }
          size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
          sink(std::string_view(buf).substr(0, take));
          buf.erase(0, take);
          left -= take;
        }
        while (ok && buf.size() < 2) {
          if (reader.Fill() <= 0) ok = false;
        }
        if (!ok) break;
        if (buf.compare(0, 2, "\r\n") != 0) {
          fail("chunk data not followed by CRLF");
          ok = false;
          break;
        }
        buf.erase(0, 2);
      }
      if (!ok) {
        fail("incomplete chunked request body after " + std::to_string(req.body_bytes) + " bytes");
        break;
      }
    } else if (cl) {
      uint64_t left = std::strtoull(cl->c_str(), nullptr, 10);
      while (left > 0) {
        if (buf.empty() && reader.Fill() <= 0) {
          ok = false;
          break;
        }
        size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
        sink(std::string_view(buf).substr(0, take));
        buf.erase(0, take);
        left -= take;
      }
      if (!ok) {
        fail("incomplete request body: " + std::to_string(req.body_bytes) + " of " + *cl);
        break;
      }
    }
    OriginHandler handler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
      handler = handler_;
      cv_.notify_all();
    }
    OriginConnection conn(this, fd, id);
    if (handler) {
      handler(req, conn);
    } else {
      HandlerDefault(req, conn);
    }
    auto connection = req.Header("Connection");
    bool req_close = connection && ContainsIgnoreCase(*connection, "close");
    if (req.version == "HTTP/1.0" && !(connection && ContainsIgnoreCase(*connection, "keep-alive")))
      req_close = true;
    if (conn.close_after() || req_close || stopping_) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(fd);
  }
  ::close(fd);
}

std::string VisibleText(std::string html, bool drop_line_numbers) {
  const size_t footer = html.find("<div class='footer'>");
  if (footer != std::string::npos) {
    const size_t end = html.find("</div>", footer);
    html.erase(footer, end + 6 - footer);
  }
  if (drop_line_numbers) {
    static constexpr std::string_view kCell = "<td class='lineno'>";
    for (size_t p = 0; (p = html.find(kCell, p)) != std::string::npos;) {
      const size_t end = html.find("</td>", p);
      html.erase(p, end + 5 - p);
    }
  }
  std::string text;
  size_t tag_start = 0;
  bool in_tag = false;
  for (size_t i = 0; i < html.size(); ++i) {
    const char c = html[i];
    if (c == '<' && !in_tag) {
      in_tag = true;
      tag_start = i;
    } else if (c == '>' && in_tag) {
      in_tag = false;
      const std::string_view tag = std::string_view(html).substr(tag_start + 1, i - tag_start - 1);
      if (!tag.starts_with("span") && !tag.starts_with("/span")) text += ' ';
    } else if (!in_tag) {
      text += c;
    }
  }
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEntities) {
    for (size_t p = 0; (p = text.find(from, p)) != std::string::npos; p += std::strlen(to))
      text.replace(p, std::strlen(from), to);
  }
  std::string out;
  bool space = true;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      if (!space) out += ' ';
      space = true;
    } else {
      out += c;
      space = false;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string FirstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i > 120 ? i - 120 : 0;
  return "at " + std::to_string(i) + ":\n  shellac: ..." + a.substr(from, 300) +
         "\n  cgit:    ..." + b.substr(from, 300);
}


}  // namespace shellac::test

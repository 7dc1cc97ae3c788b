// shellac warm: asks the running instance for the commits of each repository, then has it render
// and store each commit's repository-neutral diff fragment, one at a time, through the admin
// listener's /warm/ endpoints (see proxy/warm.h). What is stored already answers "hit" at once, so
// a rerun, or a run after an interrupted one, renders only what is missing.
#include <getopt.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "ctl/admin_client.h"
#include "ctl/ctl.h"

namespace shellac::ctl {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
void OnInterrupt(int) { g_interrupted = true; }

constexpr const char* kWarmUsage =
    "usage: shellac warm [--admin ADDR:PORT] [--since WHEN] [--limit N] [--all-refs] [REPO...]\n";

// Query-string encoding: everything but unreserved characters and '/'.
std::string Encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// "1700000000" (Unix seconds), "2024-05-01" (UTC) or an age: "30d", "12h", "2w", "90m"; -1 if none.
int64_t ParseSince(const std::string& text) {
  if (text.empty()) return -1;
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() && *end == '\0') return n;
  if (end != text.c_str() && end[1] == '\0' && n >= 0) {
    const int64_t unit = *end == 'm' ? 60 : *end == 'h' ? 3600 : *end == 'd' ? 86400 : *end == 'w' ? 604800 : 0;
    if (unit != 0) return static_cast<int64_t>(time(nullptr)) - n * unit;
  }
  tm when{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%d", &when);
  if (rest != nullptr && *rest == '\0') return static_cast<int64_t>(timegm(&when));
  return -1;
}

std::string Duration(double seconds) {
  if (seconds < 0 || seconds > 359999) return "--:--";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

struct Progress {
  size_t total = 0, done = 0, rendered = 0, hits = 0, failed = 0;
  size_t deferred = 0;  // times the instance was too busy with live renders: asked again later
  Clock::time_point started = Clock::now();
  Clock::time_point shown = started;
  bool tty = false;

  double Rate() const {
    const double s = std::chrono::duration<double>(Clock::now() - started).count();
    return s > 0 ? static_cast<double>(done) / s : 0;
  }
  std::string Counts() const {
    std::string text = std::to_string(rendered) + " rendered, " + std::to_string(hits) +
                       " already stored, " + std::to_string(failed) + " failed";
    if (deferred > 0) text += " (gave way to live renders " + std::to_string(deferred) + " times)";
    return text;
  }
  // A bar redrawn in place on a terminal (at most ten times a second), a plain line every five
  // seconds otherwise.
  void Show(bool force = false) {
    const auto now = Clock::now();
    if (!force && now - shown < (tty ? std::chrono::milliseconds(100) : std::chrono::seconds(5))) return;
    shown = now;
    const double rate = Rate();
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : -1;
    const double part = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1;
    if (tty) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(part * kWidth);
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(kWidth, '.');
      std::printf("\r[%s] %zu/%zu %3.0f%%  %.1f/s  ETA %s  (%zu rendered, %zu stored)\x1b[K",
                  bar.c_str(), done, total, part * 100, rate, Duration(eta).c_str(), rendered, hits);
    } else {
      std::printf("warm: %zu/%zu (%.0f%%) %.1f/s ETA %s: %s\n", done, total, part * 100, rate,
                  Duration(eta).c_str(), Counts().c_str());
    }
    std::fflush(stdout);
  }
};

// Splits a text body into its non-empty lines.
std::vector<std::string> Lines(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    size_t nl = body.find('\n', at);
    if (nl == std::string::npos) nl = body.size();
    if (nl > at) out.push_back(body.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

}  // namespace

int RunWarm(int argc, char** argv) {
  static const option kOptions[] = {
      {"admin", required_argument, nullptr, 'a'},
      {"since", required_argument, nullptr, 's'},
      {"limit", required_argument, nullptr, 'n'},
      {"all-refs", no_argument, nullptr, 'r'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  std::string address = "127.0.0.1:8081";
  int64_t since = 0;
  long limit = 0;
  bool all_refs = false;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "a:s:n:rh", kOptions, nullptr)) != -1) {
    switch (opt) {
      case 'a':
        address = optarg;
        break;
      case 's':
        since = ParseSince(optarg);
        if (since < 0) {
          std::fprintf(stderr,
                       "shellac warm: --since '%s': give a date (2024-05-01), an age (30d, 12h, "
                       "2w) or Unix seconds\n",
                       optarg);
          return 2;
        }
        break;
      case 'n':
        limit = std::atol(optarg);
        if (limit <= 0) {
          std::fprintf(stderr, "shellac warm: --limit must be a positive number of commits\n");
          return 2;
        }
        break;
      case 'r':
        all_refs = true;
        break;
      case 'h':
        std::fputs(kWarmUsage, stdout);
        std::fputs(
            "\nRenders and stores the repository-neutral diff of each commit of the named\n"
            "repositories (all of them when none is named), newest first, through a running\n"
            "shellac, so crawlers find its store full. What is stored already is skipped.\n\n"
            "  -a, --admin ADDR:PORT  the instance's admin-listen= address (default 127.0.0.1:8081)\n"
            "  -s, --since WHEN       only commits since WHEN: 2024-05-01, 30d, 12h, 2w, Unix seconds\n"
            "  -n, --limit N          at most N commits per repository (the newest)\n"
            "  -r, --all-refs         every branch and tag, not only HEAD's history\n",
            stdout);
        return 0;
      default:
        std::fputs(kWarmUsage, stderr);
        return 2;
    }
  }
  // From here on Ctrl-C stops cleanly: the request in flight completes, then a summary.
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  AdminClient client(address);
  std::vector<std::string> repos(argv + optind, argv + argc);
  if (repos.empty()) {
    const AdminResponse r = client.Get("/warm/repos");
    if (r.status != 200) {
      std::fprintf(stderr, "shellac warm: %s\n", client.Explain(r).c_str());
      return 1;
    }
    repos = Lines(r.body);
    if (repos.empty()) {
      std::fprintf(stderr, "shellac warm: %s serves no repositories\n", address.c_str());
      return 1;
    }
  }
  // The whole list first, so the progress has a total.
  std::vector<std::pair<std::string, std::string>> work;  // (repository, sha)
  for (const auto& repo : repos) {
    if (g_interrupted) break;
    std::string target = "/warm/commits?repo=" + Encode(repo);
    if (since > 0) target += "&since=" + std::to_string(since);
    if (limit > 0) target += "&limit=" + std::to_string(limit);
    if (all_refs) target += "&all-refs=1";
    const AdminResponse r = client.Request("GET", target, std::chrono::minutes(10));
    if (r.status != 200) {
      std::fprintf(stderr, "shellac warm: %s: %s\n", repo.c_str(), client.Explain(r).c_str());
      return 1;
    }
    const auto shas = Lines(r.body);
    std::printf("warm: %s: %zu commits\n", repo.c_str(), shas.size());
    for (const auto& sha : shas) work.emplace_back(repo, sha);
  }
  std::fflush(stdout);

  Progress progress;
  progress.total = work.size();
  progress.tty = isatty(STDOUT_FILENO);
  int status = 0;
  for (size_t i = 0; i < work.size() && !g_interrupted;) {
    const auto& [repo, sha] = work[i];
    const AdminResponse r = client.Request(
        "POST", "/warm/render?repo=" + Encode(repo) + "&id=" + sha, std::chrono::minutes(5));
    if (r.status == 0) {
      if (progress.tty) std::printf("\n");
      std::fprintf(stderr, "shellac warm: %s\n", client.Explain(r).c_str());
      status = 1;
      break;
    }
    if (r.status == 503) {
      // Live requests' renders kept this one waiting (warm runs in the render queue's lowest
      // class): give way for a second, then ask again.
      ++progress.deferred;
      progress.Show();
      for (int step = 0; step < 10 && !g_interrupted; ++step)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    ++i;
    ++progress.done;
    if (r.status == 200 && r.body.starts_with("hit ")) {
      ++progress.hits;
    } else if (r.status == 200) {
      ++progress.rendered;
    } else {
      ++progress.failed;
      if (progress.tty) std::printf("\r\x1b[K");
      std::fprintf(stderr, "shellac warm: %s %s: %s", repo.c_str(), sha.c_str(), r.body.c_str());
    }
    progress.Show();
  }
  if (progress.tty) {
    progress.Show(true);
    std::printf("\n");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - progress.started).count();
  if (g_interrupted) {
    std::printf("warm: stopped after %zu of %zu commits in %.1f s: %s; run it again to go on\n",
                progress.done, progress.total, seconds, progress.Counts().c_str());
    std::fflush(stdout);
    return 130;
  }
  if (status == 0) {
    std::printf("warm: done: %zu commits in %.1f s: %s\n", progress.total, seconds,
                progress.Counts().c_str());
    if (progress.failed > 0) status = 1;
  }
  std::fflush(stdout);
  return status;
}

}  // namespace shellac::ctl

// shellac: an ESI-capable caching reverse proxy for git web frontends. See shellac(8).
#include <event2/thread.h>
#include <getopt.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "conf/config.h"
#include "ctl/ctl.h"
#include "proxy/server.h"

namespace {

constexpr const char* kUsage =
    "usage: shellac [-c FILE] [--listen ADDR:PORT]... [--backend HOST:PORT] [--repo PATH]...\n"
    "               [--cgitrc FILE] [--cache-size SIZE] [--threads N] [--admin-listen "
    "ADDR:PORT|off]\n"
    "               [--access-log FILE|stderr|off] [--check] [--version] [--help]\n"
    "       shellac stat [--admin ADDR:PORT] [-1] [-j] [-i SECONDS]\n"
    "       shellac warm [--admin ADDR:PORT] [--since WHEN] [--limit N] [--all-refs]\n"
    "                    [REPO...]\n";

void PrintHelp() {
  std::fputs(kUsage, stdout);
  std::fputs(
      "\nAn ESI-capable caching reverse proxy for git web frontends.\n"
      "With no arguments it listens on 127.0.0.1:8080 (admin: 127.0.0.1:8081).\n\n"
      "  -c, --config FILE     read FILE (cgitrc syntax: key=value, # comments, include=FILE)\n"
      "      --listen ADDR:PORT    public listener (repeatable; replaces the file's listen=)\n"
      "      --backend HOST:PORT   the upstream forge\n"
      "      --repo PATH           a repository (repeatable)\n"
      "      --cgitrc FILE         import an existing cgit configuration\n"
      "      --cache-size SIZE     the store's memory budget (K, M, G)\n"
      "      --threads N           worker threads (default: number of cores)\n"
      "      --admin-listen ADDR:PORT|off   admin listener (/health, /metrics)\n"
      "      --access-log FILE|stderr|off   access log destination\n"
      "      --check               validate the configuration and exit (0 ok, 1 error)\n"
      "      --version             print the version\n"
      "  -h, --help                this text\n\n"
      "Commands (see shellac(8)); they read a running shellac's admin listener:\n"
      "  stat                  live view of the metrics (shellac stat --help)\n"
      "  warm                  fill the store with the history's diffs (shellac warm --help)\n\n"
      "Configuration keys and their defaults (see shellac.conf(5)):\n",
      stdout);
  std::fputs(shellac::conf::HelpText().c_str(), stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // The operator's commands are words, never options, so they cannot be mistaken for a server
  // start (which takes no arguments besides options).
  if (argc > 1 && std::string_view(argv[1]) == "stat") return shellac::ctl::RunStat(argc - 1, argv + 1);
  if (argc > 1 && std::string_view(argv[1]) == "warm") return shellac::ctl::RunWarm(argc - 1, argv + 1);
  enum Flag {
    kListen = 256,
    kBackend,
    kRepo,
    kCgitrc,
    kCacheSize,
    kThreads,
    kAdmin,
    kAccessLog,
    kCheck,
    kVersion
  };
  static const option kOptions[] = {
      {"config", required_argument, nullptr, 'c'},
      {"listen", required_argument, nullptr, kListen},
      {"backend", required_argument, nullptr, kBackend},
      {"repo", required_argument, nullptr, kRepo},
      {"cgitrc", required_argument, nullptr, kCgitrc},
      {"cache-size", required_argument, nullptr, kCacheSize},
      {"threads", required_argument, nullptr, kThreads},
      {"admin-listen", required_argument, nullptr, kAdmin},
      {"access-log", required_argument, nullptr, kAccessLog},
      {"check", no_argument, nullptr, kCheck},
      {"version", no_argument, nullptr, kVersion},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  std::string config_file;
  shellac::conf::Overrides overrides;
  bool check = false;
  int opt;
  while ((opt = getopt_long(argc, argv, "c:h", kOptions, nullptr)) != -1) {
    switch (opt) {
      case 'c':
        config_file = optarg;
        break;
      case kListen:
        overrides.emplace_back("listen", optarg);
        break;
      case kBackend:
        overrides.emplace_back("backend", optarg);
        break;
      case kRepo:
        overrides.emplace_back("repo", optarg);
        break;
      case kCgitrc:
        overrides.emplace_back("cgitrc", optarg);
        break;
      case kCacheSize:
        overrides.emplace_back("cache-size", optarg);
        break;
      case kThreads:
        overrides.emplace_back("threads", optarg);
        break;
      case kAdmin:
        overrides.emplace_back("admin-listen", optarg);
        break;
      case kAccessLog:
        overrides.emplace_back("access-log", optarg);
        break;
      case kCheck:
        check = true;
        break;
      case kVersion:
        std::printf("shellac %s\n", SHELLAC_VERSION);
        return 0;
      case 'h':
        PrintHelp();
        return 0;
      default:
        std::fputs(kUsage, stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "shellac: unexpected argument '%s'\n%s", argv[optind], kUsage);
    return 2;
  }

  std::string error;
  auto config = shellac::conf::Load(config_file, overrides, &error);
  if (!config) {
    std::fprintf(stderr, "shellac: %s\n", error.c_str());
    return 1;
  }
  // The embedded default: no configuration at all, started inside a git repository: serve it.
  if (config_file.empty() && config->repositories.empty() && config->cgitrc.empty() &&
      !config->backend) {
    char cwd[4096];
    const std::string here =
        getcwd(cwd, sizeof cwd) != nullptr ? shellac::proxy::GitRepositoryAbove(cwd) : "";
    if (!here.empty()) {
      overrides.emplace_back("repo", here);
      config = shellac::conf::Load(config_file, overrides, &error);
      if (!config) {
        std::fprintf(stderr, "shellac: %s\n", error.c_str());
        return 1;
      }
      std::fprintf(stderr, "shellac: no configuration given: serving the git repository %s\n",
                   here.c_str());
    }
  }
  if (check) {
    if (!shellac::proxy::BuildRuntime(config, 1, &error)) {
      std::fprintf(stderr, "shellac: %s\n", error.c_str());
      return 1;
    }
    std::printf("shellac: configuration ok\n");
    return 0;
  }

  // Every client and upstream connection is a descriptor; the soft limit (often 1024) is raised to
  // the hard one so that a burst of connections is not refused by the process itself.
  if (rlimit limit; getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  std::signal(SIGPIPE, SIG_IGN);
  evthread_use_pthreads();
  try {
    shellac::proxy::Server server(config_file, overrides, config);
    return server.Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shellac: %s\n", e.what());
    return 1;
  }
}

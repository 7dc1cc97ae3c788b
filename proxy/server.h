// server: the process. Binds the listeners (one SO_REUSEPORT socket per worker and address), runs
// the worker threads, and on the main thread the admin listener and the signal handling:
// SIGHUP reloads the configuration, SIGTERM/SIGINT drain and stop.
#pragma once

#include <memory>
#include <string>

#include "cache/cache.h"
#include "conf/config.h"

namespace shellac::proxy {

class Server {
 public:
  // `config_file` and `overrides` are kept: SIGHUP reads the same file with the same overrides.
  Server(std::string config_file, conf::Overrides overrides,
         std::shared_ptr<const conf::Config> config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until a SIGTERM/SIGINT drain completes. Returns the process exit code
  // (0 after a drain, 1 when the listeners could not be set up).
  int Run();

 private:
  struct State;
  void LoadStoreSnapshot(const std::string& path);
  void WriteStoreSnapshot(const std::string& path);
  std::unique_ptr<State> state_;
};

// Everything a configuration snapshot needs before it can serve: the access log opened, every rule
// compiled, the repositories' site, the certificates read. Null with *error "ORIGIN: key: why" (or
// "FILE: what is wrong") on the first problem. Used at start, on SIGHUP and by --check.
struct Runtime;
std::shared_ptr<Runtime> BuildRuntime(std::shared_ptr<const conf::Config> config,
                                      uint64_t generation, std::string* error);

// Whether `dir` is a git repository: a work tree (with .git) or a bare repository.
bool IsGitRepository(const std::string& dir);
// `dir` or the closest folder above it that is a git repository; "" when there is none.
std::string GitRepositoryAbove(std::string dir);

// The built-in page for a configuration without a backend.
std::string BuiltinPage(const conf::Config& config);

}  // namespace shellac::proxy

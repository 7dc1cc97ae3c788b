#include "gitfrag/filter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/owned.h"

extern char** environ;

namespace shellac::gitfrag {

namespace {

struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
};

std::string Seconds(std::chrono::milliseconds ms) {
  const auto whole = ms.count() / 1000, tenths = (ms.count() % 1000) / 100;
  return std::to_string(whole) + (tenths ? "." + std::to_string(tenths) : "") + " s";
}

}  // namespace

bool IsExecFilter(std::string_view command) {
  const size_t colon = command.find(':');
  return colon == std::string_view::npos || colon == 1 || command.starts_with("exec:");
}

FilterResult RunFilter(std::string_view command, std::string_view argument, std::string_view input,
                       const FilterLimits& limits, const std::vector<std::string>& env) {
  FilterResult result;
  if (command.starts_with("exec:")) command.remove_prefix(5);
  const std::string program(command), arg(argument);
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  Fd in_read, in_write, out_read, out_write;
  in_read.fd = in_pipe[0];
  in_write.fd = in_pipe[1];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  out_read.fd = out_pipe[0];
  out_write.fd = out_pipe[1];
  FileActions fa;
  posix_spawn_file_actions_adddup2(&fa.actions, in_read.fd, 0);
  posix_spawn_file_actions_adddup2(&fa.actions, out_write.fd, 1);
  char* argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>(arg.c_str()), nullptr};
  pid_t pid = 0;
  // The child starts with default signal dispositions (shellac ignores SIGPIPE).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // Looked up in PATH when it names no folder, as cgit's execvp.
  const int spawned = ::posix_spawnp(&pid, program.c_str(), &fa.actions, &attr, argv, envp.data());
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    result.error = "cannot run " + program + ": " + std::strerror(spawned);
    return result;
  }
  in_read.Close();
  out_write.Close();
  ::fcntl(in_write.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(out_read.fd, F_SETFL, O_NONBLOCK);
  if (input.empty()) in_write.Close();

  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  size_t written = 0;
  bool killed = false;
  char buf[16384];
  while (out_read.fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.error = "the filter ran longer than " + Seconds(limits.timeout) + " and was killed";
      killed = true;
      break;
    }
    pollfd fds[2] = {{out_read.fd, POLLIN, 0}, {in_write.fd, POLLOUT, 0}};
    const int n = ::poll(fds, in_write.fd >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) {
      result.error = std::string("poll: ") + std::strerror(errno);
      killed = true;
      break;
    }
    if (n <= 0) continue;
    if (in_write.fd >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t w = ::write(in_write.fd, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      // A filter that stops reading (EPIPE) gets no more; its output still counts.
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) in_write.Close();
    }
    if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      const ssize_t r = ::read(out_read.fd, buf, sizeof buf);
      if (r > 0) {
        if (result.output.size() + static_cast<size_t>(r) > limits.max_output) {
          result.error = "the filter wrote more than " + std::to_string(limits.max_output) +
                         " bytes and was killed";
          killed = true;
          break;
        }
        result.output.append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        out_read.Close();
      }
    }
  }
  in_write.Close();
  out_read.Close();
  if (killed) ::kill(pid, SIGKILL);
  // The filter closed its output: it is ending. One bounded wait for it, then it is killed.
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid, SIGKILL);
        killed = true;
        if (result.error.empty())
          result.error = "the filter ran longer than " + Seconds(limits.timeout) + " and was killed";
        continue;
      }
      ::usleep(1000);
    }
  }
  if (killed) return result;
  result.ok = true;  // it ended on its own: its output is the page's, whatever its status (cgit's)
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
  } else if (WIFEXITED(status)) {
    result.error = "the filter exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    result.error = "the filter was ended by signal " + std::to_string(WTERMSIG(status));
  }
  return result;
}

}  // namespace shellac::gitfrag

// access_log: the combined log format plus the duration in microseconds and the cache status.
//
//   127.0.0.1 - - [29/Nov/2026:20:30:55 +0000] "GET /x HTTP/1.1" 200 1234 "-" "curl/7.88" 532 pass
//
// AccessLogFile is an opened destination (shared, immutable; reopened on SIGHUP by building a new
// one). Each worker thread owns an AccessLogWriter that buffers lines and writes them in large
// O_APPEND writes, so worker threads never contend on a lock and a line is never split.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock_text.h"

namespace shellac::proxy {

class AccessLogFile {
 public:
  // "stderr", "off" (returns nullptr, *error empty) or a path opened for appending
  // (nullptr with *error "PATH: why" when it cannot be opened).
  static std::shared_ptr<AccessLogFile> Open(const std::string& spec, std::string* error);
  ~AccessLogFile();
  AccessLogFile(const AccessLogFile&) = delete;
  AccessLogFile& operator=(const AccessLogFile&) = delete;
  int fd() const { return fd_; }

 private:
  AccessLogFile(int fd, bool owned) : fd_(fd), owned_(owned) {}
  int fd_;
  bool owned_;
};

struct AccessEntry {
  std::string_view client_ip;
  std::string_view method;
  std::string_view target;
  int minor_version = 1;
  int status = 0;
  uint64_t body_bytes = 0;
  std::string_view referer;
  std::string_view user_agent;
  uint64_t micros = 0;
  std::string_view cache;  // "hit", "miss", "pass", "local"
};

class AccessLogWriter {
 public:
  ~AccessLogWriter() { Flush(); }
  // Appends one line for `file` (nullptr: logging off). Flushes when the buffer is large or the
  // destination changed (after a reload).
  void Append(const std::shared_ptr<AccessLogFile>& file, const AccessEntry& entry, time_t now);
  // Writes out whatever is buffered. Called by the worker's periodic timer and at exit.
  void Flush();

 private:
  std::shared_ptr<AccessLogFile> file_;
  std::string buffer_;
  base::SecondText stamp_{"[%d/%b/%Y:%H:%M:%S +0000]"};  // "[29/Nov/2026:20:30:55 +0000]"
};

}  // namespace shellac::proxy

#include "proxy/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shellac::proxy {
namespace {

constexpr size_t kFlushBytes = 32 << 10;

// Quoted fields: printable ASCII except '"' and '\' as is, everything else as \xHH.
void AppendEscaped(std::string* out, std::string_view s) {
  if (s.empty()) {
    out->push_back('-');
    return;
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out->push_back(static_cast<char>(c));
    } else {
      out->append("\\x");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
}

}  // namespace

std::shared_ptr<AccessLogFile> AccessLogFile::Open(const std::string& spec, std::string* error) {
  error->clear();
  if (spec == "off") return nullptr;
  if (spec == "stderr") return std::shared_ptr<AccessLogFile>(new AccessLogFile(STDERR_FILENO, false));
  int fd = ::open(spec.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = spec + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::shared_ptr<AccessLogFile>(new AccessLogFile(fd, true));
}

AccessLogFile::~AccessLogFile() {
  if (owned_) ::close(fd_);
}

void AccessLogWriter::Append(const std::shared_ptr<AccessLogFile>& file, const AccessEntry& e, time_t now) {
  if (file != file_) {
    Flush();
    file_ = file;
  }
  if (!file_) return;
  std::string& b = buffer_;
  b.append(e.client_ip).append(" - - ").append(stamp_.At(now)).append(" \"");
  AppendEscaped(&b, e.method);
  b.push_back(' ');
  AppendEscaped(&b, e.target);
  b.append(e.minor_version == 0 ? " HTTP/1.0\" " : " HTTP/1.1\" ");
  b.append(std::to_string(e.status)).push_back(' ');
  b.append(std::to_string(e.body_bytes)).append(" \"");
  AppendEscaped(&b, e.referer);
  b.append("\" \"");
  AppendEscaped(&b, e.user_agent);
  b.append("\" ").append(std::to_string(e.micros)).push_back(' ');
  b.append(e.cache).push_back('\n');
  if (b.size() >= kFlushBytes) Flush();
}

void AccessLogWriter::Flush() {
  if (buffer_.empty() || !file_) {
    buffer_.clear();
    return;
  }
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    ssize_t n = ::write(file_->fd(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a full disk loses log lines, never requests
    p += n;
    left -= static_cast<size_t>(n);
  }
  buffer_.clear();
}

}  // namespace shellac::proxy

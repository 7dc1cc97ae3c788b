#include "ctl/admin_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/text.h"

namespace shellac::ctl {
namespace {

using Clock = std::chrono::steady_clock;

// Splits "HOST:PORT" / "[V6]:PORT" / ":PORT"; false when there is no port.
bool SplitAddress(const std::string& address, std::string* host, std::string* port) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  if (host->empty()) *host = "127.0.0.1";
  return true;
}

int Remaining(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

bool WaitFor(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = poll(&p, 1, Remaining(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

AdminClient::~AdminClient() { Close(); }

void AdminClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

bool AdminClient::Connect(AdminResponse* r) {
  std::string host, port;
  if (!SplitAddress(address_, &host, &port)) {
    r->error = "not an address: '" + address_ + "' (HOST:PORT)";
    return false;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    r->error = std::string("cannot resolve ") + address_ + ": " + gai_strerror(rc);
    return false;
  }
  int last = ECONNREFUSED;
  for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fd_ = fd;
    } else {
      last = errno;
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  if (fd_ < 0) {
    r->refused = last == ECONNREFUSED;
    r->error = std::strerror(last);
    return false;
  }
  return true;
}

AdminResponse AdminClient::Request(std::string_view method, std::string_view target,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string request;
  request.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ");
  request.append(address_).append("\r\nUser-Agent: shellac-ctl\r\nContent-Length: 0\r\n\r\n");
  // A kept-alive connection the server has closed meanwhile fails at once: try a fresh one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    AdminResponse r;
    const bool reused = fd_ >= 0;
    if (!reused && !Connect(&r)) return r;
    size_t sent = 0;
    while (sent < request.size()) {
      if (!WaitFor(fd_, POLLOUT, deadline)) break;
      const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    // Head, then the body by Content-Length.
    size_t head_end = std::string::npos, body_length = 0;
    bool complete = false, closed = false;
    while (sent == request.size()) {
      if (head_end == std::string::npos) {
        head_end = buffer_.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          const std::string head = buffer_.substr(0, head_end);
          r.status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
          const std::string lower = base::ToLower(head);
          const auto cl = lower.find("\r\ncontent-length:");
          if (cl != std::string::npos) {
            size_t p = cl + 17;
            while (p < lower.size() && lower[p] == ' ') ++p;
            std::from_chars(lower.data() + p, lower.data() + lower.size(), body_length);
          }
          head_end += 4;
        }
      }
      if (head_end != std::string::npos && buffer_.size() >= head_end + body_length) {
        r.body = buffer_.substr(head_end, body_length);
        buffer_.erase(0, head_end + body_length);
        complete = true;
        break;
      }
      if (!WaitFor(fd_, POLLIN, deadline)) {
        r.error = "timed out";
        break;
      }
      char chunk[16384];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) {
        closed = true;
        break;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
    }
    if (complete) {
      if (method == "HEAD") r.body.clear();
      return r;
    }
    const bool nothing_read = buffer_.empty() && r.status == 0;
    Close();
    if (reused && nothing_read && r.error.empty()) continue;  // stale keep-alive connection
    r.status = 0;
    if (r.error.empty()) r.error = closed ? "connection closed before a whole response" : "send failed";
    return r;
  }
  return AdminResponse{0, {}, "connection closed", false};
}

std::string AdminClient::Explain(const AdminResponse& r) const {
  if (r.refused) {
    return "nothing listens on " + address_ +
           " (connection refused): is shellac running, and is this its admin-listen= address? "
           "Pick another with --admin ADDR:PORT";
  }
  if (r.status != 0) return address_ + " answered " + std::to_string(r.status) + ": " + r.body;
  return address_ + ": " + r.error;
}

}  // namespace shellac::ctl

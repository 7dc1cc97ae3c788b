#include "proxy/upstream.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "proxy/tls.h"

namespace shellac::proxy {
namespace {

std::string KeyOf(const conf::SocketAddress& address) {
  std::string key(reinterpret_cast<const char*>(&address.storage), address.length);
  if (address.tls) key += "+tls";  // never hand a plain connection to an https:// backend or back
  return key;
}

// A TLS connection to `address`: connect() is started here, the handshake begins once it is
// writable.
BufferEventPtr ConnectTls(event_base* base, int fd, const conf::SocketAddress& address, const TlsContext* tls,
                          std::string* error) {
  SslPtr ssl = tls ? tls->NewUpstreamSsl(address.host) : nullptr;
  if (!ssl) {
    ::close(fd);
    *error = "cannot set up TLS to " + address.text;
    return nullptr;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0 && errno != EINPROGRESS) {
    *error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  BufferEventPtr bev(bufferevent_openssl_socket_new(base, fd, ssl.get(), BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE));
  if (!bev) {
    ::close(fd);
    *error = "out of memory";
    return nullptr;
  }
  ssl.release();  // the bufferevent frees it
  bufferevent_openssl_set_allow_dirty_shutdown(bev.get(), 1);
  return bev;
}

}  // namespace

BufferEventPtr UpstreamPool::TakeIdle(const conf::SocketAddress& address) {
  auto it = idle_.find(KeyOf(address));
  if (it == idle_.end() || it->second.empty()) return nullptr;
  BufferEventPtr bev = std::move(it->second.back()->bev);
  it->second.pop_back();
  bufferevent_setcb(bev.get(), nullptr, nullptr, nullptr, nullptr);
  bufferevent_set_timeouts(bev.get(), nullptr, nullptr);
  return bev;
}

BufferEventPtr UpstreamPool::Connect(const conf::SocketAddress& address, std::string* error, const TlsContext* tls) {
  int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return nullptr;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (address.tls) return ConnectTls(base_, fd, address, tls, error);
  BufferEventPtr bev(bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE));
  if (!bev) {
    ::close(fd);
    *error = "out of memory";
    return nullptr;
  }
  // Failures after this point (refused, unreachable) arrive as BEV_EVENT_ERROR.
  if (bufferevent_socket_connect(bev.get(), reinterpret_cast<const sockaddr*>(&address.storage),
                                 static_cast<int>(address.length)) != 0) {
    *error = std::string("connect: ") + std::strerror(errno);
    return nullptr;
  }
  return bev;
}

void UpstreamPool::PutIdle(const conf::SocketAddress& address, BufferEventPtr connection, unsigned max_idle,
                           conf::Millis idle_timeout) {
  auto& list = idle_[KeyOf(address)];
  if (list.size() >= max_idle) return;  // `connection` is freed here
  auto idle = std::make_unique<Idle>(Idle{this, KeyOf(address), std::move(connection)});
  bufferevent* bev = idle->bev.get();
  bufferevent_setcb(bev, OnIdleRead, nullptr, OnIdleEvent, idle.get());
  const timeval tv = ToTimeval(idle_timeout);
  bufferevent_set_timeouts(bev, &tv, nullptr);
  bufferevent_disable(bev, EV_WRITE);
  bufferevent_enable(bev, EV_READ);
  list.push_back(std::move(idle));
}

void UpstreamPool::OnIdleEvent(bufferevent*, short, void* arg) {
  auto* idle = static_cast<Idle*>(arg);
  idle->pool->Drop(idle);
}

// An idle connection must stay silent; bytes from the origin mean it is out of step.
void UpstreamPool::OnIdleRead(bufferevent*, void* arg) {
  auto* idle = static_cast<Idle*>(arg);
  idle->pool->Drop(idle);
}

void UpstreamPool::Drop(Idle* idle) {
  auto& list = idle_[idle->key];
  // Frees the Idle and its bufferevent (from inside that bufferevent's callback, which libevent
  // allows). `idle` is not used after this.
  std::erase_if(list, [idle](const std::unique_ptr<Idle>& kept) { return kept.get() == idle; });
}

void UpstreamPool::Clear() {
  idle_.clear();  // each Idle frees its bufferevent
}

}  // namespace shellac::proxy

// Owning handles for libevent objects (base::Owned): each C handle is wrapped the moment it is
// created.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "base/owned.h"

namespace shellac::proxy {

using BufferEventPtr = base::Owned<bufferevent_free>;
using EvbufferPtr = base::Owned<evbuffer_free>;
using EventPtr = base::Owned<event_free>;
using EventBasePtr = base::Owned<event_base_free>;
using EventConfigPtr = base::Owned<event_config_free>;
using ListenerPtr = base::Owned<evconnlistener_free>;

// A TLS (OpenSSL) bufferevent: its socket carries records, so the shortcuts below must leave it to
// libevent.
inline bool IsTls(bufferevent* bev) { return bufferevent_openssl_get_ssl(bev) != nullptr; }

// Writes what `bev` has queued at once instead of on the next loop turn; only what the socket cannot
// take now waits for EV_WRITE. Bufferevents here keep EV_WRITE disabled while their output is empty,
// which saves two epoll_ctl calls and a loop turn per response. Errors surface through the
// bufferevent's event callback once EV_WRITE is enabled. A TLS bufferevent only gets EV_WRITE.
inline void WriteNow(bufferevent* bev) {
  evbuffer* out = bufferevent_get_output(bev);
  if (evbuffer_get_length(out) == 0) return;
  if (IsTls(bev)) {
    // The OpenSSL bufferevent makes one SSL_write, so one TLS record and one send(), per chunk of
    // the output; a response is a head, chunk lines and stitched segments in many small chunks.
    // Made contiguous (a copy of a few KB) it leaves as one record.
    constexpr size_t kCoalesce = 16 << 10;
    const size_t length = evbuffer_get_length(out);
    if (length <= kCoalesce && evbuffer_peek(out, -1, nullptr, nullptr, 0) > 1) evbuffer_pullup(out, -1);
    bufferevent_enable(bev, EV_WRITE);
    return;
  }
  // A socket bufferevent freezes the front of its output so that only its own write callback drains
  // it; the same unfreeze/write/freeze step is done here, on the same thread.
  evbuffer_unfreeze(out, 1);
  evbuffer_write(out, bufferevent_getfd(bev));
  evbuffer_freeze(out, 1);
  if (evbuffer_get_length(out) > 0) bufferevent_enable(bev, EV_WRITE);
}

// libevent 2.1 reads at most 4096 bytes per readiness event. When a read hit that cap, more is
// likely waiting: take up to `max` bytes of it now rather than after another loop turn. A failed or
// empty read is left for libevent to notice on the next readiness event. Not for TLS.
inline void ReadMore(bufferevent* bev, size_t max) {
  if (IsTls(bev)) return;
  evbuffer* in = bufferevent_get_input(bev);
  evbuffer_iovec vec;
  evbuffer_unfreeze(in, 0);
  if (evbuffer_reserve_space(in, static_cast<ev_ssize_t>(max), &vec, 1) >= 1) {
    const ssize_t n = ::read(bufferevent_getfd(bev), vec.iov_base, std::min(vec.iov_len, max));
    vec.iov_len = n > 0 ? static_cast<size_t>(n) : 0;
    evbuffer_commit_space(in, &vec, 1);
  }
  evbuffer_freeze(in, 0);
}

inline timeval ToTimeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

}  // namespace shellac::proxy

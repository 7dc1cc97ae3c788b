// Owning handles for libevent objects: each C handle is wrapped the moment it is created.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <chrono>
#include <memory>

namespace shellac::proxy {

struct BufferEventFree {
  void operator()(bufferevent* b) const { bufferevent_free(b); }
};
struct EvbufferFree {
  void operator()(evbuffer* b) const { evbuffer_free(b); }
};
struct EventFree {
  void operator()(event* e) const { event_free(e); }
};
struct EventBaseFree {
  void operator()(event_base* b) const { event_base_free(b); }
};
struct ListenerFree {
  void operator()(evconnlistener* l) const { evconnlistener_free(l); }
};

using BufferEventPtr = std::unique_ptr<bufferevent, BufferEventFree>;
using EvbufferPtr = std::unique_ptr<evbuffer, EvbufferFree>;
using EventPtr = std::unique_ptr<event, EventFree>;
using EventBasePtr = std::unique_ptr<event_base, EventBaseFree>;
using ListenerPtr = std::unique_ptr<evconnlistener, ListenerFree>;

inline timeval ToTimeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

}  // namespace shellac::proxy

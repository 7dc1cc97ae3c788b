#include "proxy/worker.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "proxy/client.h"
#include "proxy/exchange.h"
#include "proxy/tls.h"
#include "proxy/upstream.h"

namespace shellac::proxy {

namespace {

constexpr timeval kTick = {0, 250'000};           // access-log flush period
constexpr timeval kAcceptBackoff = {0, 100'000};  // pause after running out of file descriptors

}  // namespace

Worker::Worker(Shared& shared, int index) : shared_(shared), index_(index) {
  // The epoll changelist folds the enable/disable pairs a request makes within one loop iteration
  // into at most one epoll_ctl per descriptor.
  EventConfigPtr cfg(event_config_new());
  event_config_set_flag(cfg.get(), EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
  base_.reset(event_base_new_with_config(cfg.get()));
  if (!base_) throw std::runtime_error("event_base_new failed");
  upstreams_ = std::make_unique<UpstreamPool>(base_.get());
  tick_.reset(event_new(base_.get(), -1, EV_PERSIST, OnTick, this));
  event_add(tick_.get(), &kTick);
  posted_event_.reset(event_new(base_.get(), -1, 0, OnPosted, this));
  serial_seen_ = shared_.serial();
  runtime_ = shared_.runtime();
}

Worker::~Worker() {
  CloseHandshakes();
  std::vector<ClientConnection*> open(connections_.begin(), connections_.end());
  for (ClientConnection* c : open) c->Close();
  for (ExchangeClient* fetch : background_) delete fetch;
  background_.clear();
  listeners_.clear();
  upstreams_.reset();
  log_.Flush();
}

void Worker::ReleaseBackground(ExchangeClient* fetch) {
  background_.erase(fetch);
  delete fetch;
}

void Worker::AddListener(int fd, Site site, std::string tls_address) {
  auto context = std::make_unique<Listener>();
  context->site = site;
  context->tls_address = std::move(tls_address);
  context->worker = this;
  context->listener.reset(evconnlistener_new(base_.get(), OnAccept, context.get(),
                                             LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd));
  if (!context->listener) throw std::runtime_error("evconnlistener_new failed");
  evconnlistener_set_error_cb(context->listener.get(), OnAcceptError);
  context->resume.reset(evtimer_new(
      base_.get(),
      [](evutil_socket_t, short, void* arg) {
        evconnlistener_enable(static_cast<evconnlistener*>(arg));
      },
      context->listener.get()));
  listeners_.push_back(std::move(context));
}

void Worker::OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int, void* arg) {
  auto* listener = static_cast<Listener*>(arg);
  if (!listener->tls_address.empty()) {
    TlsAccept::Start(*listener->worker, fd, addr, listener->tls_address);
    return;
  }
  new ClientConnection(*listener->worker, fd, addr, listener->site);  // owns itself
}

void Worker::OnAcceptError(evconnlistener* l, void* arg) {
  const int error = EVUTIL_SOCKET_ERROR();
  auto* listener = static_cast<Listener*>(arg);
  std::fprintf(stderr, "shellac: accept: %s\n", std::strerror(error));
  if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
    // The pending connection stays readable; without a pause the loop would spin on it.
    evconnlistener_disable(l);
    evtimer_add(listener->resume.get(), &kAcceptBackoff);
  }
}

void Worker::Run() {
  event_base_loop(base_.get(), EVLOOP_NO_EXIT_ON_EMPTY);
  log_.Flush();
}

void Worker::Post(std::function<void()> task) {
  {
    std::lock_guard lock(posted_mu_);
    posted_.push_back(std::move(task));
  }
  event_active(posted_event_.get(), EV_TIMEOUT, 0);
}

void Worker::OnPosted(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Worker*>(arg);
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard lock(self->posted_mu_);
    tasks.swap(self->posted_);
  }
  for (auto& task : tasks) task();
}

void Worker::OnTick(evutil_socket_t, short, void* arg) {
  static_cast<Worker*>(arg)->log_.Flush();
}

void Worker::BeginDrain() {
  draining_ = true;
  listeners_.clear();
  CloseHandshakes();  // no request of theirs is in flight
  std::vector<ClientConnection*> open(connections_.begin(), connections_.end());
  for (ClientConnection* c : open) c->Drain();
  if (connections_.empty()) event_base_loopexit(base_.get(), nullptr);
}

void Worker::Stop() {
  draining_ = true;
  listeners_.clear();
  CloseHandshakes();
  std::vector<ClientConnection*> open(connections_.begin(), connections_.end());
  for (ClientConnection* c : open) c->Close();
  event_base_loopexit(base_.get(), nullptr);
}

const std::shared_ptr<const Runtime>& Worker::runtime() {
  // The serial is read before the runtime: a Publish in between leaves an older serial, so the
  // next call takes the runtime again (harmless), never a stale runtime with a current serial.
  if (const uint64_t serial = shared_.serial(); serial != serial_seen_) {
    serial_seen_ = serial;
    runtime_ = shared_.runtime();
  }
  return runtime_;
}

const std::string& Worker::HttpDate() { return date_.At(time(nullptr)); }

void Worker::Register(ClientConnection* c) {
  connections_.insert(c);
}

void Worker::CloseHandshakes() {
  std::vector<TlsAccept*> open(handshakes_.begin(), handshakes_.end());
  for (TlsAccept* h : open) delete h;
}

void Worker::Unregister(ClientConnection* c) {
  connections_.erase(c);
  if (draining_ && connections_.empty()) event_base_loopexit(base_.get(), nullptr);
}

}  // namespace shellac::proxy

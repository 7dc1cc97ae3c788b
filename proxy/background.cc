#include "proxy/background.h"

#include "proxy/worker.h"

namespace shellac::proxy {

void BackgroundFetch::Start(Worker& worker, std::shared_ptr<const Runtime> runtime, const http::RequestHead& request,
                            const std::string& peer_ip, bool secure, std::string key) {
  auto* fetch = new BackgroundFetch(worker, request, peer_ip, secure);  // owned by the worker from here
  worker.AdoptBackground(fetch);
  fetch->exchange_ = std::make_unique<ProxyExchange>(*fetch, std::move(runtime), fetch->request_,
                                                     std::move(key), ProxyExchange::Collect::kStoreOnly);
  fetch->exchange_->Start();
}

BackgroundFetch::BackgroundFetch(Worker& worker, const http::RequestHead& request, std::string peer_ip,
                                 bool secure)
    : worker_(worker),
      request_(request),
      peer_ip_(std::move(peer_ip)),
      secure_(secure),
      end_(event_new(worker.base(), -1, 0, OnEnd, this)) {
  request_.method = "GET";  // a HEAD that found the object stale refreshes it with a GET
  request_.keep_alive = true;
  request_.body = http::BodyKind::kNone;  // nobody would send a body
  request_.content_length = 0;
  request_.expect_continue = false;
}

BackgroundFetch::~BackgroundFetch() { exchange_.reset(); }

void BackgroundFetch::EndSoon() { event_active(end_.get(), EV_TIMEOUT, 0); }

void BackgroundFetch::OnEnd(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<BackgroundFetch*>(arg);
  self->worker_.ReleaseBackground(self);  // deletes it
}

}  // namespace shellac::proxy

#include "proxy/client.h"

#include "proxy/assets.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cctype>
#include <cstdlib>
#include <optional>

#include "cache/cache.h"
#include "proxy/assets.h"
#include "proxy/background.h"
#include "proxy/deliver.h"
#include "proxy/exchange.h"
#include "proxy/page_memo.h"
#include "proxy/tls.h"
#include "proxy/warm.h"

namespace shellac::proxy {
namespace {

// Input read ahead of the request in progress (pipelined requests, body bytes) is capped here.
constexpr size_t kReadWindow = 256 << 10;
// A closing connection reads and discards for at most this long / this much.
constexpr timeval kLingerTime = {2, 0};
constexpr size_t kLingerBytes = 1 << 20;

std::string PeerIp(const sockaddr* peer) {
  char buf[INET6_ADDRSTRLEN] = "-";
  if (peer == nullptr) return buf;
  if (peer->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(peer)->sin_addr, buf, sizeof buf);
  } else if (peer->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

// The access log's cache field for an X-Cache value (a static string: the log keeps the pointer).
const char* CacheStatus(std::string_view x_cache) {
  return x_cache == "hit" ? "hit" : x_cache == "miss" ? "miss" : "pass";
}

std::string_view PathOf(std::string_view target) {
  return target.substr(0, target.find('?'));
}

// The percent-decoded value of query parameter `name`, if present.
std::optional<std::string> QueryParameter(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      std::string value;
      const std::string_view raw =
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '+') {
          value.push_back(' ');
        } else if (raw[i] == '%' && i + 2 < raw.size() &&
                   std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
                   std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
          value.push_back(
              static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16)));
          i += 2;
        } else {
          value.push_back(raw[i]);
        }
      }
      return value;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

BufferEventPtr SocketBufferEvent(event_base* base, evutil_socket_t fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return BufferEventPtr(bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE));
}

}  // namespace

ClientConnection::ClientConnection(Worker& worker, evutil_socket_t fd, const sockaddr* peer,
                                   Site site)
    : ClientConnection(worker, SocketBufferEvent(worker.base(), fd), peer, site, /*tls=*/false) {}

ClientConnection::ClientConnection(Worker& worker, BufferEventPtr bev, const sockaddr* peer,
                                   Site site, bool tls)
    : worker_(worker), site_(site), tls_(tls), peer_ip_(PeerIp(peer)) {
  bev_ = std::move(bev);
  head_timer_.reset(evtimer_new(worker.base(), OnHeadTimer, this));
  deferred_.reset(event_new(worker.base(), -1, 0, OnDeferred, this));
  bufferevent_setcb(bev_.get(), OnRead, OnWrite, OnEvent, this);
  bufferevent_setwatermark(bev_.get(), EV_READ, 0, kReadWindow);
  // EV_WRITE (on by default in a new bufferevent) only while output waits: see WriteNow.
  bufferevent_disable(bev_.get(), EV_WRITE);
  bufferevent_enable(bev_.get(), EV_READ);
  runtime_ = worker_.runtime();
  ApplyIoTimeouts(false);
  ArmHeadTimer(runtime_->config->client_header_timeout);
  worker_.Register(this);
  WorkerMetrics::Add(worker_.metrics().connections_accepted);
  WorkerMetrics::Add(worker_.metrics().connections_open, 1);
}

ClientConnection::~ClientConnection() {
  stream_.reset();
  esi_.reset();
  exchange_.reset();
  FreeRetired();
  if (tls_) KeepSessionOnClose(bev_.get());
  bev_.reset();
  if (in_request_) WorkerMetrics::Add(worker_.metrics().in_flight, -1);
  WorkerMetrics::Add(worker_.metrics().connections_open, -1);
  worker_.Unregister(this);
}

void ClientConnection::Drain() {
  close_after_response_ = true;
  if (state_ == State::kReadingHead) CloseSoon();
}

void ClientConnection::SetReading(bool on) {
  if (on)
    bufferevent_enable(bev_.get(), EV_READ);
  else
    bufferevent_disable(bev_.get(), EV_READ);
}

void ClientConnection::NotifyWhenDrained(size_t low) {
  bufferevent_setwatermark(bev_.get(), EV_WRITE, low, 0);
}

void ClientConnection::ApplyIoTimeouts(bool reading_body) {
  const conf::Config& config = *runtime_->config;
  const timeval body = ToTimeval(config.client_body_timeout);
  const timeval send = ToTimeval(config.send_timeout);
  // While a head is awaited the head timer governs reading, not a per-read timeout.
  bufferevent_set_timeouts(bev_.get(), reading_body ? &body : nullptr, &send);
}

void ClientConnection::ArmHeadTimer(std::chrono::milliseconds ms) {
  const timeval tv = ToTimeval(ms);
  evtimer_add(head_timer_.get(), &tv);
}

void ClientConnection::OnRead(bufferevent*, void* arg) {
  auto* self = static_cast<ClientConnection*>(arg);
  self->FreeRetired();
  switch (self->state_) {
    case State::kBusy:
      if (self->exchange_) self->exchange_->OnClientReadable();
      return;  // during an ESI response pipelined bytes wait, bounded by the read watermark
    case State::kWaiting:
      return;  // pipelined bytes wait in the input, bounded by the read watermark
    case State::kClosing:
      evbuffer_drain(self->input(), evbuffer_get_length(self->input()));
      return;
    case State::kLingering:
      self->lingered_ += evbuffer_get_length(self->input());
      evbuffer_drain(self->input(), evbuffer_get_length(self->input()));
      if (self->lingered_ > kLingerBytes) delete self;
      return;
    case State::kReadingHead:
      self->ProcessInput();
      return;
  }
}

void ClientConnection::OnWrite(bufferevent*, void* arg) {
  auto* self = static_cast<ClientConnection*>(arg);
  self->FreeRetired();
  if (self->state_ == State::kClosing) {
    if (evbuffer_get_length(self->output()) == 0) self->StartLingering();
    return;
  }
  if (self->state_ == State::kBusy && self->exchange_) self->exchange_->OnClientDrained();
  if (self->state_ == State::kBusy && self->esi_) self->esi_->OnClientDrained();
  if (self->state_ == State::kBusy && self->stream_) self->stream_->OnClientDrained();
  if (evbuffer_get_length(self->output()) == 0) bufferevent_disable(self->bev_.get(), EV_WRITE);
}

void ClientConnection::OnEvent(bufferevent*, short what, void* arg) {
  auto* self = static_cast<ClientConnection*>(arg);
  self->FreeRetired();
  if (self->state_ == State::kWaiting && self->rendering_ && (what & BEV_EVENT_EOF)) {
    // The client closed while its page waits for a render (as nginx, a close is taken as the
    // client going away): a render that has not started leaves the queue, one that runs finishes
    // (and a repository-neutral part is stored for the next request).
    delete self;
    return;
  }
  if ((self->state_ == State::kWaiting ||
       (self->state_ == State::kBusy && (self->esi_ || self->stream_))) &&
      (what & BEV_EVENT_EOF)) {
    self->close_after_response_ =
        true;  // half-closed while its fetch runs elsewhere: answer, then close
    self->SetReading(false);
    return;
  }
  if (self->state_ == State::kBusy && self->exchange_) {
    if ((what & BEV_EVENT_EOF) && !self->exchange_->reading_body()) {
      // The client half-closed after sending its request: answer it, then close.
      self->close_after_response_ = true;
      self->SetReading(false);
      return;
    }
    if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) &&
        !self->exchange_->response_started()) {
      self->FailExchange(
          408, "request body not received within " +
                   std::to_string(self->runtime_->config->client_body_timeout.count()) + " ms");
      return;
    }
  }
  delete self;  // EOF, reset or send timeout: nothing more can be delivered
}

void ClientConnection::OnHeadTimer(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<ClientConnection*>(arg);
  if (self->state_ != State::kReadingHead) return;
  if (evbuffer_get_length(self->input()) == 0) {
    delete self;  // idle keep-alive connection: close quietly
    return;
  }
  self->started_ = std::chrono::steady_clock::now();
  self->RespondError(
      408, "request head not received within " +
               std::to_string(self->runtime_->config->client_header_timeout.count()) + " ms");
}

void ClientConnection::OnDeferred(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<ClientConnection*>(arg);
  self->FreeRetired();
  const Deferred action = self->deferred_action_;
  self->deferred_action_ = Deferred::kNone;
  if (action == Deferred::kClose) {
    delete self;
  } else if (action == Deferred::kResume && self->state_ == State::kReadingHead) {
    self->ProcessInput();
  }
}

void ClientConnection::CloseSoon() {
  state_ = State::kClosing;
  bufferevent_disable(bev_.get(), EV_READ | EV_WRITE);
  deferred_action_ = Deferred::kClose;
  event_active(deferred_.get(), EV_TIMEOUT, 0);
}

void ClientConnection::ResumeSoon() {
  if (deferred_action_ == Deferred::kClose) return;
  deferred_action_ = Deferred::kResume;
  event_active(deferred_.get(), EV_TIMEOUT, 0);
}

void ClientConnection::ProcessInput() {
  if (state_ != State::kReadingHead) return;
  evbuffer* in = input();
  if (evbuffer_get_length(in) == 0) return;
  runtime_ = worker_.runtime();
  const conf::Config& config = *runtime_->config;
  const http::Limits limits{config.max_request_line, config.max_header_count,
                            config.max_header_bytes};
  const http::ParseResult r = http::ParseRequestHead(in, limits, &request_);
  if (r.kind == http::ParseResult::kIncomplete) {
    if (head_timer_is_idle_) {
      // The first bytes of a new request: from now on the head must complete in time.
      head_timer_is_idle_ = false;
      ArmHeadTimer(config.client_header_timeout);
    }
    return;
  }
  evtimer_del(head_timer_.get());
  started_ = std::chrono::steady_clock::now();
  body_bytes_ = 0;
  if (r.kind == http::ParseResult::kError) {
    request_ = http::RequestHead{};
    request_.minor_version = 1;
    RespondError(r.status, r.detail);
    return;
  }
  in_request_ = true;
  WorkerMetrics::Add(worker_.metrics().in_flight, 1);
  Dispatch();
}

void ClientConnection::Dispatch() {
  const conf::Config& config = *runtime_->config;
  if (site_ == Site::kAdmin) {
    ServeAdmin();
    return;
  }
  if (config.max_body_size != 0 && request_.body == http::BodyKind::kLength &&
      request_.content_length > config.max_body_size) {
    RespondError(413,
                 "request body larger than " + std::to_string(config.max_body_size) + " bytes");
    return;
  }
  resident_.reset();
  if (request_.method == "GET" || request_.method == "HEAD")
    resident_ = MatchResident(*runtime_, request_.target);
  if (resident_ && resident_->kind == gitfrag::PageKind::kAtom && !request_.host.empty()) {
    // A feed's links are absolute, as cgit's. The scheme a TLS terminator in front saw counts
    // too: the feed is made for this request only, so the header changes no one else's.
    const http::Header* proto = request_.Find("X-Forwarded-Proto");
    const bool https = tls_ || (proto != nullptr && base::EqualsIgnoreCase(proto->value, "https"));
    resident_->origin = (https ? "https://" : "http://") + request_.host;
  }
  if (resident_) {
    ServeResident();
    return;
  }
  if (!config.backend) {
    ServeLocal();
    return;
  }
  route_ = Route::kProxy;
  if (config.cache && IsCacheableRequest(request_)) {
    runtime_->key_rules->MakeKey(request_.host, request_.target, &cache_key_);
    ServeCached(cache_key_);
    return;
  }
  StartExchange({});
}

void ClientConnection::StartExchange(std::string fill_key) {
  cache_status_ = fill_key.empty() ? "pass" : "miss";
  // Reading stays on while the request is served: a client that goes away is noticed at once, and
  // pipelined bytes wait in the input, bounded by the read watermark.
  state_ = State::kBusy;
  ApplyIoTimeouts(request_.body != http::BodyKind::kNone);
  exchange_ = std::make_unique<ProxyExchange>(*this, runtime_, request_, std::move(fill_key));
  exchange_->Start();
}

void ClientConnection::ServeCached(const std::string& key) {
  // Until the lookup answers or fetches, the request may wait for another's fetch: the client's
  // EOF is noticed then, not acted on.
  state_ = State::kWaiting;
  lookup_.Start(key, {.may_lead = request_.method != "HEAD",  // a HEAD cannot fill the store
                      .may_refresh = !resident_,  // a resident page has no grace
                      .wait_limit = runtime_->config->single_flight_timeout});
}

bool ClientConnection::ServeStored(const cache::ObjectRef& object, Found) {
  return Deliver(object, "hit");
}

void ClientConnection::FetchFor(std::string fill_key) {
  if (resident_)
    StartRender(std::move(fill_key));
  else
    StartExchange(std::move(fill_key));
}

void ClientConnection::Refresh(std::string key) {
  BackgroundFetch::Start(worker_, runtime_, request_, peer_ip_, secure(), std::move(key));
}

void ClientConnection::FillFailed(int status, const std::string& detail) {
  state_ = State::kReadingHead;
  RespondError(status, detail);
}

void ClientConnection::WaitTimedOut() {
  state_ = State::kReadingHead;
  Respond(503, "text/plain; charset=utf-8",
          "503 Service Unavailable: waited " +
              std::to_string(runtime_->config->single_flight_timeout.count()) +
              " ms for another request's fetch of this page\n",
          /*keep_alive=*/false, "Retry-After: 5\r\n");
}

bool ClientConnection::Deliver(const cache::ObjectRef& object, std::string_view x_cache,
                               std::shared_ptr<const std::string> text) {
  if (object->esi_template() != nullptr) {
    StartEsi(object, x_cache, std::move(text));
    return true;
  }
  const bool keep_alive = request_.keep_alive && !close_after_response_ && !worker_.draining();
  const Delivered d = DeliverObject(output(), *object, request_, x_cache, NowSeconds(),
                                    worker_.HttpDate(), keep_alive, Hsts(), text.get());
  if (!d.ok) {
    worker_.shared().store->Purge(object->key());  // corrupt: never serve it again
    return false;
  }
  if (d.body_bytes > 0)
    WorkerMetrics::Add(d.gzip ? worker_.metrics().cache_stitched
                              : worker_.metrics().cache_inflated);
  cache_status_ = CacheStatus(x_cache);
  body_bytes_ = d.body_bytes;
  Flush();
  FinishRequest(d.status, keep_alive);
  return true;
}

void ClientConnection::ServeResident() {
  route_ = Route::kLocal;
  memo_base_.clear();
  if (runtime_->config->cache && !resident_->cache_key.empty()) {
    cache_key_ = resident_->cache_key;
    ServeCached(cache_key_);
    return;
  }
  // A page made for one request: the same page kept whole from an earlier one, if any.
  if (cache::Store* memo = worker_.shared().page_memo.get()) {
    memo_base_ = PageMemoBase(*runtime_, *resident_, AcceptsGzip(request_));
    if (!memo_base_.empty()) {
      cache::ObjectRef kept = FindKeptPage(*memo, *runtime_, *resident_, memo_base_, NowSeconds());
      if (kept && Deliver(kept, "hit")) return;
    }
  }
  StartRender({});
}

void ClientConnection::StartRender(std::string fill_key) {
  cache_status_ = fill_key.empty() ? "pass" : "miss";
  state_ = State::kWaiting;
  rendering_ = true;  // the client's EOF now ends the connection (OnEvent)
  std::weak_ptr<int> alive = alive_;
  const conf::Config& config = *runtime_->config;
  // A page that fills the store is not kept in the page memo too.
  std::string memo_base = fill_key.empty() ? std::move(memo_base_) : std::string();
  RenderResident(
      worker_, runtime_, *resident_, std::move(fill_key), alive,
      AdmissionFor(config, *resident_, ClientKey(config, peer_ip_, request_)),
      AcceptsGzip(request_), [this](Rendered rendered) { OnRendered(std::move(rendered)); },
      std::move(memo_base));
}

void ClientConnection::OnRendered(Rendered rendered) {
  if (state_ != State::kWaiting) return;
  state_ = State::kBusy;
  rendering_ = false;
  if (rendered.refusal != gitfrag::Refusal::kNone) {
    state_ = State::kReadingHead;
    Respond(503, "text/plain; charset=utf-8", "503 Service Unavailable: " + rendered.reason + "\n",
            /*keep_alive=*/false,
            "Retry-After: " + std::to_string(RetryAfterSeconds(*runtime_->config)) + "\r\n");
    return;
  }
  if (rendered.stream && rendered.status == 200) {
    StartStream(std::move(rendered));
    return;
  }
  if (rendered.status == 301 || rendered.status == 302) {  // a redirect, as cgit's (no body)
    state_ = State::kReadingHead;
    std::string location;
    for (const auto& [name, value] : rendered.headers) location += name + ": " + value + "\r\n";
    Respond(rendered.status, "text/plain; charset=utf-8", "", request_.keep_alive, location);
    return;
  }
  if (!rendered.object ||
      !Deliver(rendered.object, rendered.stored ? "miss" : "pass", std::move(rendered.text))) {
    state_ = State::kReadingHead;
    RespondError(rendered.status == 200 ? 500 : rendered.status, rendered.reason);
  }
}

void ClientConnection::StartStream(Rendered rendered) {
  cache_status_ = "pass";
  state_ = State::kBusy;
  ApplyIoTimeouts(false);
  const conf::Config& config = *runtime_->config;
  const bool keep_alive = request_.keep_alive && !close_after_response_ && !worker_.draining();
  stream_ = std::make_unique<StreamResponse>(
      *this, runtime_, request_, std::move(rendered.headers), std::move(rendered.stream),
      AdmissionFor(config, *resident_, ClientKey(config, peer_ip_, request_)), keep_alive, Hsts());
  stream_->Start();
}

void ClientConnection::StartEsi(cache::ObjectRef page, std::string_view x_cache,
                                std::shared_ptr<const std::string> text) {
  cache_status_ = CacheStatus(x_cache);
  state_ = State::kBusy;
  ApplyIoTimeouts(false);
  const bool keep_alive = request_.keep_alive && !close_after_response_ && !worker_.draining();
  esi_ = std::make_unique<EsiResponse>(*this, runtime_, request_, std::move(page), x_cache,
                                       keep_alive, std::move(text));
  esi_->Start();
}

void ClientConnection::CollectExchange(Collected result) {
  RetireExchange();
  const std::string_view x_cache = result.stored ? "miss" : "pass";
  if (!Deliver(result.object, x_cache)) {
    state_ = State::kReadingHead;
    RespondError(502, "the response could not be decoded");
  }
}

void ClientConnection::ServeLocal() {
  route_ = Route::kLocal;
  cache_status_ = "local";
  const bool keep = request_.body == http::BodyKind::kNone && request_.keep_alive;
  if (request_.method != "GET" && request_.method != "HEAD") {
    Respond(405, "text/plain; charset=utf-8",
            "405 Method Not Allowed: only GET and HEAD are served here\n", keep,
            "Allow: GET, HEAD\r\n");
  } else if (PathOf(request_.target) == "/" && !runtime_->site) {
    Respond(200, "text/html; charset=utf-8", runtime_->builtin_page, keep);
  } else if (runtime_->site && PathOf(request_.target) == runtime_->config->css) {
    // No forge behind: the pages' css= and logo= paths get shellac's own.
    Respond(200, "text/css; charset=utf-8", kStylesheet, keep, "Cache-Control: max-age=3600\r\n");
  } else if (runtime_->site && PathOf(request_.target) == runtime_->config->logo) {
    Respond(200, "image/svg+xml", kLogo, keep, "Cache-Control: max-age=3600\r\n");
  } else if (runtime_->site) {
    Respond(404, "text/plain; charset=utf-8",
            std::string("404 Not Found: shellac renders ") + gitfrag::kRenderedPages +
                "; this page (blame, a path-limited patch or rawdiff, a page through a Lua "
                "filter, a tar.lz/tar.zst snapshot or its signature, ...) is served by the forge, "
                "and no backend is configured (see shellac.conf(5), backend=)\n",
            keep);
  } else {
    Respond(404, "text/plain; charset=utf-8",
            "404 Not Found: no backend is configured, so only / is served (see shellac.conf(5), "
            "backend=)\n",
            keep);
  }
}

void ClientConnection::ServeAdmin() {
  route_ = Route::kAdmin;
  cache_status_ = "local";
  const bool keep = request_.body == http::BodyKind::kNone && request_.keep_alive;
  const std::string_view path = PathOf(request_.target);
  if (path == "/purge" || path == "/ban") {
    ServeInvalidation(path == "/ban", keep);
  } else if (path == "/render-pause" || path == "/render-resume") {
    ServeRenderPause(path == "/render-pause", keep);
  } else if (path.starts_with("/warm/")) {
    ServeWarm(path, keep);
  } else if (request_.method != "GET" && request_.method != "HEAD") {
    Respond(405, "text/plain; charset=utf-8", "405 Method Not Allowed: admin endpoints take GET\n",
            keep, "Allow: GET, HEAD\r\n");
  } else if (path == "/health") {
    if (worker_.shared().global.draining.load()) {
      Respond(503, "text/plain; charset=utf-8", "draining\n", keep);
    } else {
      Respond(200, "text/plain; charset=utf-8", "ok\n", keep);
    }
  } else if (path == "/metrics") {
    Respond(200, "text/plain; version=0.0.4; charset=utf-8", worker_.shared().RenderMetrics(),
            keep);
  } else if (path == "/") {
    Respond(200, "text/html; charset=utf-8", StatusPage(), keep, "Cache-Control: no-store\r\n");
  } else if (path == "/status.json" && worker_.shared().status) {
    const auto q = request_.target.find('?');
    const auto since = QueryParameter(
        q == std::string::npos ? std::string_view() : std::string_view(request_.target).substr(q + 1),
        "since");
    Respond(200, "application/json", worker_.shared().status->Json(since ? std::atoll(since->c_str()) : 0),
            keep, "Cache-Control: no-store\r\n");
  } else {
    Respond(404, "text/plain; charset=utf-8",
            "404 Not Found: admin endpoints are /, /status.json, /health, /metrics, /purge, /ban, "
            "/warm/, /render-pause and /render-resume\n",
            keep);
  }
}

// /warm/repos, /warm/commits, /warm/render: see warm.h.
void ClientConnection::ServeWarm(std::string_view path, bool keep) {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  const bool render = path == "/warm/render";
  if (!render && path != "/warm/repos" && path != "/warm/commits") {
    Respond(404, kText, "404 Not Found: warm endpoints are /warm/repos, /warm/commits and /warm/render\n",
            keep);
    return;
  }
  if (request_.method != (render ? "POST" : "GET")) {
    Respond(405, kText, render ? "405 Method Not Allowed: use POST\n" : "405 Method Not Allowed: use GET\n",
            keep, render ? "Allow: POST\r\n" : "Allow: GET\r\n");
    return;
  }
  const auto q = request_.target.find('?');
  const std::string_view query =
      q == std::string::npos ? std::string_view() : std::string_view(request_.target).substr(q + 1);
  WarmRequest warm;
  warm.repo = QueryParameter(query, "repo").value_or("");
  warm.id = QueryParameter(query, "id").value_or("");
  warm.since = std::atoll(QueryParameter(query, "since").value_or("0").c_str());
  warm.limit = static_cast<size_t>(std::atoll(QueryParameter(query, "limit").value_or("0").c_str()));
  warm.all_refs = QueryParameter(query, "all-refs").value_or("0") == "1";
  auto answer = [this, keep](WarmAnswer a) {
    if (state_ != State::kWaiting) return;
    state_ = State::kBusy;
    Respond(a.status, "text/plain; charset=utf-8", a.body, keep && a.status < 500);
  };
  if (path == "/warm/repos") {
    state_ = State::kWaiting;
    WarmRepositories(*runtime_, answer);
    return;
  }
  if (warm.repo.empty()) {
    Respond(400, kText, "400 Bad Request: ?repo=URL is needed\n", false);
    return;
  }
  state_ = State::kWaiting;  // as for a render: the client's EOF is noticed, not acted on
  std::weak_ptr<int> alive = alive_;
  if (render)
    WarmRender(worker_, runtime_, warm, alive, answer);
  else
    WarmCommits(worker_, runtime_, warm, alive, answer);
}

// POST (or PURGE/BAN) /purge?key=KEY, /purge?url=TARGET (the key made by the cache-key rules for
// TARGET on this request's Host), /ban?prefix=PREFIX (every key starting with it).
void ClientConnection::ServeInvalidation(bool ban, bool keep) {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  if (request_.method != "POST" && request_.method != "PURGE" && request_.method != "BAN") {
    Respond(405, kText, "405 Method Not Allowed: use POST\n", keep, "Allow: POST, PURGE, BAN\r\n");
    return;
  }
  const auto q = request_.target.find('?');
  const std::string_view query =
      q == std::string::npos ? std::string_view() : std::string_view(request_.target).substr(q + 1);
  cache::Store& store = *worker_.shared().store;
  if (ban) {
    const auto prefix = QueryParameter(query, "prefix");
    if (!prefix || prefix->empty()) {
      Respond(400, kText, "400 Bad Request: /ban needs ?prefix=KEY-PREFIX\n", false);
      return;
    }
    Respond(200, kText, "banned " + std::to_string(store.Ban(*prefix)) + "\n", keep);
    return;
  }
  std::string key;
  if (auto k = QueryParameter(query, "key")) {
    key = *k;
  } else if (auto url = QueryParameter(query, "url"); url && url->starts_with("/")) {
    runtime_->key_rules->MakeKey(request_.host, *url, &key);
  } else {
    Respond(400, kText,
            "400 Bad Request: /purge needs ?key=KEY or ?url=/PATH (with the site's Host)\n", false);
    return;
  }
  Respond(200, kText, std::string(store.Purge(key) ? "purged " : "not stored ") + key + "\n", keep);
}

// POST /render-pause?class=CLASS, /render-resume?class=CLASS (frame, part, background or all):
// renders of that class wait in the queue (deadlines still running) until resumed.
void ClientConnection::ServeRenderPause(bool pause, bool keep) {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  if (request_.method != "POST") {
    Respond(405, kText, "405 Method Not Allowed: use POST\n", keep, "Allow: POST\r\n");
    return;
  }
  gitfrag::RenderPool* pool = worker_.shared().render_pool.get();
  if (pool == nullptr) {
    Respond(404, kText, "404 Not Found: no repositories are configured, so nothing renders\n",
            keep);
    return;
  }
  const auto q = request_.target.find('?');
  const std::string_view query =
      q == std::string::npos ? std::string_view() : std::string_view(request_.target).substr(q + 1);
  const std::string which = QueryParameter(query, "class").value_or("");
  bool any = false;
  for (size_t i = 0; i < gitfrag::kRenderClasses; ++i) {
    const auto cls = static_cast<gitfrag::RenderClass>(i);
    if (which == "all" || which == gitfrag::RenderClassName(cls)) {
      pool->Pause(cls, pause);
      any = true;
    }
  }
  if (!any) {
    Respond(400, kText, "400 Bad Request: ?class= must be frame, part, background or all\n", false);
    return;
  }
  Respond(200, kText, std::string(pause ? "paused " : "resumed ") + which + "\n", keep);
}

void ClientConnection::Respond(int status, std::string_view content_type, std::string_view body,
                               bool keep_alive, std::string_view extra_headers) {
  keep_alive = keep_alive && !close_after_response_ && !worker_.draining();
  std::string head;
  head.reserve(256);
  head.append("HTTP/1.1 ").append(std::to_string(status)).push_back(' ');
  head.append(http::ReasonPhrase(status)).append("\r\nServer: shellac\r\nDate: ");
  head.append(worker_.HttpDate()).append("\r\nContent-Type: ").append(content_type);
  head.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  head.append("\r\nVia: 1.1 shellac\r\n").append(extra_headers).append(Hsts());
  if (!keep_alive)
    head.append("Connection: close\r\n");
  else if (request_.minor_version == 0)
    head.append("Connection: keep-alive\r\n");
  head.append("\r\n");
  evbuffer_add(output(), head.data(), head.size());
  if (request_.method != "HEAD") {
    evbuffer_add(output(), body.data(), body.size());
    body_bytes_ = body.size();
  }
  Flush();
  FinishRequest(status, keep_alive);
}

void ClientConnection::RespondError(int status, std::string_view detail) {
  if (worker_.metrics().CountReject(status)) {
    cache_status_ = "local";  // refused by shellac itself, nothing was forwarded
  }
  std::string body = std::to_string(status);
  body.append(" ").append(http::ReasonPhrase(status)).append(": ").append(detail).append("\n");
  // After a refused or failed request the rest of the input cannot be trusted to be in step.
  Respond(status, "text/plain; charset=utf-8", body, /*keep_alive=*/false);
}

void ClientConnection::FinishExchange(int status, bool keep_alive) {
  RetireExchange();
  Flush();
  FinishRequest(status, keep_alive && !close_after_response_ && !worker_.draining());
}

void ClientConnection::FailExchange(int status, const std::string& detail) {
  RetireExchange();
  state_ = State::kReadingHead;
  RespondError(status, detail);
}

void ClientConnection::AbortExchange() {
  RetireExchange();
  FinishRequest(502, false);
  CloseSoon();
}

void ClientConnection::RetireExchange() {
  if (exchange_) retired_.push_back(std::move(exchange_));
  if (esi_) retired_esi_.push_back(std::move(esi_));
  if (stream_) retired_streams_.push_back(std::move(stream_));
  NotifyWhenDrained(0);
}

void ClientConnection::FreeRetired() {
  retired_esi_
      .clear();  // first: an ESI response's include fetches may use retired exchanges' state
  retired_.clear();
  retired_streams_.clear();
}

void ClientConnection::FinishRequest(int status, bool keep_alive) {
  rendering_ = false;
  const auto now = std::chrono::steady_clock::now();
  worker_.metrics().CountRequest(route_, status);
  worker_.metrics().CountOutcome(route_, cache_status_);
  if (in_request_) {
    in_request_ = false;
    WorkerMetrics::Add(worker_.metrics().in_flight, -1);
  }
  const Runtime& runtime = *runtime_;
  if (runtime.access_log) {
    const http::Header* referer = request_.Find("referer");
    const http::Header* agent = request_.Find("user-agent");
    AccessEntry entry;
    entry.client_ip = peer_ip_;
    entry.method = request_.method;
    entry.target = request_.target;
    entry.minor_version = request_.minor_version;
    entry.status = status;
    entry.body_bytes = body_bytes_;
    entry.referer = referer ? std::string_view(referer->value) : std::string_view();
    entry.user_agent = agent ? std::string_view(agent->value) : std::string_view();
    entry.micros = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(now - started_).count());
    entry.cache = cache_status_;
    worker_.access_log().Append(runtime.access_log, entry, time(nullptr));
  }
  route_ = site_ == Site::kAdmin ? Route::kAdmin : Route::kProxy;
  cache_status_ = "pass";
  AfterResponse(keep_alive);
}

void ClientConnection::AfterResponse(bool keep_alive) {
  if (!keep_alive || close_after_response_) {
    CloseWhenFlushed();
    return;
  }
  ++served_;
  state_ = State::kReadingHead;
  ApplyIoTimeouts(false);
  SetReading(true);
  head_timer_is_idle_ = true;
  ArmHeadTimer(runtime_->config->client_idle_timeout);
  if (evbuffer_get_length(input()) > 0) ResumeSoon();  // a pipelined request is waiting
}

void ClientConnection::CloseWhenFlushed() {
  if (state_ == State::kClosing || state_ == State::kLingering) return;
  state_ = State::kClosing;
  evtimer_del(head_timer_.get());
  bufferevent_disable(bev_.get(), EV_READ);
  NotifyWhenDrained(0);
  Flush();
  if (evbuffer_get_length(output()) == 0) StartLingering();
}

void ClientConnection::StartLingering() {
  state_ = State::kLingering;
  if (tls_) SendCloseNotify(bev_.get());
  shutdown(bufferevent_getfd(bev_.get()), SHUT_WR);
  bufferevent_set_timeouts(bev_.get(), &kLingerTime, nullptr);
  bufferevent_enable(bev_.get(), EV_READ);
}

}  // namespace shellac::proxy

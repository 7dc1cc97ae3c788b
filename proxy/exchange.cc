#include "proxy/exchange.h"

#include <event2/buffer.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/text.h"
#include "cache/cache.h"
#include "esi/esi.h"
#include "proxy/page_object.h"
#include "proxy/rules.h"
#include "proxy/tls.h"
#include "proxy/worker.h"

namespace shellac::proxy {
namespace {

// Bytes queued towards a peer beyond which the other side stops being read (backpressure), and the
// level at which reading resumes.
constexpr size_t kStreamWindow = 256 << 10;
constexpr size_t kLowWater = 64 << 10;
// How much more to read at once after a read stopped at libevent's cap (a typical page's rest).
constexpr size_t kReadMoreBytes = 60 << 10;
// How long a key whose response could not be stored skips single-flight (Varnish: hit-for-miss).
constexpr std::chrono::seconds kPassMemo{120};
// A collected response (an ESI page or an include) is held whole in memory: at most this many
// bytes, before and after decoding.
constexpr size_t kMaxCollectBytes = 32 << 20;
// Parse problems logged per page (all are counted).
constexpr size_t kMaxProblemsLogged = 4;

using http::BodyKind;
using base::EqualsIgnoreCase;

void AppendHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name).append(": ").append(value).append("\r\n");
}

// Moves `n` bytes from `from` to `to`, framed as one chunk when `chunked`.
void MoveBody(evbuffer* from, evbuffer* to, size_t n, bool chunked) {
  if (chunked) evbuffer_add_printf(to, "%zx\r\n", n);
  evbuffer_remove_buffer(from, to, n);
  if (chunked) evbuffer_add(to, "\r\n", 2);
}

std::string Millis(conf::Millis ms) {
  return std::to_string(ms.count()) + " ms";
}

// Response headers that describe this transfer or this hop, not the stored representation.
bool IsTransient(std::string_view name) {
  for (std::string_view t : {"content-length", "date", "age", "etag", "set-cookie", "via",
                             "x-cache", "surrogate-control"}) {
    if (EqualsIgnoreCase(name, t)) return true;
  }
  return false;
}

// Request headers a cache fill does not forward: the fill needs the whole identity body, whatever
// this one client would have accepted (a full 200 is a valid answer to each of them).
bool IsFillExcluded(std::string_view name) {
  for (std::string_view t : {"if-none-match", "if-modified-since", "if-match",
                             "if-unmodified-since", "if-range", "range", "accept-encoding"}) {
    if (EqualsIgnoreCase(name, t)) return true;
  }
  return false;
}

}  // namespace

struct ProxyExchange::Fill {
  std::string key;
  bool capturing = false;
  bool completed = false;
  cache::SegmentEncoder encoder;
  cache::FreshnessDecision decision;
  std::chrono::sys_seconds now{};
};

ProxyExchange::ProxyExchange(StreamingClient& client, std::shared_ptr<const Runtime> runtime,
                             http::RequestHead& request, std::string fill_key)
    : client_(client),
      stream_(&client),
      worker_(client.worker()),
      runtime_(std::move(runtime)),
      config_(*runtime_->config),
      request_(request),
      scratch_(evbuffer_new()) {
  body_done_ = request_.body == BodyKind::kNone;
  body_remaining_ = request_.content_length;
  if (!fill_key.empty()) {
    fill_ = std::make_unique<Fill>();
    fill_->key = std::move(fill_key);
  }
}

ProxyExchange::ProxyExchange(ExchangeClient& client, std::shared_ptr<const Runtime> runtime,
                             http::RequestHead& request, std::string fill_key, Collect how)
    : client_(client),
      worker_(client.worker()),
      runtime_(std::move(runtime)),
      config_(*runtime_->config),
      request_(request),
      scratch_(evbuffer_new()),
      collect_(how == Collect::kWhole) {
  body_done_ = true;  // `request` has no body: nobody would send one
  if (how == Collect::kStoreOnly) sink_.reset(evbuffer_new());
  if (!fill_key.empty()) {
    fill_ = std::make_unique<Fill>();
    fill_->key = std::move(fill_key);
  }
}

void ProxyExchange::FlushOutput() {
  if (stream_)
    stream_->Flush();
  else if (sink_)
    evbuffer_drain(sink_.get(), evbuffer_get_length(sink_.get()));
}

void ProxyExchange::Failed(int status, const std::string& detail) {
  if (stream_ && response_started_)
    stream_->AbortExchange();
  else
    client_.FailExchange(status, detail);
}

ProxyExchange::~ProxyExchange() {
  // The client went away mid-fetch: the waiters try for themselves.
  CompleteFill(FillResult{FillResult::kAbandoned, {}, 0, {}});
}

void ProxyExchange::CompleteFill(FillResult result) {
  if (!fill_ || fill_->completed) return;
  fill_->completed = true;
  worker_.shared().flights.Complete(fill_->key, result);
}

bool ProxyExchange::WantsEsi() const {
  if (config_.esi == conf::Config::EsiMode::kOff || response_.body == BodyKind::kNone ||
      response_.status == 206) {
    return false;
  }
  if (config_.esi == conf::Config::EsiMode::kAlways ||
      runtime_->esi_rules->MatchesUrl(request_.target)) {
    return true;
  }
  for (const auto& h : response_.headers) {
    if (EqualsIgnoreCase(h.name, "surrogate-control") && cache::SurrogateControlWantsEsi(h.value))
      return true;
  }
  return false;
}

void ProxyExchange::StartCapture() {
  esi_ = WantsEsi();
  collecting_ = collect_ || esi_;
  const http::Header* encoding = nullptr;
  for (const auto& h : response_.headers) {
    if (EqualsIgnoreCase(h.name, "content-encoding")) encoding = &h;
  }
  const bool identity = encoding == nullptr || EqualsIgnoreCase(encoding->value, "identity");
  if (fill_) {
    Fill& f = *fill_;
    f.now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
    std::vector<cache::Header> views;
    views.reserve(response_.headers.size());
    for (const auto& h : response_.headers) views.push_back(cache::Header{h.name, h.value});
    const cache::FreshnessPolicy policy{
        std::chrono::duration_cast<std::chrono::seconds>(config_.default_ttl),
        std::chrono::duration_cast<std::chrono::seconds>(config_.grace),
        runtime_->ttl_rules->ForcesStore(request_.target)};
    f.decision = cache::DecideFreshness(response_.status, views, f.now, policy);
    if (const auto ttl = runtime_->ttl_rules->Match(request_.target); ttl && f.decision.storable) {
      f.decision.ttl = *ttl;
      f.decision.storable = ttl->count() > 0;
    }
    // The store keeps bodies as its own deflate: a gzip or deflate coded one is collected whole and
    // decoded (FinishCollect); the client is then answered from the stored object.
    const bool decodable = encoding != nullptr && (EqualsIgnoreCase(encoding->value, "gzip") ||
                                                   EqualsIgnoreCase(encoding->value, "x-gzip") ||
                                                   EqualsIgnoreCase(encoding->value, "deflate"));
    if (f.decision.storable && decodable) collecting_ = true;
    const size_t limit = worker_.shared().store->max_object_bytes();
    // A collected response is compressed once it is whole (FinishCollect), not as it passes.
    f.capturing = f.decision.storable && identity && !collecting_ &&
                  !(response_.body == BodyKind::kLength && response_.content_length > limit);
  }
  if (collecting_) collected_.reset(evbuffer_new());
  if (!collecting_ && !(fill_ && fill_->capturing)) return;
  const auto tokens = http::ConnectionTokens(response_.headers);
  for (const auto& h : response_.headers) {
    if (http::IsHopByHop(h.name, tokens) || IsTransient(h.name) ||
        EqualsIgnoreCase(h.name, "content-encoding")) {
      continue;
    }
    kept_headers_.push_back(cache::Header{h.name, h.value});
  }
}

void ProxyExchange::Capture(evbuffer* from, size_t n) {
  if (!fill_ || !fill_->capturing || n == 0) return;
  Fill& f = *fill_;
  evbuffer_iovec vec[16];
  evbuffer_ptr at;
  evbuffer_ptr_set(from, &at, 0, EVBUFFER_PTR_SET);
  size_t left = n;
  while (left > 0) {
    const int count = evbuffer_peek(from, static_cast<ev_ssize_t>(left), &at, vec, 16);
    if (count <= 0) break;
    for (int i = 0; i < count && left > 0; ++i) {
      const size_t take = std::min(vec[i].iov_len, left);
      if (!f.encoder.Write(std::string_view(static_cast<const char*>(vec[i].iov_base), take))
               .ok()) {
        f.capturing = false;
        return;
      }
      left -= take;
    }
    if (left > 0) evbuffer_ptr_set(from, &at, n - left, EVBUFFER_PTR_SET);
  }
  // Larger than the store would take: stop paying for compression (the client still gets it all).
  if (f.encoder.bytes_out() > worker_.shared().store->max_object_bytes()) f.capturing = false;
}

cache::ObjectRef ProxyExchange::StoreFill() {
  if (!fill_) return {};
  Fill& f = *fill_;
  FillResult result{FillResult::kNotStorable, {}, 0, {}};
  if (f.capturing && f.encoder.Finish().ok()) {
    const std::vector<cache::Segment> segments = f.encoder.TakeSegments();
    std::vector<cache::SegmentView> body;
    body.reserve(segments.size());
    for (const auto& segment : segments) body.push_back(segment.view());
    cache::ObjectSpec spec;
    spec.status = response_.status;
    spec.headers = kept_headers_;
    spec.stored_at = f.now;
    spec.ttl = f.decision.ttl;
    spec.grace = f.decision.grace;
    spec.body = body;
    cache::Status status;
    cache::ObjectRef object = cache::Object::Create(f.key, spec, &status);
    if (object && worker_.shared().store->Insert(object).ok()) {
      result = FillResult{FillResult::kStored, std::move(object), 0, {}};
    }
  }
  if (result.kind == FillResult::kNotStorable) {
    worker_.shared().flights.MarkPass(f.key, std::chrono::steady_clock::now() + kPassMemo);
  }
  cache::ObjectRef stored = result.object;
  CompleteFill(std::move(result));
  return stored;
}

void ProxyExchange::FinishCollect() {
  std::string body(evbuffer_get_length(collected_.get()), '\0');
  evbuffer_remove(collected_.get(), body.data(), body.size());
  for (const auto& h : response_.headers) {
    if (!EqualsIgnoreCase(h.name, "content-encoding") || EqualsIgnoreCase(h.value, "identity"))
      continue;
    std::string why;
    if (!DecodeContent(base::TrimOws(h.value), kMaxCollectBytes, &body, &why)) {
      UpstreamFailed(UpstreamError::kInvalid, 502, why);
      return;
    }
  }
  WorkerMetrics& metrics = worker_.metrics();
  std::shared_ptr<const esi::Template> page;
  if (esi_) {
    auto parsed = std::make_shared<esi::Template>(esi::ParseTemplate(body));
    WorkerMetrics::Add(metrics.esi_parse_errors, parsed->error_count());
    WorkerMetrics::Add(metrics.esi_parse_warnings, parsed->warning_count());
    // Logged like Varnish's ESI_xmlerror records: where, and what.
    const auto problems = parsed->problems();
    for (size_t i = 0; i < problems.size() && i < kMaxProblemsLogged; ++i) {
      std::fprintf(stderr, "shellac: esi: %s%s: byte %llu: %s\n", request_.host.c_str(),
                   request_.target.c_str(), static_cast<unsigned long long>(problems[i].offset),
                   esi::ProblemName(problems[i].kind));
    }
    if (const uint32_t all = parsed->error_count() + parsed->warning_count();
        all > kMaxProblemsLogged) {
      std::fprintf(stderr, "shellac: esi: %s%s: %u more problems\n", request_.host.c_str(),
                   request_.target.c_str(), static_cast<unsigned>(all - kMaxProblemsLogged));
    }
    if (parsed->esi()) page = std::move(parsed);  // no ESI found: delivered exactly as received
  }
  const bool storable = fill_ && fill_->decision.storable;
  PageSpec spec;
  spec.status = response_.status;
  spec.headers = kept_headers_;
  spec.stored_at =
      fill_ ? fill_->now
            : std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  if (storable) {
    spec.ttl = fill_->decision.ttl;
    spec.grace = fill_->decision.grace;
  }
  spec.esi_template = page;
  spec.level = storable ? 6 : 1;  // a page made for this request alone is compressed fast
  cache::Status status;
  cache::ObjectRef object =
      MakePageObject(fill_ ? std::string_view(fill_->key) : std::string_view(request_.target), body,
                     spec, &status);
  if (!object) {
    UpstreamFailed(UpstreamError::kInvalid, 502, "response cannot be kept: " + status.message());
    return;
  }
  bool stored = false;
  if (storable && worker_.shared().store->Insert(object).ok()) {
    stored = true;
    CompleteFill(FillResult{FillResult::kStored, object, 0, {}});
  } else if (fill_) {
    worker_.shared().flights.MarkPass(fill_->key, std::chrono::steady_clock::now() + kPassMemo);
    CompleteFill(FillResult{FillResult::kNotStorable, {}, 0, {}});
  }
  ReleaseUpstream();
  client_.CollectExchange(Collected{std::move(object), stored});
}

void ProxyExchange::Start() {
  upstream_head_ = BuildUpstreamHead();
  if (request_.expect_continue && stream_) {  // the others send no body
    evbuffer_add(stream_->output(), "HTTP/1.1 100 Continue\r\n\r\n", 25);
    stream_->Flush();
  }
  Connect(/*fresh=*/false);
}

std::string ProxyExchange::BuildUpstreamHead() const {
  std::string h;
  h.reserve(1024);
  h.append(request_.method).push_back(' ');
  h.append(request_.target).append(" HTTP/1.1\r\n");
  const auto tokens = http::ConnectionTokens(request_.headers);
  std::string forwarded_for;
  for (const auto& header : request_.headers) {
    const std::string_view name = header.name;
    if (http::IsHopByHop(name, tokens) || EqualsIgnoreCase(name, "content-length") ||
        EqualsIgnoreCase(name, "expect") || EqualsIgnoreCase(name, "host") ||
        EqualsIgnoreCase(name, "x-forwarded-proto") ||
        ((fill_ || collect_) && IsFillExcluded(name))) {
      continue;
    }
    if (EqualsIgnoreCase(name, "surrogate-capability"))
      continue;  // only shellac's own goes upstream
    if (EqualsIgnoreCase(name, "x-forwarded-for")) {
      if (!forwarded_for.empty()) forwarded_for.append(", ");
      forwarded_for.append(header.value);
      continue;
    }
    AppendHeader(&h, name, header.value);
  }
  // HTTP/1.1 needs a Host; an HTTP/1.0 client may not have sent one. An include's Host is what its
  // URL says, empty for "http:///path" as Varnish sends it.
  AppendHeader(&h, "Host",
               request_.host.empty() && !collect_ ? config_.backend->text : request_.host);
  if (!forwarded_for.empty()) forwarded_for.append(", ");
  forwarded_for.append(client_.peer_ip());
  AppendHeader(&h, "X-Forwarded-For", forwarded_for);
  AppendHeader(&h, "X-Forwarded-Proto", client_.secure() ? "https" : "http");
  AppendHeader(&h, "Via", request_.minor_version == 0 ? "1.0 shellac" : "1.1 shellac");
  // The store compresses by itself, and an include is parsed as it comes.
  if (fill_ || collect_) AppendHeader(&h, "Accept-Encoding", "identity");
  if (config_.esi != conf::Config::EsiMode::kOff)
    AppendHeader(&h, "Surrogate-Capability", "shellac=\"ESI/1.0\"");
  if (request_.body == BodyKind::kLength) {
    AppendHeader(&h, "Content-Length", std::to_string(request_.content_length));
  } else if (request_.body == BodyKind::kChunked) {
    AppendHeader(&h, "Transfer-Encoding", "chunked");
  } else if (request_.Find("content-length") != nullptr) {
    AppendHeader(&h, "Content-Length", "0");
  }
  h.append("\r\n");
  return h;
}

void ProxyExchange::Connect(bool fresh) {
  const conf::SocketAddress& address = *config_.backend;
  upstream_ = fresh ? nullptr : worker_.upstreams().TakeIdle(address);
  reused_ = upstream_ != nullptr;
  if (reused_) {
    WorkerMetrics::Add(worker_.metrics().upstream_reused);
  } else {
    std::string error;
    upstream_ = worker_.upstreams().Connect(address, &error, runtime_->tls.get());
    if (!upstream_) {
      UpstreamFailed(UpstreamError::kRefused, 502, error);
      return;
    }
    WorkerMetrics::Add(worker_.metrics().upstream_opened);
  }
  connected_ = reused_;
  bufferevent* up = upstream_.get();
  bufferevent_setcb(up, OnUpstreamRead, OnUpstreamWrite, OnUpstreamEvent, this);
  bufferevent_setwatermark(up, EV_READ, 0, kStreamWindow);
  const timeval connect_tv = ToTimeval(config_.upstream_connect_timeout);
  // A TLS handshake spends most of its time waiting to read: the connect timeout covers that too.
  bufferevent_set_timeouts(up, IsTls(up) ? &connect_tv : nullptr, &connect_tv);
  // Queued now (libevent sends it once the connection is up), except for a chunked body: its head
  // waits until the first chunk-size line parses, so a malformed body forwards nothing at all.
  if (request_.body != BodyKind::kChunked) QueueHead();
  // A new connection needs EV_WRITE to learn that connect() completed; a reused one writes at once.
  bufferevent_enable(up, connected_ ? EV_READ : EV_READ | EV_WRITE);
  if (connected_) OnConnected();
}

void ProxyExchange::QueueHead() {
  evbuffer_add(bufferevent_get_output(upstream_.get()), upstream_head_.data(),
               upstream_head_.size());
  head_queued_ = true;
  sent_at_ = std::chrono::steady_clock::now();
}

void ProxyExchange::OnConnected() {
  connected_ = true;
  const timeval first_byte = ToTimeval(config_.upstream_first_byte_timeout);
  const timeval between = ToTimeval(config_.upstream_between_bytes_timeout);
  bufferevent_set_timeouts(upstream_.get(), &first_byte, &between);
  PumpRequestBody();
}

bool ProxyExchange::CanRetry() const {
  // A kept-alive connection can be closed by the origin just as we reuse it. Resending is safe
  // only when nothing came back and no body bytes were consumed from the client.
  return reused_ && !retried_ && !upstream_got_bytes_ && request_.body == BodyKind::kNone;
}

void ProxyExchange::OnUpstreamEvent(bufferevent* bev, short what, void* arg) {
  auto* self = static_cast<ProxyExchange*>(arg);
  if (what & BEV_EVENT_CONNECTED) {
    self->OnConnected();
    return;
  }
  if (what & BEV_EVENT_TIMEOUT) {
    if (!self->connected_) {
      self->UpstreamFailed(
          UpstreamError::kTimeout, 504,
          "connect timed out after " + Millis(self->config_.upstream_connect_timeout));
    } else if (!self->head_received_ && (what & BEV_EVENT_READING)) {
      self->UpstreamFailed(
          UpstreamError::kTimeout, 504,
          "no response within " + Millis(self->config_.upstream_first_byte_timeout));
    } else {
      self->UpstreamFailed(UpstreamError::kTimeout, 504,
                           "stalled for " + Millis(self->config_.upstream_between_bytes_timeout));
    }
    return;
  }
  if (what & BEV_EVENT_EOF) {
    if (self->head_received_ && self->response_.body == BodyKind::kUntilClose) {
      self->upstream_eof_ = true;
      self->PumpResponse();
      return;
    }
    if (self->CanRetry()) {
      self->Retry();
      return;
    }
    self->UpstreamFailed(UpstreamError::kReset, 502,
                         self->head_received_ ? "closed the connection in the middle of the body"
                                              : "closed the connection without answering");
    return;
  }
  if (what & BEV_EVENT_ERROR) {
    const int error = EVUTIL_SOCKET_ERROR();
    if (!self->connected_) {
      // A refused TLS handshake (an untrusted or misnamed certificate) says which check failed.
      const std::string tls = UpstreamTlsFailure(bev);
      self->UpstreamFailed(UpstreamError::kRefused, 502,
                           tls.empty() ? std::string("connect: ") + std::strerror(error) : tls);
    } else if (self->CanRetry()) {
      self->Retry();
    } else {
      self->UpstreamFailed(UpstreamError::kReset, 502, std::strerror(error));
    }
  }
}

void ProxyExchange::Retry() {
  retried_ = true;
  upstream_.reset();
  WorkerMetrics::Add(worker_.metrics().upstream_retried);
  Connect(/*fresh=*/true);
}

void ProxyExchange::UpstreamFailed(UpstreamError kind, int status, const std::string& detail) {
  worker_.metrics().CountUpstreamError(kind);
  upstream_.reset();
  CompleteFill(FillResult{
      FillResult::kFailed, {}, status, "upstream " + config_.backend->text + ": " + detail});
  Failed(status, "upstream " + config_.backend->text + ": " + detail);
}

void ProxyExchange::OnClientReadable() {
  PumpRequestBody();
}

void ProxyExchange::OnUpstreamWrite(bufferevent*, void* arg) {
  static_cast<ProxyExchange*>(arg)->PumpRequestBody();
}

void ProxyExchange::PumpRequestBody() {
  if (!upstream_) return;
  if (body_done_) {
    if (connected_) WriteNow(upstream_.get());  // the head, or the body's last bytes
    return;
  }
  // Only a streaming client sends a body (the other constructor drops it).
  evbuffer* in = stream_->input();
  evbuffer* out = bufferevent_get_output(upstream_.get());
  while (!body_done_ && evbuffer_get_length(out) < kStreamWindow) {
    const size_t room = kStreamWindow - evbuffer_get_length(out);
    if (request_.body == BodyKind::kLength) {
      const size_t n = std::min<uint64_t>({evbuffer_get_length(in), body_remaining_, room});
      if (n == 0) break;
      evbuffer_remove_buffer(in, out, n);
      body_remaining_ -= n;
      body_done_ = body_remaining_ == 0;
      continue;
    }
    const auto step = body_decoder_.Decode(in, scratch_.get(), room);
    if (step == http::ChunkedDecoder::Step::kError) {
      // Before the head went out the origin has seen nothing; after, it sees a body cut short.
      upstream_.reset();
      stream_->FailExchange(400, "bad chunked request body: " + body_decoder_.error());
      return;
    }
    if (!head_queued_ && body_decoder_.framing_seen()) QueueHead();
    if (const size_t n = evbuffer_get_length(scratch_.get()); n > 0) {
      MoveBody(scratch_.get(), out, n, /*chunked=*/true);
    }
    if (config_.max_body_size != 0 && body_decoder_.decoded() > config_.max_body_size) {
      upstream_.reset();
      Failed(413, "request body larger than " + std::to_string(config_.max_body_size) + " bytes");
      return;
    }
    if (step == http::ChunkedDecoder::Step::kDone) {
      evbuffer_add(out, "0\r\n\r\n", 5);
      body_done_ = true;
    } else if (step == http::ChunkedDecoder::Step::kNeedMore) {
      break;
    }
  }
  if (connected_) WriteNow(upstream_.get());
  const bool window_full = evbuffer_get_length(out) >= kStreamWindow;
  stream_->SetReading(!window_full);
  // Told through OnUpstreamWrite when the upstream has taken enough to resume.
  bufferevent_setwatermark(upstream_.get(), EV_WRITE, window_full ? kLowWater : 0, 0);
}

void ProxyExchange::OnUpstreamRead(bufferevent* bev, void* arg) {
  // A read that stopped at libevent's 4096-byte cap leaves the rest of a small response waiting.
  if (evbuffer_get_length(bufferevent_get_input(bev)) == 4096) ReadMore(bev, kReadMoreBytes);
  static_cast<ProxyExchange*>(arg)->PumpResponse();
}

void ProxyExchange::OnClientDrained() {
  if (!head_received_ || !upstream_) return;
  bufferevent_enable(upstream_.get(), EV_READ);
  PumpResponse();
}

void ProxyExchange::PumpResponse() {
  evbuffer* in = bufferevent_get_input(upstream_.get());
  if (!head_received_) {
    if (evbuffer_get_length(in) > 0) upstream_got_bytes_ = true;
    for (;;) {
      const http::ParseResult r =
          http::ParseResponseHead(in, config_.max_header_bytes, request_.method, &response_);
      if (r.kind == http::ParseResult::kIncomplete) return;
      if (r.kind == http::ParseResult::kError) {
        UpstreamFailed(UpstreamError::kInvalid, 502, r.detail);
        return;
      }
      if (response_.status >= 200) break;
      if (response_.status == 101) {
        UpstreamFailed(UpstreamError::kInvalid, 502, "switched protocols without being asked");
        return;
      }
      // Other 1xx interim responses are not forwarded.
    }
    head_received_ = true;
    const auto waited = std::chrono::steady_clock::now() - sent_at_;
    worker_.metrics().ObserveFirstByte(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(waited).count()));
    const timeval between = ToTimeval(config_.upstream_between_bytes_timeout);
    bufferevent_set_timeouts(upstream_.get(), &between, &between);
    response_remaining_ = response_.content_length;
    StartCapture();
    if (!collecting_) SendResponseHead();
    if (response_.body == BodyKind::kNone) {
      FinishResponse();
      return;
    }
  }

  // A collected body is read whole (bounded by kMaxCollectBytes); a streamed one as the client
  // takes it.
  evbuffer* out = collecting_ ? collected_.get() : Output();
  const size_t window = collecting_ ? kMaxCollectBytes + 1 : kStreamWindow;
  while (evbuffer_get_length(out) < window) {
    const size_t room = window - evbuffer_get_length(out);
    if (response_.body == BodyKind::kLength) {
      const size_t n = std::min<uint64_t>({evbuffer_get_length(in), response_remaining_, room});
      if (n == 0) break;
      Capture(in, n);
      evbuffer_remove_buffer(in, out, n);
      if (!collecting_ && stream_) stream_->CountBodyBytes(n);
      response_remaining_ -= n;
      if (response_remaining_ == 0) {
        FinishResponse();
        return;
      }
    } else if (response_.body == BodyKind::kChunked) {
      const auto step = response_decoder_.Decode(in, scratch_.get(), room);
      if (step == http::ChunkedDecoder::Step::kError) {
        UpstreamFailed(UpstreamError::kInvalid, 502,
                       "bad chunked body: " + response_decoder_.error());
        return;
      }
      if (const size_t n = evbuffer_get_length(scratch_.get()); n > 0) {
        Capture(scratch_.get(), n);
        MoveBody(scratch_.get(), out, n, client_chunked_);
        if (!collecting_ && stream_) stream_->CountBodyBytes(n);
      }
      if (step == http::ChunkedDecoder::Step::kDone) {
        FinishResponse();
        return;
      }
      if (step == http::ChunkedDecoder::Step::kNeedMore) break;
    } else {  // kUntilClose
      const size_t n = std::min(evbuffer_get_length(in), room);
      if (n == 0) break;
      Capture(in, n);
      MoveBody(in, out, n, client_chunked_);
      if (!collecting_ && stream_) stream_->CountBodyBytes(n);
    }
  }
  if (collecting_ && evbuffer_get_length(out) > kMaxCollectBytes) {
    UpstreamFailed(UpstreamError::kInvalid, 502,
                   "response larger than " + std::to_string(kMaxCollectBytes) +
                       " bytes, too large to process");
    return;
  }
  if (response_.body == BodyKind::kUntilClose && upstream_eof_ && evbuffer_get_length(in) == 0) {
    FinishResponse();
    return;
  }
  if (collecting_) {
    if (!upstream_eof_) bufferevent_enable(upstream_.get(), EV_READ);
    return;
  }
  FlushOutput();
  if (stream_ && evbuffer_get_length(out) >= kStreamWindow) {
    bufferevent_disable(upstream_.get(), EV_READ);
    stream_->NotifyWhenDrained(kLowWater);
  } else if (!upstream_eof_) {
    bufferevent_enable(upstream_.get(), EV_READ);
  }
}

void ProxyExchange::SendResponseHead() {
  std::string h;
  h.reserve(1024);
  h.append("HTTP/1.1 ").append(std::to_string(response_.status)).push_back(' ');
  h.append(response_.reason.empty() ? http::ReasonPhrase(response_.status) : response_.reason)
      .append("\r\n");
  const auto tokens = http::ConnectionTokens(response_.headers);
  const http::Header* content_length = nullptr;
  for (const auto& header : response_.headers) {
    if (EqualsIgnoreCase(header.name, "content-length")) {
      content_length = &header;
      continue;
    }
    if (http::IsHopByHop(header.name, tokens) || EqualsIgnoreCase(header.name, "surrogate-control"))
      continue;
    AppendHeader(&h, header.name, header.value);
  }
  // Reading the rest of a request body the origin did not wait for would cost more than a new
  // connection, so such a connection closes after the response.
  bool keep_alive = request_.keep_alive && body_done_ && !worker_.draining();
  switch (response_.body) {
    case BodyKind::kNone:
      // A HEAD or 304 response tells the length of the body it stands for.
      if (content_length != nullptr && response_.status != 204 && response_.status >= 200) {
        AppendHeader(&h, "Content-Length", std::to_string(response_.content_length));
      }
      break;
    case BodyKind::kLength:
      AppendHeader(&h, "Content-Length", std::to_string(response_.content_length));
      break;
    case BodyKind::kChunked:
    case BodyKind::kUntilClose:
      if (request_.minor_version == 1) {
        AppendHeader(&h, "Transfer-Encoding", "chunked");
        client_chunked_ = true;
      } else {
        keep_alive = false;  // an HTTP/1.0 client learns the end from the close
      }
      break;
  }
  if (!keep_alive) {
    AppendHeader(&h, "Connection", "close");
  } else if (request_.minor_version == 0) {
    AppendHeader(&h, "Connection", "keep-alive");
  }
  AppendHeader(&h, "Via", response_.minor_version == 0 ? "1.0 shellac" : "1.1 shellac");
  AppendHeader(&h, "X-Cache", fill_ ? "miss" : "pass");
  if (client_.secure() && !config_.hsts.empty())
    AppendHeader(&h, "Strict-Transport-Security", config_.hsts);
  h.append("\r\n");
  client_keep_alive_ = keep_alive;
  evbuffer_add(Output(), h.data(), h.size());
  response_started_ = true;
}

void ProxyExchange::ReleaseUpstream() {
  const bool reusable = response_.keep_alive && response_.body != BodyKind::kUntilClose &&
                        body_done_ && !upstream_eof_ &&
                        evbuffer_get_length(bufferevent_get_input(upstream_.get())) == 0;
  if (reusable) {
    worker_.upstreams().PutIdle(*config_.backend, std::move(upstream_), config_.upstream_max_idle,
                                config_.upstream_idle_timeout);
  } else {
    upstream_.reset();
  }
}

void ProxyExchange::FinishResponse() {
  if (collecting_) {
    FinishCollect();
    return;
  }
  if (client_chunked_) evbuffer_add(Output(), "0\r\n\r\n", 5);
  cache::ObjectRef stored = StoreFill();
  ReleaseUpstream();
  if (stream_) {
    stream_->FinishExchange(response_.status, client_keep_alive_ && body_done_);
  } else {
    FlushOutput();
    const bool kept = static_cast<bool>(stored);
    client_.CollectExchange(Collected{std::move(stored), kept});
  }
}

}  // namespace shellac::proxy

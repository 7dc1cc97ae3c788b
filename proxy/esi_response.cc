#include "proxy/esi_response.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <span>

#include "base/text.h"
#include "cache/cache.h"
#include "proxy/background.h"
#include "proxy/deliver.h"
#include "proxy/lookup.h"
#include "proxy/page_object.h"
#include "proxy/resident.h"
#include "proxy/rules.h"
#include "proxy/worker.h"

namespace shellac::proxy {
namespace {

// Output held (pending plus the client's buffer) before the page waits for the client to read.
constexpr size_t kWindow = 256 << 10;
constexpr size_t kLowWater = 64 << 10;

using base::EqualsIgnoreCase;

// Headers of the page object that do not describe the assembled response.
bool IsTemplateOnly(std::string_view name) {
  for (std::string_view t : {"etag", "last-modified", "vary", "age", "date", "content-length",
                             "content-encoding", "accept-ranges", "surrogate-control"}) {
    if (EqualsIgnoreCase(name, t)) return true;
  }
  return false;
}

}  // namespace

// One include: from the store, behind another request's fetch of the same key, or from the
// upstream (collected whole, stored when HTTP allows).
class IncludeFetch : public ExchangeClient, private LookupClient {
 public:
  IncludeFetch(EsiResponse& page, const esi::Fetch& fetch) : page_(page), fetch_(fetch) {}
  ~IncludeFetch() override = default;

  void Start() { Lookup(); }

  Worker& worker() override { return page_.worker(); }
  const std::string& peer_ip() const override { return page_.peer_ip(); }
  bool secure() const override {
    return page_.secure();
  }  // includes go upstream as the page came in
  void CollectExchange(Collected result) override { Done(std::move(result.object), "no response"); }
  void FailExchange(int, const std::string& detail) override { Done({}, detail); }

 private:
  void Lookup() {
    const Runtime& runtime = *page_.runtime();
    const conf::Config& config = *runtime.config;
    const http::RequestHead& parent = page_.request();
    // A resident page (a frame's diff fragment) is rendered here, under its repository-neutral key,
    // whatever the include's host: no HTTP round trip.
    if (!resident_) resident_ = MatchResident(runtime, fetch_.location.target);
    if (resident_) {
      if (!config.cache || resident_->cache_key.empty()) {
        Fetch({});
        return;
      }
      key_ = resident_->cache_key;
    } else {
      // The include is a GET with the page's headers: cacheable unless those carry credentials.
      if (!config.cache || parent.Find("cookie") != nullptr ||
          parent.Find("authorization") != nullptr) {
        Fetch({});
        return;
      }
      runtime.key_rules->MakeKey(fetch_.location.host, fetch_.location.target, &key_);
    }
    // A stale fragment from the upstream is refreshed in the background (a resident one never
    // goes stale before fragment-ttl, and is then rendered again on the next miss).
    lookup_.Start(key_, {.may_lead = true,
                         .may_refresh = !resident_,
                         .wait_limit = config.single_flight_timeout});
  }

  // LookupClient.
  bool ServeStored(const cache::ObjectRef& object, Found found) override {
    if (found != Found::kFilled) WorkerMetrics::Add(page_.worker().metrics().esi_includes_hit);
    Done(object, {});
    return true;
  }
  void FetchFor(std::string fill_key) override { Fetch(std::move(fill_key)); }
  void Refresh(std::string key) override {
    BackgroundFetch::Start(page_.worker(), page_.runtime(), MakeRequest(), page_.peer_ip(),
                           page_.secure(), std::move(key));
  }
  void FillFailed(int, const std::string& detail) override { Done({}, detail); }
  // Waited too long for another request's fetch: fetch without it.
  void WaitTimedOut() override { Fetch({}); }

  // The include's request: a GET of its location with the page's request headers (made only when
  // the include goes upstream).
  http::RequestHead MakeRequest() const {
    http::RequestHead request;
    request.method = "GET";
    request.target = fetch_.location.target;
    request.host = fetch_.location.host;
    request.minor_version = 1;
    request.keep_alive = true;
    for (const auto& h : page_.request().headers) {
      if (EqualsIgnoreCase(h.name, "host") || EqualsIgnoreCase(h.name, "content-length") ||
          EqualsIgnoreCase(h.name, "transfer-encoding") || EqualsIgnoreCase(h.name, "expect")) {
        continue;
      }
      request.headers.push_back(h);
    }
    return request;
  }

  // From the resident renderer, or from the upstream (collected whole, stored when HTTP allows).
  void Fetch(std::string fill_key) {
    WorkerMetrics::Add(page_.worker().metrics().esi_includes_fetched);
    if (resident_) {
      const conf::Config& config = *page_.runtime()->config;
      RenderResident(page_.worker(), page_.runtime(), *resident_, std::move(fill_key), alive_,
                     AdmissionFor(config, *resident_,
                                  ClientKey(config, page_.peer_ip(), page_.request())),
                     page_.gzip(),
                     [this](Rendered r) {
                       if (r.refusal != gitfrag::Refusal::kNone) {
                         Refused(r.reason);
                       } else {
                         Done(std::move(r.object), r.reason, std::move(r.text));
                       }
                     });
      return;
    }
    if (!request_made_) {
      request_ = MakeRequest();
      request_made_ = true;
    }
    exchange_ = std::make_unique<ProxyExchange>(*this, page_.runtime(), request_,
                                                std::move(fill_key), ProxyExchange::Collect::kWhole);
    exchange_->Start();
  }

  // The render queue refused this include's render (too long a wait, or its client's share of a
  // full queue). The page is not failed for it: the frame was ready, so the reader gets it with a
  // short notice where the part goes (see shellac(8), OVERLOAD). Nothing of this is stored.
  void Refused(const std::string& reason) {
    WorkerMetrics::Add(page_.worker().metrics().esi_includes_busy);
    const unsigned retry = RetryAfterSeconds(*page_.runtime()->config);
    std::string notice =
        "<div class='error shellac-busy'>This part of the page was not rendered: the server is "
        "busy (";
    for (char c : reason) {  // our own text, escaped all the same
      if (c == '<')
        notice.append("&lt;");
      else if (c == '>')
        notice.append("&gt;");
      else if (c == '&')
        notice.append("&amp;");
      else
        notice.push_back(c);
    }
    notice.append("). Reload the page in " + std::to_string(retry) + " s to see it.</div>\n");
    const cache::Header type{"Content-Type", "text/html; charset=UTF-8"};
    PageSpec spec;
    spec.status = 200;
    spec.headers = std::span<const cache::Header>(&type, 1);
    spec.level = 1;
    cache::Status status;
    cache::ObjectRef object = MakePageObject("shellac/refused-include", notice, spec, &status);
    Done(std::move(object), reason);
  }

  // Reports once. The exchange may be on the stack: it is kept until this fetch is destroyed.
  void Done(cache::ObjectRef object, const std::string& failure,
            std::shared_ptr<const std::string> text = {}) {
    if (done_) return;
    done_ = true;
    if (exchange_) retired_ = std::move(exchange_);
    page_.OnInclude(fetch_, std::move(object), failure, std::move(text));
  }

  EsiResponse& page_;
  const esi::Fetch fetch_;
  http::RequestHead request_;
  std::string key_;
  std::optional<gitfrag::Route> resident_;
  bool request_made_ = false;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  CacheLookup lookup_{*this, page_.worker(), alive_};
  std::unique_ptr<ProxyExchange> exchange_;
  std::unique_ptr<ProxyExchange> retired_;
  bool done_ = false;
};

class EsiResponse::Sink : public cache::ByteSink {
 public:
  explicit Sink(evbuffer* out) : out_(out) {}
  void Copy(std::string_view bytes) override { evbuffer_add(out_, bytes.data(), bytes.size()); }

 private:
  evbuffer* out_;
};

EsiResponse::EsiResponse(StreamingClient& client, std::shared_ptr<const Runtime> runtime,
                         const http::RequestHead& request, cache::ObjectRef page,
                         std::string_view x_cache, bool keep_alive,
                         std::shared_ptr<const std::string> text)
    : client_(client),
      runtime_(std::move(runtime)),
      request_(request),
      x_cache_(x_cache),
      keep_alive_(keep_alive),
      pending_(evbuffer_new()),
      sink_(std::make_unique<Sink>(pending_.get())) {
  AddBody(std::move(page), std::move(text));
}

EsiResponse::~EsiResponse() = default;

uintptr_t EsiResponse::AddBody(cache::ObjectRef object, std::shared_ptr<const std::string> text) {
  Body& body = bodies_.emplace_back();
  if (text && text->size() == object->body_length()) body.text = std::move(text);
  body.segments.reserve(object->segments().size());
  body.starts.reserve(object->segments().size());
  uint64_t at = 0;
  for (const auto& segment : object->segments()) {
    body.segments.push_back(segment);
    body.starts.push_back(at);
    at += segment.length;
  }
  body.object = std::move(object);
  return bodies_.size() - 1;
}

esi::Plan EsiResponse::PlanFor(uintptr_t body, const esi::Location& base) const {
  const cache::Object& object = *bodies_[body].object;
  if (const esi::Template* page = object.esi_template(); page != nullptr && page->esi()) {
    return esi::Evaluate(*page, context_, base, options_, body);
  }
  return esi::Plan::Verbatim(object.body_length(), body);
}

void EsiResponse::Start() {
  const conf::Config& config = *runtime_->config;
  WorkerMetrics::Add(client_.worker().metrics().esi_pages);
  gzip_ = AcceptsGzip(request_);
  for (const auto& h : request_.headers) {
    if (EqualsIgnoreCase(h.name, "cookie")) {
      if (!cookie_.empty()) cookie_.append("; ");
      cookie_.append(h.value);
    } else if (EqualsIgnoreCase(h.name, "referer")) {
      context_.referer = h.value;
    } else if (EqualsIgnoreCase(h.name, "user-agent")) {
      context_.user_agent = h.value;
    } else if (EqualsIgnoreCase(h.name, "accept-language")) {
      context_.accept_language = h.value;
    }
  }
  context_.cookie = cookie_;
  // An HTTP/1.0 request may come without Host: its includes go out with the backend's name (none
  // when the page is a resident frame and no backend is configured).
  host_ = !request_.host.empty() ? request_.host
          : config.backend       ? config.backend->text
                                 : std::string();
  const esi::Location base{host_, request_.target};
  context_.host = host_;
  if (const auto q = request_.target.find('?'); q != std::string::npos) {
    context_.query = std::string_view(request_.target).substr(q + 1);
  }
  // Includes reach only the backend, and name another host only when esi-allow-host says so;
  // https:// is dropped, as Varnish does (there is no other address to fetch it from).
  // runtime_ (held for this response) keeps the rules alive.
  const EsiRules* rules = runtime_->esi_rules.get();
  options_.policy.allow_host = [rules](std::string_view host, bool https) {
    return !https && rules->AllowsHost(host);
  };
  if (request_.method == "HEAD") {
    SendHead(-1);
    ended_ = true;
    client_.FinishExchange(bodies_[0].object->status(), keep_alive_);
    return;
  }
  esi::Limits limits;
  limits.max_depth = static_cast<int>(config.esi_max_depth);
  limits.max_includes = static_cast<int>(config.esi_max_includes);
  limits.max_parallel = static_cast<int>(config.esi_parallel);
  assembly_ = std::make_unique<esi::Assembly>(PlanFor(0, base), limits);
  if (gzip_) stitcher_ = std::make_unique<cache::GzipStitcher>(*sink_);
  Pump();
}

void EsiResponse::OnInclude(const esi::Fetch& fetch, cache::ObjectRef object,
                            const std::string& failure, std::shared_ptr<const std::string> text) {
  if (ended_) return;
  if (object && object->status() < 400) {
    const uintptr_t body = AddBody(std::move(object), std::move(text));
    assembly_->Succeed(fetch.id, PlanFor(body, fetch.location));
  } else {
    WorkerMetrics::Add(client_.worker().metrics().esi_include_failures);
    last_failure_ = fetch.location.host + fetch.location.target + ": " +
                    (object ? "status " + std::to_string(object->status()) : failure);
    assembly_->Fail(fetch.id);
  }
  if (pumping_) {
    again_ = true;
  } else {
    Pump();
  }
}

void EsiResponse::OnClientDrained() {
  client_.NotifyWhenDrained(0);
  Pump();
}

void EsiResponse::Pump() {
  if (pumping_) {
    again_ = true;
    return;
  }
  pumping_ = true;
  for (;;) {
    again_ = false;
    std::vector<esi::Fetch> fetches;
    assembly_->TakeFetches(&fetches);
    for (const auto& fetch : fetches) {
      fetches_.push_back(std::make_unique<IncludeFetch>(*this, fetch));
      fetches_.back()->Start();  // a store hit reports at once
    }
    esi::Piece piece;
    esi::Assembly::State state;
    while (true) {
      if (evbuffer_get_length(pending_.get()) + evbuffer_get_length(client_.output()) >= kWindow) {
        FlushPending();  // written at once, as far as the socket takes it
        // Wait for the client only when it has not taken the output: a drain notice needs output
        // left over to drain (nothing else would ever call back).
        if (evbuffer_get_length(client_.output()) >= kLowWater) {
          pumping_ = false;
          client_.NotifyWhenDrained(kLowWater);
          return;
        }
      }
      state = assembly_->Next(&piece);
      if (state != esi::Assembly::State::kReady) break;
      if (!Emit(piece)) {
        pumping_ = false;
        PageFailed("a stored fragment failed its integrity check");
        return;
      }
    }
    if (state == esi::Assembly::State::kDone) {
      pumping_ = false;
      Finish();
      return;
    }
    if (state == esi::Assembly::State::kFailed) {
      pumping_ = false;
      PageFailed(last_failure_);
      return;
    }
    if (!again_ && fetches.empty()) break;
  }
  pumping_ = false;
  FlushPending();
}

bool EsiResponse::Emit(const esi::Piece& piece) {
  if (piece.kind == esi::Piece::kText) {
    if (!gzip_) {
      evbuffer_add(pending_.get(), piece.text.data(), piece.text.size());
      return true;
    }
    if (!literal_encoder_) literal_encoder_ = std::make_unique<cache::LiteralEncoder>(1);
    return stitcher_->AddLiteral(piece.text, *literal_encoder_).ok();
  }
  const Body& body = bodies_[piece.body];
  if (!gzip_ && body.text) {
    if (piece.offset + piece.length > body.text->size()) return false;
    evbuffer_add(pending_.get(), body.text->data() + piece.offset, piece.length);
    return true;
  }
  const auto it = std::lower_bound(body.starts.begin(), body.starts.end(), piece.offset);
  if (it == body.starts.end() || *it != piece.offset) return piece.length == 0;
  uint64_t left = piece.length;
  char buffer[16 << 10];
  for (size_t i = static_cast<size_t>(it - body.starts.begin()); left > 0; ++i) {
    if (i == body.segments.size() || body.segments[i].length > left)
      return false;  // not on a segment edge
    const cache::SegmentView& segment = body.segments[i];
    left -= segment.length;
    if (gzip_) {
      stitcher_->AddStored(segment);
      continue;
    }
    inflater_.Feed(segment);
    while (!inflater_.NeedsInput()) {
      size_t n = 0;
      if (!inflater_.Read(buffer, &n).ok()) return false;
      evbuffer_add(pending_.get(), buffer, n);
    }
  }
  return true;
}

void EsiResponse::SendHead(int64_t length) {
  const cache::Object& page = *bodies_[0].object;
  std::string h;
  h.reserve(512);
  h.append("HTTP/1.1 ").append(std::to_string(page.status())).push_back(' ');
  h.append(http::ReasonPhrase(page.status())).append("\r\n");
  for (const auto& header : page.headers()) {
    if (IsTemplateOnly(header.name)) continue;
    h.append(header.name).append(": ").append(header.value).append("\r\n");
  }
  h.append("Date: ").append(client_.worker().HttpDate()).append("\r\n");
  h.append("Vary: Accept-Encoding\r\n");
  if (gzip_) h.append("Content-Encoding: gzip\r\n");
  if (length >= 0) {
    h.append("Content-Length: ").append(std::to_string(length)).append("\r\n");
  } else if (request_.method != "HEAD") {
    if (request_.minor_version >= 1) {
      chunked_ = true;
      h.append("Transfer-Encoding: chunked\r\n");
    } else {
      keep_alive_ = false;  // an HTTP/1.0 client learns the end from the close
    }
  }
  h.append("Via: 1.1 shellac\r\nX-Cache: ").append(x_cache_).append("\r\n");
  if (client_.secure() && !runtime_->config->hsts.empty()) {
    h.append("Strict-Transport-Security: ").append(runtime_->config->hsts).append("\r\n");
  }
  if (!keep_alive_)
    h.append("Connection: close\r\n");
  else if (request_.minor_version == 0)
    h.append("Connection: keep-alive\r\n");
  h.append("\r\n");
  evbuffer_add(client_.output(), h.data(), h.size());
  head_sent_ = true;
}

bool EsiResponse::MovePending() {
  const size_t n = evbuffer_get_length(pending_.get());
  if (n == 0) return false;  // nothing yet: a failure now can still be answered with 502
  if (!head_sent_) SendHead(-1);
  body_bytes_ += n;
  if (chunked_) evbuffer_add_printf(client_.output(), "%zx\r\n", n);
  evbuffer_add_buffer(client_.output(), pending_.get());
  if (chunked_) evbuffer_add(client_.output(), "\r\n", 2);
  return true;
}

void EsiResponse::FlushPending() {
  if (MovePending()) client_.Flush();
}

void EsiResponse::LogIssues() {
  const auto issues = assembly_ ? assembly_->issues() : std::span<const esi::EvalIssue>();
  if (issues.empty()) return;
  Worker& worker = client_.worker();
  WorkerMetrics::Add(worker.metrics().esi_include_issues, issues.size());
  // A stored page with a standing problem (a loop, a refused host) meets it on every request: the
  // log gets one report a second per worker, the metric counts them all.
  const time_t now = time(nullptr);
  if (now == worker.esi_issue_logged_at()) return;
  worker.set_esi_issue_logged_at(now);
  const esi::EvalIssue& first = issues.front();
  std::fprintf(
      stderr, "shellac: esi: %s%s: byte %llu: %s%s\n", host_.c_str(), request_.target.c_str(),
      static_cast<unsigned long long>(first.offset), esi::EvalIssueName(first.kind),
      issues.size() > 1 ? (" (and " + std::to_string(issues.size() - 1) + " more)").c_str() : "");
}

void EsiResponse::Finish() {
  ended_ = true;
  LogIssues();
  if (stitcher_) stitcher_->Finish();
  if (!head_sent_) {
    const size_t n = evbuffer_get_length(pending_.get());
    SendHead(static_cast<int64_t>(n));
    body_bytes_ = n;
    evbuffer_add_buffer(client_.output(), pending_.get());
  } else {
    // The last chunk and the end of the chunks go out in one write (FinishExchange's flush): as
    // two, a page cost one more writev and one more segment for the client to wake up for.
    MovePending();
    if (chunked_) evbuffer_add(client_.output(), "0\r\n\r\n", 5);
  }
  client_.CountBodyBytes(body_bytes_);
  client_.FinishExchange(bodies_[0].object->status(), keep_alive_);
}

void EsiResponse::PageFailed(std::string why) {
  ended_ = true;
  LogIssues();
  if (why.empty() && assembly_ && !assembly_->issues().empty()) {
    // Refused before any fetch (esi-allow-host, esi-max-includes, a bad URL): say which.
    const esi::EvalIssue& issue = assembly_->issues().back();
    why = std::string(esi::EvalIssueName(issue.kind)) + " (byte " + std::to_string(issue.offset) +
          ")";
  }
  WorkerMetrics::Add(client_.worker().metrics().esi_page_failures);
  if (!head_sent_) {
    client_.FailExchange(502, "ESI include failed: " + why);
  } else {
    client_.AbortExchange();
  }
}

}  // namespace shellac::proxy

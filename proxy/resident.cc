#include "proxy/resident.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/text.h"
#include "esi/esi.h"
#include "proxy/page_memo.h"
#include "proxy/page_object.h"
#include "proxy/part_store.h"
#include "proxy/worker.h"

namespace shellac::proxy {

std::optional<gitfrag::Route> MatchResident(const Runtime& runtime, std::string_view target) {
  if (!runtime.site) return std::nullopt;
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  return runtime.site->Match(path, query);
}

namespace {

// Repository-neutral objects (gitfrag's keys: diff fragments, patches, rawdiffs, file views) are
// the same bytes on every node, so the shared tier may hold them.
bool SharedByTier(std::string_view key) { return key.starts_with("gitfrag/"); }

// Pool thread: the page as an object, stored and announced when this render fills the store.
// Names this process in the keys of pages kept for a generation of a repository's refs: the
// generations count from 1 in every process, and the store outlives it (store-snapshot=), so a
// restarted process must not take the last one's object for a generation of the same number.
const std::string& ProcessNonce() {
  static const std::string nonce = [] {
    std::random_device random;
    const uint64_t value = (uint64_t{random()} << 32) | random();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(value));
    return std::string(hex);
  }();
  return nonce;
}

// A page whose body is a neutral part (gitfrag::Page::part_key): the part as found kept, or the
// body this render read kept as the part (compressed once at level 1, or in stored blocks for a
// type deflate gains nothing on: the first page's type decides), then the page made of the
// part's segments under `spec`'s status and headers (a copy of the compressed bytes). A part the
// store has no room for serves this page all the same.
cache::ObjectRef PageOfPart(cache::Store& store, const conf::Config& config, std::string_view key,
                            const gitfrag::Page& page, const PageSpec& spec, cache::Status* status) {
  cache::ObjectRef part;
  if (page.part) {
    part = PartObject(page.part);
  } else {
    const cache::Header headers[] = {{kPartMetaHeader, page.part_meta}};
    PageSpec part_spec;
    part_spec.headers = headers;
    part_spec.stored_at = spec.stored_at;
    part_spec.ttl = config.fragment_ttl
                        ? std::chrono::duration_cast<std::chrono::seconds>(*config.fragment_ttl)
                        : cache::Object::kForever;
    part_spec.level = 1;
    part_spec.transient = !Compressible(page.content_type);
    part_spec.compress = !part_spec.transient;
    part = MakePageObject(page.part_key, page.body, part_spec, status);
    if (!part) return {};
    (void)store.Insert(part);
  }
  std::vector<cache::SegmentView> segments;
  segments.reserve(part->segments().size());
  for (const cache::SegmentView& segment : part->segments()) segments.push_back(segment);
  cache::ObjectSpec object;
  object.status = spec.status;
  object.headers = spec.headers;
  object.stored_at = spec.stored_at;
  object.ttl = spec.ttl;
  object.body = segments;
  return cache::Object::Create(key, object, status);
}

Rendered Finish(Worker& worker, const Runtime& runtime, const std::string& fill_key,
                std::string_view kind, bool gzip, const std::string& memo_base,
                gitfrag::Page page) {
  Rendered r{page.status, page.reason, {}, false, page.refusal};
  if (page.status == 301 || page.status == 302) {
    r.headers = std::move(page.headers);  // its Location
  } else if (page.status == 200 && page.stream) {
    r.headers.emplace_back("Content-Type", page.content_type);
    for (auto& header : page.headers) r.headers.push_back(std::move(header));
    r.stream = std::move(page.stream);
  } else if (page.status == 200) {
    std::vector<cache::Header> headers;
    headers.push_back({"Content-Type", page.content_type});
    for (const auto& [name, value] : page.headers) headers.push_back({name, value});
    std::shared_ptr<const esi::Template> frame;
    if (page.esi) {
      // The renderer says where its includes are: the template is made from those places (a
      // full parse of a frame was ~47 K instructions a page); a page that names none is parsed.
      std::optional<esi::Template> known = esi::TemplateOfIncludes(page.body, page.includes);
      auto parsed = std::make_shared<esi::Template>(known ? std::move(*known)
                                                          : esi::ParseTemplate(page.body));
      if (parsed->esi()) frame = std::move(parsed);
    }
    PageSpec spec;
    spec.status = 200;
    spec.headers = headers;
    spec.stored_at =
        std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
    const conf::Config& config = *runtime.config;
    spec.ttl = config.fragment_ttl
                   ? std::chrono::duration_cast<std::chrono::seconds>(*config.fragment_ttl)
                   : cache::Object::kForever;
    spec.esi_template = frame;
    // Level 1 for a stored part too: crawlers read most parts once or a few times, and level 6
    // costs three times the CPU at the first render for a part ~5 % smaller (kinds-callgrind.md).
    spec.level = 1;
    // Made for this request alone: compressed only for a gzip client, and not when its type is
    // compressed already (a png, a zip: deflate would spend its time to gain nothing).
    spec.transient = fill_key.empty();
    spec.compress = gzip && Compressible(page.content_type);
    spec.shared = page.shared;
    // A page the renderer marks the same for every request with its key (info/refs of one
    // generation of a repository's refs): kept in the store as a gzip client gets it, compressed
    // once (its shared ranges from the thread's memo, as a frame's chrome: the tags every fork
    // of a farm lists alike), never given to the shared tier (its key does not start with
    // "gitfrag/"). Not kept for an identity client: stored blocks cost less than inflating it.
    std::string reuse;
    cache::Store& store = *worker.shared().store;
    if (spec.transient && spec.compress && !frame && !page.reuse_key.empty()) {
      reuse = "gitfrag-repo/" + ProcessNonce() + "/" + page.reuse_key;
      cache::LookupResult kept = store.Lookup(reuse, spec.stored_at);
      if (kept.state == cache::LookupState::kFresh) r.object = std::move(kept.object);
    }
    // A page made for this request that may be kept whole (page_memo.h): the object made for the
    // client, under the key of the refs it was rendered from, until its first age moves on.
    cache::Store* memo = worker.shared().page_memo.get();
    std::string memo_key;
    if (memo != nullptr && spec.transient && reuse.empty() && !memo_base.empty()) {
      if (const auto keep = KeepFor(page, spec.stored_at)) {
        memo_key = PageMemoKey(memo_base, page.repo_state);
        spec.ttl = *keep;
      }
    }
    cache::Status status;
    if (!r.object) {
      const std::string_view key = !reuse.empty()      ? std::string_view(reuse)
                                   : !memo_key.empty() ? std::string_view(memo_key)
                                   : fill_key.empty()  ? kind
                                                       : std::string_view(fill_key);
      r.object = !page.part_key.empty() ? PageOfPart(store, config, key, page, spec, &status)
                                        : MakePageObject(key, page.body, spec, &status);
      // Not kept (no room, or too large for the store): served all the same.
      if (r.object && !reuse.empty()) (void)store.Insert(r.object);
      if (r.object && !memo_key.empty()) (void)memo->Insert(r.object);
    }
    // The identity bytes go with the object to the requester: a frame's literal spans are cut
    // from them, and an identity client (or one whose include this render is) is answered from
    // them instead of inflating what was just compressed, stored or not.
    if (r.object && !page.part && ((spec.transient && frame) || !gzip)) {
      r.text = std::make_shared<const std::string>(std::move(page.body));
    }
    if (!r.object) {
      r.status = 500;
      r.reason = "the rendered page cannot be kept: " + status.message();
    } else if (!fill_key.empty() && !page.no_store && worker.shared().store->Insert(r.object).ok()) {
      r.stored = true;
      // The shared tier gets what this node rendered (in the background, on the tier's threads).
      if (worker.shared().l2 && SharedByTier(fill_key)) worker.shared().l2->Put(r.object);
    }
  }
  if (!fill_key.empty()) {
    FillResult fill;
    if (page.refusal != gitfrag::Refusal::kNone) {
      fill = FillResult{FillResult::kAbandoned, {}, 0, {}};  // each waiter tries in its own right
    } else if (r.stored) {
      fill = FillResult{FillResult::kStored, r.object, 0, {}};
    } else if (r.object) {
      fill =
          FillResult{FillResult::kNotStorable, {}, 0, {}};  // too large for the store: each renders
    } else {
      fill = FillResult{FillResult::kFailed, {}, r.status, r.reason};
    }
    worker.shared().flights.Complete(fill_key, fill);
  }
  return r;
}

}  // namespace

namespace {

// Submits the render to the pool. `on_loop`: called on `worker`'s thread (a refusal may answer at
// once); otherwise (a tier thread) a refusal is posted to the worker like a render's outcome.
void SubmitRender(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                  const gitfrag::Route& route, const std::string& fill_key,
                  std::weak_ptr<void> alive, gitfrag::Admission admission, bool gzip,
                  std::function<void(Rendered)> done, bool on_loop, std::string memo_base = {}) {
  Worker* owner = &worker;
  // A page made for one request is never stored: its page kind will do for its key.
  const char* kind = gitfrag::PageKindName(route.kind);
  auto finish = [owner, runtime, fill_key, kind, alive, gzip, done,
                 memo_base = std::move(memo_base)](gitfrag::Page&& page) {
    Rendered r = Finish(*owner, *runtime, fill_key, kind, gzip, memo_base, std::move(page));
    owner->Post([alive, done, r = std::move(r)]() mutable {
      if (!alive.expired()) done(std::move(r));
    });
  };
  if (worker.shared().render_pool->Submit(runtime->site, route, std::move(admission),
                                          std::move(finish)) ==
      gitfrag::RenderPool::Submitted::kBusy) {
    Rendered busy{503,
                  "the render queue is full and this client has the most renders waiting "
                  "(render-queue)",
                  {},
                  false,
                  gitfrag::Refusal::kFull};
    if (!fill_key.empty()) {
      worker.shared().flights.Complete(fill_key, FillResult{FillResult::kAbandoned, {}, 0, {}});
    }
    if (on_loop) {
      done(std::move(busy));
    } else {
      owner->Post([alive, done, busy = std::move(busy)]() mutable {
        if (!alive.expired()) done(std::move(busy));
      });
    }
  }
}

}  // namespace

void RenderResident(Worker& worker, const std::shared_ptr<const Runtime>& runtime,
                    const gitfrag::Route& route, std::string fill_key, std::weak_ptr<void> alive,
                    gitfrag::Admission admission, bool gzip, std::function<void(Rendered)> done,
                    std::string memo_base) {
  // A page nobody else will use (no fill key: made for this request, not stored) leaves the queue
  // when its requester goes away before it starts.
  if (fill_key.empty()) admission.requester = alive;
  cache::SharedTier* tier = worker.shared().l2.get();
  if (tier == nullptr || fill_key.empty() || !SharedByTier(fill_key)) {
    SubmitRender(worker, runtime, route, fill_key, std::move(alive), std::move(admission), gzip,
                 std::move(done), /*on_loop=*/true, std::move(memo_base));
    return;
  }
  // A neutral part this node leads: ask the shared tier first (on its threads), render on a miss
  // or when the tier is unavailable. The single-flight stays led meanwhile, so one lookup and at
  // most one render per key run on this node.
  Worker* owner = &worker;
  tier->Get(fill_key, [owner, runtime, route, fill_key, alive, admission, gzip, done](
                          cache::SharedTier::Outcome outcome, cache::ObjectRef object) mutable {
    if (outcome == cache::SharedTier::Outcome::kHit) {
      Rendered r{200, {}, object, false, gitfrag::Refusal::kNone};
      r.stored = owner->shared().store->Insert(object).ok();
      owner->shared().flights.Complete(
          fill_key, r.stored ? FillResult{FillResult::kStored, object, 0, {}}
                             : FillResult{FillResult::kNotStorable, {}, 0, {}});
      owner->Post([alive, done, r = std::move(r)]() mutable {
        if (!alive.expired()) done(std::move(r));
      });
      return;
    }
    SubmitRender(*owner, runtime, route, fill_key, std::move(alive), std::move(admission), gzip,
                 std::move(done), /*on_loop=*/false);
  });
}

gitfrag::Admission AdmissionFor(const conf::Config& config, const gitfrag::Route& route,
                                std::string client) {
  return gitfrag::Admission{std::move(client), gitfrag::ClassOf(route.kind),
                            config.render_queue_timeout};
}

namespace {

bool Trusted(const conf::Config& config, std::string_view ip) {
  for (const auto& net : config.trusted_proxies)
    if (conf::InNetwork(net, ip)) return true;
  return false;
}

// `ip` masked to the configured prefix, as text; "" when it is not an address.
std::string Masked(const conf::Config& config, std::string_view ip) {
  conf::Config::Network net;
  if (ip.find('/') != std::string_view::npos || !conf::ParseNetwork(ip, &net)) return {};
  const bool v4 =
      net.prefix == 128 && net.address[10] == 0xff && net.address[11] == 0xff &&
      std::all_of(net.address.begin(), net.address.begin() + 10, [](uint8_t b) { return b == 0; });
  const unsigned bits = v4 ? config.client_prefix_v4 + 96 : config.client_prefix_v6;
  for (unsigned bit = bits; bit < 128; ++bit) {
    net.address[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  char text[INET6_ADDRSTRLEN] = "";
  if (v4) {
    inet_ntop(AF_INET, &net.address[12], text, sizeof text);
  } else {
    inet_ntop(AF_INET6, net.address.data(), text, sizeof text);
  }
  std::string key(text);
  if (bits < 128) key.append("/").append(std::to_string(v4 ? bits - 96 : bits));
  return key;
}

}  // namespace

std::string ClientKey(const conf::Config& config, std::string_view peer_ip,
                      const http::RequestHead& request) {
  std::string_view client = peer_ip;
  std::string forwarded;
  if (!config.trusted_proxies.empty() && Trusted(config, peer_ip)) {
    for (const auto& h : request.headers) {
      if (!base::EqualsIgnoreCase(h.name, "x-forwarded-for")) continue;
      if (!forwarded.empty()) forwarded.push_back(',');
      forwarded.append(h.value);
    }
    // From the nearest hop outwards: the first address that is not a trusted proxy is the client
    // (addresses further out are whatever that client chose to send).
    std::string_view rest = forwarded;
    while (!rest.empty()) {
      const auto comma = rest.rfind(',');
      const std::string_view hop =
          base::TrimOws(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
      if (Masked(config, hop).empty()) break;  // not an address: trust nothing further out
      client = hop;
      if (!Trusted(config, hop)) break;
    }
  }
  std::string key = Masked(config, client);
  return key.empty() ? std::string(client) : key;
}

unsigned RetryAfterSeconds(const conf::Config& config) {
  const auto ms = config.render_queue_timeout.count();
  return static_cast<unsigned>(std::max<long long>(1, (ms + 999) / 1000));
}

}  // namespace shellac::proxy

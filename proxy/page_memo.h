// page_memo: resident pages kept whole as they were made for a request (the object a client got:
// compressed for a gzip client, a frame with its ESI template parsed), so that the same page asked
// again is answered without rendering, parsing or compressing anything, for as long as it is
// provably the same page.
//
// A kept page is found by a key made of everything its bytes depend on:
//   - the configuration it was rendered under (Runtime::generation: a reload renders again),
//   - its route as the router read the URL (kind, repository, ids, branch, path, diff options,
//     offsets, search, the Atom feed's origin: the normalised request, so two spellings of one
//     URL share a page), and whether the client takes gzip (the object's coding),
//   - the state of its repository's refs and abbreviation length (gitfrag::Site::RepoState, which
//     changes when a push moves, adds or removes a ref); a page is looked up only while that state
//     is known to be current, that is, while a render looked at the refs within the last
//     refs-check-interval (1 s by default), as a render starting now would. Otherwise the page is
//     rendered, which looks again.
// Nothing else a render reads comes from the request (cgit's pages read no cookie; the Host only
// for the Atom feed's links, through the route's origin).
// Time: a page that shows relative ages ("5 min.") is kept only until the first of them would read
// differently (gitfrag::Page::valid_until: the object's ttl); absolute dates never change. The
// pages carry no Expires or max-age, and Date is made for each answer.
//
// Never kept: pages of a repository-neutral key (the store has them), the index (it reads every
// repository), about (a readme file or a filter's output can change with no ref moving), stats
// (its periods count back from now), snapshots and clone files (streamed, or kept by their own
// means), streamed pages, errors, output of a failed filter, bodies over kPageMemoMaxBody.
// Requests with Range or conditional headers are answered from a kept page as from any stored
// object (deliver.h), a HEAD without its body.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/cache.h"
#include "gitfrag/gitfrag.h"
#include "proxy/runtime.h"

namespace shellac::proxy {

// The largest page body kept; larger pages are rendered for each request.
inline constexpr size_t kPageMemoMaxBody = 256 << 10;

// The part of the key the request decides (everything but the repository's state); empty when
// pages of this route are never kept.
std::string PageMemoBase(const Runtime& runtime, const gitfrag::Route& route, bool gzip);

// The whole key of a page rendered from `repo_state` (gitfrag::Page::repo_state).
std::string PageMemoKey(std::string_view base, uint64_t repo_state);

// Event loop: the kept page for `route` under `base`, if its repository's state is known to be
// current and the page is still fresh; null otherwise (a miss is counted in `memo`'s stats).
cache::ObjectRef FindKeptPage(cache::Store& memo, const Runtime& runtime,
                              const gitfrag::Route& route, std::string_view base,
                              std::chrono::sys_seconds now);

// Render thread: whether `page` may be kept, and for how long from `now` (kForever when it shows
// no age); nullopt when it may not.
std::optional<std::chrono::seconds> KeepFor(const gitfrag::Page& page,
                                            std::chrono::sys_seconds now);

}  // namespace shellac::proxy

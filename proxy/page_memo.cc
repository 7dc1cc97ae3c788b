#include "proxy/page_memo.h"

#include <optional>

namespace shellac::proxy {
namespace {

// Each field as its length and its bytes: no two routes give one key, whatever their strings hold.
void AppendField(std::string* key, std::string_view field) {
  key->append(std::to_string(field.size())).push_back(':');
  key->append(field);
}

void AppendNumber(std::string* key, int64_t field) {
  AppendField(key, std::to_string(field));
}

void AppendOptional(std::string* key, const std::optional<std::string>& field) {
  if (field) {
    key->push_back('+');
    AppendField(key, std::string_view(*field));
  } else {
    key->push_back('-');
  }
}

bool KeptKind(gitfrag::PageKind kind) {
  using gitfrag::PageKind;
  switch (kind) {
    case PageKind::kLog:
    case PageKind::kCommit:
    case PageKind::kDiff:
    case PageKind::kPatch:
    case PageKind::kRawDiff:
    case PageKind::kTree:
    case PageKind::kPlain:
    case PageKind::kSummary:
    case PageKind::kRefs:
    case PageKind::kTag:
    case PageKind::kAtom:
    case PageKind::kBlame:
      return true;
    case PageKind::kIndex:         // reads every repository's refs and age files
    case PageKind::kAbout:         // a readme file on disk, an about-filter
    case PageKind::kStats:         // periods counted back from now
    case PageKind::kSnapshot:      // streamed, kept by the snapshot cache
    case PageKind::kClone:         // streamed, info/refs kept by its own key
    case PageKind::kDiffFragment:  // repository-neutral: in the store
    case PageKind::kBlob:
    case PageKind::kReadme:
      return false;
  }
  return false;
}

}  // namespace

std::string PageMemoBase(const Runtime& runtime, const gitfrag::Route& route, bool gzip) {
  if (!KeptKind(route.kind) || !route.cache_key.empty() || !runtime.config->cache) return {};
  std::string key;
  key.reserve(160);
  key.append(gzip ? "g/" : "i/");
  AppendNumber(&key, static_cast<int64_t>(runtime.generation));
  AppendNumber(&key, static_cast<int64_t>(route.kind));
  AppendNumber(&key, static_cast<int64_t>(route.repo));
  AppendField(&key, route.id);
  AppendField(&key, route.id2);
  AppendField(&key, route.head);
  AppendField(&key, route.path);
  AppendNumber(&key, route.diff.context);
  AppendNumber(&key, route.diff.ignorews);
  AppendNumber(&key, route.diff.dt);
  AppendNumber(&key, route.diff.abbrev);
  AppendNumber(&key, route.diff.rename_limit);
  AppendNumber(&key, route.ofs);
  AppendNumber(&key, route.ofs_signed);
  AppendOptional(&key, route.period);
  AppendNumber(&key, route.showmsg);
  AppendNumber(&key, route.follow);
  AppendNumber(&key, route.slashless);
  AppendOptional(&key, route.grep);
  AppendOptional(&key, route.search);
  AppendField(&key, route.query);
  AppendField(&key, route.origin);
  return key;
}

std::string PageMemoKey(std::string_view base, uint64_t repo_state) {
  std::string key(base);
  key.push_back('#');
  key.append(std::to_string(repo_state));
  return key;
}

cache::ObjectRef FindKeptPage(cache::Store& memo, const Runtime& runtime,
                              const gitfrag::Route& route, std::string_view base,
                              std::chrono::sys_seconds now) {
  // State 0 (not looked at within the last second) is no page's: the lookup misses, and counts.
  const uint64_t state = runtime.site ? runtime.site->RepoState(route.repo) : 0;
  cache::LookupResult found = memo.Lookup(PageMemoKey(base, state), now);
  if (found.state != cache::LookupState::kFresh) return {};
  return std::move(found.object);
}

std::optional<std::chrono::seconds> KeepFor(const gitfrag::Page& page,
                                            std::chrono::sys_seconds now) {
  if (page.status != 200 || page.stream || page.no_store || page.repo_state == 0 ||
      page.body.size() > kPageMemoMaxBody) {
    return std::nullopt;
  }
  if (page.valid_until == 0) return cache::Object::kForever;
  const int64_t left = page.valid_until - now.time_since_epoch().count();
  if (left <= 0) return std::nullopt;
  return std::chrono::seconds(left);
}

}  // namespace shellac::proxy

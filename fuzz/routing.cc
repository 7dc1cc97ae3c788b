// libFuzzer target: how a URL becomes a resident page (gitfrag::Site::Match, through the proxy's
// proxy::MatchResident): percent-decoding, the longest repository prefix, page names, path limits,
// query parameters, cache keys. No git I/O happens in routing (patch and rawdiff look at their
// repository's gitattribute files' stamps); the repositories need not exist.
// Input: one control byte (virtual-root, whether a backend is configured), then the request target
// (path and query) as a client sent it. Checked on every input:
// - no crash, hang or undefined behaviour;
// - a route keeps its promises: a known repository; a path without leading, trailing or doubled
//   '/' and without "..", and only on commit and diff pages; options in range; a cache key only
//   for full SHAs, and then the key the route's kind and ids make (patch and rawdiff: none while
//   their repository's attribute sources are unknown);
// - percent-encoding a plain character of the path, or adding an unknown query parameter, gives
//   the same route;
// - a diff fragment's URL made by Site::FragmentUrl routes back to the same fragment.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "conf/config.h"
#include "fuzz/check.h"
#include "gitfrag/gitfrag.h"
#include "proxy/resident.h"
#include "proxy/runtime.h"

namespace {

using namespace shellac;
using gitfrag::PageKind;
using gitfrag::Route;
using fuzz::Choices;

bool FullSha(std::string_view s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool SameRoute(const std::optional<Route>& a, const std::optional<Route>& b) {
  if (!a || !b) return !a && !b;
  return a->kind == b->kind && a->repo == b->repo && a->id == b->id && a->id2 == b->id2 &&
         a->head == b->head && a->path == b->path && a->diff == b->diff && a->ofs == b->ofs &&
         a->cache_key == b->cache_key;
}

std::shared_ptr<const proxy::Runtime> MakeRuntime(std::string virtual_root, bool backend) {
  auto config = std::make_shared<conf::Config>();
  config->virtual_root = std::move(virtual_root);
  for (const char* url : {"a", "a/b", "c.git", "deep/er/repo", "sp ace", "x+y", "log"}) {
    conf::Config::Repository r;
    r.url = url;
    r.name = url;
    r.path = std::string("/nonexistent/") + url;
    config->repositories.push_back(r);
  }
  if (backend) {
    std::string why;
    config->backend.emplace();
    FUZZ_CHECK(conf::ParseAddress("127.0.0.1:9", &*config->backend, &why, false));
  }
  auto runtime = std::make_shared<proxy::Runtime>();
  runtime->site = std::make_shared<const gitfrag::Site>(*config);
  runtime->config = std::move(config);
  return runtime;
}

void CheckRoute(const Route& r, const gitfrag::Site& site) {
  if (r.kind != PageKind::kIndex) FUZZ_CHECK(r.repo < site.repositories().size());
  // A tree, plain or snapshot path is checked by Render (404).
  const bool tree_path =
      r.kind == PageKind::kTree || r.kind == PageKind::kPlain || r.kind == PageKind::kSnapshot ||
      r.kind == PageKind::kBlame;
  if (!r.path.empty() && tree_path) FUZZ_CHECK(!r.path.ends_with('/'));
  // A clone path is the file's path in the repository, checked by Render (404 outside objects/).
  if (r.kind == PageKind::kClone)
    FUZZ_CHECK(r.path == "HEAD" || r.path.starts_with("info/") || r.path.starts_with("objects/"));
  if (!r.path.empty() && !tree_path && r.kind != PageKind::kClone) {
    FUZZ_CHECK(r.kind == PageKind::kCommit || r.kind == PageKind::kDiff ||
               r.kind == PageKind::kDiffFragment || r.kind == PageKind::kLog ||
               r.kind == PageKind::kRefs || r.kind == PageKind::kStats ||
               r.kind == PageKind::kAtom || r.kind == PageKind::kBlob ||
               r.kind == PageKind::kReadme || r.kind == PageKind::kPatch);
    if (r.kind == PageKind::kRefs) FUZZ_CHECK(r.path == "heads" || r.path == "tags");
    // A blob part's path is the file's name (a source-filter's argument), never a folder.
    if (r.kind == PageKind::kBlob) FUZZ_CHECK(r.path.find('/') == std::string::npos);
    FUZZ_CHECK(!r.path.starts_with('/') && !r.path.ends_with('/'));
    FUZZ_CHECK(r.path.find("//") == std::string::npos);
    FUZZ_CHECK(r.path != ".." && !r.path.starts_with("../") && !r.path.ends_with("/..") &&
               r.path.find("/../") == std::string::npos);
  }
  FUZZ_CHECK(r.diff.context >= 1 && r.diff.context <= 40);
  FUZZ_CHECK(r.diff.dt >= 0 && r.diff.dt <= 2);
  FUZZ_CHECK(r.ofs <= 1u << 30);
  if (!r.cache_key.empty()) {
    FUZZ_CHECK(FullSha(r.id) && (r.id2.empty() || FullSha(r.id2)));
    // Keys name the abbreviation length too ("?abbrev=N": ids in the output depend on it).
    if (r.kind == PageKind::kPatch) {
      FUZZ_CHECK(r.cache_key.starts_with("gitfrag/patch/" + r.id + "?abbrev="));
    } else if (r.kind == PageKind::kRawDiff) {
      FUZZ_CHECK(r.cache_key.starts_with("gitfrag/rawdiff/" + r.id + "?abbrev="));
    } else if (r.kind == PageKind::kBlob) {
      FUZZ_CHECK(r.cache_key == "gitfrag/blob/" + r.id);
    } else if (r.kind == PageKind::kReadme) {
      FUZZ_CHECK(r.cache_key.starts_with("gitfrag/about/" + r.id));
    } else {
      FUZZ_CHECK(r.kind == PageKind::kDiffFragment &&
                 r.cache_key.starts_with("gitfrag/diff/" + r.id));
    }
  } else if (FullSha(r.id) && r.id2.empty()) {
    // Patch and rawdiff are keyed only once the repository's gitattribute sources are known (a
    // render, or their files; these repositories do not exist): the others always.
    FUZZ_CHECK(r.kind != PageKind::kDiffFragment && r.kind != PageKind::kBlob &&
               r.kind != PageKind::kReadme);
  }
}

bool Plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
         c == '.' || c == '-' || c == '_';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr const char* kRoots[] = {"/", "/git/", "/a/", "/cgit/x/"};
  static std::shared_ptr<const proxy::Runtime> runtimes[8];
  auto& runtime = runtimes[data[0] & 7];
  if (!runtime) runtime = MakeRuntime(kRoots[data[0] & 3], data[0] & 4);
  const gitfrag::Site& site = *runtime->site;
  const std::string_view target(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::optional<Route> route = proxy::MatchResident(*runtime, target);
  if (!route) return 0;
  CheckRoute(*route, site);
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  FUZZ_CHECK(path.starts_with(site.virtual_root()));

  // The same path with one plain character percent-encoded.
  Choices choices(target);
  const size_t at = site.virtual_root().size() + choices.Below(path.size() - site.virtual_root().size());
  // (Not a final '/', which was once significant for a repository's own URL.)
  if (at < path.size() && Plain(path[at]) && !(path[at] == '/' && at + 1 == path.size()) &&
      (at < 1 || path[at - 1] != '%') &&
      (at < 2 || path[at - 2] != '%')) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string encoded(target);
    const auto c = static_cast<unsigned char>(path[at]);
    encoded.replace(at, 1, {'%', kHex[c >> 4], kHex[c & 15]});
    FUZZ_CHECK(SameRoute(proxy::MatchResident(*runtime, encoded), route));
  }
  // An unknown parameter is ignored.
  std::string extra(target);
  extra += q == std::string_view::npos ? "?" : "&";
  extra += "zz=1";
  FUZZ_CHECK(SameRoute(proxy::MatchResident(*runtime, extra), route));

  // A fragment URL routes back to its fragment.
  if (route->kind == PageKind::kDiffFragment && !route->cache_key.empty()) {
    const std::string url = site.FragmentUrl(route->repo, route->id, route->id2, route->diff, route->path);
    Route expected = *route;
    expected.head.clear();
    expected.ofs = 0;
    FUZZ_CHECK(SameRoute(proxy::MatchResident(*runtime, url), expected));
  }
  return 0;
}

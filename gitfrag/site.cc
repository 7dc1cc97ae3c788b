// Site: routing (Match) and render dispatch. Match never touches git; Render leases an open
// repository from the registry and hands it to the page's renderer.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <cstdint>
#include <unordered_map>

#include "gitfrag/archive.h"
#include "gitfrag/filter.h"
#include "gitfrag/history_index.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/renames.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

void EnsureLibgit2() {
  static const bool initialised = [] {
    git_libgit2_init();
    // git checks an object's id when it writes it, not on every read; libgit2 by default hashes
    // every object it inflates again, which was half of a cold diff's time on git/git.
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    // Keep trees and blobs just read (libgit2 caches only objects under 4 KiB by default, so the
    // root tree of a large repository, read by every diff, was inflated each time). All caches
    // together stay within GIT_OPT_SET_CACHE_MAX_SIZE (256 MiB by default).
    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, size_t{1} << 20);
    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_BLOB, size_t{256} << 10);
    // Repositories are the ones the operator configured, and they are only read (no hooks, no
    // filters run). A forge's repositories belong to its git user while shellac runs as its own
    // (the Debian package's `shellac`): libgit2's ownership check (git's safe.directory) would
    // refuse every one of them, where cgit reads them.
    git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
    return true;
  }();
  (void)initialised;
}

const char* PageKindName(PageKind kind) {
  switch (kind) {
    case PageKind::kIndex:
      return "index";
    case PageKind::kLog:
      return "log";
    case PageKind::kCommit:
      return "commit";
    case PageKind::kDiff:
      return "diff";
    case PageKind::kDiffFragment:
      return "diff-fragment";
    case PageKind::kPatch:
      return "patch";
    case PageKind::kRawDiff:
      return "rawdiff";
    case PageKind::kTree:
      return "tree";
    case PageKind::kBlob:
      return "blob";
    case PageKind::kPlain:
      return "plain";
    case PageKind::kSummary:
      return "summary";
    case PageKind::kRefs:
      return "refs";
    case PageKind::kTag:
      return "tag";
    case PageKind::kAbout:
      return "about";
    case PageKind::kAtom:
      return "atom";
    case PageKind::kSnapshot:
      return "snapshot";
    case PageKind::kBlame:
      return "blame";
    case PageKind::kClone:
      return "clone";
    case PageKind::kStats:
      return "stats";
    case PageKind::kReadme:
      return "readme";
  }
  return "unknown";
}

namespace {

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes (and '+' -> ' ' in queries). False on a malformed escape or a NUL byte.
bool Decode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = Hex(in[i + 1]), lo = Hex(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') return false;
    out->push_back(c);
  }
  return true;
}

// C's atoi, as cgit reads numbers from a query: leading blanks, a sign, the digits that follow
// (none: 0), the rest ignored; clamped to int.
int Atoi(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  int64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = std::min<int64_t>(v * 10 + (s[i] - '0'), INT32_MAX);
  return static_cast<int>(negative ? -v : v);
}

int ParseInt(std::string_view s, int fallback) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return fallback;
  return v;
}

std::string OptionsKey(const DiffOptions& o) {
  // The rename limit only when it is not git's default, so that the keys and URLs of a cgitrc
  // without renamelimit stay what they were. (Match takes it from the Site, not from the URL.)
  return "context=" + std::to_string(o.context) + "&ignorews=" + (o.ignorews ? "1" : "0") +
         "&dt=" + std::to_string(o.dt) + "&abbrev=" + std::to_string(o.abbrev) +
         (o.rename_limit != kDefaultRenameLimit ? "&renamelimit=" + std::to_string(o.rename_limit)
                                                : "");
}

std::string AsciiLower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// A mime.types file as cgit reads it on each plain request: lines of at most 1023 bytes (a longer
// one goes on as the next), those starting with '#' skipped, the first word of a line the type
// and the others its extensions; the first line naming an extension (any case) wins. A file that
// cannot be read gives no types, as in cgit.
void ReadMimeTypes(const std::string& file, std::unordered_map<std::string, std::string>* types) {
  std::ifstream in(file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  static constexpr std::string_view kBlank = " \t\r\n";
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    end = std::min(end, pos + 1023);
    std::string_view line(text.data() + pos, end - pos);
    pos = end;
    line = line.substr(0, line.find('\0'));  // fgets' buffer is read as a C string
    if (line.empty() || line[0] == '#') continue;
    std::string_view type;
    for (size_t at = 0;;) {
      const size_t from = line.find_first_not_of(kBlank, at);
      if (from == std::string_view::npos) break;
      const size_t to = std::min(line.find_first_of(kBlank, from), line.size());
      const std::string_view word = line.substr(from, to - from);
      if (type.empty())
        type = word;
      else
        types->emplace(AsciiLower(std::string(word)), std::string(type));
      at = to;
    }
  }
}

}  // namespace

bool BadPath(std::string_view path) {
  return path.starts_with('/') || path.find("//") != std::string_view::npos || path == ".." ||
         path.starts_with("../") || path.find("/../") != std::string_view::npos ||
         path.ends_with("/..");
}

static_assert(DiffOptions{}.rename_limit == kDefaultRenameLimit);

Site::Site(const conf::Config& config)
    : virtual_root_(config.virtual_root),
      css_(config.css),
      logo_(config.logo),
      robots_(config.robots),
      favicon_(config.favicon),
      root_title_(config.root_title),
      root_desc_(config.root_desc),
      index_links_(config.enable_index_links),
      max_repo_count_(config.max_repo_count),
      max_blob_size_(config.max_blob_size),
      max_commit_count_(config.max_commit_count),
      // cgit passes renamelimit to git, which takes a negative one (cgit's default, -1) as its own
      // default and 0 as no limit.
      rename_limit_(config.rename_limit < 0 ? kDefaultRenameLimit : config.rename_limit),
      mimetypes_(config.mimetypes),
      http_clone_(config.enable_http_clone),
      backend_(config.backend.has_value()),
      summary_{config.summary_branches, config.summary_tags, config.summary_log,
               config.clone_prefix},
      max_atom_items_(config.max_atom_items),
      plain_email_(!config.noplainemail),
      blame_timeout_(config.blame_timeout.count() > 0 ? config.blame_timeout
                                                      : std::chrono::seconds(20)),
      registry_(std::make_unique<Registry>(
          config.repositories, config.max_open_repos,
          config.refs_check_interval.count() > 0 ? config.refs_check_interval
                                                 : std::chrono::milliseconds(1000))),
      chrome_memo_(std::make_unique<ChromeMemo>()) {
  EnsureLibgit2();
  HistoryIndex::SetMemoryBudget(config.history_index_memory);
  SetPackCacheBytes(static_cast<size_t>(config.pack_cache_size));
  if (virtual_root_.empty() || virtual_root_.back() != '/') virtual_root_ += '/';
  for (size_t i = 0; i < registry_->repos().size(); ++i)
    by_url_.emplace(registry_->repos()[i].url, i);
  if (!config.mimetype_file.empty()) ReadMimeTypes(config.mimetype_file, &mimetype_file_);
  if (config.filter_timeout.count() > 0) filter_limits_.timeout = config.filter_timeout;
}

std::string Site::MimeType(std::string_view name) const {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == name.size()) return {};
  const std::string ext(name.substr(dot + 1));
  if (auto it = mimetypes_.find(ext); it != mimetypes_.end()) return it->second;
  if (auto it = mimetype_file_.find(AsciiLower(ext)); it != mimetype_file_.end()) return it->second;
  return {};
}

Site::~Site() = default;

const std::vector<conf::Config::Repository>& Site::repositories() const {
  return registry_->repos();
}

std::optional<size_t> Site::RepositoryByUrl(std::string_view url) const {
  const auto it = by_url_.find(std::string(url));
  if (it == by_url_.end()) return std::nullopt;
  return it->second;
}

bool Site::History(size_t repo, const HistoryQuery& query, std::vector<std::string>* shas,
                   std::string* error) const {
  Registry::Lease lease = registry_->Acquire(repo, error);
  if (!lease) return false;
  git_revwalk* raw = nullptr;
  if (git_revwalk_new(&raw, lease.repo()) != 0) {
    *error = "cannot walk the history";
    return false;
  }
  RevwalkPtr walk(raw);
  git_revwalk_sorting(walk.get(), GIT_SORT_TIME);
  // push_glob skips references that do not lead to a commit (a tag of a tree, say).
  const int pushed = query.all_refs ? (git_revwalk_push_glob(walk.get(), "refs/heads/*") |
                                       git_revwalk_push_glob(walk.get(), "refs/tags/*"))
                                    : git_revwalk_push_head(walk.get());
  if (pushed != 0) {
    const git_error* e = git_error_last();
    *error = std::string("no history to walk: ") + (e != nullptr ? e->message : "HEAD is unborn");
    return false;
  }
  git_oid oid;
  while (git_revwalk_next(&oid, walk.get()) == 0) {
    if (query.since > 0) {
      git_commit* commit = nullptr;
      if (git_commit_lookup(&commit, lease.repo(), &oid) != 0) continue;
      const CommitPtr owned(commit);
      if (git_commit_time(commit) < query.since) continue;
    }
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, &oid);
    shas->emplace_back(hex);
    if (query.limit != 0 && shas->size() >= query.limit) break;
  }
  return true;
}

std::optional<Route> Site::Match(std::string_view raw_path, std::string_view query) const {
  if (!raw_path.starts_with(virtual_root_)) return std::nullopt;
  std::string rest;
  if (!Decode(raw_path.substr(virtual_root_.size()), false, &rest)) return std::nullopt;
  Route route;
  route.diff.rename_limit = rename_limit_;
  if (rest.empty()) {
    route.kind = PageKind::kIndex;
  } else {
    // Longest repository URL that is a whole-segment prefix of the path.
    std::optional<size_t> repo;
    size_t repo_end = 0;
    for (size_t end = rest.size();; end = rest.rfind('/', end - 1)) {
      if (end == std::string::npos || end == 0) break;
      auto it = by_url_.find(rest.substr(0, end));
      if (it != by_url_.end()) {
        repo = it->second;
        repo_end = end;
        break;
      }
    }
    if (!repo) return std::nullopt;
    route.repo = *repo;
    std::string_view tail = std::string_view(rest).substr(repo_end);  // "/commit/PATH" or ""
    if (tail.starts_with('/')) tail.remove_prefix(1);
    // "/REPO/" and "/REPO" are the summary; "/REPO/refs" is "/REPO/refs/", as cgit reads them.
    // cgit's dumb-HTTP clone paths: the file's path in the repository is the route's path
    // (checked by Render, which answers 404 for one outside the objects folder).
    if (tail == "HEAD" || tail.starts_with("info/") || tail.starts_with("objects/"))
      return MatchClone(std::move(route), tail, query);
    const size_t slash = tail.find('/');
    const std::string_view page = tail.substr(0, slash);
    if (slash != std::string_view::npos) route.path = std::string(tail.substr(slash + 1));
    if (page.empty() && route.path.empty())
      route.kind = PageKind::kSummary;
    else if (page == "summary")
      route.kind = PageKind::kSummary;
    else if (page == "refs")
      route.kind = PageKind::kRefs;
    else if (page == "tag")
      route.kind = PageKind::kTag;
    else if (page == "about") {
      route.kind = PageKind::kAbout;
      route.slashless = slash == std::string_view::npos;
    }
    else if (page == "atom") {
      route.kind = PageKind::kAtom;
      route.query = query;
    }
    else if (page == "log")
      route.kind = PageKind::kLog;
    else if (page == "commit")
      route.kind = PageKind::kCommit;
    else if (page == "diff")
      route.kind = PageKind::kDiff;
    else if (page == "esi-diff")
      route.kind = PageKind::kDiffFragment;
    else if (page == "patch")
      route.kind = PageKind::kPatch;
    else if (page == "rawdiff")
      route.kind = PageKind::kRawDiff;
    else if (page == "tree")
      route.kind = PageKind::kTree;
    else if (page == "esi-blob")
      route.kind = PageKind::kBlob;
    else if (page == "esi-about")
      route.kind = PageKind::kReadme;
    else if (page == "plain")
      route.kind = PageKind::kPlain;
    else if (page == "snapshot")
      route.kind = PageKind::kSnapshot;
    else if (page == "blame")
      // Blame: rendered here with or without a forge behind: a first blame takes 0.6-1.0x git's
      // CPU with a commit-graph (or the in-memory index's filters) and up to 1.16x without
      // (bench/results/blame-git.md), and one that reaches a remembered blame takes a diff.
      route.kind = PageKind::kBlame;
    else if (page == "stats")
      route.kind = PageKind::kStats;
    else
      return std::nullopt;
    // The about page of a file beside the readme (about/PATH), and an about-filter written in
    // Lua (cgit runs it inside its own process), stay with the upstream.
    if ((route.kind == PageKind::kAbout && !route.path.empty()) ||
        ((route.kind == PageKind::kAbout || route.kind == PageKind::kReadme) &&
         registry_->repos()[route.repo].about_filter.starts_with("lua:")))
      return std::nullopt;
    // Snapshots cgit makes with a program shellac does not run (lzip, zstd) and signatures
    // (NAME.asc, from git notes) stay with the upstream when enabled.
    if (route.kind == PageKind::kSnapshot) {
      const auto* format = SnapshotFormatOf(route.path);
      if (route.path.ends_with(".asc")) return std::nullopt;
      if (format && !format->rendered &&
          (registry_->repos()[route.repo].snapshots & format->bit) != 0)
        return std::nullopt;
    }
    // cgit's enable-commit-graph (an ASCII history graph beside the rows, and with it git's
    // topological order) and commit-sort (date or topo order) change what every log page shows
    // and in which order; shellac draws neither: such a repository's log pages stay with the
    // upstream.
    const conf::Config::Repository& options = registry_->repos()[route.repo];
    if (route.kind == PageKind::kLog && (options.enable_commit_graph || options.commit_sort != 0))
      return std::nullopt;
    // A source-filter written in Lua (cgit runs it inside its own process), or of a type cgit
    // does not know, leaves the repository's tree pages to the upstream; an exec filter is run.
    const std::string& source_filter = registry_->repos()[route.repo].source_filter;
    if ((route.kind == PageKind::kTree || route.kind == PageKind::kBlob) &&
        !source_filter.empty() && !IsExecFilter(source_filter))
      return std::nullopt;
    // Commit, diff, log, stats, atom and patch pages are rendered limited to a path; a rawdiff's
    // path is cgit's to ignore (its rawdiff is the whole diff). Paths never climb ("..") and have
    // no empty segment ("commit//x", "commit/a//b").
    while (route.path.ends_with('/')) route.path.pop_back();
    const bool tree_path = route.kind == PageKind::kTree || route.kind == PageKind::kPlain ||
                           route.kind == PageKind::kSnapshot || route.kind == PageKind::kBlame;
    // refs/heads and refs/tags pick a table; any other refs path shows both, as cgit's.
    if (route.kind == PageKind::kRefs) {
      route.path = route.path.starts_with("heads") ? "heads"
                   : route.path.starts_with("tags") ? "tags"
                                                    : "";
    }
    if (!route.path.empty() && route.kind != PageKind::kCommit && route.kind != PageKind::kDiff &&
        route.kind != PageKind::kDiffFragment && route.kind != PageKind::kLog &&
        route.kind != PageKind::kRefs && route.kind != PageKind::kStats &&
        route.kind != PageKind::kPatch && route.kind != PageKind::kRawDiff &&
        route.kind != PageKind::kAtom && route.kind != PageKind::kBlob &&
        route.kind != PageKind::kReadme && !tree_path)
      return std::nullopt;
    // The blob part's path is the file's name, the source-filter's argument (no folder).
    if (route.kind == PageKind::kBlob && route.path.find('/') != std::string::npos)
      return std::nullopt;
    // A tree or plain path that climbs or has an empty segment is this page's 404 (Render says
    // why); elsewhere such a path is not routed.
    if (!tree_path && BadPath(route.path)) return std::nullopt;
    if (route.kind == PageKind::kRawDiff) route.path.clear();
  }

  std::string key, value;
  bool searched_or_sorted = false;  // q= or s=
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (!Decode(pair.substr(0, eq), true, &key)) continue;
    if (key == "q" || key == "s") searched_or_sorted = true;
    if (eq == std::string_view::npos || !Decode(pair.substr(eq + 1), true, &value)) continue;
    if (key == "id")
      route.id = value;
    else if (key == "id2")
      route.id2 = value;
    else if (key == "h")
      route.head = value;
    else if (key == "context")
      route.diff.context = std::clamp(ParseInt(value, 3), 1, 40);
    else if (key == "ignorews")
      route.diff.ignorews = ParseInt(value, 0) != 0;
    else if (key == "dt") {
      const int dt = ParseInt(value, 0);
      route.diff.dt = dt >= 0 && dt <= 2 ? dt : 0;  // cgit treats unknown modes as unified
    } else if (key == "abbrev") {
      const int abbrev = ParseInt(value, 0);
      route.diff.abbrev = abbrev >= 7 && abbrev <= 40 ? abbrev : 0;
    } else if (key == "ofs") {
      route.ofs = static_cast<unsigned>(std::clamp(ParseInt(value, 0), 0, 1 << 30));
      route.ofs_signed = Atoi(value);
    } else if (key == "period")
      route.period = value;
    else if (key == "showmsg")
      route.showmsg = ParseInt(value, 0) != 0;
    else if (key == "follow")
      route.follow = ParseInt(value, 0) != 0;
    else if (key == "qt")
      route.grep = value;
    else if (key == "q")
      route.search = value;
  }

  // The index searched (q=) or sorted by a column (s=) stays with the upstream.
  if (route.kind == PageKind::kIndex && searched_or_sorted) return std::nullopt;
  // follow=1 is rendered on a path log with enable-follow-links (git log --follow). Elsewhere cgit
  // carries it into some of the page's links (the tabs, the path's) and not others: the upstream
  // answers.
  if (route.follow && (route.kind != PageKind::kLog || route.path.empty() ||
                       !registry_->repos()[route.repo].enable_follow_links))
    return std::nullopt;

  // A file's lines (blob part) or a readme (readme part) by blob id; with a source-filter or an
  // about-filter the part is the filter's output for the file's name and bytes: the key names
  // both (forks with the same filter share it, another filter is another part).
  const bool blob_part = route.kind == PageKind::kBlob, readme_part = route.kind == PageKind::kReadme;
  if ((blob_part || readme_part) && IsFullSha(route.id) && route.id2.empty()) {
    const conf::Config::Repository& repo = registry_->repos()[route.repo];
    const std::string& filter = blob_part ? repo.source_filter : repo.about_filter;
    route.cache_key = (blob_part ? "gitfrag/blob/" : "gitfrag/about/") + route.id;
    if (!filter.empty()) {
      route.cache_key += "?filter=";
      AppendUrlEncoded(&route.cache_key, filter, /*keep_slash=*/true);
      route.cache_key += "&name=";
      AppendUrlEncoded(&route.cache_key, route.path, /*keep_slash=*/readme_part);
    } else {
      route.path.clear();
    }
  }
  // The neutral outputs show abbreviated ids: their length is part of the key. An include URL
  // names it (the frame knows its repository's); otherwise it is the repository's.
  const bool neutral = route.kind == PageKind::kDiffFragment || route.kind == PageKind::kPatch ||
                       route.kind == PageKind::kRawDiff;
  if (neutral && route.diff.abbrev == 0) route.diff.abbrev = registry_->Abbrev(route.repo);
  const bool id_full = IsFullSha(route.id) && (route.id2.empty() || IsFullSha(route.id2));
  if (id_full && route.diff.abbrev != 0) {
    if (route.kind == PageKind::kDiffFragment) {
      route.cache_key = "gitfrag/diff/" + route.id + (route.id2.empty() ? "" : "/" + route.id2) +
                        "?" + OptionsKey(route.diff);
      if (!route.path.empty()) {
        route.cache_key += "&path=";
        AppendUrlEncoded(&route.cache_key, route.path, /*keep_slash=*/true);
      }
    } else if ((route.kind == PageKind::kPatch || route.kind == PageKind::kRawDiff) &&
               route.id2.empty()) {
      // git's diff machinery reads the repository's gitattributes: the text is every fork's
      // where there are none (0), else this repository's while its attribute files stay as they
      // are. Not known (no render yet, or a file changed since the last): rendered, not stored.
      uint64_t attributes = 0;
      if (registry_->Attributes(route.repo, &attributes)) {
        route.cache_key = (route.kind == PageKind::kPatch ? "gitfrag/patch/" : "gitfrag/rawdiff/") +
                          route.id + "?abbrev=" + std::to_string(route.diff.abbrev);
        if (attributes != 0) route.cache_key += "&attributes=" + std::to_string(attributes);
        // The mail's header names the author's address unless noplainemail is set.
        if (route.kind == PageKind::kPatch && !plain_email_) route.cache_key += "&noplainemail=1";
        if (route.kind == PageKind::kPatch && !route.path.empty()) {
          route.cache_key += "&path=";
          AppendUrlEncoded(&route.cache_key, route.path, /*keep_slash=*/true);
        }
      }
    }
  }
  return route;
}

std::optional<Route> Site::MatchClone(Route route, std::string_view file,
                                      std::string_view query) const {
  // enable-http-clone=0: cgit answers 404; the upstream (cgit with the same cgitrc, or a
  // smart-HTTP server such as git http-backend at these URLs) answers instead.
  if (!http_clone_) return std::nullopt;
  // A git client asks for "info/refs?service=git-upload-pack" first: with an upstream, that goes
  // to it, so a smart-HTTP server behind shellac keeps serving clones (cgit answers it as shellac
  // would). A dumb client's later requests carry no service=.
  if (backend_ && file == "info/refs") {
    for (size_t start = 0; start <= query.size();) {
      const size_t amp = std::min(query.find('&', start), query.size());
      if (query.substr(start, amp - start).starts_with("service=")) return std::nullopt;
      start = amp + 1;
    }
  }
  route.kind = PageKind::kClone;
  route.path = std::string(file);
  return route;
}

std::string Site::EsiUrl(size_t repo, std::string_view kind, std::string_view path,
                         bool keep_slash, std::string_view sha) const {
  std::string url = virtual_root_;
  AppendUrlEncoded(&url, repositories()[repo].url, /*keep_slash=*/true);
  url.append("/esi-").append(kind).append("/");
  AppendUrlEncoded(&url, path, keep_slash);
  url += "?id=";
  url += sha;
  return url;
}

std::string Site::BlobUrl(size_t repo, std::string_view sha, std::string_view name) const {
  const bool named = !repositories()[repo].source_filter.empty();
  return EsiUrl(repo, "blob", named ? name : std::string_view(), /*keep_slash=*/false, sha);
}

std::string Site::ReadmeUrl(size_t repo, std::string_view sha, std::string_view name,
                            std::string_view head) const {
  const bool named = !repositories()[repo].about_filter.empty();
  std::string url = EsiUrl(repo, "about", named ? name : std::string_view(), /*keep_slash=*/true, sha);
  if (!head.empty()) {
    url += "&h=";
    AppendUrlEncoded(&url, head, /*keep_slash=*/true);
  }
  return url;
}

std::string Site::FragmentUrl(size_t repo, std::string_view sha, std::string_view sha2,
                              const DiffOptions& options, std::string_view path) const {
  std::string url = EsiUrl(repo, "diff", path, /*keep_slash=*/true, sha);
  if (!sha2.empty()) url.append("&id2=").append(sha2);
  url.append("&").append(OptionsKey(options));
  return url;
}

uint64_t Site::RepoState(size_t repo) const {
  return registry_->State(repo);
}

Page Site::Render(const Route& route) const {
  const Chrome chrome{virtual_root_, css_,       logo_,        robots_,         favicon_,
                      root_title_,   root_desc_, index_links_, max_repo_count_, *chrome_memo_};
  ResetAgeHorizon();
  if (route.kind == PageKind::kIndex) {
    Page page = RenderIndex(chrome, registry_->repos(), route.ofs_signed);
    page.valid_until = AgeHorizon();
    return page;
  }
  if (route.repo >= registry_->repos().size()) return ErrorPage(404, "no such repository");
  std::string error;
  Registry::Lease lease = registry_->Acquire(route.repo, &error);
  if (!lease) return ErrorPage(500, error);
  std::string body;
  Page page;
  {
    Writer out(&body);
    const PageContext ctx{*this, chrome, route, registry_->repos()[route.repo], lease, out};
    switch (route.kind) {
      case PageKind::kCommit:
        page = RenderCommit(ctx);
        break;
      case PageKind::kDiff:
        page = RenderDiffPage(ctx);
        break;
      case PageKind::kDiffFragment:
        page = RenderFragment(ctx);
        break;
      case PageKind::kPatch:
        page = RenderPatch(ctx);
        break;
      case PageKind::kRawDiff:
        page = RenderRawDiff(ctx);
        break;
      case PageKind::kLog:
        page = RenderLog(ctx);
        break;
      case PageKind::kTree:
        page = RenderTree(ctx);
        break;
      case PageKind::kBlob:
        page = RenderBlob(ctx);
        break;
      case PageKind::kPlain:
        page = RenderPlain(ctx);
        break;
      case PageKind::kSummary:
        page = RenderSummary(ctx);
        break;
      case PageKind::kRefs:
        page = RenderRefs(ctx);
        break;
      case PageKind::kTag:
        page = RenderTag(ctx);
        break;
      case PageKind::kAbout:
        page = RenderAbout(ctx);
        break;
      case PageKind::kReadme:
        page = RenderReadme(ctx);
        break;
      case PageKind::kAtom:
        page = RenderAtom(ctx);
        break;
      case PageKind::kSnapshot:
        page = RenderSnapshot(ctx);
        break;
      case PageKind::kBlame:
        page = RenderBlame(ctx);
        break;
      case PageKind::kClone:
        page = RenderClone(ctx);
        break;
      case PageKind::kStats:
        page = RenderStats(ctx);
        break;
      case PageKind::kIndex:
        break;
    }
    out.Flush();
    if (page.status == 200 && page.esi) {
      page.shared = out.TakeShared();
      page.includes = out.TakeIncludes();
    }
  }
  if (page.status == 200) page.body = std::move(body);
  page.repo_state = lease.state();
  page.valid_until = AgeHorizon();
  return page;
}

Page Site::RenderAssembled(const Route& route) const {
  Page page = Render(route);
  if (!page.esi) return page;
  static constexpr std::string_view kOpen = "<esi:include src=\"";
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t start = page.body.find(kOpen, pos);
    if (start == std::string::npos) break;
    const size_t url_start = start + kOpen.size();
    const size_t url_end = page.body.find('"', url_start);
    const size_t tag_end = page.body.find("/>", url_end);
    if (url_end == std::string::npos || tag_end == std::string::npos) break;
    out.append(page.body, pos, start - pos);
    const std::string url = page.body.substr(url_start, url_end - url_start);
    const size_t q = url.find('?');
    auto fragment_route =
        Match(std::string_view(url).substr(0, q),
              q == std::string::npos ? std::string_view() : std::string_view(url).substr(q + 1));
    if (fragment_route) out += Render(*fragment_route).body;
    pos = tag_end + 2;
  }
  out.append(page.body, pos);
  page.body = std::move(out);
  page.esi = false;
  return page;
}

}  // namespace shellac::gitfrag

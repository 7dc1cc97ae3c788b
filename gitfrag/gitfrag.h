// gitfrag: the resident git renderer. Renders cgit-compatible pages for the repositories in a
// conf::Config with libgit2, inside the shellac process, with repositories kept open.
//
// How the proxy uses it:
//   1. At start and on SIGHUP: `auto site = std::make_shared<const Site>(config);` (no git I/O;
//      repositories open lazily on first render). Keep one RenderPool for the process.
//   2. On the event loop, per request: `site->Match(path, query)`. nullopt -> not a gitfrag URL
//      (pass to the upstream / other routes). Otherwise a Route: cheap, no git I/O.
//   3. If `route.cache_key` is not empty the output is repository-neutral and immutable: look it
//      up in the store under that key; on a miss render and store it forever. Frames (commit and
//      diff pages, log, index) have an empty key: render them per request.
//   4. Render on the pool: `pool.Submit(site, route, admission, done)` (render_queue.h says who
//      renders next). kBusy -> refused at once: answer 503 + Retry-After. `done(Page)` runs on a
//      pool thread, or, for a job refused after it was queued (Page::refusal set, status 503), on
//      the thread that refused it; marshal it back to the event loop yourself.
//   5. A Page with `esi` set carries `<esi:include src="URL"/>` tags. Each URL is a gitfrag URL
//      (the diff fragment, "{virtual-root}{repo}/esi-diff/?id=SHA&...") that Match() routes back
//      to the fragment with its repository-neutral key: resolve it through step 3.
//
// Threads: Site is immutable after construction apart from internal, locked caches (open
// repositories, ref indexes); every method may be called from any thread. Render never throws.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "conf/config.h"
#include "gitfrag/filter.h"
#include "gitfrag/render_queue.h"

namespace shellac::gitfrag {

enum class PageKind : uint8_t {
  kIndex,         // "/"                       repository list (frame)
  kLog,           // "/REPO/log/[PATH]?h=&id=&ofs=&showmsg=&qt=&q=" (frame)
  kCommit,        // "/REPO/commit/[PATH]?id=" (frame with an include of kDiffFragment)
  kDiff,          // "/REPO/diff/[PATH]?id=[&id2=]" (frame with an include of kDiffFragment)
  kDiffFragment,  // "/REPO/esi-diff/[PATH]?id=[&id2=]" diffstat + diff, repository-neutral
  kPatch,         // "/REPO/patch/?id="        text/plain, repository-neutral
  kRawDiff,       // "/REPO/rawdiff/?id="      text/plain, repository-neutral
  kTree,          // "/REPO/tree/[PATH]?h=&id=" a folder's listing, or a file (include of kBlob)
  kBlob,          // "/REPO/esi-blob/[NAME]?id=BLOB" a file's numbered lines (through the
                  // source-filter, given NAME, when one is set) or hex dump, neutral
  kPlain,         // "/REPO/plain/[PATH]?h=&id=" a file's bytes, or a folder's plain listing
  kSummary,       // "/REPO/"                  branches, tags, recent log, clone URLs (frame)
  kRefs,          // "/REPO/refs/[heads|tags]"  every branch and tag (frame)
  kTag,           // "/REPO/tag/?h=TAG"         one tag, annotated or lightweight (frame)
  kAbout,         // "/REPO/about/"             the readme, through about-filter when set (frame)
  kAtom,          // "/REPO/atom/?h="           Atom feed of a branch's newest commits (frame)
  kSnapshot,      // "/REPO/snapshot/NAME.EXT?h=&id=" an archive (streamed)
  kClone,         // "/REPO/info/refs", "/REPO/objects/...", "/REPO/HEAD": dumb-HTTP clone files
  kStats,         // "/REPO/stats/[PATH]?h=&period=&ofs=" commits per author per period (frame)
  kBlame,         // "/REPO/blame/PATH?h=&id="  each line's commit (frame; enable-blame)
  kReadme,        // "/REPO/esi-about/[NAME]?id=BLOB&h=" the about page's readme (through the
                  // about-filter, given NAME, when one is set), neutral
};
inline constexpr size_t kPageKinds = 20;
// What the kinds above render, for messages (the proxy's 404 when no forge is behind it): keep it
// true when a kind is added.
inline constexpr const char* kRenderedPages =
    "the repository index and the summary, refs, tag, about, log, tree, plain, commit, diff, "
    "patch, rawdiff, blame, atom, stats and snapshot pages of its repositories, and their dumb-HTTP "
    "clone files (info/refs, objects/, HEAD)";
const char* PageKindName(PageKind kind);  // "index", "log", "commit", ... for metrics labels

// Diff options as cgit has them. Normalised: context in 1..40 (cgit's choices are free-form too;
// we clamp), ignorews 0/1, dt 0 (unified), 1 (side-by-side), 2 (stat only).
struct DiffOptions {
  int context = 3;
  bool ignorews = false;
  int dt = 0;
  // Hex digits of the ids in "index" lines (git's default for the repository, see abbrev.h);
  // 0: the repository's own when rendered. Part of the repository-neutral keys, since the length
  // grows with the repository.
  int abbrev = 0;
  // git's rename limit for the commit and diff pages and the log's counts (renames.h): the
  // cgitrc's renamelimit (0: none), set by the Site, never by a URL. Part of the fragment's key
  // when it is not git's default, 1000.
  int rename_limit = 1000;
  bool operator==(const DiffOptions&) const = default;
};

struct Route {
  PageKind kind = PageKind::kIndex;
  size_t repo = 0;   // index into Site::repositories() (unused for kIndex)
  std::string id;    // as given (full SHA, short SHA, ref name) or "" for the default
  std::string id2;   // diff: the other side; "" means the first parent
  std::string head;  // h=: the branch the frame is shown for ("" = repository HEAD)
  std::string path;  // path limit (commit/diff PATH) or the file/folder (tree, plain), no leading
                     // or trailing '/'; tree and plain keep a climbing one ("..") for Render's 404
  DiffOptions diff;
  unsigned ofs = 0;  // log: commits to skip
  // ofs= as cgit's atoi reads it, sign kept: the stats page's authors shown (-1: all).
  int ofs_signed = 0;
  std::optional<std::string> period;  // stats: period= as given (w, m, q, y or a period's name)
  bool showmsg = false;  // log: each commit's whole message under its subject
  // log: follow=1, git log --follow (only a path log of a repository with enable-follow-links is
  // rendered so: any other page asked with follow=1 goes to the upstream).
  bool follow = false;
  // about: asked as "/REPO/about", without the slash (cgit answers 301 to "about/", query dropped)
  bool slashless = false;
  // log: qt= (grep, author, committer, range) and q= (the pattern, or a range's revisions), as
  // given (cgit's links carry both when both were given, even empty).
  std::optional<std::string> grep, search;
  // atom: the query string as given (part of the feed's id), and "http[s]://HOST" that its links
  // start with, set by the proxy from the request (cgit: HTTP_HOST, HTTPS); empty: no links.
  std::string query, origin;
  // Repository-neutral outputs addressed by full SHAs only: "gitfrag/diff/SHA[/SHA2]?context=3&
  // ignorews=0&dt=0&abbrev=N[&path=P]", "gitfrag/patch/SHA?abbrev=N[&attributes=A]",
  // "gitfrag/rawdiff/SHA?abbrev=N[&attributes=A]" (A: the repository's gitattributes sources,
  // Registry::Attributes; none: no A), "gitfrag/blob/SHA". Empty for frames and whenever an id is not a full SHA (a branch name moves, so that
  // output is rendered per request), and for patch and rawdiff while A is not known.
  std::string cache_key;
};

// A body made piece by piece on render threads (snapshots, large files): too large to hold whole,
// so it is neither stored nor compressed by the proxy. The proxy sends the page's head, then asks
// for one piece at a time (each on a pool thread) as the client takes them.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  enum class Result { kMore, kDone, kFailed };
  // Appends the next piece (about kPieceBytes; more when one object is larger) to *out. kDone:
  // that was the last (it may append a last piece); kFailed: *error says why, the body is cut.
  virtual Result Next(std::string* out, std::string* error) = 0;
  // The next piece as bytes that may be shared: a stream that keeps its pieces (a kept or joined
  // snapshot, snapshot_cache.h) hands each reader the kept piece itself, not a copy. Null or empty:
  // no piece. By default Next's piece.
  using SharedPiece = std::shared_ptr<const std::string>;
  virtual Result NextShared(SharedPiece* out, std::string* error) {
    auto piece = std::make_shared<std::string>();
    const Result result = Next(piece.get(), error);
    *out = std::move(piece);
    return result;
  }
  // The body's length when it is known before the first piece (sent as Content-Length; a stream
  // that then fails cuts the connection): a file's. nullopt: chunked (HTTP/1.1) or to the close.
  virtual std::optional<uint64_t> Length() const { return std::nullopt; }
  // False when the body depends on more than what it was asked by (a snapshot archive with an
  // export-subst file: the repository's refs and abbreviation), so that it is neither kept nor
  // joined by another repository's request (snapshot_cache.h).
  virtual bool Shareable() const { return true; }
  static constexpr size_t kPieceBytes = 256 * 1024;
};

struct Page {
  int status = 200;
  std::string content_type = "text/html; charset=UTF-8";
  std::string body;
  std::string reason;  // for status != 200: one line saying why (also in the body)
  bool esi = false;    // body contains <esi:include> tags the proxy must resolve
  std::vector<std::pair<std::string, std::string>> headers;  // extra (Content-Disposition, ...)
  // [begin, end) byte ranges of body that other pages repeat exactly (the chrome around a frame's
  // commit: head, branch list, option panel, footer; a file view's part, its line numbers in runs
  // of 256), in order: the proxy compresses each once.
  std::vector<std::pair<uint64_t, uint64_t>> shared;
  // [begin, end) byte ranges of body that are its <esi:include src="URL"/> tags, in order (a page
  // with `esi` set): the renderer wrote them and no other ESI markup (git data is escaped), so the
  // proxy makes the frame's template from them without parsing the body.
  std::vector<std::pair<uint64_t, uint64_t>> includes;
  Refusal refusal = Refusal::kNone;  // not rendered: the render queue refused it (status 503)
  // Set (status 200, body empty): the body comes from this stream, not from `body`.
  std::shared_ptr<BodyStream> stream;
  // Served but never stored, even under a neutral key, nor kept whole: the output of a filter that
  // failed (killed after its time, or exited non-zero), or a log whose walk its time cut short,
  // which the next request tries again.
  bool no_store = false;
  // Not empty: every request whose page carries this key gets the same bytes (info/refs of one
  // generation of a repository's refs), so the proxy may keep the page as it sends it under this
  // key (in its own store, never shared with other nodes) instead of compressing the body again.
  std::string reuse_key;
  // What the page was rendered from besides its route and the Site: the state of its repository's
  // refs and abbreviation length (Site::RepoState; 0 for the index, which reads every
  // repository), and the first instant (Unix seconds) at which a relative age it shows ("5 min.")
  // would read differently (0: it shows none). The proxy keeps a page whole while both hold.
  uint64_t repo_state = 0;
  int64_t valid_until = 0;
  // Not empty (status 200): the body is the repository-neutral part kept under this key (the
  // plain page: a file's bytes, "gitfrag/plain/SHA"), the same for every fork, path and revision
  // that shows the blob, so the proxy keeps it once and serves every such page from it with this
  // page's status and headers. `part` set: found kept (PartStore::Find), and `body` is empty;
  // otherwise `body` holds the part's bytes, which the proxy keeps under the key with `part_meta`.
  std::string part_key;
  std::shared_ptr<const void> part;
  std::string part_meta;
};

// Snapshot archives kept whole (snapshot_cache.h): one copy per commit, format and folder, read by
// every fork, branch and URL spelling that asks for it.
struct SnapshotCacheStats {
  uint64_t budget = 0;      // snapshot-cache-size
  uint64_t max_stored = 0;  // snapshot-max-stored
  uint64_t bytes = 0;       // the archives kept now
  uint64_t archives = 0;    // how many
  uint64_t made = 0;        // archives started (a tree read)
  uint64_t hits = 0;        // requests served from a kept archive
  uint64_t joins = 0;       // requests that joined an archive being made
  uint64_t kept = 0;        // archives kept when done
  uint64_t too_large = 0;   // archives that passed max_stored (streamed only)
  uint64_t evicted = 0;     // kept archives dropped for room
};
// The process's bounds (at start: snapshot-cache-size, snapshot-max-stored; until then 32 MiB and
// 8 MiB); drops what is kept.
void ConfigureSnapshotCache(uint64_t budget, uint64_t max_stored);
SnapshotCacheStats SnapshotCacheMetrics();

// Where a snapshot's tar.gz and zip find each blob compressed once (archive.h): raw deflate
// pieces made once per blob id and kept under a key the archive names, so that the archive of a
// new commit compresses only what the commits before it did not have. The proxy keeps them in its
// store (bounded by cache-size, evicted like any object); without one, every archive compresses
// its blobs itself. Threads: called from render threads.
class ArchivePieceStore {
 public:
  // One piece: raw deflate ending on a byte boundary with a sync flush (no final block).
  struct Piece {
    std::string_view deflate;
    uint32_t crc = 0;     // crc32 of its bytes
    uint32_t length = 0;  // its uncompressed length
  };
  struct Kept {
    std::shared_ptr<const void> owner;  // keeps the views below alive
    std::vector<Piece> pieces;
    std::string meta;  // what Keep was given with them
  };
  virtual ~ArchivePieceStore() = default;
  // False when nothing is kept under `key`.
  virtual bool Find(std::string_view key, Kept* out) = 0;
  // Keeps copies of `pieces` (and `meta`) under `key` when there is room.
  virtual void Keep(std::string_view key, const std::vector<Piece>& pieces, std::string_view meta) = 0;
  // The largest blob (uncompressed bytes) worth making to keep: larger ones are compressed per
  // request, in bounded pieces, and never kept.
  virtual uint64_t max_blob_bytes() const = 0;
};
// The process's (at start, by the proxy); null: none.
void SetArchivePieceStore(std::shared_ptr<ArchivePieceStore> store);

// Where a page finds a repository-neutral part of its body kept by the proxy (Page::part_key):
// the proxy's store. Threads: called from render threads.
class PartStore {
 public:
  virtual ~PartStore() = default;
  // What keeps the part kept under `key` alive (opaque: the proxy's own object), with the meta
  // text it was kept with in *meta; null when nothing is kept under `key`.
  virtual std::shared_ptr<const void> Find(std::string_view key, std::string* meta) = 0;
};
// The process's (at start, by the proxy); null: none, every page reads its part itself.
void SetPartStore(std::shared_ptr<PartStore> store);
// The plain page's file bodies: found kept (no blob read), or read from the repository.
struct PlainPartStats {
  uint64_t found = 0;
  uint64_t read = 0;
};
PlainPartStats PlainPartMetrics();

class Registry;
class ChromeMemo;

class Site {
 public:
  // Copies what it needs from `config` (repositories, virtual-root, limits, page chrome).
  explicit Site(const conf::Config& config);
  ~Site();
  Site(const Site&) = delete;
  Site& operator=(const Site&) = delete;

  // Cheap, no git I/O (only, once per repository, the headers of its pack indexes for the
  // abbreviation length in neutral keys): whether `path` (URL path, percent-encoded as received) with `query`
  // (without '?') is a gitfrag page. Routing picks the longest repository URL that prefixes the
  // path. An unknown repository below virtual-root is not matched (nullopt) so other routes or a
  // 404 apply; use Render on a kIndex route for the repository list.
  std::optional<Route> Match(std::string_view path, std::string_view query) const;

  // Renders one page. Runs git I/O: call it on a pool thread, never on an event loop.
  // Statuses: 200; 404 unknown id or path (reason says which); 400 ambiguous short id;
  // 500 the repository cannot be opened.
  Page Render(const Route& route) const;

  // The URL a frame puts in <esi:include src=...> for the diff of `sha` (against `sha2` when not
  // empty) in repository `repo`. Match() on it gives kDiffFragment with the neutral key.
  // `path` limits the diff to a file or folder ("" for the whole commit).
  std::string FragmentUrl(size_t repo, std::string_view sha, std::string_view sha2,
                          const DiffOptions& options, std::string_view path = {}) const;

  // The URL a tree page puts in <esi:include src=...> for the view of blob `sha` (numbered lines
  // or hex dump): Match() on it gives kBlob with the neutral key "gitfrag/blob/SHA". When the
  // repository has a source-filter the file's `name` (its argument) is in the URL and the key is
  // "gitfrag/blob/SHA?filter=CMD&name=NAME".
  std::string BlobUrl(size_t repo, std::string_view sha, std::string_view name = {}) const;
  // The URL an about page puts in <esi:include src=...> for readme blob `sha` (its `name`, the
  // about-filter's argument, in the URL when the repository has an about-filter; `head`, the
  // branch the page shows, to check that the blob is the readme there): Match() on it gives
  // kReadme with the neutral key "gitfrag/about/SHA", or "gitfrag/about/SHA?filter=CMD&name=NAME".
  std::string ReadmeUrl(size_t repo, std::string_view sha, std::string_view name,
                        std::string_view head) const;
  uint64_t max_blob_size() const { return max_blob_size_; }  // KiB, 0: no limit
  // The content type cgit's plain page looks up for the file `name` (a basename): its extension
  // (after the last '.') in the cgitrc's mimetype.EXT= keys, then in its mimetype-file (read when
  // this Site was made); "" when neither names one.
  std::string MimeType(std::string_view name) const;
  unsigned max_commit_count() const { return max_commit_count_; }  // log: commits per page
  // cgit's summary-branches, summary-tags, summary-log and clone-prefix.
  struct SummaryOptions {
    unsigned branches = 10, tags = 10, log = 10;
    std::string clone_prefix;
  };
  const SummaryOptions& summary() const { return summary_; }
  unsigned max_atom_items() const { return max_atom_items_; }  // cgit's max-atom-items
  // Whether pages show e-mail addresses (cgit's noplainemail=1 turns them off).
  bool plain_email() const { return plain_email_; }
  // How long a cgitrc filter (about-filter, source-filter) may run (filter-timeout) and write.
  const FilterLimits& filter_limits() const { return filter_limits_; }
  // blame-timeout: a blame page stops (503) once its blame has taken this long.
  std::chrono::milliseconds blame_timeout() const { return blame_timeout_; }

  const std::vector<conf::Config::Repository>& repositories() const;
  const std::string& virtual_root() const { return virtual_root_; }
  // The index of the repository whose URL (repo.url) is `url`, if any.
  std::optional<size_t> RepositoryByUrl(std::string_view url) const;

  // What pre-rendering (`shellac warm`) walks: the commits reachable from HEAD, or from every
  // branch and tag with `all_refs`, newest committer date first; those committed before `since`
  // (Unix seconds) left out, at most `limit` of them (0: no limit).
  struct HistoryQuery {
    int64_t since = 0;
    size_t limit = 0;
    bool all_refs = false;
  };
  // Runs git I/O: call it on a pool thread. Full SHAs into *shas; false with *error when the
  // repository cannot be opened or walked.
  bool History(size_t repo, const HistoryQuery& query, std::vector<std::string>* shas,
               std::string* error) const;

  // The state of repository `repo`'s refs and abbreviation length that a render starting now
  // would read (Page::repo_state), when a render looked at the files within the last second (as
  // often as renders look); 0 otherwise. No I/O, no lock: for an event loop, to find a page kept
  // from an earlier render before rendering it again.
  uint64_t RepoState(size_t repo) const;

  // Test helper: renders `route` and, for a frame, replaces each include with the rendered
  // fragment (what a client of the proxy receives, without the cache).
  Page RenderAssembled(const Route& route) const;

 private:
  // The start of a part's include URL: VIRTUAL_ROOT REPO/esi-KIND/PATH?id=SHA (PATH encoded
  // with or without its slashes kept).
  std::string EsiUrl(size_t repo, std::string_view kind, std::string_view path, bool keep_slash,
                     std::string_view sha) const;
  // Whether a dumb-HTTP clone path is served here (enable-http-clone), and its route.
  std::optional<Route> MatchClone(Route route, std::string_view file, std::string_view query) const;

  std::string virtual_root_;
  std::string css_, logo_, robots_, favicon_, root_title_, root_desc_;
  bool index_links_ = false;    // cgit's enable-index-links
  int max_repo_count_ = 50;     // cgit's max-repo-count
  uint64_t max_blob_size_ = 0;  // KiB, 0: none (cgit's max-blob-size)
  unsigned max_commit_count_ = 50;  // cgit's max-commit-count
  int rename_limit_ = 1000;         // cgit's renamelimit as git applies it (0: no limit)
  std::map<std::string, std::string> mimetypes_;                // mimetype.EXT=, as written
  std::unordered_map<std::string, std::string> mimetype_file_;  // lower-case extension -> type
  bool http_clone_ = true;      // cgit's enable-http-clone
  bool backend_ = false;        // an upstream is configured (smart-HTTP info/refs go to it)
  SummaryOptions summary_;
  unsigned max_atom_items_ = 10;
  bool plain_email_ = true;
  FilterLimits filter_limits_;
  std::chrono::milliseconds blame_timeout_{20000};
  std::unique_ptr<Registry> registry_;
  // The page chrome made once per repository, ref state and branch (render.h).
  std::unique_ptr<ChromeMemo> chrome_memo_;
  std::unordered_map<std::string, size_t> by_url_;  // repository URL -> index
};

// Upper bounds (seconds) of the render time histogram's buckets; a last, unbounded bucket follows.
inline constexpr double kRenderBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                            0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                            1,      2.5,     5,      10};
inline constexpr size_t kRenderBucketCount = std::size(kRenderBuckets) + 1;

// The in-memory history indexes (history_index.h) of repositories without a commit-graph.
struct HistoryIndexMetrics {
  uint64_t budget_bytes = 0;      // history-index-memory
  uint64_t stores = 0;            // indexes built and kept (one per object store)
  uint64_t repositories = 0;      // repositories they answer for (a store's forks share one)
  uint64_t commits = 0;           // commits in them
  uint64_t bytes = 0;             // their size
  uint64_t builds = 0;            // builds ended (kept or not; refreshes and retries included)
  uint64_t refreshes = 0;         // builds that added new commits to a kept index
  uint64_t retries = 0;           // builds that followed a failed one
  uint64_t failed = 0;            // builds not kept (over the budget, a read error)
  uint64_t build_us = 0;          // time the builds took, all together
  uint64_t queued = 0;            // repositories waiting for a build
  uint64_t building = 0;          // 1 while a build runs
  uint64_t building_commits = 0;  // commits the running build has read
};
HistoryIndexMetrics HistoryIndexTotals();

// Remembered blames (blame.h: a finished blame kept under the commit that last touched the path):
// how often the blames of blame pages used one. Counted once per blame; the last two are gauges.
struct BlameMemoStats {
  uint64_t blames = 0;      // blames worked out (blame pages that got past their checks)
  uint64_t used = 0;        // of those, blames that took lines from at least one remembered blame
  uint64_t whole = 0;       // of those, blames whose every line came from one (no diff made)
  uint64_t recalls = 0;     // remembered blames used, all blames together (one may use several)
  uint64_t remembered = 0;  // blames remembered now
  uint64_t bytes = 0;       // about how much memory they take
};
BlameMemoStats BlameMemoMetrics();

// Counters the proxy's /metrics prints. Snapshot values; render time in microseconds.
struct PoolMetrics {
  uint64_t threads = 0;
  uint64_t reserve_threads = 0;
  uint64_t reserve_started = 0;  // renders a reserve thread ran, ever
  uint64_t queue_limit = 0;
  uint64_t client_max_renders = 0;  // 0: no cap
  uint64_t queue_depth = 0;         // waiting now, every class
  uint64_t running = 0;             // rendering now
  uint64_t rejected = 0;            // Submit() answered kBusy
  bool paused[kRenderClasses] = {};
  RenderQueue::Stats queue;  // by class and by reason
  struct Kind {
    uint64_t renders = 0;
    uint64_t errors = 0;  // status != 200
    uint64_t render_us = 0;
    uint64_t buckets[kRenderBucketCount] = {};  // renders by time, not cumulative
    // A streamed body's pieces (a snapshot, a large plain file, a clone's pack), made on render
    // threads after the render: how many, and the time they took (not in render_us).
    uint64_t stream_pieces = 0;
    uint64_t stream_us = 0;
  } kinds[kPageKinds];
};

// The class a page's render waits in: frames (commit, diff, index) ahead of the renders of new
// parts and of history (fragment, patch, rawdiff, log).
RenderClass ClassOf(PageKind kind);

// A fixed set of render threads fed by a RenderQueue (render_queue.h: classes, fair shares across
// clients, bounds by count and time). Completion callbacks run on the pool thread that rendered.
//
// Reserve threads (`reserve_threads`, render-reserve-threads) take only frames and parts of
// clients that have no render running: however long the renders a flood keeps every other thread
// busy with, a newcomer's render starts at once instead of waiting for one of them to end.
//
// Pre-rendering (`shellac warm`, through an admin endpoint) submits at the lowest class:
//   pool.Submit(site, route, {.client = "warm", .render_class = RenderClass::kBackground}, done)
// which runs only while no request's render waits. Background jobs have their own count limit
// (render-queue): keep a window of them in flight and submit the next from `done`; kBusy means the
// window is too wide. Such a job has no time limit unless its Admission names one.
//
// Destruction refuses what still waits (Refusal::kStopping), lets running renders finish, joins.
class RenderPool {
 public:
  enum class Submitted { kQueued, kBusy };
  using Done = std::function<void(Page&&)>;

  // `client_max_renders`: renders one client may have running at once (0: no cap); more wait.
  RenderPool(unsigned threads, size_t queue_limit, size_t client_max_renders = 0,
             unsigned reserve_threads = 0);
  ~RenderPool();
  RenderPool(const RenderPool&) = delete;
  RenderPool& operator=(const RenderPool&) = delete;

  // kBusy when the queue is full and this client has the most waiting (or the pool is stopping):
  // nothing runs and `done` is never called. Otherwise `done` is called exactly once: with the
  // rendered page, or with a 503 Page whose `refusal` says why it never ran (pushed out of a full
  // queue by another client's job, waited past admission.timeout, pool destroyed).
  // `site` is kept alive until the render finishes (a reload may swap the proxy's pointer).
  Submitted Submit(std::shared_ptr<const Site> site, Route route, Admission admission, Done done);
  Submitted Submit(std::shared_ptr<const Site> site, Route route, Done done) {
    return Submit(std::move(site), std::move(route), Admission{}, std::move(done));
  }
  // Any work (tests, and jobs that are not page renders); counted under no page kind. `refused`
  // (may be empty) is called instead of `job` when a queued job is refused.
  Submitted SubmitJob(Admission admission, std::function<void()> job,
                      std::function<void(Refusal)> refused = {});
  Submitted SubmitJob(std::function<void()> job) { return SubmitJob(Admission{}, std::move(job)); }

  // Runs on the render thread before each job, once set (set it before the first Submit). For
  // tests that need every thread held at a known point.
  void SetGate(std::function<void()> gate) { gate_ = std::move(gate); }

  // Holds back (paused) or lets run again the renders of one class: operators pausing background
  // work, tests that need renders waiting at a known point. Waiting jobs keep their deadlines.
  void Pause(RenderClass cls, bool paused);

  PoolMetrics Metrics() const;

 private:
  void Loop(bool reserve);
  void Reap();  // refuses jobs past their deadline, as they pass it

  const size_t queue_limit_;
  const size_t client_max_renders_;
  const unsigned normal_threads_;
  const unsigned reserve_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;         // a job may run
  std::condition_variable reserve_cv_;  // a job a reserve thread may take may run
  unsigned normal_running_ = 0;         // jobs the other threads run now (under mu_)
  // Under mu_: every other thread is busy and a reserve thread could take a waiting job.
  bool ReserveHasWork() const;
  std::condition_variable reaper_cv_;  // an earlier deadline, or stopping
  RenderQueue queue_;
  bool stopping_ = false;
  std::function<void()> gate_;
  std::vector<std::thread> threads_;
  std::thread reaper_;
  std::atomic<uint64_t> running_{0}, rejected_{0}, reserve_started_{0};
  struct KindCounters {
    std::atomic<uint64_t> renders{0}, errors{0}, render_us{0};
    std::atomic<uint64_t> buckets[kRenderBucketCount] = {};
  } kinds_[kPageKinds];
  // Shared with the streams of the pages rendered (a stream may outlive the pool at shutdown).
  struct StreamCounters {
    struct Kind {
      std::atomic<uint64_t> pieces{0}, us{0};
    } kinds[kPageKinds];
  };
  const std::shared_ptr<StreamCounters> streams_ = std::make_shared<StreamCounters>();
  class TimedStream;  // a rendered page's stream, its pieces counted in streams_ (pool.cc)
};

}  // namespace shellac::gitfrag

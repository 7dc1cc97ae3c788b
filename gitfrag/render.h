// What the page renderers share: the render context, cgit's page chrome (head, header with the
// branch list, tabs, footer), URL building and the text helpers for git data. One file per page
// (ui_*.cc) uses these, so each page reads top to bottom like the HTML it emits.
#pragma once

#include <atomic>
#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gitfrag/git.h"
#include "gitfrag/gitfrag.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/registry.h"
#include "gitfrag/writer.h"

namespace shellac::gitfrag {

class ChromeMemo;

struct Chrome {
  const std::string& virtual_root;
  const std::string& css;
  const std::string& logo;
  const std::string& robots;
  const std::string& favicon;
  const std::string& root_title;
  const std::string& root_desc;
  bool index_links;    // enable-index-links
  int max_repo_count;  // the index's page length; <= 0: all
  ChromeMemo& memo;  // the Site's
};

// Everything one render of a repository page needs.
struct PageContext {
  const Site& site;
  const Chrome& chrome;
  const Route& route;
  const conf::Config::Repository& repo;
  Registry::Lease& lease;
  Writer& out;
};

using Args = std::initializer_list<std::pair<const char*, std::string_view>>;

// Writes "{virtual-root}{repo}/{page}/{path}?k=v&amp;k2=v2" (empty values left out), escaped for
// an attribute. `page` "" gives the repository's summary URL "{virtual-root}{repo}/".
void RepoUrl(const PageContext& ctx, std::string_view page, std::string_view path, Args args);
// A log link as cgit's: "{virtual-root}{repo}/log/{path}" with the page's h, id, qt and q (both
// when both were given), then ofs (when > 0), showmsg=1 and follow=1.
void LogUrl(const PageContext& ctx, std::string_view path, unsigned ofs, bool showmsg, bool follow);
// Writes "?k=v&amp;..." or nothing.
void QueryArgs(Writer& out, Args args);

// <!DOCTYPE> ... <body><div id='cgit'> and the header table with the branch switcher and tabs.
// `active_tab` is "commit", "diff", "log", ...; `extra_args` are what the active tab's link keeps
// (cgit keeps id/context/... on the current page's tab).
void PageStart(const PageContext& ctx, std::string_view title, std::string_view active_tab,
               std::string_view id);
void PageEnd(Writer& out);  // footer and closing tags
// The head's generator, robots (cgit's robots=, its value as written; none when empty),
// stylesheet and favicon (favicon=) tags, as cgit's every page has them.
void WriteHeadLinks(Writer& out, const Chrome& chrome);

// The two runs of PageStart's bytes that are the same on every page of a repository shown for one
// branch (the head from the generator line to the branch form, and the branch list through the
// tabs' start), and whether the about tab shows, made once for a state of the repository's refs
// and kept. Every HTML page writes them (45-60 K instructions when made each time: clone URLs,
// the branch list, the readme's lookup). Owned by the Site (a reload makes a new one, so the
// cgitrc's chrome keys are fixed for it); keyed by the repository, its RefIndex's generation
// (a push makes a new index, so a new key) and the branch shown. Bounded by bytes; any thread.
class ChromeMemo {
 public:
  struct Parts {
    std::string head;      // from <meta name='generator'...> through "<form method='get'>\n"
    std::string branches;  // from "<select name='h'" through "<table class='tabs'><tr><td>\n"
    std::string url_start;  // RepoUrl's start: "{virtual-root}{repo}/", escaped
    // Whether the about tab shows, when the refs alone fix it (every readme entry is REF:PATH
    // with REF a branch); none: asked for each page (a readme file outside the repository may
    // appear, a revision other than a branch is git's to resolve).
    std::optional<bool> about;
  };
  // The parts for `ctx`'s repository, refs and branch shown (the route's h=, else HEAD's branch;
  // every name that is not a branch shares one), made now when not kept.
  std::shared_ptr<const Parts> For(const PageContext& ctx);
  uint64_t made() const;  // parts made so far (tests)

 private:
  struct Weigh {
    size_t operator()(const std::shared_ptr<const Parts>& parts) const {
      return parts->head.size() + parts->branches.size() + parts->url_start.size() + 64;
    }
  };
  static constexpr size_t kGenerationBytes = 4 << 20;
  SharedMemo<std::string, std::shared_ptr<const Parts>, std::hash<std::string>,
             std::equal_to<std::string>, Weigh>
      memo_{kGenerationBytes};
  std::atomic<uint64_t> made_{0};
};

// Text of git data for display, as cgit shows it: converted to UTF-8 from `encoding` (a commit's
// encoding header) when that names another encoding; otherwise the bytes as they are.
std::string ToUtf8(std::string_view bytes, const char* encoding);
// "2026-11-29 22:35:48 +0000" in the signature's own offset.
std::string FormatDate(const git_time& when);
// RFC 2822 date as in a patch's Date: header.
std::string FormatMailDate(const git_time& when);
// "2021-03-04T13:07:08+00:00" onto `out` (room for kAtomDateMax bytes): a date as cgit's Atom feed
// writes it, in UTC (other widths for years outside 1000..9999); returns its length (0 for a time
// gmtime_r cannot break down).
inline constexpr size_t kAtomDateLength = 25, kAtomDateMax = 48;
size_t AtomDate(int64_t when, char* out);
// Subject (first line) and body (after the blank lines that follow it) of a commit message.
void SplitMessage(std::string_view message, std::string_view* subject, std::string_view* body);
// "-rw-r--r--" for a git file mode.
const char* ModeString(uint32_t mode);

// Resolves a user-given id (full or short SHA, ref name; "" means h= or HEAD) to a commit.
// On failure returns null and sets *status (404 unknown/malformed, 400 ambiguous) and *reason.
CommitPtr ResolveCommit(git_repository* repo, std::string_view id, std::string_view head,
                        int* status, std::string* reason);

// The commit branch `name` (a short name) points at, when git would resolve `name` to that branch:
// it is in the ref index, is not a full id, and no $GIT_DIR/NAME, refs/NAME or refs/tags/NAME
// comes first in git's order. Else none: resolve it as a revision (ResolveCommit), which costs
// libgit2's lookups of the ref files.
std::optional<git_oid> BranchTip(const PageContext& ctx, const std::string& name);

// The id of the commit a walk starts from for h=`tip` (empty: HEAD): BranchTip's, or for a tag git
// would resolve `tip` to the object packed-refs says it peels to, when the object's header says it
// is a commit (no commit read); else the revision resolved and peeled (ResolveCommit: none, with
// its *status and *reason, when that fails).
std::optional<git_oid> WalkStart(const PageContext& ctx, const std::string& tip, int* status,
                                 std::string* reason);
// `name` resolves to an object of any type (cgit checks h= with get_oid before any page: a name
// of a tag of a blob or a tree, git/git's junio-gpg-pub, or a blob's id, is valid, and a log or
// stats from it has no commits). False for an empty name and for revision syntax, which
// ResolveObject refuses (`:/text` would search all history).
bool NamesObject(git_repository* repo, const std::string& name);

// The root tree of the commit `commit` from the repository's commit-graph, with no commit read;
// none when the graph does not list it or the object database lacks it (a graph can outlive a
// pruned commit).
std::optional<git_oid> GraphTree(git_repository* repo, const git_oid& commit);

// The object a user-given id names (full or short SHA, ref name; revision syntax refused). Null
// with *status (404, 400 ambiguous) and *reason on failure.
ObjectPtr ResolveObject(git_repository* repo, const std::string& spec, int* status,
                        std::string* reason);

// A file name for Content-Disposition's quoted string: '"' and '\' escaped, control bytes
// replaced by '_' (no header injection).
std::string QuotedFilename(std::string_view name);

// ResolveCommit for route.id and, when route.id2 is set, the other side of a diff. False with
// *error set to the error page (404/400) when either fails.
bool ResolveCommits(git_repository* repo, const Route& route, CommitPtr* commit, CommitPtr* other,
                    Page* error);

// A blob's content.
std::string_view BlobText(const git_blob* blob);

// The hunk headers ("@@ -a,b +c,d @@ function") of one file's diff as cgit shows them. cgit runs
// xdiff without a funcname driver, so the function part is xdiff's own: the nearest line above the
// hunk, searched no further back than the previous hunk's start, that begins with an ASCII letter,
// '_' or '$', cut after 80 bytes (even inside a UTF-8 sequence) and then stripped of trailing
// blanks; a hunk that finds none repeats the previous hunk's. libgit2 trims before it cuts, so its
// own headers differ on long lines. The old blob is searched in place, only as far as the hunks go;
// it is read only when a hunk needs the search and `old_text` (the old side's content, if the
// caller has it: FileDiff::OldText) is not given.
class HunkHeaders {
 public:
  HunkHeaders(git_repository* repo, const git_diff_delta& delta,
              std::optional<std::string_view> old_text = std::nullopt)
      : repo_(repo), delta_(delta), given_(old_text) {}
  // Call once per hunk, in order.
  const std::string& Next(const git_diff_hunk& hunk);

 private:
  // The byte offset where 0-based line `line` of text_ starts, moving the forward cursor (hunks
  // come in order); npos when the text has no such line.
  size_t LineStart(long line);

  git_repository* repo_;
  const git_diff_delta& delta_;
  std::optional<std::string_view> given_;
  bool loaded_ = false;
  BlobPtr old_blob_;
  std::string_view text_;     // the old blob's content
  long cursor_line_ = 0;      // a line of text_ ...
  size_t cursor_pos_ = 0;     // ... and where it starts
  long previous_start_ = -1;  // xdiff's funclineprev
  std::string function_;
  std::string header_;
};

// Which of cgit's two ways of diffing a commit: its commit and diff pages call xdiff themselves
// with XDF_NEED_MINIMAL only (git's --minimal, no indent heuristic) after git's rename detection;
// its patch and rawdiff go through git's diff machinery with git's defaults (the indent
// heuristic, the default search, no rename detection).
enum class DiffEngine { kCgitPages, kGitDefaults };

// A file's patch as the diff fragment writes it: libgit2's (PatchLinesOf) or the own line
// diff's (CommitFiles::own_patches), the same hunks and lines either way. A line's content keeps
// its newline; a "\ No newline at end of file" line (GIT_DIFF_LINE_*_EOFNL) follows the line it
// is about, as libgit2 gives it.
struct PatchLine {
  char origin = 0;  // GIT_DIFF_LINE_*
  std::string_view content;
};
struct PatchHunk {
  git_diff_hunk hunk{};    // starts and counts as in the header; header: "@@ -a,b +c,d @@"
  size_t first = 0, count = 0;  // its lines: [first, first + count) of FilePatch::lines
};
struct FilePatch {
  bool made = false;   // false: no patch (the file is left out)
  bool binary = false;
  std::vector<PatchHunk> hunks;
  std::vector<PatchLine> lines;
  size_t added = 0, removed = 0;
};
// libgit2's patch as a FilePatch (pointing into it).
FilePatch PatchLinesOf(git_patch* patch);

// One changed file of a diff as cgit's commit and diff pages show it: its delta (status, paths,
// modes, ids) and the patch of its contents (hunks, lines; its own delta's flags say binary). A
// null patch: it could not be made (the file is left out of the listing, as before), unless
// `own` was made instead.
struct FileDiff {
  git_diff_delta delta{};
  PatchPtr patch;
  // The sides' contents when the patch was made from them (for HunkHeaders; `own` points into
  // the new side's): the own patch reads them from the pack reader (*_bytes), else through
  // libgit2 (*_blob), as libgit2's patch does (old_blob).
  BlobPtr old_blob;
  BlobPtr new_blob;
  ObjectBytes old_bytes;
  ObjectBytes new_bytes;
  FilePatch own;  // the own line diff's patch (CommitFiles::own_patches), when made

  // The old side's content as read for the patch, if it was.
  std::optional<std::string_view> OldText() const;
};

// The changed files of a diff, and what their deltas' paths point into.
struct CommitFiles {
  bool patches = true;  // set false before CommitFileDiffs for the list alone (no patch made)
  // Set true before CommitFileDiffs when the lines of the files' blobs will be counted
  // (BlobLinesOf): rename detection hashes the lines of each blob it reads (renames.h).
  bool blob_lines = false;
  // Set true before CommitFileDiffs for the diff fragment (kCgitPages), patch and rawdiff
  // (kGitDefaults): a file's patch made by the own line diff (line_diff.h: minimal, or with the
  // indent heuristic; xdiff's hunks with context) into FileDiff::own instead of libgit2's, where
  // that gives the same hunks: not with ignorews (xdiff's whitespace classes) or context 0 (no
  // hunk joins), not for a submodule's side, nor (kGitDefaults) for a diff driver's name, equal
  // blobs or a side of 512 MiB or more (OwnBlobPatch in render.cc).
  bool own_patches = false;
  // The repository's gitattributes sources for kGitDefaults (Registry::Lease::attributes): 0
  // when it has none, so no file's diff attribute is looked up (each is unspecified). Not
  // 0 (the default): libgit2 looks each file's up.
  uint64_t attributes = 1;
  std::vector<FileDiff> files;
  DiffPtr diff;                   // libgit2's diff, when it made the list
  std::deque<std::string> paths;  // the own tree diff's paths (and submodules' patch texts)
};

// How CommitFileDiffs lists the changed files.
//  kOwn: DiffTrees (tree_diff.h), or libgit2's tree diff when a path limits it, then git's rename
//        detection (renames.h) for cgit's pages, and each file's blobs diffed directly
//        (git_patch_from_blobs).
//  kOwnRaw: the same list with every tree read raw by its id (DiffTreeIds, DiffTreePath in
//        tree_diff.h: the render thread's pack reader, no tree parsed or kept by libgit2), the
//        first parent's tree id from its commit; a path libgit2 reads as a pattern (PlainPath)
//        or one whose trees cannot be read goes the kOwn way. The log's Files/Lines counts.
//  kLibgit2: libgit2's generic diff (git_diff_tree_to_tree, libgit2's rename detection) and
//        git_patch_from_diff: the reference the tests compare the own way with.
enum class FileDiffPath { kOwn, kOwnRaw, kLibgit2 };

// The diff of `commit` against `other` (null: its first parent or the empty tree) as `engine`
// computes it (kCgitPages: cgit's commit and diff pages and the log's counts, with git's rename
// detection; kGitDefaults: its patch and rawdiff, without), limited to `path` (may be empty) before
// rename detection (as git), file by file, with each file's patch. False with *reason when the
// trees or a blob cannot be read. *used_own (may be null) says whether the own tree diff made the
// list.
bool CommitFileDiffs(git_repository* repo, git_commit* commit, git_commit* other,
                     const DiffOptions& options, std::string_view path, CommitFiles* out,
                     std::string* reason, FileDiffPath how = FileDiffPath::kOwn,
                     bool* used_own = nullptr, DiffEngine engine = DiffEngine::kCgitPages);

// A kind change (GIT_DELTA_TYPECHANGE) as git's patch output writes it: the old side deleted, then
// the new side added, each with its patch by git's defaults (kGitDefaults); their paths point where
// `change`'s do and a submodule's text into *texts; `attributes` as CommitFiles::attributes.
// False when a blob cannot be read.
bool SplitKindChange(git_repository* repo, uint64_t attributes, const FileDiff& change,
                     FileDiff* deletion, FileDiff* addition, std::deque<std::string>* texts);

// cgit's count of a change with a submodule on a side (its commit and diff pages and the log read
// both ids as objects and diff what they read with a minimal diff): a submodule's side is its
// commit's bytes when this repository has that object (it seldom does), else nothing; a file's
// side its blob.
struct LinkCounts {
  size_t added = 0, removed = 0;
  bool binary = false;
  uint64_t old_size = 0, new_size = 0;
};
bool IsLinkChange(const git_diff_delta& d);
LinkCounts CountLinkChange(git_repository* repo, const git_diff_delta& d, bool ignorews);

// The diff of `commit` against `other` (null: its first parent or the empty tree) as cgit's rawdiff
// and patch pages print it (git's `diff` with git's default options and no rename detection), ids
// abbreviated to `abbrev` digits or more as git does, each file's patch the own line diff's
// (CommitFiles::own_patches) or, with kLibgit2 (the tests' reference), libgit2's. `attributes`
// as CommitFiles::attributes (the default: look them up). False with *reason when the trees
// cannot be read or diffed.
bool AppendDiffText(git_repository* repo, git_commit* commit, git_commit* other, int abbrev,
                    std::string* out, std::string* reason, FileDiffPath how = FileDiffPath::kOwn,
                    uint64_t attributes = 1);

// route.diff with the abbreviation length filled in: the route's (from a cache key) or else the
// repository's.
DiffOptions EffectiveDiffOptions(const PageContext& ctx);

// The repository-neutral fragment: diffstat + diff with links relative to the page that includes
// it (…/REPO/commit/[PATH], …/REPO/diff/[PATH]): PATH's depth is part of the fragment's key, so
// the number of "../" is known.
void WriteDiffFragment(Writer& out, git_repository* repo, git_commit* commit, git_commit* other,
                       const DiffOptions& options, std::string_view path,
                       FileDiffPath how = FileDiffPath::kOwn);

// cgit's age cell: "<span class='age-hours' title='LONG DATE'>5 hours</span>", or the short date
// when older than `max_relative` seconds (negative: never). Records on this thread the first
// instant at which the text it wrote would read differently (AgeHorizon).
void WriteAge(Writer& out, const git_time& when, int64_t now, int64_t max_relative);

// The earliest instant (Unix seconds) at which an age WriteAge wrote on this thread since the last
// ResetAgeHorizon would read differently; 0: none written. Site::Render resets it before each page
// and hands it on as Page::valid_until.
void ResetAgeHorizon();
int64_t AgeHorizon();

// One row of the log table (age, subject link, decorations, author), as the log and summary pages
// write it; `now` is the time ages count from.
void WriteLogRow(const PageContext& ctx, git_commit* commit, int64_t now);
// A commit subject as cgit's commit links show it (cut after 77 bytes when over 80, a placeholder
// when empty), escaped.
void WriteSubject(Writer& out, std::string_view subject);

// The readme the about page shows at h= (cgit's choice among the repository's readme entries:
// "REF:PATH" in the repository, where an empty REF is h= or the default branch and must name a
// commit itself, not a tag object; or a file's path, relative to the repository's folder). Null
// when none is present.
struct Readme {
  std::string name;  // the path, as the about-filter's argument
  std::string ref;   // "" for a file outside the repository
  std::string file;  // that file's path
  bool in_repo = false;
  std::optional<git_oid> blob;  // in_repo: the file's blob, when known (else ref:file is read)
};
std::optional<Readme> ChooseReadme(const PageContext& ctx);

// The repository's clone URLs as cgit lists them: its clone-url (cgit's $CGIT_REPO_URL and like
// macros expanded), else "PREFIX/URL" for each clone-prefix word.
std::vector<std::string> CloneUrls(const PageContext& ctx);
// A URL in an attribute as cgit's html_url_path writes it: bytes a URL cannot hold escaped.
void WriteUrlAttribute(Writer& out, std::string_view url);
// A URL as cgit's html_url_path writes it into a Location header: controls, blank, non-ASCII and
// "#%'<=>?\^`{|}, DEL percent-escaped ('+' and '&' kept).
std::string UrlPath(std::string_view url);

// cgit's links leave out h= when it names the default branch, and id= when it names the branch
// shown: the route as links spell it.
Route LinkRoute(const PageContext& ctx);

// Shared by the commit and diff pages.
void WriteOptionsPanel(const PageContext& ctx, std::string_view id);
// `path`: the path the links keep (a follow log's row: the file's name at that commit).
void WriteDecorations(const PageContext& ctx, const git_oid& oid, std::string_view path);

std::string OidHex(const git_oid& oid);
// A path that climbs ("..") or has an empty segment: never looked up in a tree.
bool BadPath(std::string_view path);
bool IsFullSha(std::string_view s);

// Pages (one file each).
Page RenderCommit(const PageContext& ctx);
Page RenderDiffPage(const PageContext& ctx);
Page RenderFragment(const PageContext& ctx);
Page RenderPatch(const PageContext& ctx);
Page RenderRawDiff(const PageContext& ctx);
Page RenderLog(const PageContext& ctx);
Page RenderTree(const PageContext& ctx);
Page RenderBlob(const PageContext& ctx);
Page RenderReadme(const PageContext& ctx);
Page RenderPlain(const PageContext& ctx);
Page RenderSummary(const PageContext& ctx);
Page RenderRefs(const PageContext& ctx);
Page RenderTag(const PageContext& ctx);
Page RenderAbout(const PageContext& ctx);
Page RenderAtom(const PageContext& ctx);
Page RenderSnapshot(const PageContext& ctx);
Page RenderBlame(const PageContext& ctx);
Page RenderClone(const PageContext& ctx);
Page RenderStats(const PageContext& ctx);
// cgit's snapshot prefix: repo.snapshot-prefix, else the last segment of the URL without ".git".
std::string SnapshotPrefix(const conf::Config::Repository& repo);
// The repository list from its ofs-th repository on (cgit's atoi of ofs=), a page of
// max-repo-count, with cgit's pager when there is more than one page.
Page RenderIndex(const Chrome& chrome, const std::vector<conf::Config::Repository>& repos, int ofs);

Page ErrorPage(int status, std::string reason);

}  // namespace shellac::gitfrag

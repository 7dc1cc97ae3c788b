// The log page: max-commit-count commits per page from h= (or id=, or HEAD), newest first, with
// decorations and a pager (ofs=); limited to a path (git's history simplification), filtered by
// cgit's search (qt=grep|author|committer with q=, a case-insensitive basic regular expression as
// git's), or a range of revisions (qt=range). showmsg=1 adds each message under its subject;
// enable-log-filecount/-linecount add the Files and Lines columns. With enable-follow-links, a
// path log follows the file through renames and copies (follow=1, git log --follow).
#include <regex.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gitfrag/history.h"
#include "gitfrag/line_count.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/raw_objects.h"
#include "gitfrag/renames.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

// A walk that filters (a path, a search) reads commits it does not show: it stops after walking
// this long (writing the rows does not count) and says so on the page.
constexpr std::chrono::seconds kWalkLimit{5};
// From this ofs= on, a whole log's page takes its rows from the walk's order (WalkOrderOf): the
// first walk to it walks all history once (git/git: 82,000 commits), so the first pages, which
// people read, walk as before.
constexpr unsigned kWalkOrderFrom = 1000;

// cgit's max-msg-len.
constexpr size_t kMaxMsgLen = 80;

// A compiled POSIX regular expression, owned.
struct Regex {
  regex_t re{};
  bool compiled = false;
  ~Regex() {
    if (compiled) regfree(&re);
  }
  // Whether any line of `text` matches (git greps line by line).
  bool AnyLine(std::string_view text) const {
    std::string line;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      line.assign(text.substr(start, end - start));
      if (regexec(&re, line.c_str(), 0, nullptr, 0) == 0) return true;
      if (end == text.size()) break;
      start = end + 1;
    }
    return false;
  }
};

enum class Filter { kNone, kGrep, kAuthor, kCommitter };

// Where the walk starts and what it may visit (a range's excluded commits), from id=/h= or from a
// qt=range search.
struct WalkPlan {
  std::vector<git_oid> starts;
  std::unique_ptr<DateWalk::Set> only;
};

// qt=range: q= split at whitespace, each token a revision ("A"), an exclusion ("^A") or a range
// ("A..B", "A...B"), each side an id or ref name (no other revision syntax, as ResolveCommit).
// As cgit's: a token starting with '-' ends the list, an unknown revision is ignored.
bool PlanRange(git_repository* repo, std::string_view q, WalkPlan* plan, Page* error) {
  RevwalkPtr walk;
  {
    git_revwalk* raw = nullptr;
    if (git_revwalk_new(&raw, repo) != 0) {
      *error = ErrorPage(500, "cannot walk the history");
      return false;
    }
    walk.reset(raw);
  }
  bool hidden = false;
  auto resolve = [&](std::string_view spec, git_oid* oid) {
    int status = 0;
    std::string reason;
    CommitPtr commit = ResolveCommit(repo, spec, "", &status, &reason);
    if (!commit) return false;
    *oid = *git_commit_id(commit.get());
    return true;
  };
  auto push = [&](const git_oid& oid) {
    plan->starts.push_back(oid);
    git_revwalk_push(walk.get(), &oid);
  };
  auto hide = [&](const git_oid& oid) {
    hidden = true;
    git_revwalk_hide(walk.get(), &oid);
  };
  size_t pos = 0;
  while (pos < q.size()) {
    while (pos < q.size() && std::isspace(static_cast<unsigned char>(q[pos]))) ++pos;
    size_t end = pos;
    while (end < q.size() && !std::isspace(static_cast<unsigned char>(q[end]))) ++end;
    const std::string_view token = q.substr(pos, end - pos);
    pos = end;
    if (token.empty()) break;
    if (token.starts_with('-')) break;
    git_oid a, b;
    if (token.starts_with('^')) {
      if (resolve(token.substr(1), &a)) hide(a);
      continue;
    }
    if (const size_t dots = token.find(".."); dots != std::string_view::npos) {
      const bool symmetric = token.substr(dots).starts_with("...");
      const std::string_view left = token.substr(0, dots);
      const std::string_view right = token.substr(dots + (symmetric ? 3 : 2));
      if (!resolve(left, &a) || !resolve(right, &b)) continue;
      if (symmetric) {
        push(a);
        push(b);
        git_oid base;
        if (git_merge_base(&base, repo, &a, &b) == 0) hide(base);
      } else {
        hide(a);
        push(b);
      }
      continue;
    }
    if (resolve(token, &a)) push(a);
  }
  if (hidden && !plan->starts.empty()) {
    plan->only = std::make_unique<DateWalk::Set>();
    git_oid oid;
    while (git_revwalk_next(&oid, walk.get()) == 0) plan->only->insert(DateWalk::Key(oid));
  }
  return true;
}

// The files and +/- lines of a commit's diff against its first parent, limited to the log's path
// (cgit's enable-log-filecount/-linecount: its own diff, minimal, after rename detection).
struct Counts {
  size_t files = 0, added = 0, removed = 0;
};

// A commit's counts depend only on the commit (its first parent is part of it), the path,
// ignorews and the rename limit: kept in a SharedMemo, so a crawler's log pages (each commit on up
// to max-commit-count of them, in every fork) cost one diff per commit.
constexpr size_t kCountsGeneration = 100000;  // entries (~100 bytes each) per generation

std::string CountsKey(const git_oid& commit, std::string_view path, bool ignorews, bool lines,
                      int rename_limit) {
  std::string key(reinterpret_cast<const char*>(commit.id), GIT_OID_RAWSZ);
  key += static_cast<char>((ignorews ? 1 : 0) | (lines ? 2 : 0));
  // The memo outlives a reload that changes renamelimit, and pairs (so the counts) depend on it.
  key.append(reinterpret_cast<const char*>(&rename_limit), sizeof rename_limit);
  key += path;
  return key;
}

// A file change's blobs (an absent side: the zero id), the key of its line counts: they depend on
// the two blobs alone. A merge's diff against its first parent repeats the pairs of the topic's
// commits wherever the first parent left the file as the topic found it, and a path log's rows
// and the whole log's share every pair.
struct BlobPair {
  git_oid old_id, new_id;
};
struct BlobPairHash {
  size_t operator()(const BlobPair& p) const { return OidHash()(p.old_id) ^ OidHash()(p.new_id); }
};
struct BlobPairEqual {
  bool operator()(const BlobPair& a, const BlobPair& b) const {
    return OidEqual()(a.old_id, b.old_id) && OidEqual()(a.new_id, b.new_id);
  }
};
constexpr size_t kPairGeneration = 100000;  // entries (~90 bytes each) per generation

// A changed file's lines as cgit counts them: a minimal diff's, none for a binary file;
// nullopt when a side cannot be read (counted as none, never remembered). (A change with a
// submodule on a side is counted as the commit page counts it, by CountLinkChange, before this
// is asked.)
std::optional<LineDelta> FileLineDeltaOf(git_repository* repo, const git_diff_delta& d) {
  const bool old_side = !git_oid_is_zero(&d.old_file.id);
  const bool new_side = !git_oid_is_zero(&d.new_file.id);
  static const auto kNone = std::make_shared<const BlobLines>();
  // Each side is hashed from the other when this thread read that one lately (the new side of a
  // path log's row is the old side of the row above).
  const auto old_lines =
      old_side ? BlobLinesOf(repo, d.old_file.id, new_side ? &d.new_file.id : nullptr) : kNone;
  const auto new_lines =
      new_side ? BlobLinesOf(repo, d.new_file.id, old_side ? &d.old_file.id : nullptr) : kNone;
  if (!old_lines || !new_lines) return std::nullopt;
  if (old_lines->binary || new_lines->binary) return LineDelta{};
  return MinimalLineDelta(old_lines->hashes, new_lines->hashes);
}

// FileLineDeltaOf, remembered by the pair of blobs.
LineDelta FileLineDelta(git_repository* repo, const git_diff_delta& d) {
  static SharedMemo<BlobPair, LineDelta, BlobPairHash, BlobPairEqual> memo(kPairGeneration);
  const BlobPair key{d.old_file.id, d.new_file.id};
  if (const std::optional<LineDelta> known = memo.Find(key)) return *known;
  const std::optional<LineDelta> delta = FileLineDeltaOf(repo, d);
  if (!delta) return LineDelta{};
  memo.Add(key, *delta);
  return *delta;
}

Counts CountChangesOf(const PageContext& ctx, git_commit* commit, std::string_view path,
                      bool lines) {
  Counts counts;
  std::string reason;
  // The commit page's file list (renames paired as git pairs them); the lines from the files'
  // patches when whitespace is ignored, else from their blobs' hashed lines.
  CommitFiles changed;
  changed.patches = lines && ctx.route.diff.ignorews;
  changed.blob_lines = lines && !changed.patches;
  if (!CommitFileDiffs(ctx.lease.repo(), commit, nullptr, ctx.route.diff, path, &changed, &reason,
                       FileDiffPath::kOwnRaw, nullptr))
    return counts;
  counts.files = changed.files.size();
  if (!lines) return counts;
  for (const FileDiff& f : changed.files) {
    size_t context = 0, added = 0, removed = 0;
    if (IsLinkChange(f.delta)) {
      const LinkCounts c = CountLinkChange(ctx.lease.repo(), f.delta, ctx.route.diff.ignorews);
      if (!c.binary) {
        counts.added += c.added;
        counts.removed += c.removed;
      }
    } else if (f.patch && git_patch_line_stats(&context, &added, &removed, f.patch.get()) == 0) {
      counts.added += added;
      counts.removed += removed;
    } else if (!changed.patches) {
      const LineDelta d = FileLineDelta(ctx.lease.repo(), f.delta);
      counts.added += d.added;
      counts.removed += d.removed;
    }
  }
  return counts;
}

Counts CountChanges(const PageContext& ctx, git_commit* commit, std::string_view path, bool lines) {
  static SharedMemo<std::string, Counts> memo(kCountsGeneration);
  const std::string key = CountsKey(*git_commit_id(commit), path, ctx.route.diff.ignorews, lines,
                                    ctx.route.diff.rename_limit);
  if (const std::optional<Counts> known = memo.Find(key)) return *known;
  const Counts counts = CountChangesOf(ctx, commit, path, lines);
  memo.Add(key, counts);
  return counts;
}

// A follow log's row where the file came from another (a rename or copy FindFollowSource found):
// cgit counts that one pair, its lines between the two blobs (a submodule's side, or ignorews,
// as the commit page counts such a change: CountLinkChange reads and diffs both objects).
Counts CountFollowedPair(const PageContext& ctx, const TreeChange& pair) {
  Counts counts;
  counts.files = 1;
  git_diff_delta d{};
  d.status = pair.status;
  d.old_file.id = pair.old_id;
  d.old_file.mode = static_cast<uint16_t>(pair.old_mode);
  d.old_file.path = pair.old_path.c_str();
  d.new_file.id = pair.new_id;
  d.new_file.mode = static_cast<uint16_t>(pair.new_mode);
  d.new_file.path = pair.path.c_str();
  if (IsLinkChange(d) || ctx.route.diff.ignorews) {
    const LinkCounts c = CountLinkChange(ctx.lease.repo(), d, ctx.route.diff.ignorews);
    if (!c.binary) {
      counts.added = c.added;
      counts.removed = c.removed;
    }
    return counts;
  }
  const LineDelta delta = FileLineDelta(ctx.lease.repo(), d);
  counts.added = delta.added;
  counts.removed = delta.removed;
  return counts;
}

// git log --follow -- PATH as cgit 1.2.3 walks it (follow=1): every commit in date order, no
// history simplification (git does none when following); a merge or the root commit never shown;
// a commit shown when PATH's entry differs from its parent's. When PATH is a file the commit adds,
// the file it came from (FindFollowSource) is followed from there on, and that row's links name
// the file as the commit has it. A path whose entry the parent's Bloom filter clears is not read.
class FollowWalk {
 public:
  struct Row {
    git_oid id{};
    std::string path;                 // the file's path at this commit
    std::optional<TreeChange> moved;  // where it came from, when this commit renamed or copied it
  };

  FollowWalk(git_repository* repo, const std::vector<git_oid>& starts, const DateWalk::Set* only,
             std::string path)
      : repo_(repo), walk_(repo, starts, only, ""), objects_(repo), path_(std::move(path)) {
    filter_ = std::make_unique<PathChangeFilter>(walk_.graph(), path_);
  }

  DateWalk& walk() { return walk_; }

  // The next row among the commits `wanted` takes (a search's); false at the end of the history
  // (or the walk's deadline).
  template <typename Wanted>
  bool Next(const Wanted& wanted, Row* row) {
    git_oid id;
    while (walk_.NextId(&id)) {
      if (!wanted(id)) continue;
      git_oid tree, parent_tree;
      if (!SingleParent(id, &tree, &parent_tree)) continue;
      if (!filter_->MaybeChanged(id)) continue;
      const TreeEntry now = objects_.PathEntry(tree, path_);
      const TreeEntry before = objects_.PathEntry(parent_tree, path_);
      if (now.present == before.present &&
          (!now.present || (CanonicalMode(now.mode) == CanonicalMode(before.mode) &&
                            git_oid_equal(&now.id, &before.id))))
        continue;
      row->id = id;
      row->path = path_;
      row->moved.reset();
      if (now.present && !before.present && (now.mode & 0170000) != 0040000) {
        TreeChange added;
        added.status = GIT_DELTA_ADDED;
        added.path = path_;
        added.new_mode = CanonicalMode(now.mode);
        added.new_id = now.id;
        std::string reason;
        if (FindFollowSource(repo_, &objects_, parent_tree, tree, &added, &reason) &&
            added.status != GIT_DELTA_ADDED) {
          path_ = added.old_path;
          filter_ = std::make_unique<PathChangeFilter>(walk_.graph(), path_);
          row->moved = std::move(added);
        }
      }
      return true;
    }
    return false;
  }

  // Whether the walk has another commit `wanted` takes, shown or not.
  template <typename Wanted>
  bool AnyMore(const Wanted& wanted) {
    git_oid id;
    while (walk_.NextId(&id))
      if (wanted(id)) return true;
    return false;
  }

 private:
  // A commit's tree and its one parent's; false for a merge, a root or one that cannot be read.
  bool SingleParent(const git_oid& id, git_oid* tree, git_oid* parent_tree) {
    const std::shared_ptr<const CommitGraph>& graph = walk_.graph();
    const uint32_t pos = walk_.last_position();
    // From the graph when it has the commit and its parents; else from the objects.
    if (graph && pos != CommitGraph::kNoPosition && graph->Parents(pos, &parents_)) {
      if (parents_.size() != 1) return false;
      *tree = graph->Tree(pos);
      *parent_tree = graph->Tree(parents_[0]);
      return true;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo_, &id) != 0) return false;
    const CommitPtr commit(raw);
    if (git_commit_parentcount(raw) != 1) return false;
    git_commit* parent_raw = nullptr;
    if (git_commit_parent(&parent_raw, raw, 0) != 0) return false;
    const CommitPtr parent(parent_raw);
    *tree = *git_commit_tree_id(raw);
    *parent_tree = *git_commit_tree_id(parent_raw);
    return true;
  }

  git_repository* repo_;
  DateWalk walk_;
  RawObjects objects_;
  std::string path_;
  std::unique_ptr<PathChangeFilter> filter_;
  std::vector<uint32_t> parents_;
};

// `path`: what the row's links keep (the log's path; on a follow log the file's name at this
// commit); `counts`: the row's Files/Lines counts when made already (null: counted here).
void WriteCommitRow(const PageContext& ctx, git_commit* raw, int64_t now, unsigned columns,
                    std::string_view path, const Counts* counts) {
  Writer& out = ctx.out;
  const Route& route = ctx.route;
  const git_oid oid = *git_commit_id(raw);
  const char* encoding = git_commit_message_encoding(raw);
  std::string_view subject, body;
  const std::string text = ToUtf8(git_commit_message_raw(raw), encoding);
  SplitMessage(text, &subject, &body);
  const std::string hex = OidHex(oid);
  out.Raw(route.showmsg ? "<tr class='logheader'><td>" : "<tr><td>");
  WriteAge(out, git_commit_committer(raw)->when, now, 14 * 86400);  // cgit: TM_WEEK * 2
  out.Raw(route.showmsg ? "</td><td class='logsubject'><a href='" : "</td><td><a href='");
  RepoUrl(ctx, "commit", path,
          {{"h", route.head}, {"id", hex}, {"follow", route.follow ? "1" : ""}});
  out.Raw("'>");
  std::string message;  // showmsg: what the second row shows
  if (route.showmsg && subject.size() > kMaxMsgLen) {
    // cgit wraps a long subject at the last blank before byte 76 and carries the rest over to the
    // message, marking the cut with " ↵".
    size_t i = kMaxMsgLen - 4;
    while (i > 0 && !std::isspace(static_cast<unsigned char>(subject[i]))) --i;
    if (i == 0) i = kMaxMsgLen - 4;
    std::string_view rest = subject.substr(i);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
      rest.remove_prefix(1);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
      rest.remove_suffix(1);
    message.append(rest).append("\n\n");
    out.Text(subject.substr(0, i)).Raw(" \xE2\x86\xB5");
  } else {
    WriteSubject(out, subject);
  }
  out.Raw("</a>");
  WriteDecorations(ctx, oid, path);
  out.Raw("</td><td>").Text(ToUtf8(git_commit_author(raw)->name, encoding));
  const bool files = ctx.repo.enable_log_filecount, lines = ctx.repo.enable_log_linecount;
  if (files || lines) {
    const Counts made = counts != nullptr ? *counts : CountChanges(ctx, raw, path, lines);
    if (files) out.Raw("</td><td>").Number(made.files);
    if (lines) {
      out.Raw("</td><td><span class='deletions'>-")
          .Number(made.removed)
          .Raw("</span>/<span class='insertions'>+")
          .Number(made.added)
          .Raw("</span>");
    }
  }
  out.Raw("</td></tr>\n");
  if (!route.showmsg) return;
  if (!body.empty()) message.append(body).append("\n");
  message.append("\n");
  size_t lead = 0;
  while (lead < message.size() && std::isspace(static_cast<unsigned char>(message[lead]))) ++lead;
  out.Raw("<tr class='nohover-highlight'><td/><td colspan='")
      .Number(columns)
      .Raw("' class='logmsg'>\n")
      .Text(std::string_view(message).substr(lead))
      .Raw("</td></tr>\n");
}

}  // namespace

void WriteLogRow(const PageContext& ctx, git_commit* commit, int64_t now) {
  WriteCommitRow(ctx, commit, now, 3, ctx.route.path, nullptr);
}

void WriteSubject(Writer& out, std::string_view subject) {
  // cgit shortens subjects longer than 80 bytes (max-msg-len) to 77 and "...", in bytes: the cut
  // may fall inside a UTF-8 sequence, as cgit's does. An empty one gets cgit's placeholder.
  if (subject.size() > kMaxMsgLen)
    out.Text(subject.substr(0, kMaxMsgLen - 3)).Raw("...");
  else
    out.Text(subject.empty() ? "(no commit message)" : subject);
}

Page RenderLog(const PageContext& ctx) {
  const Route& route = ctx.route;
  const unsigned per_page = ctx.site.max_commit_count();
  git_repository* repo = ctx.lease.repo();
  const std::string_view q = route.search ? std::string_view(*route.search) : std::string_view();
  const std::string_view qt = route.grep ? std::string_view(*route.grep) : std::string_view();

  WalkPlan plan;
  if (qt == "range" && !q.empty()) {
    Page error;
    if (!PlanRange(repo, q, &plan, &error)) return error;
  } else {
    int status = 200;
    std::string reason;
    CommitPtr start = ResolveCommit(repo, route.id, route.head, &status, &reason);
    // A name of a tag of a blob or a tree: cgit's log of no commits. A name of nothing: its error.
    if (!start && !NamesObject(repo, route.id.empty() ? route.head : route.id))
      return ErrorPage(status, reason);
    if (start) plan.starts.push_back(*git_commit_id(start.get()));
  }
  Filter filter = Filter::kNone;
  Regex regex;
  if (!q.empty() && (qt == "grep" || qt == "author" || qt == "committer")) {
    filter = qt == "grep" ? Filter::kGrep : qt == "author" ? Filter::kAuthor : Filter::kCommitter;
    // git's default pattern type is a basic regular expression; cgit asks for it ignoring case.
    const std::string pattern(q);
    const int rc = regcomp(&regex.re, pattern.c_str(), REG_ICASE | REG_NOSUB | REG_NEWLINE);
    if (rc != 0) {
      char message[128];
      regerror(rc, &regex.re, message, sizeof message);
      return ErrorPage(400, "bad search pattern '" + pattern + "': " + message);
    }
    regex.compiled = true;
  }
  auto matches = [&](git_commit* commit) {
    const char* encoding = git_commit_message_encoding(commit);
    switch (filter) {
      case Filter::kNone:
        return true;
      case Filter::kGrep:
        return regex.AnyLine(ToUtf8(git_commit_message_raw(commit), encoding));
      case Filter::kAuthor:
      case Filter::kCommitter: {
        const git_signature* who = filter == Filter::kAuthor ? git_commit_author(commit)
                                                             : git_commit_committer(commit);
        return regex.AnyLine(ToUtf8(std::string(who->name) + " <" + who->email + ">", encoding));
      }
    }
    return true;
  };
  // The commits the page shows (and those a search or a walk without a graph reads) are read
  // through the own pack reader (libdeflate, its base cache), not libgit2's zlib reads.
  const PackedReadsScope packed_reads;
  DateWalk::Clock::time_point deadline = DateWalk::Clock::now() + kWalkLimit;

  Writer& out = ctx.out;
  const std::string title =
      ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);
  PageStart(ctx, title, "log", route.id);
  out.Raw(
      "<table class='list nowrap'><tr class='nohover'><th class='left'>Age</th>"
      "<th class='left'>Commit message (<a href='");
  LogUrl(ctx, route.path, route.ofs, !route.showmsg, route.follow);
  out.Raw(route.showmsg ? "'>Collapse</a>)</th><th class='left'>Author</th>"
                        : "'>Expand</a>)</th><th class='left'>Author</th>");
  unsigned columns = 3;
  if (ctx.repo.enable_log_filecount) {
    out.Raw("<th class='left'>Files</th>");
    ++columns;
  }
  if (ctx.repo.enable_log_linecount) {
    out.Raw("<th class='left'>Lines</th>");
    ++columns;
  }
  out.Raw("</tr>\n");
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  unsigned index = 0;
  bool more = false;
  struct Row {
    CommitPtr commit;
    std::string path;              // what its links keep
    std::optional<Counts> counts;  // its Files/Lines, once counted
  };
  std::vector<Row> rows;  // the commits shown, newest first
  // The path the pager links keep: on a follow log, cgit's is the file's name at the last commit
  // shown (or skipped).
  std::string pager_path = route.path;
  // The rows' Files/Lines counts. A log without a path counts them once the walk is done, oldest
  // row first: git mostly packs a file's older versions as deltas against its newer ones, and
  // libgit2 keeps the bases it passes (not the object asked for), so each next version of a file
  // is found among them (git/git: 3 % fewer instructions a page). A path log counts each row as
  // its walk reaches it: the walk has just read the trees the row's file list reads (counted
  // after the walk, that was 6 % more).
  const bool counts = ctx.repo.enable_log_filecount || ctx.repo.enable_log_linecount;
  const bool lines = ctx.repo.enable_log_linecount;
  const bool count_while_walking = counts && !route.path.empty();
  // A later page of a whole log (no search, range or path) reads its rows from the walk's order
  // (made once per start and graph, WalkOrderOf) instead of walking the ofs commits before them.
  std::shared_ptr<const CommitGraph> graph;
  const std::shared_ptr<const WalkOrder> order =
      route.ofs >= kWalkOrderFrom && filter == Filter::kNone && !plan.only && route.path.empty() &&
              plan.starts.size() == 1
          ? WalkOrderOf(repo, plan.starts[0], deadline, &graph)
          : nullptr;
  if (order) {
    const std::vector<uint32_t>& positions = order->positions;
    size_t i = route.ofs;
    for (; i < positions.size() && rows.size() < per_page; ++i) {
      const git_oid row = graph->Id(positions[i]);
      git_commit* raw = nullptr;
      if (git_commit_lookup(&raw, repo, &row) == 0)
        rows.push_back(Row{CommitPtr(raw), route.path, std::nullopt});  // as the walk: skipped
    }
    more = i < positions.size();
  }
  // The row's counts while walking (a path log): the limit bounds the walk, not the rows (whose
  // counts read blobs and take long on a busy machine): the time they take moves the deadline.
  // A follow log's row where the file was renamed or copied counts that pair (`moved`).
  auto count_row = [&](DateWalk& row_walk, const std::optional<TreeChange>& moved) {
    if (!count_while_walking) return;
    const DateWalk::Clock::time_point row_start = DateWalk::Clock::now();
    Row& row = rows.back();
    row.counts = moved ? CountFollowedPair(ctx, *moved)
                       : CountChanges(ctx, row.commit.get(), row.path, lines);
    deadline += DateWalk::Clock::now() - row_start;
    row_walk.set_deadline(deadline);
  };
  // The walk: git log --follow's (follow=1), else the plain one (with the path's simplification).
  std::optional<FollowWalk> follow;
  std::optional<DateWalk> plain;
  if (route.follow) {
    follow.emplace(repo, plan.starts, plan.only.get(), route.path);
    follow->walk().set_deadline(deadline);
  } else {
    plain.emplace(repo, plan.starts, plan.only.get(), route.path);
    plain->set_deadline(deadline);
  }
  // A search reads each commit the walk takes (before git's --follow looks at it).
  CommitPtr searched;
  auto wanted = [&](const git_oid& oid) {
    searched.reset();
    if (filter == Filter::kNone) return true;
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo, &oid) != 0) return false;
    searched.reset(raw);
    return matches(raw);
  };
  FollowWalk::Row shown;
  while (follow && follow->Next(wanted, &shown)) {
    pager_path = shown.path;
    if (index++ < route.ofs) continue;
    CommitPtr commit = std::move(searched);
    if (!commit) {
      git_commit* raw = nullptr;
      if (git_commit_lookup(&raw, repo, &shown.id) != 0) continue;
      commit.reset(raw);
    }
    rows.push_back(Row{std::move(commit), std::move(shown.path), std::nullopt});
    count_row(follow->walk(), shown.moved);
    if (rows.size() == per_page) {
      // cgit's [next]: any commit left to walk (its search's), shown or not.
      more = follow->AnyMore(wanted);
      break;
    }
  }
  git_oid id;
  while (plain && !order && plain->NextId(&id)) {
    // Without a search, a commit the page skips (ofs=) is never read: the walk knows its links.
    CommitPtr commit;
    if (filter != Filter::kNone || index >= route.ofs) {
      git_commit* raw = nullptr;
      if (git_commit_lookup(&raw, repo, &id) != 0) continue;
      commit.reset(raw);
      if (!matches(commit.get())) continue;
    }
    if (index++ < route.ofs) continue;
    if (rows.size() == per_page) {
      more = true;
      break;
    }
    rows.push_back(Row{std::move(commit), route.path, std::nullopt});
    count_row(*plain, std::nullopt);
  }
  if (counts && !count_while_walking) {
    for (auto it = rows.rbegin(); it != rows.rend(); ++it)
      it->counts = CountChanges(ctx, it->commit.get(), it->path, lines);
  }
  for (const Row& row : rows)
    WriteCommitRow(ctx, row.commit.get(), now, columns, row.path,
                   row.counts ? &*row.counts : nullptr);
  const DateWalk& walked = follow ? follow->walk() : *plain;
  if (walked.stopped()) {
    // Not cgit's: its walk has no bound. The page says where this one stopped.
    out.Raw("<tr class='nohover'><td colspan='")
        .Number(columns)
        .Raw("'>[stopped: the search read ")
        .Number(walked.visited())
        .Raw(" commits in ")
        .Number(static_cast<uint64_t>(kWalkLimit.count()))
        .Raw(" s; older commits are not shown]</td></tr>\n");
  }
  out.Raw("</table><ul class='pager'>");
  if (route.ofs > 0) {
    out.Raw("<li><a href='");
    LogUrl(ctx, pager_path, route.ofs > per_page ? route.ofs - per_page : 0, route.showmsg,
           route.follow);
    out.Raw("'>[prev]</a></li>");
  }
  if (more) {
    out.Raw("<li><a href='");
    LogUrl(ctx, pager_path, route.ofs + per_page, route.showmsg, route.follow);
    out.Raw("'>[next]</a></li>");
  }
  out.Raw("</ul>");
  PageEnd(out);
  Page page;
  page.no_store = walked.stopped();  // cut by time: a later render may walk further
  return page;
}

}  // namespace shellac::gitfrag

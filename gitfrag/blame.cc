// git's blame (blame.c's assign_blame with cgit's options), written for libgit2: suspects are
// passed from a commit to its parents through a diff of the two blobs with no context, in
// committer-date order; what no parent explains stays with the commit. Line fates are decided
// per line exactly as git's blame_chunk decides them, so the order in which entries are split
// does not matter; the final entries are coalesced as blame_coalesce does.
//
// Commits, trees and blobs are read raw from the object database (raw_objects.h: the render
// thread's pack reader first) and scanned: a blame visits tens of thousands of commits on a large
// repository and needs of each only its parents, date and tree, and of each tree the one entry on
// the path; libgit2's parsed objects
// cost most of the time before. What an object id fixes (a commit's links, a tree's entry for a
// name) is remembered process-wide (memo.h), and so are finished blames (Blame's BlameMemo).
#include "gitfrag/blame.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gitfrag/commit_graph.h"
#include "gitfrag/gitfrag.h"
#include "gitfrag/history.h"
#include "gitfrag/line_diff.h"
#include "gitfrag/memo.h"
#include "gitfrag/raw_objects.h"
#include "gitfrag/renames.h"
#include "gitfrag/tree_diff.h"

namespace shellac::gitfrag {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kRegular = 0100000;
constexpr uint32_t kTree = 0040000;
constexpr size_t kRenameLimit = kDefaultRenameLimit;  // sources x destinations <= 1000^2

// A run of suspected lines: final lines [lno, lno + num_lines) are lines [s_lno, ...) of the
// owning origin's blob.
struct Entry {
  size_t lno = 0;
  size_t num_lines = 0;
  size_t s_lno = 0;
};

// One blob in one commit that lines are suspected to come from (git's blame_origin).
struct Origin {
  git_oid commit{};
  std::string path;
  git_oid blob{};
  uint32_t mode = 0;
  std::vector<Entry> suspects;  // sorted by s_lno
  BackendObject content;        // loaded for a diff, dropped once the origin is done
  std::unique_ptr<LineIndex> lines;  // content's lines, made for its first diff, dropped with it
};

bool ParseHexId(std::string_view text, git_oid* out) {
  return text.size() >= GIT_OID_HEXSZ && git_oid_fromstrn(out, text.data(), GIT_OID_HEXSZ) == 0;
}

// A commit object's tree, parents and committer date (the number after the committer line's
// last '>', as libgit2's signature parser reads it; 0 when there is none).
bool ParseCommit(std::string_view raw, CommitLinks* out) {
  bool tree = false;
  while (!raw.empty()) {
    const size_t nl = raw.find('\n');
    const std::string_view line = raw.substr(0, nl);
    if (line.empty()) break;  // the message follows
    if (line.starts_with("tree ")) {
      tree = ParseHexId(line.substr(5), &out->tree);
      if (!tree) return false;
    } else if (line.starts_with("parent ")) {
      git_oid parent;
      if (!ParseHexId(line.substr(7), &parent)) return false;
      out->parents.push_back(parent);
    } else if (line.starts_with("committer ")) {
      const size_t gt = line.rfind('>');
      int64_t time = 0;
      if (gt != std::string_view::npos) {
        size_t i = gt + 1;
        while (i < line.size() && line[i] == ' ') ++i;
        for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i)
          time = time * 10 + (line[i] - '0');
      }
      out->date = time;
    }
    if (nl == std::string_view::npos) break;
    raw.remove_prefix(nl + 1);
  }
  return tree;
}

// Commits and trees read raw, through the process-wide memos. They are read from the object
// database's backends (packs, loose objects) directly: git_odb_read would also keep each one in
// libgit2's object cache, where a blame's tens of thousands of root trees, never read again (the
// memo keeps the one entry wanted), pushed out what the other pages use and cost a page fault per
// 4 KiB while the cache grew. With a commit-graph (the repository's file or the in-memory history
// index: HistoryGraph), a commit's links come from it, and its changed-path Bloom filters tell
// which commits certainly left a path as their first parent had it, without a tree read.
class Objects {
 public:
  explicit Objects(git_repository* repo) : graph_(HistoryGraph(repo)), raw_(repo) {}

  // The commit's position in a commit-graph with changed-path Bloom filters (kNoPosition: there
  // are none, or the graph lacks the commit). Positions name commits for the questions below
  // without a lookup by id.
  uint32_t Position(const git_oid& commit) const {
    if (!graph_ || !graph_->has_bloom()) return CommitGraph::kNoPosition;
    return graph_->Find(commit);
  }
  git_oid Id(uint32_t pos) const { return graph_->Id(pos); }
  int64_t Time(uint32_t pos) const { return graph_->Time(pos); }

  // `path`'s Bloom keys, made once per blame and path (Position gave a position: a graph is there).
  const CommitGraph::PathKeys& Keys(const std::string& path) {
    auto it = keys_.find(path);
    if (it == keys_.end()) it = keys_.emplace(path, graph_->Keys(path)).first;
    return it->second;
  }

  // Whether the commit at `pos` certainly has the same entry at the path (`keys`) as its first
  // parent, whose position it then gives (false: it may differ, it is a root, or its entry in the
  // graph is bad).
  bool UnchangedAt(uint32_t pos, const CommitGraph::PathKeys& keys, uint32_t* first_parent) {
    if (graph_->MaybeChanged(pos, keys) || !graph_->Parents(pos, &positions_) || positions_.empty())
      return false;
    *first_parent = positions_[0];
    return true;
  }

  const CommitLinks* Commit(const git_oid& id) {
    if (auto it = commits_.find(id); it != commits_.end()) return &it->second;
    if (graph_) {
      const uint32_t pos = graph_->Find(id);
      if (pos != CommitGraph::kNoPosition && graph_->Parents(pos, &positions_)) {
        CommitLinks data;
        data.date = graph_->Time(pos);
        data.tree = graph_->Tree(pos);
        for (const uint32_t parent : positions_) data.parents.push_back(graph_->Id(parent));
        return &commits_.emplace(id, std::move(data)).first->second;
      }
    }
    std::optional<CommitLinks> data = CommitLinksMemo().Find(id);
    if (!data) {
      const BackendObject object = raw_.Read(id, GIT_OBJECT_COMMIT);
      if (!object) return nullptr;
      data.emplace();
      if (!ParseCommit(object.bytes(), &*data)) {
        raw_.set_incomplete();
        return nullptr;
      }
      CommitLinksMemo().Add(id, *data);
    }
    return &commits_.emplace(id, std::move(*data)).first->second;
  }

  // The entry for `path` under the root tree `root` (RawObjects::PathEntry).
  bool PathEntry(const git_oid& root, std::string_view path, git_oid* id, uint32_t* mode) {
    const TreeEntry entry = raw_.PathEntry(root, path);
    if (!entry.present) return false;
    *id = entry.id;
    *mode = entry.mode;
    return true;
  }

  // A blob's bytes, as Read gives them (the render thread's pack reader, else a backend): not
  // parsed into libgit2's object cache, and inflated by libdeflate with the reader's delta bases.
  BackendObject Blob(const git_oid& id) { return raw_.Read(id, GIT_OBJECT_BLOB); }

  // What differs between two root trees (tree_diff.h's DiffTreeIds: trees read raw, as the rest
  // of the blame reads them, the folders both share unread); false when a tree cannot be read.
  bool DiffRoots(const git_oid& old_root, const git_oid& new_root,
                 std::vector<TreeChange>* changes) {
    std::string reason;
    return DiffTreeIds(raw_.repo(), &raw_, &old_root, &new_root, changes, &reason);
  }

  // An object could not be read (a shallow or broken repository): this repository's blame may
  // differ from another's with the whole history, so it is not remembered.
  bool incomplete() const { return raw_.incomplete(); }
  void set_incomplete() { raw_.set_incomplete(); }

 private:
  std::shared_ptr<const CommitGraph> graph_;  // null: none
  std::vector<uint32_t> positions_;
  std::unordered_map<std::string, CommitGraph::PathKeys> keys_;  // by path
  RawObjects raw_;
  std::unordered_map<git_oid, CommitLinks, OidHash, OidEqual> commits_;
};

// Finished blames by (the commit the lines were last passed whole to, its path): see Blame.
class ResultMemo {
 public:
  using Entries = std::shared_ptr<const std::vector<BlameEntry>>;

  Entries Find(const git_oid& commit, const std::string& path) {
    const Key key{commit, path};
    const std::lock_guard<std::mutex> lock(mu_);
    if (auto it = newer_.map.find(key); it != newer_.map.end()) return it->second;
    auto it = older_.map.find(key);
    if (it == older_.map.end()) return nullptr;
    Entries found = it->second;
    Insert(key, found);  // used again: into the newer generation
    return found;
  }
  void Add(const git_oid& commit, const std::string& path, Entries entries) {
    const std::lock_guard<std::mutex> lock(mu_);
    Insert(Key{commit, path}, std::move(entries));
  }
  RememberedBlames Stats() {
    const std::lock_guard<std::mutex> lock(mu_);
    return RememberedBlames{newer_.map.size() + older_.map.size(), newer_.bytes + older_.bytes};
  }
  void Clear() {
    const std::lock_guard<std::mutex> lock(mu_);
    newer_ = Generation();
    older_ = Generation();
  }

 private:
  struct Key {
    git_oid commit;
    std::string path;
    bool operator==(const Key& o) const { return OidEqual()(commit, o.commit) && path == o.path; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return OidHash()(k.commit) ^ (std::hash<std::string>()(k.path) * 31);
    }
  };
  struct Generation {
    std::unordered_map<Key, Entries, KeyHash> map;
    size_t bytes = 0;
  };
  static size_t Size(const Key& key, const std::vector<BlameEntry>& entries) {
    size_t bytes = sizeof(Key) + key.path.size() + 64;
    for (const BlameEntry& e : entries) bytes += sizeof(BlameEntry) + e.path.capacity();
    return bytes;
  }
  void Insert(const Key& key, Entries entries) {
    const size_t bytes = Size(key, *entries);
    if (newer_.bytes + bytes > kRememberedBytes) {
      older_ = std::move(newer_);
      newer_ = Generation();
    }
    auto [it, inserted] = newer_.map.try_emplace(key, entries);
    if (!inserted) return;
    newer_.bytes += bytes;
  }
  std::mutex mu_;
  Generation newer_, older_;
};

ResultMemo& Results() {
  static ResultMemo memo;
  return memo;
}

// How often blames used the memo (BlameMemoMetrics).
struct MemoCounters {
  std::atomic<uint64_t> blames{0}, used{0}, whole{0}, recalls{0};
};
MemoCounters& Counters() {
  static MemoCounters counters;
  return counters;
}

class Scoreboard {
 public:
  Scoreboard(git_repository* repo, Clock::time_point deadline, BlameMemo memo)
      : objects_(repo), deadline_(deadline), use_memo_(memo == BlameMemo::kUse) {}

  BlameResult Run(const git_oid& commit, const std::string& path, const git_oid& blob) {
    BlameResult result;
    Origin* origin = GetOrigin(commit, path);
    origin->blob = blob;
    origin->mode = kRegular;
    std::string_view bytes;
    if (!Load(origin, &bytes)) return Fail("the blob cannot be read");
    size_t lines = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] == '\n' || i + 1 == bytes.size()) ++lines;
    origin->suspects.push_back(Entry{0, lines, 0});
    const CommitLinks* data = objects_.Commit(commit);
    if (data == nullptr) return Fail("the commit cannot be read");
    queue_.push(Queued{data->date, seq_++, commit});
    whole_ = origin;

    while (!queue_.empty()) {
      if (Clock::now() >= deadline_) {
        result.status = BlameResult::Status::kDeadline;
        return result;
      }
      const Queued next = queue_.top();
      queue_.pop();
      // One origin of this commit that still has suspects (a commit queued for several paths is
      // queued once per path).
      Origin* suspect = nullptr;
      for (const auto& o : origins_[next.commit])
        if (!o->suspects.empty()) {
          suspect = o.get();
          break;
        }
      if (suspect == nullptr) continue;
      const bool was_whole = suspect == whole_;
      if (use_memo_ && Recall(suspect)) {
        if (was_whole) recalled_whole_ = true;
        continue;
      }
      if (!PassBlame(suspect)) {
        if (failed_) return Fail(error_);
        result.status = BlameResult::Status::kDeadline;
        return result;
      }
      ++result.commits;
      // Still every line there (no parent had the identical blob): the blame to remember is this
      // origin's.
      if (was_whole && whole_ == suspect) whole_done_ = true;
      Guilty(suspect);
    }
    // A rename search cut short by the deadline gives no origin: the blame would look finished.
    if (Clock::now() >= deadline_) {
      result.status = BlameResult::Status::kDeadline;
      return result;
    }

    // blame_sort_final and blame_coalesce.
    std::sort(guilty_.begin(), guilty_.end(),
              [](const BlameEntry& a, const BlameEntry& b) { return a.lno < b.lno; });
    for (BlameEntry& e : guilty_) {
      if (!result.entries.empty()) {
        BlameEntry& last = result.entries.back();
        if (git_oid_equal(&last.commit, &e.commit) && last.path == e.path &&
            last.s_lno + last.num_lines == e.s_lno && last.lno + last.num_lines == e.lno) {
          last.num_lines += e.num_lines;
          continue;
        }
      }
      result.entries.push_back(std::move(e));
    }
    // An empty file's entry of no lines is never remembered (Recall takes only whole lines).
    const bool empty_entry = std::any_of(result.entries.begin(), result.entries.end(),
                                         [](const BlameEntry& e) { return e.num_lines == 0; });
    if (use_memo_ && whole_done_ && !recalled_whole_ && !empty_entry && !objects_.incomplete())
      Results().Add(whole_->commit, whole_->path,
                    std::make_shared<const std::vector<BlameEntry>>(result.entries));
    result.commits += slid_;
    result.unchanged = unchanged_;
    return result;
  }

  // Remembered blames this blame used, and whether the page's commit's lines all came from one.
  size_t recalls() const { return recalls_; }
  bool recalled_whole() const { return recalled_whole_; }

 private:
  struct Queued {
    int64_t time;
    uint64_t seq;
    git_oid commit;
    // std::priority_queue puts the greatest first: the newest, then the first queued.
    bool operator<(const Queued& o) const { return time != o.time ? time < o.time : seq > o.seq; }
  };

  BlameResult Fail(std::string why) {
    BlameResult r;
    r.status = BlameResult::Status::kError;
    r.error = std::move(why);
    return r;
  }

  // What stays with the origin's commit: its remaining suspects.
  void Guilty(Origin* origin) {
    for (const Entry& e : origin->suspects)
      guilty_.push_back(BlameEntry{origin->commit, origin->path, e.lno, e.num_lines, e.s_lno});
    origin->suspects.clear();
    Drop(origin);
  }

  // The origin's suspects resolved from a remembered blame of its commit and path: the line at
  // s_lno there has the commit (and line) that blame gives line s_lno. False when none is
  // remembered (or an entry of no lines is involved).
  bool Recall(Origin* origin) {
    const ResultMemo::Entries known = Results().Find(origin->commit, origin->path);
    if (!known || known->empty()) return false;
    const std::vector<BlameEntry>& all = *known;
    const size_t total = all.back().lno + all.back().num_lines;
    for (const Entry& e : origin->suspects)
      if (e.num_lines == 0 || e.s_lno + e.num_lines > total) return false;
    for (const Entry& e : origin->suspects) {
      // The remembered entry holding line s_lno: the last one starting at or before it.
      auto it = std::upper_bound(all.begin(), all.end(), e.s_lno,
                                 [](size_t line, const BlameEntry& b) { return line < b.lno; });
      --it;
      size_t s = e.s_lno, lno = e.lno;
      const size_t end = e.s_lno + e.num_lines;
      while (s < end) {
        const size_t n = std::min(end, it->lno + it->num_lines) - s;
        guilty_.push_back(BlameEntry{it->commit, it->path, lno, n, it->s_lno + (s - it->lno)});
        s += n;
        lno += n;
        ++it;
      }
    }
    origin->suspects.clear();
    Drop(origin);
    ++recalls_;
    return true;
  }

  Origin* GetOrigin(const git_oid& commit, const std::string& path) {
    std::vector<std::unique_ptr<Origin>>& list = origins_[commit];
    for (const auto& o : list)
      if (o->path == path) return o.get();
    auto origin = std::make_unique<Origin>();
    origin->commit = commit;
    origin->path = path;
    list.push_back(std::move(origin));
    return list.back().get();
  }

  Origin* FindOrigin(const git_oid& commit, const std::string& path) {
    auto it = origins_.find(commit);
    if (it == origins_.end()) return nullptr;
    for (const auto& o : it->second)
      if (o->path == path) return o.get();
    return nullptr;
  }

  static void Drop(Origin* origin) {
    origin->lines.reset();
    origin->content = BackendObject();
  }

  // The origin's blob split in lines, once for all the diffs it takes part in; with `like` (the
  // lines of the blob it is diffed with, mostly the same text), the lines both share at the start
  // and the end are taken from there.
  const LineIndex* Lines(Origin* origin, const LineIndex* like = nullptr) {
    if (!origin->lines) {
      std::string_view bytes;
      if (!Load(origin, &bytes)) return nullptr;
      origin->lines = std::make_unique<LineIndex>(like != nullptr ? IndexLinesLike(bytes, *like)
                                                                  : IndexLines(bytes));
    }
    return origin->lines.get();
  }

  bool Load(Origin* origin, std::string_view* bytes) {
    if (!origin->content) {
      origin->content = objects_.Blob(origin->blob);
      if (!origin->content) return false;
    }
    *bytes = origin->content.bytes();
    return true;
  }

  // git's find_origin: the same path in the parent, when it is there as the same kind of file
  // (a missing path, a folder there or a changed type give none).
  Origin* FindSamePath(const git_oid& parent, Origin* origin) {
    if (Origin* known = FindOrigin(parent, origin->path)) return known;
    const CommitLinks* data = objects_.Commit(parent);
    if (data == nullptr) return nullptr;
    git_oid id;
    uint32_t mode = 0;
    if (!objects_.PathEntry(data->tree, origin->path, &id, &mode)) return nullptr;
    if ((mode & kTypeMask) == kTree || (mode & kTypeMask) != (origin->mode & kTypeMask))
      return nullptr;
    Origin* porigin = GetOrigin(parent, origin->path);
    porigin->blob = id;
    porigin->mode = mode;
    return porigin;
  }

  // git's find_rename: with the path new in the commit (not in the parent), the file deleted
  // from the parent it was renamed from, by diffcore-rename's rules for one destination: an exact
  // copy first (the same basename preferred), then the only deleted file of the same basename if
  // it is similar enough, then the most similar deleted file of at least 50 %.
  Origin* FindRename(const git_oid& parent, Origin* origin) {
    const CommitLinks* pdata = objects_.Commit(parent);
    const CommitLinks* cdata = objects_.Commit(origin->commit);
    if (pdata == nullptr || cdata == nullptr) return nullptr;
    // The own tree diff (tree_diff.h): the changes libgit2's tree-to-tree diff gives, with the
    // folders both commits share unread.
    std::vector<TreeChange>& changes = changes_;
    changes.clear();
    if (!objects_.DiffRoots(pdata->tree, cdata->tree, &changes)) {
      objects_.set_incomplete();
      return nullptr;
    }
    struct Source {
      std::string path;
      git_oid id;
      uint32_t mode;
    };
    std::vector<Source> sources;
    bool added = false;
    uint32_t dst_mode = 0;
    for (TreeChange& c : changes) {
      if (c.status == GIT_DELTA_ADDED && origin->path == c.path) {
        added = true;
        dst_mode = c.new_mode;
      } else if (c.status == GIT_DELTA_DELETED) {
        sources.push_back(Source{std::move(c.path), c.old_id, c.old_mode});
      }
    }
    if (!added || sources.empty()) return nullptr;
    const std::string_view base = Basename(origin->path);
    auto found = [&](const Source& s) {
      Origin* porigin = GetOrigin(parent, s.path);
      porigin->blob = s.id;
      porigin->mode = s.mode;
      return porigin;
    };
    // Exact renames.
    const Source* best = nullptr;
    int best_score = -1;
    for (const Source& s : sources) {
      if (!git_oid_equal(&s.id, &origin->blob)) continue;
      if (((s.mode & kTypeMask) != kRegular || (dst_mode & kTypeMask) != kRegular) &&
          s.mode != dst_mode)
        continue;
      const int score = 1 + (Basename(s.path) == base ? 1 : 0);
      if (score > best_score) {
        best = &s;
        best_score = score;
        if (score == 2) break;
      }
    }
    if (best != nullptr) return found(*best);
    if ((dst_mode & kTypeMask) != kRegular) return nullptr;
    if (sources.size() > kRenameLimit * kRenameLimit) return nullptr;
    std::string_view dst;
    if (!Load(origin, &dst)) {
      objects_.set_incomplete();
      return nullptr;
    }
    auto similarity = [&](const Source& s) -> int {
      if ((s.mode & kTypeMask) != kRegular) return 0;
      const BackendObject blob = objects_.Blob(s.id);
      if (!blob) return 0;  // Read made the blame incomplete
      return Similarity(blob.bytes(), dst, kMinRenameScore);
    };
    // A unique basename on both sides.
    const Source* same_base = nullptr;
    size_t same_count = 0;
    for (const Source& s : sources)
      if (Basename(s.path) == base) {
        same_base = &s;
        ++same_count;
      }
    if (same_count == 1 && similarity(*same_base) >= kMinBasenameScore) return found(*same_base);
    // The most similar (the same basename first among equals, then the first in path order).
    best = nullptr;
    int best_similarity = -1, best_name = -1;
    for (const Source& s : sources) {
      if (Clock::now() >= deadline_) return nullptr;
      const int score = similarity(s);
      const int name = Basename(s.path) == base ? 1 : 0;
      if (score > best_similarity || (score == best_similarity && name > best_name)) {
        best = &s;
        best_similarity = score;
        best_name = name;
      }
    }
    if (best != nullptr && best_similarity >= kMinRenameScore) return found(*best);
    return nullptr;
  }

  // Hands the origin's suspects a parent with the same blob keeps as they are.
  void PassWhole(Origin* origin, Origin* parent) {
    if (origin == whole_ && !whole_done_) whole_ = parent;
    if (!parent->content && origin->content) {
      parent->content = std::move(origin->content);
      parent->lines = std::move(origin->lines);
    }
    Drop(origin);
    Queue(parent, std::move(origin->suspects));
    origin->suspects.clear();
  }

  // Adds entries to a parent's suspects (kept sorted by s_lno); a parent that had none is queued.
  void Queue(Origin* parent, std::vector<Entry> entries) {
    if (entries.empty()) return;
    const bool was_empty = parent->suspects.empty();
    std::vector<Entry> merged;
    merged.reserve(parent->suspects.size() + entries.size());
    std::merge(parent->suspects.begin(), parent->suspects.end(), entries.begin(), entries.end(),
               std::back_inserter(merged),
               [](const Entry& a, const Entry& b) { return a.s_lno < b.s_lno; });
    parent->suspects = std::move(merged);
    if (was_empty) {
      const CommitLinks* data = objects_.Commit(parent->commit);
      queue_.push(Queued{data != nullptr ? data->date : 0, seq_++, parent->commit});
    }
  }

  // git's pass_blame_to_parent: the lines of the target the diff leaves unchanged go to the
  // parent at their line there; the changed ones stay. A line goes by the first hunk whose
  // changed part ends after it: before that hunk's start it is unchanged, with the offset of the
  // hunks before (git's blame_chunk, which an entry of no lines follows too).
  bool PassToParent(Origin* target, Origin* parent) {
    if (target->suspects.empty()) return true;
    const LineIndex* b = Lines(target);
    const LineIndex* a = b != nullptr ? Lines(parent, b) : nullptr;
    if (a == nullptr || b == nullptr) {
      failed_ = true;
      error_ = "a blob cannot be read";
      return false;
    }
    std::vector<LineHunk>& hunks = hunks_;
    differ_.BlameDiff(*a, *b, &hunks);
    std::vector<Entry> to_parent, stay;
    size_t h = 0;  // first hunk whose changed part ends after the entry's start (entries sorted)
    // offset (parent line - target line) before hunk k: a_k - b_k; after the last: that of the end.
    auto offset_before = [&](size_t k) -> std::ptrdiff_t {
      if (k < hunks.size()) return static_cast<std::ptrdiff_t>(hunks[k].a) -
                                   static_cast<std::ptrdiff_t>(hunks[k].b);
      if (hunks.empty()) return 0;
      const LineHunk& last = hunks.back();
      return static_cast<std::ptrdiff_t>(last.a + last.a_count) -
             static_cast<std::ptrdiff_t>(last.b + last.b_count);
    };
    auto pass = [&](size_t lno, size_t n, size_t s_lno, std::ptrdiff_t offset) {
      to_parent.push_back(Entry{lno, n, static_cast<size_t>(static_cast<std::ptrdiff_t>(s_lno) + offset)});
    };
    for (const Entry& e : target->suspects) {
      while (h < hunks.size() && hunks[h].b + hunks[h].b_count <= e.s_lno) ++h;
      if (e.num_lines == 0) {
        if (h < hunks.size() && e.s_lno >= hunks[h].b)
          stay.push_back(e);
        else
          pass(e.lno, 0, e.s_lno, offset_before(h));
        continue;
      }
      size_t s = e.s_lno, lno = e.lno;
      const size_t end = e.s_lno + e.num_lines;
      size_t k = h;
      while (s < end) {
        while (k < hunks.size() && hunks[k].b + hunks[k].b_count <= s) ++k;
        if (k == hunks.size()) {
          pass(lno, end - s, s, offset_before(k));
          break;
        }
        const LineHunk& hk = hunks[k];
        if (s < hk.b) {
          const size_t n = std::min(end, hk.b) - s;
          pass(lno, n, s, offset_before(k));
          s += n;
          lno += n;
          continue;
        }
        const size_t n = std::min(end, hk.b + hk.b_count) - s;
        stay.push_back(Entry{lno, n, s});
        s += n;
        lno += n;
      }
    }
    // Entries may overlap (lines of the parent that several final lines came from, through
    // merges): the pieces of one are not all before those of the next. Keep both lists sorted.
    auto by_line = [](const Entry& x, const Entry& y) { return x.s_lno < y.s_lno; };
    std::stable_sort(stay.begin(), stay.end(), by_line);
    std::stable_sort(to_parent.begin(), to_parent.end(), by_line);
    target->suspects = std::move(stay);
    Queue(parent, std::move(to_parent));
    return true;
  }

  // The commit-graph's Bloom filter says the first parent has the path as it is here: git's
  // find_origin gives that parent the same blob, and the lines go to it whole. False when the
  // filters cannot say so.
  //
  // Most commits of a long history leave a file alone, and a blame passes its lines whole through
  // thousands of them. Each would be an origin, queued and taken off the queue at once; instead
  // the lines slide along first parents, by graph position, for as long as the queue would take
  // that parent next anyway (it is newer than everything queued, and has no origin for the path
  // yet) and the filters clear it too: the same steps in the same order, with an origin only
  // where the slide stops. No commit it passes can have a remembered blame (those are kept under
  // commits that changed the path), so none is looked up.
  bool PassUnchanged(Origin* origin) {
    uint32_t pos = objects_.Position(origin->commit);
    if (pos == CommitGraph::kNoPosition) return false;
    const CommitGraph::PathKeys& keys = objects_.Keys(origin->path);
    uint32_t parent = 0;
    if (!objects_.UnchangedAt(pos, keys, &parent)) return false;
    ++unchanged_;
    git_oid id = objects_.Id(parent);
    for (size_t steps = 1;; ++steps) {
      if (FindOrigin(id, origin->path) != nullptr) break;
      if (!queue_.empty() && objects_.Time(parent) <= queue_.top().time) break;
      if (steps % 1024 == 0 && Clock::now() >= deadline_) break;  // Run's loop stops
      pos = parent;
      if (!objects_.UnchangedAt(pos, keys, &parent)) break;
      // What Run's loop would have done with the origin at `pos`: passed it whole to `parent`.
      ++unchanged_;
      ++slid_;
      id = objects_.Id(parent);
    }
    Origin* porigin = FindOrigin(id, origin->path);
    if (porigin == nullptr) {
      porigin = GetOrigin(id, origin->path);
      porigin->blob = origin->blob;
      porigin->mode = origin->mode;
    }
    PassWhole(origin, porigin);
    return true;
  }

  // git's pass_blame without move or copy detection. False on a deadline or a failure.
  bool PassBlame(Origin* origin) {
    if (PassUnchanged(origin)) return true;
    const CommitLinks* data = objects_.Commit(origin->commit);
    if (data == nullptr) {
      failed_ = true;
      error_ = "a commit cannot be read";
      return false;
    }
    const size_t n = data->parents.size();
    if (n == 0) return true;
    std::vector<Origin*> sg(n, nullptr);
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < n; ++i) {
        if (sg[i] != nullptr) continue;
        if (Clock::now() >= deadline_) return false;
        const git_oid parent = data->parents[i];
        Origin* porigin = pass == 0 ? FindSamePath(parent, origin) : FindRename(parent, origin);
        if (porigin == nullptr) continue;
        if (git_oid_equal(&porigin->blob, &origin->blob)) {
          PassWhole(origin, porigin);
          return true;
        }
        bool same = false;
        for (size_t j = 0; j < i; ++j)
          if (sg[j] != nullptr && git_oid_equal(&sg[j]->blob, &porigin->blob)) same = true;
        if (!same) sg[i] = porigin;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (sg[i] == nullptr) continue;
      if (Clock::now() >= deadline_) return false;
      if (!PassToParent(origin, sg[i])) return false;
      if (sg[i]->suspects.empty()) Drop(sg[i]);
      if (origin->suspects.empty()) break;
    }
    for (size_t i = 0; i < n; ++i)
      if (sg[i] != nullptr && sg[i]->suspects.empty()) Drop(sg[i]);
    return true;
  }

  Objects objects_;
  LineDiffer differ_;
  std::vector<LineHunk> hunks_;
  std::vector<TreeChange> changes_;  // FindRename's scratch
  Clock::time_point deadline_;
  const bool use_memo_;
  std::unordered_map<git_oid, std::vector<std::unique_ptr<Origin>>, OidHash, OidEqual> origins_;
  std::priority_queue<Queued> queue_;
  uint64_t seq_ = 0;
  std::vector<BlameEntry> guilty_;
  bool failed_ = false;
  std::string error_;
  size_t unchanged_ = 0;
  size_t slid_ = 0;  // commits PassUnchanged passed whole without an origin of their own
  size_t recalls_ = 0;  // origins resolved from a remembered blame (Recall)
  // The origin holding every line while they are passed whole from the page's commit; once it
  // passes them through a diff (whole_done_) its blame is the one to remember, unless it was
  // recalled (recalled_whole_).
  Origin* whole_ = nullptr;
  bool whole_done_ = false;
  bool recalled_whole_ = false;
};

}  // namespace

BlameResult Blame(git_repository* repo, const git_oid& commit, const std::string& path,
                  const git_oid& blob, Clock::time_point deadline, BlameMemo memo) {
  Scoreboard board(repo, deadline, memo);
  BlameResult result = board.Run(commit, path, blob);
  MemoCounters& counters = Counters();
  counters.blames.fetch_add(1, std::memory_order_relaxed);
  if (board.recalls() > 0) {
    counters.used.fetch_add(1, std::memory_order_relaxed);
    counters.recalls.fetch_add(board.recalls(), std::memory_order_relaxed);
  }
  if (board.recalled_whole()) counters.whole.fetch_add(1, std::memory_order_relaxed);
  return result;
}

RememberedBlames Remembered() { return Results().Stats(); }

BlameMemoStats BlameMemoMetrics() {
  const MemoCounters& counters = Counters();
  const RememberedBlames kept = Results().Stats();
  BlameMemoStats s;
  s.blames = counters.blames.load(std::memory_order_relaxed);
  s.used = counters.used.load(std::memory_order_relaxed);
  s.whole = counters.whole.load(std::memory_order_relaxed);
  s.recalls = counters.recalls.load(std::memory_order_relaxed);
  s.remembered = kept.blames;
  s.bytes = kept.bytes;
  return s;
}

void ForgetBlames() { Results().Clear(); }

}  // namespace shellac::gitfrag

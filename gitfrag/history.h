// DateWalk: history in git's default order (what cgit's log and patch pages show), optionally
// limited to a path with git's history simplification (what `git log -- PATH` shows).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gitfrag/commit_graph.h"
#include "gitfrag/git.h"
#include "gitfrag/memo.h"
#include "gitfrag/raw_objects.h"

namespace shellac::gitfrag {

// Repeatedly takes the newest commit of the frontier and adds its unseen parents. Commits with
// equal dates leave the frontier in the order they entered it, which libgit2's time sort does not
// promise, so the walk is done here. With `only` set, commits outside it are never visited (a
// range A..B: `only` holds what libgit2's revwalk found for it).
//
// With a path, a commit whose path entry (id and mode) equals that of one of its parents is
// TREESAME: it is not returned, and only the first such parent is followed (git's default history
// simplification, as `git log -- PATH` and cgit's path-limited log). A commit that differs from
// every parent is returned and all its parents are followed; a root commit is returned when it
// has the path.
//
// With the repository's commit-graph (CommitGraph::ForRepository), parents and dates come from
// it and no commit object is read to walk; with a path, a commit whose Bloom filter says the path
// did not change against its first parent is TREESAME to it without a tree read (git's own rule:
// the filters describe the first parent only, so a commit that may have changed is compared with
// each parent by its trees, whose ids the graph gives). The commits shown are the same either way.
class DateWalk {
 public:
  using Set = std::unordered_set<std::string>;  // keys: 20 raw id bytes (Key())
  using Clock = std::chrono::steady_clock;
  DateWalk(git_repository* repo, const git_oid& start, const Set* only = nullptr);
  DateWalk(git_repository* repo, const std::vector<git_oid>& starts, const Set* only,
           std::string path);

  // The next commit, or null at the end (or when the deadline passed: see stopped()).
  CommitPtr Next();
  // The next commit's id (false at the end): a walk without a path reads no commit object for
  // it once its parents and date are known (CommitLinks), so pages that skip commits (log?ofs=)
  // pay only for those they show.
  bool NextId(git_oid* out);

  // Stops the walk (Next() returns null, stopped() is true) once `deadline` has passed.
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // Leaves out commits dated (committer) before `since`, Unix seconds, and does not walk past
  // them (git's --since). Set it before the first Next(); the starts are checked again then.
  void set_since(int64_t since) { since_ = since; }
  bool stopped() const { return stopped_; }
  // Commits taken off the frontier so far (returned or simplified away).
  size_t visited() const { return visited_; }
  // The graph the walk takes links from (null: none), and the position in it of the commit
  // NextId or Next returned last (CommitGraph::kNoPosition: not in it, every commit read).
  const std::shared_ptr<const CommitGraph>& graph() const { return graph_; }
  uint32_t last_position() const { return last_pos_; }

  static std::string Key(const git_oid& oid) {
    return std::string(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
  }

 private:
  struct Entry {
    bool present = false;
    uint32_t mode = 0;
    git_oid id{};
    bool operator==(const Entry& o) const {
      return present == o.present && (!present || (mode == o.mode && git_oid_equal(&id, &o.id)));
    }
  };
  struct Node {
    int64_t date;  // committer date
    git_oid id;
    uint32_t pos;  // in graph_, or CommitGraph::kNoPosition
  };
  void Add(const git_oid& oid);
  void AddAt(uint32_t pos);  // a commit of graph_
  void Push(const Node& node);
  Entry PathEntry(const git_oid& commit, const git_oid& tree);
  // Adds the parents git follows for `commit`; true when git shows it (not TREESAME).
  bool Simplify(git_commit* commit);
  // The same for a commit of graph_ whose parents (positions) are in parents_.
  bool SimplifyInGraph(const Node& node);

  git_repository* repo_;
  bool indexed_ = false;  // graph_ is the in-memory index (history_index.h), not git's file
  bool missed_ = false;   // a commit not in it was met (and reported)
  std::shared_ptr<const CommitGraph> graph_;  // null: none (every commit read as an object)
  CommitGraph::PathKeys keys_;                // path_'s Bloom keys
  std::vector<uint32_t> parents_;
  const Set* only_;
  std::string path_;
  std::list<Node> frontier_;  // newest first; equal dates in the order they came
  std::unordered_set<git_oid, OidHash, OidEqual> seen_;  // commits not in graph_
  std::vector<bool> seen_at_;  // commits of graph_ by position (a bit each; sized at first use)
  std::unordered_map<git_oid, Entry, OidHash, OidEqual> entries_;  // path entries by commit
  // Path entries' trees, read raw by the render thread's pack reader: the log rows' file lists
  // (FileDiffPath::kOwnRaw) read the same trees next through it, and find the path's entries in
  // TreeMemo.
  RawObjects objects_;
  Clock::time_point deadline_ = Clock::time_point::max();
  bool stopped_ = false;
  size_t visited_ = 0;
  int64_t since_ = INT64_MIN;
  uint32_t last_pos_ = CommitGraph::kNoPosition;
};

// The commits a DateWalk from one commit returns (no path, no range), in order, as positions in
// the graph it walked (4 bytes a commit): log?ofs=N reads its rows from the N-th on instead of
// walking N commits. Made by one whole walk the first time a start is asked for (the caller's
// deadline bounds it) and remembered process-wide by start and graph, bounded by bytes
// (kWalkOrderBytes), so every later page of that log, in every fork whose branch points there,
// costs no walk. Null when there is no graph, a commit of the walk is not in it (the graph is
// older than the start: the walk reports it, for a refresh) or the deadline passed: the caller
// walks as before, and that answer is remembered too (no second whole walk for the same start in
// the same graph). *graph is set to the graph the positions are in. An order does not keep its
// graph alive (an in-memory history index is replaced when refreshed): one made in another graph
// is not used.
struct WalkOrder {
  std::weak_ptr<const CommitGraph> graph;
  bool complete = false;  // false: the walk could not be indexed (remembered, not returned)
  std::vector<uint32_t> positions;
};
inline constexpr size_t kWalkOrderBytes = size_t{64} << 20;  // per generation of the memo
std::shared_ptr<const WalkOrder> WalkOrderOf(git_repository* repo, const git_oid& start,
                                             DateWalk::Clock::time_point deadline,
                                             std::shared_ptr<const CommitGraph>* graph);

// A commit's committer date, parents and root tree: what history walks and blame read of a commit
// without a commit-graph, which its id fixes.
struct CommitLinks {
  int64_t date = 0;
  std::vector<git_oid> parents;
  git_oid tree{};
};
// The one process-wide memo of commits' links, shared by every walk and blame of every repository
// and fork (a walk over history another one read reads no commit object). Bounded: two generations
// of 200,000 commits (~100 bytes each).
SharedMemo<git_oid, CommitLinks, OidHash, OidEqual>& CommitLinksMemo();

// Where walks take parents, dates, trees and Bloom filters: the repository's commit-graph file when
// it has changed-path filters; else its in-memory history index once built (history_index.h; asking
// queues its build; *indexed, when given, is set: a walk that meets a commit it lacks reports it,
// for a refresh); else git's plain file (as `git gc` writes it, without filters), or null.
std::shared_ptr<const CommitGraph> HistoryGraph(git_repository* repo, bool* indexed = nullptr);

// "Did PATH change between a commit and its first parent?" from the repository's commit-graph
// Bloom filters, without reading a tree: MaybeChanged is false only when certain (same entry at
// PATH in both; for a root commit, no entry), true when it may have changed or the graph cannot
// tell (no graph, the commit not in it, no filter for it). For blame and other per-path walks.
class PathChangeFilter {
 public:
  PathChangeFilter(git_repository* repo, std::string_view path);
  // With the graph given (HistoryGraph's answer, taken once for a whole walk; a commit the graph
  // lacks is not reported for a refresh).
  PathChangeFilter(std::shared_ptr<const CommitGraph> graph, std::string_view path);
  bool MaybeChanged(const git_oid& commit) const;
  // Whether any answer can be "certainly not" (a graph with Bloom filters is there).
  bool usable() const { return graph_ != nullptr && graph_->has_bloom(); }

 private:
  git_repository* repo_ = nullptr;
  bool indexed_ = false;
  mutable bool missed_ = false;
  std::shared_ptr<const CommitGraph> graph_;
  CommitGraph::PathKeys keys_;
};

}  // namespace shellac::gitfrag

#include "gitfrag/history.h"

#include <optional>
#include <utility>
#include <vector>

#include "gitfrag/history_index.h"
#include "gitfrag/memo.h"

namespace shellac::gitfrag {

namespace {
constexpr size_t kLinksGeneration = 200000;  // commits (~100 bytes each) per generation
}  // namespace

SharedMemo<git_oid, CommitLinks, OidHash, OidEqual>& CommitLinksMemo() {
  static SharedMemo<git_oid, CommitLinks, OidHash, OidEqual> memo(kLinksGeneration);
  return memo;
}

std::shared_ptr<const CommitGraph> HistoryGraph(git_repository* repo, bool* indexed) {
  if (indexed != nullptr) *indexed = false;
  auto graph = CommitGraph::ForRepository(repo);
  if (graph && graph->has_bloom()) return graph;
  if (auto index = HistoryIndex::For(repo)) {
    if (indexed != nullptr) *indexed = true;
    return index;
  }
  return graph;
}

DateWalk::DateWalk(git_repository* repo, const git_oid& start, const Set* only)
    : repo_(repo),
      graph_(HistoryGraph(repo, &indexed_)),
      only_(only),
      objects_(repo) {
  Add(start);
}

DateWalk::DateWalk(git_repository* repo, const std::vector<git_oid>& starts, const Set* only,
                   std::string path)
    : repo_(repo),
      graph_(HistoryGraph(repo, &indexed_)),
      only_(only),
      path_(std::move(path)),
      objects_(repo) {
  if (graph_ && !path_.empty()) keys_ = graph_->Keys(path_);
  for (const git_oid& start : starts) Add(start);
}

PathChangeFilter::PathChangeFilter(git_repository* repo, std::string_view path)
    : repo_(repo), graph_(HistoryGraph(repo, &indexed_)) {
  if (graph_) keys_ = graph_->Keys(path);
}

PathChangeFilter::PathChangeFilter(std::shared_ptr<const CommitGraph> graph, std::string_view path)
    : graph_(std::move(graph)) {
  if (graph_) keys_ = graph_->Keys(path);
}

bool PathChangeFilter::MaybeChanged(const git_oid& commit) const {
  if (!graph_) return true;
  const uint32_t pos = graph_->Find(commit);
  if (pos != CommitGraph::kNoPosition) return graph_->MaybeChanged(pos, keys_);
  if (indexed_ && !missed_) {
    missed_ = true;  // a commit made after the index: it is refreshed in the background
    HistoryIndex::Missed(repo_, graph_.get());
  }
  return true;
}

namespace {

// The links of `id`, read from `repo` when not known yet; nullopt when it is no commit there.
std::optional<CommitLinks> ReadLinks(git_repository* repo, const git_oid& id) {
  if (std::optional<CommitLinks> known = CommitLinksMemo().Find(id)) return known;
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo, &id) != 0) return std::nullopt;
  const CommitPtr commit(raw);
  CommitLinks links;
  links.date = git_commit_time(raw);
  links.tree = *git_commit_tree_id(raw);
  const unsigned n = git_commit_parentcount(raw);
  for (unsigned i = 0; i < n; ++i) links.parents.push_back(*git_commit_parent_id(raw, i));
  CommitLinksMemo().Add(id, links);
  return links;
}

struct WalkOrderWeight {
  size_t operator()(const std::shared_ptr<const WalkOrder>& order) const {
    return order->positions.size() * sizeof(uint32_t) + 128;
  }
};
using WalkOrderMemo =
    SharedMemo<std::string, std::shared_ptr<const WalkOrder>, std::hash<std::string>,
               std::equal_to<std::string>, WalkOrderWeight>;

// A start's order in one graph: the start's id and the graph's address (an order found under it
// is used only while its graph is that one, alive).
std::string WalkOrderKey(const git_oid& start, const CommitGraph* graph) {
  std::string key(reinterpret_cast<const char*>(start.id), GIT_OID_RAWSZ);
  key.append(reinterpret_cast<const char*>(&graph), sizeof graph);
  return key;
}

}  // namespace

std::shared_ptr<const WalkOrder> WalkOrderOf(git_repository* repo, const git_oid& start,
                                             DateWalk::Clock::time_point deadline,
                                             std::shared_ptr<const CommitGraph>* graph) {
  static WalkOrderMemo memo(kWalkOrderBytes);
  std::shared_ptr<const CommitGraph> current = HistoryGraph(repo);
  if (!current) return nullptr;
  const std::string key = WalkOrderKey(start, current.get());
  if (const std::optional<std::shared_ptr<const WalkOrder>> known = memo.Find(key)) {
    if ((*known)->graph.lock() == current) {
      if (!(*known)->complete) return nullptr;
      *graph = std::move(current);
      return *known;
    }
  }
  DateWalk walk(repo, std::vector<git_oid>{start}, nullptr, std::string());
  walk.set_deadline(deadline);
  if (walk.graph() != current) return nullptr;  // the graph changed meanwhile
  auto order = std::make_shared<WalkOrder>();
  order->graph = current;
  git_oid id;
  bool in_graph = true;
  while (in_graph && walk.NextId(&id)) {
    in_graph = walk.last_position() != CommitGraph::kNoPosition;
    order->positions.push_back(walk.last_position());
  }
  order->complete = in_graph && !walk.stopped();
  if (!order->complete) order->positions = {};
  memo.Add(key, order);
  if (!order->complete) return nullptr;
  *graph = std::move(current);
  return order;
}

bool DateWalk::NextId(git_oid* out) {
  while (!frontier_.empty()) {
    // The clock is read every 64 commits: a walk costs microseconds per commit.
    if ((visited_ & 63) == 63 && Clock::now() > deadline_) {
      stopped_ = true;
      return false;
    }
    const Node node = frontier_.front();
    frontier_.pop_front();
    ++visited_;
    if (node.date < since_) continue;  // a start older than since
    if (node.pos != CommitGraph::kNoPosition && graph_->Parents(node.pos, &parents_)) {
      if (path_.empty() || SimplifyInGraph(node)) {
        if (path_.empty())
          for (const uint32_t parent : parents_) AddAt(parent);
        *out = node.id;
        last_pos_ = node.pos;
        return true;
      }
      continue;
    }
    last_pos_ = CommitGraph::kNoPosition;
    if (path_.empty()) {
      const std::optional<CommitLinks> links = ReadLinks(repo_, node.id);
      if (!links) continue;
      for (const git_oid& parent : links->parents) Add(parent);
      *out = node.id;
      return true;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo_, &node.id) != 0) continue;
    const CommitPtr commit(raw);
    if (Simplify(commit.get())) {
      *out = node.id;
      return true;
    }
  }
  return false;
}

CommitPtr DateWalk::Next() {
  git_oid id;
  while (NextId(&id)) {
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo_, &id) == 0) return CommitPtr(raw);
  }
  return nullptr;
}

bool DateWalk::Simplify(git_commit* commit) {
  const Entry mine = PathEntry(*git_commit_id(commit), *git_commit_tree_id(commit));
  const unsigned parents = git_commit_parentcount(commit);
  if (parents == 0) return mine.present;
  for (unsigned i = 0; i < parents; ++i) {
    git_commit* raw = nullptr;
    if (git_commit_parent(&raw, commit, i) != 0) continue;
    const CommitPtr parent(raw);
    if (PathEntry(*git_commit_id(parent.get()), *git_commit_tree_id(parent.get())) == mine) {
      Add(*git_commit_id(parent.get()));
      return false;
    }
  }
  for (unsigned i = 0; i < parents; ++i) Add(*git_commit_parent_id(commit, i));
  return true;
}

bool DateWalk::SimplifyInGraph(const Node& node) {
  // A filter describes the diff against the first parent (against nothing for a root commit).
  const bool maybe = graph_->MaybeChanged(node.pos, keys_);
  if (parents_.empty()) return maybe && PathEntry(node.id, graph_->Tree(node.pos)).present;
  if (!maybe) {
    AddAt(parents_[0]);
    return false;
  }
  const std::vector<uint32_t> parents = parents_;  // AddAt may not touch it, but be plain
  const Entry mine = PathEntry(node.id, graph_->Tree(node.pos));
  for (const uint32_t parent : parents) {
    if (PathEntry(graph_->Id(parent), graph_->Tree(parent)) == mine) {
      AddAt(parent);
      return false;
    }
  }
  for (const uint32_t parent : parents) AddAt(parent);
  return true;
}

DateWalk::Entry DateWalk::PathEntry(const git_oid& commit, const git_oid& tree_id) {
  if (auto it = entries_.find(commit); it != entries_.end()) return it->second;
  // Raw: each commit the Bloom filters cannot clear has a root tree of its own, which
  // git_tree_lookup parsed whole (every entry) and kept in libgit2's cache, to find one name.
  const TreeEntry found = objects_.PathEntry(tree_id, std::string_view(path_.c_str()));
  Entry entry;
  entry.present = found.present;
  entry.mode = found.present ? CanonicalMode(found.mode) : 0;
  entry.id = found.id;
  entries_.emplace(commit, entry);
  return entry;
}

void DateWalk::Add(const git_oid& oid) {
  if (graph_) {
    const uint32_t pos = graph_->Find(oid);
    if (pos != CommitGraph::kNoPosition) return AddAt(pos);
    if (indexed_ && !missed_) {
      missed_ = true;  // a commit made after the index: it is refreshed in the background
      HistoryIndex::Missed(repo_, graph_.get());
    }
  }
  if (only_ != nullptr && !only_->count(Key(oid))) return;
  if (!seen_.insert(oid).second) return;
  const std::optional<CommitLinks> links = ReadLinks(repo_, oid);
  if (!links) return;
  Push(Node{links->date, oid, CommitGraph::kNoPosition});
}

void DateWalk::AddAt(uint32_t pos) {
  if (seen_at_.empty()) seen_at_.resize(graph_->size());
  if (seen_at_[pos]) return;
  const git_oid oid = graph_->Id(pos);
  if (only_ != nullptr && !only_->count(Key(oid))) return;
  seen_at_[pos] = true;
  Push(Node{graph_->Time(pos), oid, pos});
}

void DateWalk::Push(const Node& node) {
  if (node.date < since_) return;
  auto it = frontier_.begin();
  while (it != frontier_.end() && it->date >= node.date) ++it;
  frontier_.insert(it, node);
}

}  // namespace shellac::gitfrag

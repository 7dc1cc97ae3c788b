#include "gitfrag/history.h"

#include <cstring>
#include <mutex>

namespace shellac::gitfrag {

DateWalk::DateWalk(git_repository* repo, const git_oid& start, const Set* only)
    : repo_(repo), only_(only) {
  Add(start);
}

DateWalk::DateWalk(git_repository* repo, const std::vector<git_oid>& starts, const Set* only,
                   std::string path)
    : repo_(repo), only_(only), path_(std::move(path)) {
  for (const git_oid& start : starts) Add(start);
}

namespace {

// A commit's date and parents, which its id fixes: shared by every walk, repository and fork, so
// a walk over history another walk (or another fork's) already read reads no commit objects.
// Bounded: two generations of at most kGeneration commits (~100 bytes each); when the newer one
// is full the older is dropped, so the history walked lately stays.
class CommitLinks {
 public:
  struct Links {
    int64_t date = 0;
    std::vector<git_oid> parents;
  };
  // The links of `id` (read from `repo` when not known yet); false when it is no commit there.
  static bool Get(git_repository* repo, const git_oid& id, Links* out) {
    CommitLinks& m = Instance();
    {
      const std::lock_guard<std::mutex> lock(m.mu_);
      if (m.Find(id, out)) return true;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo, &id) != 0) return false;
    const CommitPtr commit(raw);
    out->date = git_commit_time(raw);
    out->parents.clear();
    const unsigned n = git_commit_parentcount(raw);
    for (unsigned i = 0; i < n; ++i) out->parents.push_back(*git_commit_parent_id(raw, i));
    const std::lock_guard<std::mutex> lock(m.mu_);
    m.Insert(id, *out);
    return true;
  }

 private:
  static constexpr size_t kGeneration = 200000;
  struct Hash {
    size_t operator()(const git_oid& id) const {
      size_t h;  // object ids are a hash already
      std::memcpy(&h, id.id, sizeof h);
      return h;
    }
  };
  struct Equal {
    bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_equal(&a, &b); }
  };
  using Map = std::unordered_map<git_oid, Links, Hash, Equal>;
  static CommitLinks& Instance() {
    static CommitLinks links;
    return links;
  }
  bool Find(const git_oid& id, Links* out) {
    if (const auto it = newer_.find(id); it != newer_.end()) {
      *out = it->second;
      return true;
    }
    const auto it = older_.find(id);
    if (it == older_.end()) return false;
    *out = it->second;
    Insert(id, *out);  // used again: into the newer generation
    return true;
  }
  void Insert(const git_oid& id, const Links& links) {
    if (newer_.size() >= kGeneration) {
      older_ = std::move(newer_);
      newer_ = Map();
    }
    newer_.insert_or_assign(id, links);
  }
  std::mutex mu_;
  Map newer_, older_;
};

}  // namespace

size_t DateWalk::OidHash::operator()(const git_oid& id) const {
  size_t h;
  std::memcpy(&h, id.id, sizeof h);
  return h;
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
    if (path_.empty()) {
      CommitLinks::Links links;
      if (!CommitLinks::Get(repo_, node.id, &links)) continue;
      for (const git_oid& parent : links.parents) Add(parent);
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
  const Entry mine = PathEntry(commit);
  const unsigned parents = git_commit_parentcount(commit);
  if (parents == 0) return mine.present;
  for (unsigned i = 0; i < parents; ++i) {
    git_commit* raw = nullptr;
    if (git_commit_parent(&raw, commit, i) != 0) continue;
    const CommitPtr parent(raw);
    if (PathEntry(parent.get()) == mine) {
      Add(*git_commit_id(parent.get()));
      return false;
    }
  }
  for (unsigned i = 0; i < parents; ++i) Add(*git_commit_parent_id(commit, i));
  return true;
}

DateWalk::Entry DateWalk::PathEntry(git_commit* commit) {
  std::string key = Key(*git_commit_id(commit));
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  Entry entry;
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, commit) == 0) {
    const TreePtr tree(raw_tree);
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), path_.c_str()) == 0) {
      const TreeEntryPtr owned(raw_entry);
      entry.present = true;
      entry.mode = git_tree_entry_filemode(raw_entry);
      entry.id = *git_tree_entry_id(raw_entry);
    }
  }
  entries_.emplace(std::move(key), entry);
  return entry;
}

void DateWalk::Add(const git_oid& oid) {
  if (only_ != nullptr && !only_->count(Key(oid))) return;
  if (!seen_.insert(oid).second) return;
  CommitLinks::Links links;
  if (!CommitLinks::Get(repo_, oid, &links)) return;
  if (links.date < since_) return;
  auto it = frontier_.begin();
  while (it != frontier_.end() && it->date >= links.date) ++it;
  frontier_.insert(it, Node{links.date, oid});
}

}  // namespace shellac::gitfrag

#include "gitfrag/history.h"

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

CommitPtr DateWalk::Next() {
  while (!frontier_.empty()) {
    // The clock is read every 64 commits: a walk costs microseconds per commit.
    if ((visited_ & 63) == 63 && Clock::now() > deadline_) {
      stopped_ = true;
      return nullptr;
    }
    CommitPtr commit = std::move(frontier_.front());
    frontier_.pop_front();
    ++visited_;
    if (git_commit_time(commit.get()) < since_) continue;  // a start older than since
    if (path_.empty()) {
      const unsigned parents = git_commit_parentcount(commit.get());
      for (unsigned i = 0; i < parents; ++i) Add(*git_commit_parent_id(commit.get(), i));
      return commit;
    }
    if (Simplify(commit.get())) return commit;
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
  std::string key = Key(oid);
  if (only_ != nullptr && !only_->count(key)) return;
  if (!seen_.insert(std::move(key)).second) return;
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo_, &oid) != 0) return;
  CommitPtr commit(raw);
  const git_time_t date = git_commit_time(raw);
  if (date < since_) return;
  auto it = frontier_.begin();
  while (it != frontier_.end() && git_commit_time(it->get()) >= date) ++it;
  frontier_.insert(it, std::move(commit));
}

}  // namespace shellac::gitfrag

#include "gitfrag/history.h"

namespace shellac::gitfrag {

DateWalk::DateWalk(git_repository* repo, const git_oid& start, const Set* only)
    : repo_(repo), only_(only) {
  Add(start);
}

CommitPtr DateWalk::Next() {
  if (frontier_.empty()) return nullptr;
  CommitPtr commit = std::move(frontier_.front());
  frontier_.pop_front();
  const unsigned parents = git_commit_parentcount(commit.get());
  for (unsigned i = 0; i < parents; ++i) Add(*git_commit_parent_id(commit.get(), i));
  return commit;
}

void DateWalk::Add(const git_oid& oid) {
  std::string key = Key(oid);
  if (only_ != nullptr && !only_->count(key)) return;
  if (!seen_.insert(std::move(key)).second) return;
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo_, &oid) != 0) return;
  CommitPtr commit(raw);
  const git_time_t date = git_commit_time(raw);
  auto it = frontier_.begin();
  while (it != frontier_.end() && git_commit_time(it->get()) >= date) ++it;
  frontier_.insert(it, std::move(commit));
}

}  // namespace shellac::gitfrag

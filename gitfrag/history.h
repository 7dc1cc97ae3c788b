// DateWalk: history in git's default order (what cgit's log and patch pages show).
#pragma once

#include <list>
#include <string>
#include <unordered_set>

#include "gitfrag/git.h"

namespace shellac::gitfrag {

// Repeatedly takes the newest commit of the frontier and adds its unseen parents. Commits with
// equal dates leave the frontier in the order they entered it, which libgit2's time sort does not
// promise, so the walk is done here. With `only` set, commits outside it are never visited (a
// range A..B: `only` holds what libgit2's revwalk found for it).
class DateWalk {
 public:
  using Set = std::unordered_set<std::string>;  // keys: 20 raw id bytes (Key())
  DateWalk(git_repository* repo, const git_oid& start, const Set* only = nullptr);

  // The next commit, or null at the end.
  CommitPtr Next();

  static std::string Key(const git_oid& oid) {
    return std::string(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
  }

 private:
  void Add(const git_oid& oid);

  git_repository* repo_;
  const Set* only_;
  std::list<CommitPtr> frontier_;
  Set seen_;
};

}  // namespace shellac::gitfrag

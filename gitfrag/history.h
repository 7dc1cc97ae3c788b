// DateWalk: history in git's default order (what cgit's log and patch pages show), optionally
// limited to a path with git's history simplification (what `git log -- PATH` shows).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gitfrag/git.h"

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
class DateWalk {
 public:
  using Set = std::unordered_set<std::string>;  // keys: 20 raw id bytes (Key())
  using Clock = std::chrono::steady_clock;
  DateWalk(git_repository* repo, const git_oid& start, const Set* only = nullptr);
  DateWalk(git_repository* repo, const std::vector<git_oid>& starts, const Set* only,
           std::string path);

  // The next commit, or null at the end (or when the deadline passed: see stopped()).
  CommitPtr Next();

  // Stops the walk (Next() returns null, stopped() is true) once `deadline` has passed.
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // Leaves out commits dated (committer) before `since`, Unix seconds, and does not walk past
  // them (git's --since). Set it before the first Next(); the starts are checked again then.
  void set_since(int64_t since) { since_ = since; }
  bool stopped() const { return stopped_; }
  // Commits taken off the frontier so far (returned or simplified away).
  size_t visited() const { return visited_; }

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
  void Add(const git_oid& oid);
  Entry PathEntry(git_commit* commit);
  // Adds the parents git follows for `commit`; true when git shows it (not TREESAME).
  bool Simplify(git_commit* commit);

  git_repository* repo_;
  const Set* only_;
  std::string path_;
  std::list<CommitPtr> frontier_;
  Set seen_;
  std::unordered_map<std::string, Entry> entries_;  // path entries by commit (Key())
  Clock::time_point deadline_ = Clock::time_point::max();
  bool stopped_ = false;
  size_t visited_ = 0;
  int64_t since_ = INT64_MIN;
};

}  // namespace shellac::gitfrag

// Blame: which commit each line of a file came from, as git's blame library decides it with the
// options cgit's blame page gives it (no -M/-C move or copy detection; whole-file renames followed
// when a parent lacks the path; Myers diff without the indent heuristic; a parent with the
// identical blob takes the whole blame; merge parents tried in order; commits taken newest first
// by committer date; adjacent entries of one origin coalesced). See gitfrag/README.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "gitfrag/git.h"

namespace shellac::gitfrag {

// One run of final lines that came from one commit, where the file had `path`.
struct BlameEntry {
  git_oid commit{};
  std::string path;    // the path in that commit (another one across a rename)
  size_t lno = 0;      // first final line, 0-based
  size_t num_lines = 0;
  size_t s_lno = 0;    // first line in that commit's blob, 0-based
};

struct BlameResult {
  enum class Status { kOk, kDeadline, kError };
  Status status = Status::kOk;
  std::string error;  // kError: what failed
  std::vector<BlameEntry> entries;  // kOk: in final line order, covering every line once
  size_t commits = 0;               // commits whose blame was passed on (for measurements)
  size_t unchanged = 0;  // of those, passed whole to the first parent on a Bloom filter's word
};

// Whether a blame may use the blames remembered from earlier ones (and remember its own).
enum class BlameMemo { kUse, kIgnore };

// Blames `path` (blob `blob`, a regular file) at `commit`. Gives up with kDeadline once
// `deadline` has passed (checked between commits and between diffs). An empty file gets one
// entry of no lines, as git's.
//
// With kUse, a finished blame is remembered, process-wide, under the commit that last touched the
// path (where the lines stopped being passed whole to a parent with the identical blob) and the
// path there; any later blame that reaches that commit and path, as the page's commit or as any
// parent lines are passed to, takes those lines' commits from it instead of walking on. The blame
// of a line depends on that line alone (its commit and blob fix where each diff sends it), so the
// result is the same as without (tests compare both). The memo is bounded by bytes
// (kRememberedBytes per generation, two generations: what was used lately stays).
BlameResult Blame(git_repository* repo, const git_oid& commit, const std::string& path,
                  const git_oid& blob, std::chrono::steady_clock::time_point deadline,
                  BlameMemo memo = BlameMemo::kUse);

constexpr size_t kRememberedBytes = size_t{32} << 20;

// The remembered blames: how many, and about how many bytes they take.
struct RememberedBlames {
  size_t blames = 0;
  size_t bytes = 0;
};
RememberedBlames Remembered();
// Drops every remembered blame (tests that time a blame from scratch).
void ForgetBlames();

}  // namespace shellac::gitfrag

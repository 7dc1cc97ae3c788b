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
};

// Blames `path` (blob `blob`, a regular file) at `commit`. Gives up with kDeadline once
// `deadline` has passed (checked between commits and between diffs). An empty file gets one
// entry of no lines, as git's.
BlameResult Blame(git_repository* repo, const git_oid& commit, const std::string& path,
                  const git_oid& blob, std::chrono::steady_clock::time_point deadline);

}  // namespace shellac::gitfrag

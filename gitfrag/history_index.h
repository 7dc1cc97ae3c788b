// HistoryIndex: for a repository without a commit-graph file, the same thing built in memory, so
// history walks (DateWalk) read no commit object for parents and dates and skip trees where a
// path certainly did not change.
//
// The index is a commit-graph image in git's format (read by CommitGraph, so one reader serves
// both): every commit reachable from the refs and HEAD, sorted by id, with its root tree, parents
// and committer date, and a changed-path Bloom filter per commit (the paths that differ from the
// first parent and their folders, as git adds them: 10 bits per path, 7 hashes, more than 512
// paths give a filter of all ones; hash version 2).
//
// It is built in the background, on one builder thread at the lowest CPU priority, when a walk
// first asks for a repository's index; until it is ready, For() answers null and the walk reads
// objects as it always did (requests never wait for it). One process-wide memory budget
// (history-index-memory) bounds all indexes together: a build that would pass it keeps the links
// and leaves the remaining commits without filters ("maybe"), or, when even the links do not fit,
// is not kept. An index is a snapshot: commits made after it are walked by reading their objects
// (their parents are found in it again).
#pragma once

#include <git2.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "gitfrag/commit_graph.h"

namespace shellac::gitfrag {

struct HistoryIndexMetrics;

class HistoryIndex {
 public:
  // Builds the image for `repo` in the calling thread. `memory` bounds the image's size; `stop`,
  // when set, ends the build early (false); `progress`, when set, counts the commits read so far.
  // False with *error when a ref's history cannot be read or the links alone pass `memory`.
  static bool Build(git_repository* repo, uint64_t memory, std::string* image, std::string* error,
                    const std::atomic<bool>* stop = nullptr,
                    std::atomic<uint64_t>* progress = nullptr);

  // The bytes all indexes of the process may take (0: none is built). Each Site sets it.
  static void SetMemoryBudget(uint64_t bytes);
  // `repo`'s index when it is built; otherwise null, and (once per repository) a build is queued.
  static std::shared_ptr<const CommitGraph> For(git_repository* repo);
  // Waits until nothing is queued or building, at most `limit`; true when idle (tests).
  static bool WaitIdle(std::chrono::milliseconds limit);
  static HistoryIndexMetrics Metrics();
};

}  // namespace shellac::gitfrag

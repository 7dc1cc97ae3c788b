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
// is not kept.
//
// One index per object store, not per repository: what it holds about a commit (tree, parents,
// date, the paths it changed) follows from the commit's id, so every repository that borrows its
// objects from the same store (forks through objects/info/alternates, as a fork farm or a forge's
// shared object repository does) is answered by one index, built once. The store is the object
// folder at the end of the repository's alternates chain (its own objects folder when it borrows
// none); the first build reads the refs of the repository that asked and of the store's own
// repository (the folder holding the store, when it is one), so the forks' history is in it.
//
// An index is a snapshot, and a walk that meets a commit it does not have (one made after the
// build, or a fork's own commit in the fork's own objects) reads that commit's object and goes on
// (its parents are found in the index again). Such a walk reports the miss (Missed): the index is
// then refreshed in the background, at most once per refresh interval per store, by a build that
// reads the refs of the repositories that missed, stops at the commits the index already has and
// keeps their data and filters (only the new commits are read and diffed). A build that fails (a
// history that cannot be read, the budget) is tried again when a walk next asks, after a delay
// that doubles each time, at most kMaxFailures times in a row.
#pragma once

#include <git2.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  // The same over the refs and HEAD of each of `repos`, extending `base` (null: none): a commit
  // `base` has is not read again, nor its history, and keeps its data and filter. True with an
  // empty *image when no commit is new.
  static bool Build(const std::vector<git_repository*>& repos, const CommitGraph* base,
                    uint64_t memory, std::string* image, std::string* error,
                    const std::atomic<bool>* stop = nullptr,
                    std::atomic<uint64_t>* progress = nullptr);

  // Builds that fail in a row before a store's index is no longer tried (until a reload changes
  // history-index-memory).
  static constexpr unsigned kMaxFailures = 5;
  // The object folder the index of the repository at `git_dir` is keyed by: the last of its
  // alternates chain (as git follows objects/info/alternates, the first line at each step), or
  // its own objects folder; a real path when it resolves.
  static std::string StoreOf(const std::string& git_dir);

  // The bytes all indexes of the process may take (0: none is built). Each Site sets it.
  static void SetMemoryBudget(uint64_t bytes);
  // `repo`'s index when it is built; otherwise null, and (once per repository) a build is queued.
  static std::shared_ptr<const CommitGraph> For(git_repository* repo);
  // A walk of `repo` met a commit that `index` (For()'s answer) does not have: queues a refresh
  // of the store's index unless one ran less than the refresh interval ago (the next miss after
  // it does) or `index` was replaced since.
  static void Missed(git_repository* repo, const CommitGraph* index);
  // The delay before the first retry of a failed build (doubled for each failure after it) and
  // the least time between two builds of one store's index; 30 s and 10 s unless tests set them
  // (which ends the delays running).
  static void SetDelays(std::chrono::milliseconds retry, std::chrono::milliseconds refresh);
  // Waits until nothing is queued or building, at most `limit`; true when idle (tests).
  static bool WaitIdle(std::chrono::milliseconds limit);
  static HistoryIndexMetrics Metrics();
};

}  // namespace shellac::gitfrag

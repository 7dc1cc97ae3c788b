// git's rename detection as cgit 1.2.3 asks git 2.39 for it on its commit and diff pages and the
// log's file and line counts (diffcore-rename with renames only: no copies, no break detection,
// the default 50 % minimum similarity, the cgitrc's renamelimit), over the own tree diff's
// changes; and the similarity estimate (diffcore-delta's span hashes) it shares with blame.
#pragma once

#include <git2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gitfrag/tree_diff.h"

namespace shellac::gitfrag {

// diffcore-rename's scores: the maximum (identical), the default minimum for a rename (50 %) and
// the one a pair of unique basenames needs (half way from the minimum to the maximum).
constexpr int kMaxSimilarity = 60000;
constexpr int kMinRenameScore = 30000;
constexpr int kMinBasenameScore = kMinRenameScore + (kMaxSimilarity - kMinRenameScore) / 2;
// diff.renameLimit's default, which cgit keeps unless its cgitrc sets renamelimit: inexact
// detection runs only while sources x destinations <= limit^2 (0 or less: no limit).
constexpr int kDefaultRenameLimit = 1000;

// xdiff's buffer_is_binary: a NUL in the first 8000 bytes.
bool LooksBinary(std::string_view bytes);
// The part of a path after its last '/'.
std::string_view Basename(std::string_view path);

// diffcore-delta's span hashes of a blob: chunks of up to 64 bytes ending at a newline (a last
// chunk without one is not counted; CR before LF ignored unless the bytes look binary), as
// (hash, bytes) pairs sorted by hash, one pair per hash.
std::vector<std::pair<uint32_t, uint32_t>> SpanHashes(std::string_view bytes);

// diffcore-rename's estimate_similarity for two regular files from their sizes and span hashes:
// the bytes of the destination found in the source over the larger size, scaled to
// kMaxSimilarity; 0 for an empty destination.
int SpanSimilarity(const std::vector<std::pair<uint32_t, uint32_t>>& src, size_t src_size,
                   const std::vector<std::pair<uint32_t, uint32_t>>& dst, size_t dst_size);
// Whether sizes this far apart can still reach `minimum` (git skips the hashing when not).
bool SizesCanReach(size_t src_size, size_t dst_size, int minimum);
// Both steps on two blobs' bytes.
int Similarity(std::string_view src, std::string_view dst, int minimum);

// Pairs the deleted and added files of `changes` (DiffTrees's list, in git's order, possibly
// limited to a path) as git's diffcore-rename does with cgit's options: exact renames first (the
// same blob, the same basename preferred, then path order), then pairs of basenames unique on
// both sides scoring at least kMinBasenameScore, then, while sources x destinations stay within
// `rename_limit`^2, the most similar pairs scoring at least kMinRenameScore (up to four candidates
// kept per destination, ties by basename, then order). A modified or kind-changed file
// (GIT_DELTA_MODIFIED, GIT_DELTA_TYPECHANGE) is neither source nor destination. Each pair becomes
// one GIT_DELTA_RENAMED change at the added file's place (old_path, old_mode, old_id from the
// deleted file; score set) and the deleted file leaves the list. False with *reason when a blob
// cannot be read (*changes as it was). With `blob_lines`, each blob read for an estimate also has
// its lines hashed into BlobLinesOf's memo (line_count.h), for a caller that counts the files'
// lines next: every such blob is a side of a file it counts (a rename's, or an unpaired file's),
// so one read serves both.
bool DetectRenames(git_repository* repo, std::vector<TreeChange>* changes, int rename_limit,
                   bool blob_lines, std::string* reason);

// git log --follow's look for where a file came from (tree-diff.c's try_to_follow_renames, with
// the options it leaves cgit 1.2.3: copies harder, the default 50 % minimum, no break detection,
// git's default rename limit): `added`, a file at the path followed that `commit_tree` has and
// `parent_tree` has not (a GIT_DELTA_ADDED change), as a rename or copy of any file of
// `parent_tree`. The same blob first (among the first candidates, a file the commit deletes
// before one it keeps, then the same basename, then path order), else the most similar scoring
// at least kMinRenameScore (a deleted file first). Found: *added becomes GIT_DELTA_RENAMED (the
// source deleted) or GIT_DELTA_COPIED (kept), with the source's path, mode, blob and the score.
// False with *reason when a tree or blob cannot be read.
bool FindFollowSource(git_repository* repo, RawObjects* objects, const git_oid& parent_tree,
                      const git_oid& commit_tree, TreeChange* added, std::string* reason);

}  // namespace shellac::gitfrag

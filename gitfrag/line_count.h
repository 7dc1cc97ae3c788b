// Line counts of a minimal diff (cgit's enable-log-linecount), without making the diff.
//
// cgit counts the '+' and '-' lines of xdiff's "minimal" diff (XDF_NEED_MINIMAL) of each changed
// file. xdiff first trims the common head and tail and sets aside lines it will call changed (no
// match in the other file; many matches amid unmatched lines), then searches the rest exactly: its
// diff keeps a longest common subsequence (LCS) of the kept lines, so however it picks and slides
// the hunks, it removes |A| - head - tail - LCS lines and adds |B| - head - tail - LCS. This module
// computes those numbers without the diff: lines as 64-bit hashes (each blob hashed once and
// remembered by its id, since a file's new blob in one commit is its old blob in the next commit
// that touches it), xdiff's trimming and setting aside, and the length of a longest common
// subsequence of the rest (Myers' greedy search, or a bit-parallel one where that is cheaper).
#pragma once

#include <git2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace shellac::gitfrag {

// A blob's lines as git's diff sees them: each ends after its '\n' (a last line without one is a
// line of its own kind: "x" and "x\n" differ), as hashes. binary: a NUL in the first 8000 bytes
// (git's and libgit2's test), which cgit counts as no lines.
struct BlobLines {
  bool binary = false;
  std::vector<uint64_t> hashes;
};

// With `ends`: also where each line ends (the offset past it; for a blob under 4 GiB, not binary).
BlobLines HashLines(std::string_view data, std::vector<uint32_t>* ends = nullptr);

// HashLines(data, ends), given another blob `near` (an earlier or later version of the same file)
// with its lines and their ends: the lines inside the bytes both share at the start and at the
// end are taken from near's (a line's hash depends on its bytes only), found by the ends, and only
// the lines between are read and hashed. The same hashes and ends as HashLines(data, ends)
// whatever `near` is; a near that shares nothing costs a few compares. Blobs under 4 GiB.
BlobLines HashLinesNear(std::string_view data, std::string_view near, const BlobLines& near_lines,
                        const std::vector<uint32_t>& near_ends, std::vector<uint32_t>* ends);

struct LineDelta {
  size_t added = 0, removed = 0;
};

// The lines xdiff's minimal diff from `a` to `b` adds and removes.
LineDelta MinimalLineDelta(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

// The length of a longest common subsequence of two lines of ids below `ids` (MinimalLineDelta's
// search on the lines xdiff keeps). LcsLength takes Myers' greedy search (LcsMyers: quick when
// few lines differ) until it has spent what the dense bit-vector recurrence would (|a| |b| / 64
// word steps), then the bit-vector recurrence over a sparse table (LcsBits: a line of `b` steps
// only the words of `a` that hold its equals, quick when many lines differ and seldom repeat, as
// in a rewritten translation): the same number either way (the tests check each against the
// other).
size_t LcsLength(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t ids);
size_t LcsMyers(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);
size_t LcsBits(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t ids);

// The lines of blob `id` in `repo` (remembered by id in a bounded memo shared by every render
// thread and repository), or null when it cannot be read. A blob read here is hashed by
// HashLinesNear from the blob `near` (the other side of the file's change) when this render
// thread read that one lately (it keeps the bytes of the last few blobs it read), else from the
// last blob it read: a log's rows are consecutive versions of a file.
std::shared_ptr<const BlobLines> BlobLinesOf(git_repository* repo, const git_oid& id,
                                             const git_oid* near = nullptr);

// Puts the lines of blob `id`, whose bytes a caller has read for its own use, in BlobLinesOf's
// memo (unless they are there), so that BlobLinesOf does not read the blob again.
void RememberBlobLines(const git_oid& id, std::string_view bytes);

}  // namespace shellac::gitfrag

// xdiff's setting aside (xdl_cleanup_records, xdl_clean_mmatch), shared by the two diffs that
// follow xdiff: the log's line counts (line_count.h, its minimal mode) and blame's line diff
// (line_diff.h, no flags). Before its search xdiff calls changed, whatever the search would find,
// a line with no equal line in the other file, and a line with many (at least ~sqrt of its file's
// lines, at most 1024) that sits in a run of such lines mostly made of unmatched ones. git 2.39's,
// libgit2's and so cgit's xdiff do so in the minimal mode too (later git does not), so a minimal
// diff is then not always minimal, and both diffs must set aside the same lines.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shellac::gitfrag {

// xdiff's rough square root: 2^ceil(bits/2), a power of two (xdl_bogosqrt).
inline int64_t BogoSqrt(int64_t n) {
  int64_t i = 1;
  for (; n > 0; n >>= 2) i <<= 1;
  return i;
}

// How many equal lines the other file has for a line: none, some, or many.
enum Matches : char { kNoMatch = 0, kSomeMatches = 1, kManyMatches = 2 };

// The count of equal lines in the other file from which a line of a file of `file_lines` lines
// has many.
inline int64_t ManyMatchesFrom(int64_t file_lines) {
  return std::min<int64_t>(BogoSqrt(file_lines), 1024);  // XDL_MAX_EQLIMIT
}
inline Matches MatchesOf(int64_t in_other, int64_t many_from) {
  return in_other == 0 ? kNoMatch : in_other >= many_from ? kManyMatches : kSomeMatches;
}

// Whether xdiff keeps line `i` of the lines it searches (those between the equal ends), given the
// Matches of each of them (`matches`): a line with some matches is kept, one with none is not, and
// one with many is not when the runs of lines with none or many on both sides of it (within 100
// lines) each hold an unmatched line and, with it counted on each side, fewer than a quarter of
// their lines have many.
bool ManyMatchesKept(const std::vector<char>& matches, size_t i);  // for a line with many
inline bool KeptForSearch(const std::vector<char>& matches, size_t i) {
  if (matches[i] != kManyMatches) return matches[i] == kSomeMatches;
  return ManyMatchesKept(matches, i);
}

}  // namespace shellac::gitfrag

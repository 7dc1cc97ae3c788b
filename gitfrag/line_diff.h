// A line diff that gives exactly the hunks git's xdiff gives with no flags (Myers with xdiff's
// cost heuristics, no minimal search, no indent heuristic, lines compared byte for byte with their
// newline), without context: what git's blame asks of xdiff for each parent (cgit's blame page
// passes no diff options). A blob's lines are split and hashed once (LineIndex) and reused by
// every diff the blob takes part in; libgit2's git_diff_buffers hashed both buffers (SHA-1) and
// split them again on every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace shellac::gitfrag {

// A blob's lines: line i is bytes [i ? ends[i - 1] : 0, ends[i]) of `bytes`, its newline included
// (a last line without one is a line too, and differs from the same text with a newline).
struct LineIndex {
  std::string_view bytes;  // not owned: the blob outlives the index
  std::vector<size_t> ends;
  std::vector<uint64_t> hashes;  // of each line's bytes; equal lines have equal hashes
  size_t size() const { return ends.size(); }
  size_t begin(size_t i) const { return i ? ends[i - 1] : 0; }
  std::string_view line(size_t i) const { return bytes.substr(begin(i), ends[i] - begin(i)); }
};
LineIndex IndexLines(std::string_view bytes);
// The same index of `bytes`, with the lines it shares with `known` (the index of another blob, in
// a blame the next version of the same file) copied from there instead of split and hashed again:
// the bytes are compared at the start, at the end and, between them, from each line on where
// known's lines go on; only the lines that differ are split and hashed.
LineIndex IndexLinesLike(std::string_view bytes, const LineIndex& known);

// One hunk of a diff without context, 0-based: lines [a, a + a_count) of the old side replaced by
// lines [b, b + b_count) of the new one. An empty side's line is where the other side's lines
// go (the count of lines before them).
struct LineHunk {
  size_t a = 0, a_count = 0, b = 0, b_count = 0;
  bool operator==(const LineHunk&) const = default;
};

// Scratch space reused between diffs (one per thread).
class LineDiffer {
 public:
  // xdl_diff's changes between the first `na` lines of `a` and the first `nb` of `b`, in order.
  // `minimal`: XDF_NEED_MINIMAL (git's --minimal, cgit's commit and diff pages): the search never
  // settles for a good-enough split (xdl_split's heuristics off); nothing else changes.
  // `indent_heuristic`: XDF_INDENT_HEURISTIC (git's default, libgit2's GIT_DIFF_INDENT_HEURISTIC:
  // cgit's patch and rawdiff): a group of changes that can slide and meets no change of the other
  // side is left where the split lines' indentation and blank lines score best.
  void Diff(const LineIndex& a, size_t na, const LineIndex& b, size_t nb,
            std::vector<LineHunk>* out, bool minimal = false, bool indent_heuristic = false);
  // What git's blame gets for a parent (`a`) and a suspect (`b`): xdi_diff's trim_common_tail
  // (equal 1 KiB blocks at the ends cut, back to the first newline in them), then Diff.
  void BlameDiff(const LineIndex& a, const LineIndex& b, std::vector<LineHunk>* out);

 private:
  struct Split {
    int64_t i1 = 0, i2 = 0;
    bool min_lo = false, min_hi = false;
  };
  bool Equal(int side, int64_t i, int64_t j) const;
  void Classify(size_t pre, size_t suf);
  void Cleanup(int side, size_t pre);
  void Compare(bool minimal);
  Split SplitBox(int64_t off1, int64_t lim1, int64_t off2, int64_t lim2, bool need_min);
  void Compact(int side, bool indent_heuristic);
  int Indent(int side, int64_t i) const;
  int SplitScore(int side, int64_t split, int* effective_indent) const;

  const LineIndex* lines_[2] = {nullptr, nullptr};
  int64_t n_[2] = {0, 0};  // lines diffed of each side

  // Per side (0: a, 1: b).
  std::vector<uint32_t> class_[2];   // middle lines' classes (index: line - pre)
  std::vector<uint32_t> count_[2];   // by class: lines of that class in the whole side
  std::vector<char> matches_[2];     // middle lines' Matches (set_aside.h)
  std::vector<uint32_t> ha_[2];      // classes of the lines kept for the search
  std::vector<int64_t> rindex_[2];   // their line numbers
  std::vector<char> changed_[2];     // per line, with a zero before and after (index + 1)
  // The class table: open addressing by line hash.
  struct Slot {
    uint64_t hash = 0;
    uint32_t cls = 0;  // class + 1; 0: empty
  };
  std::vector<Slot> table_;
  std::vector<std::string_view> class_line_;  // a line of each class
  std::vector<int64_t> kv_;
  int64_t mxcost_ = 0;
  struct Box {
    int64_t off1, lim1, off2, lim2;
    bool need_min;
  };
  std::vector<Box> boxes_;
};

}  // namespace shellac::gitfrag

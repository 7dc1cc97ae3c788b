// xdiff's steps, in its order (xdl_diff with no flags), written over LineIndex:
//  1. the lines equal at both ends are set aside (xdl_trim_ends);
//  2. lines between them are sorted into classes of equal lines; a line with no equal line in the
//     other side is changed at once, and one with many (at least the square root of its side's
//     line count, at most 1024) is changed too when it sits in a run of such lines
//     (xdl_cleanup_records, xdl_clean_mmatch: set_aside.h);
//  3. Myers' search over the lines kept, split in boxes from both ends, giving up on the
//     shortest edit for a good-enough split once the cost passes xdiff's limits (xdl_split; with
//     XDF_NEED_MINIMAL never);
//  4. each group of changed lines slid up and down as far as equal lines let it, joined with the
//     groups it meets, and left aligned with a change on the other side where one can be, else
//     (with the indent heuristic) where its two split lines score best (xdl_change_compact);
//  5. the changes read off in order (xdl_build_script); without context each is a hunk.
#include "gitfrag/line_diff.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>

#include "gitfrag/set_aside.h"

namespace shellac::gitfrag {

namespace {

constexpr int64_t kLineMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kSnakeCount = 20;   // a run of equal lines this long is a good one
constexpr int64_t kHeurMinCost = 256;  // cost from which a good run may end the search
constexpr int64_t kMaxCostMin = 256;   // the search's cost limit is at least this
constexpr int64_t kHeurFactor = 4;

// How many lines from `from` on, up to `limit`, are unchanged (a changed line's flag is 1, an
// unchanged one's 0): a vectorised search for the next 1, so that runs of unchanged lines between
// a diff's few changes cost no step each.
int64_t UnchangedRun(const char* changed, int64_t from, int64_t limit) {
  if (from >= limit) return 0;
  const void* one = std::memchr(changed + from, 1, static_cast<size_t>(limit - from));
  return one == nullptr ? limit - from : static_cast<const char*>(one) - (changed + from);
}

// A line's hash. `end` is the end of the blob: a last partial word is read whole when the blob goes
// on past it (its bytes past the line cleared, the same word a short copy gives), so a line costs
// no call.
uint64_t HashBytes(const char* p, size_t n, const char* end) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = n * kMul;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    if (std::endian::native == std::endian::little && end - p >= 8) {
      std::memcpy(&w, p, 8);
      w &= (uint64_t{1} << (8 * n)) - 1;
    } else {
      std::memcpy(&w, p, n);
    }
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  return h ^ (h >> 32);
}

// git's trim_common_tail: the size of each buffer after equal 1 KiB blocks at their ends are cut,
// less the part of the last block cut after its first newline.
size_t TrimmedSize(std::string_view a, std::string_view b, size_t* b_size) {
  constexpr size_t kBlock = 1024;
  size_t trimmed = 0;
  const size_t smaller = std::min(a.size(), b.size());
  while (kBlock + trimmed <= smaller &&
         std::memcmp(a.data() + a.size() - trimmed - kBlock,
                     b.data() + b.size() - trimmed - kBlock, kBlock) == 0)
    trimmed += kBlock;
  size_t recovered = 0;
  const char* ap = a.data() + a.size() - trimmed;
  while (recovered < trimmed)
    if (ap[recovered++] == '\n') break;
  *b_size = b.size() - (trimmed - recovered);
  return a.size() - (trimmed - recovered);
}

// Lines of `x` that end at or before byte `size`.
size_t LinesWithin(const LineIndex& x, size_t size) {
  return static_cast<size_t>(std::upper_bound(x.ends.begin(), x.ends.end(), size) - x.ends.begin());
}

// Splits bytes [pos, limit) of `out.bytes` in lines (the last one ends at `limit`) and hashes them.
void AppendLines(size_t pos, size_t limit, LineIndex* out) {
  const char* p = out->bytes.data();
  const char* const end = p + out->bytes.size();
  while (pos < limit) {
    const void* nl = std::memchr(p + pos, '\n', limit - pos);
    const size_t line_end =
        nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - p) + 1 : limit;
    out->ends.push_back(line_end);
    out->hashes.push_back(HashBytes(p + pos, line_end - pos, end));
    pos = line_end;
  }
}

// How many bytes `a` and `b` share at their start (of the first `n`).
size_t CommonPrefix(const char* a, const char* b, size_t n) {
  constexpr size_t kBlock = 256;
  size_t i = 0;
  while (i + kBlock <= n && std::memcmp(a + i, b + i, kBlock) == 0) i += kBlock;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Splits bytes [pos, limit) of `out.bytes` in lines (the last one ends at `limit`) and hashes them,
// where they are mostly known's lines [j, j_end) with a few changes (in a blame, the hunks of a
// commit between the head and the tail the two blobs share): from a line on, the bytes both share
// are found by comparing them, and the known lines within them are taken (ends moved, hashes
// copied); a line that differs is split and hashed, and looked for among known's next kWindow
// lines (lines known has and `bytes` lacks before it), taken as where known goes on when the line
// after it is known's next one too. After a few lines in a row that are not known's, known is
// tried again only at powers of two of them: a rewritten text costs little more than AppendLines.
void AppendLinesLike(size_t pos, size_t limit, const LineIndex& known, size_t j, size_t j_end,
                     LineIndex* out) {
  constexpr size_t kWindow = 64;
  const char* p = out->bytes.data();
  const char* const end = p + out->bytes.size();
  const char* k = known.bytes.data();
  const size_t k_limit = j_end > 0 ? known.ends[j_end - 1] : 0;
  // Known's lines from `from` on whose bytes follow `at` too: the index after the last of them
  // (`from`: none). A line without a newline (known's last) only where `limit` ends it here too.
  auto shared_lines = [&](size_t at, size_t from) {
    if (from >= j_end) return from;
    const size_t k_at = known.begin(from);
    const size_t common = CommonPrefix(p + at, k + k_at, std::min(limit - at, k_limit - k_at));
    const auto first = known.ends.begin();
    size_t last = static_cast<size_t>(
        std::upper_bound(first + static_cast<std::ptrdiff_t>(from),
                         first + static_cast<std::ptrdiff_t>(j_end), k_at + common) - first);
    if (last > from && k[known.ends[last - 1] - 1] != '\n' &&
        known.ends[last - 1] - k_at + at != limit)
      --last;
    return last;
  };
  size_t misses = 0;  // lines in a row that were not known's
  while (pos < limit) {
    const bool try_known = j < j_end && (misses < 4 || (misses & (misses - 1)) == 0);
    if (try_known) {
      if (const size_t last = shared_lines(pos, j); last > j) {
        const size_t k_at = known.begin(j);
        for (size_t x = j; x < last; ++x) {
          out->ends.push_back(known.ends[x] - k_at + pos);
          out->hashes.push_back(known.hashes[x]);
        }
        pos = out->ends.back();
        j = last;
        misses = 0;
        continue;
      }
    }
    const void* nl = std::memchr(p + pos, '\n', limit - pos);
    const size_t line_end =
        nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - p) + 1 : limit;
    const uint64_t h = HashBytes(p + pos, line_end - pos, end);
    out->ends.push_back(line_end);
    out->hashes.push_back(h);
    ++misses;
    if (try_known) {
      const std::string_view line(p + pos, line_end - pos);
      const size_t x_end = std::min(j + kWindow, j_end);
      for (size_t x = j; x < x_end; ++x)
        if (known.hashes[x] == h && known.line(x) == line) {
          if (line_end == limit || shared_lines(line_end, x + 1) > x + 1) {
            j = x + 1;
            misses = 0;
          }
          break;
        }
    }
    pos = line_end;
  }
}

// How many bytes the `n` before `a_end` and before `b_end` share at their end.
size_t CommonSuffix(const char* a_end, const char* b_end, size_t n) {
  constexpr size_t kBlock = 256;
  size_t i = 0;
  while (i + kBlock <= n && std::memcmp(a_end - i - kBlock, b_end - i - kBlock, kBlock) == 0)
    i += kBlock;
  while (i < n && a_end[-1 - static_cast<std::ptrdiff_t>(i)] == b_end[-1 - static_cast<std::ptrdiff_t>(i)])
    ++i;
  return i;
}

// How many of the first `na` lines of `a` and `nb` of `b` are equal at their start: the bytes are
// compared, and the lines within the bytes both share counted (a last line without a newline is
// one only if it ends both).
size_t SharedHead(const LineIndex& a, size_t na, const LineIndex& b, size_t nb) {
  const size_t a_end = na > 0 ? a.ends[na - 1] : 0, b_end = nb > 0 ? b.ends[nb - 1] : 0;
  const size_t common = CommonPrefix(a.bytes.data(), b.bytes.data(), std::min(a_end, b_end));
  const auto first = a.ends.begin();
  size_t pre = static_cast<size_t>(
      std::upper_bound(first, first + static_cast<std::ptrdiff_t>(na), common) - first);
  if (pre > 0 && (pre > nb || b.ends[pre - 1] != a.ends[pre - 1])) --pre;
  return pre;
}

// How many of the lines after the first `pre` are equal at the end of both (the first `na` lines
// of `a` and `nb` of `b`): the lines within the bytes both share at their end that begin a line in
// both.
size_t SharedTail(const LineIndex& a, size_t na, const LineIndex& b, size_t nb, size_t pre) {
  const size_t a_end = na > 0 ? a.ends[na - 1] : 0, b_end = nb > 0 ? b.ends[nb - 1] : 0;
  const size_t head = pre > 0 ? a.ends[pre - 1] : 0;  // the same in both
  const size_t shared = CommonSuffix(a.bytes.data() + a_end, b.bytes.data() + b_end,
                                     std::min(a_end, b_end) - head);
  if (shared == 0) return 0;
  const size_t from = a_end - shared;
  // The first line of `a` after the head that begins at or after `from`.
  const auto first = a.ends.begin();
  size_t tail = static_cast<size_t>(
      std::lower_bound(first + static_cast<std::ptrdiff_t>(pre),
                       first + static_cast<std::ptrdiff_t>(na), from) - first);
  if (from > head) ++tail;  // the line ending at or across `from` is not within
  if (tail < na && a.begin(tail) == from) {
    const size_t at = b_end - shared;
    if (at != head && b.bytes[at - 1] != '\n') ++tail;
  }
  return na - tail;
}

}  // namespace

LineIndex IndexLines(std::string_view bytes) {
  LineIndex out;
  out.bytes = bytes;
  out.ends.reserve(bytes.size() / 32 + 1);
  out.hashes.reserve(bytes.size() / 32 + 1);
  AppendLines(0, bytes.size(), &out);
  return out;
}

LineIndex IndexLinesLike(std::string_view bytes, const LineIndex& known) {
  LineIndex out;
  out.bytes = bytes;
  out.ends.reserve(bytes.size() / 32 + 1);
  out.hashes.reserve(bytes.size() / 32 + 1);
  const std::string_view k = known.bytes;
  // The start: known's lines within the bytes both share that end in a newline (a last line
  // without one may go on in `bytes`).
  const size_t common = CommonPrefix(bytes.data(), k.data(), std::min(bytes.size(), k.size()));
  size_t head = static_cast<size_t>(
      std::upper_bound(known.ends.begin(), known.ends.end(), common) - known.ends.begin());
  if (head > 0 && k[known.ends[head - 1] - 1] != '\n') --head;
  const size_t head_end = head > 0 ? known.ends[head - 1] : 0;
  out.ends.assign(known.ends.begin(), known.ends.begin() + static_cast<std::ptrdiff_t>(head));
  out.hashes.assign(known.hashes.begin(), known.hashes.begin() + static_cast<std::ptrdiff_t>(head));
  // The end: known's lines within the bytes both share after the start that begin a line in
  // `bytes` too (every line inside the shared bytes does; the first one only if a newline or the
  // start's end is before it there).
  const size_t shared = CommonSuffix(bytes.data() + bytes.size(), k.data() + k.size(),
                                     std::min(bytes.size(), k.size()) - head_end);
  const size_t from = k.size() - shared;  // in known
  size_t tail = known.size();             // known's first line of the end
  if (shared > 0) {
    tail = static_cast<size_t>(
        std::lower_bound(known.ends.begin(), known.ends.end(), from) - known.ends.begin());
    if (from > 0) ++tail;  // the line ending at or across `from` is not within
    if (tail < known.size() && known.begin(tail) == from) {
      const size_t at = bytes.size() - shared;
      if (at != head_end && bytes[at - 1] != '\n') ++tail;
    }
  }
  const size_t mid_end = tail < known.size() ? bytes.size() - (k.size() - known.begin(tail))
                                             : bytes.size();
  AppendLinesLike(head_end, mid_end, known, head, tail, &out);
  for (size_t j = tail; j < known.size(); ++j) {
    out.ends.push_back(known.ends[j] - k.size() + bytes.size());
    out.hashes.push_back(known.hashes[j]);
  }
  return out;
}

bool LineDiffer::Equal(int side, int64_t i, int64_t j) const {
  const LineIndex& x = *lines_[side];
  const auto a = static_cast<size_t>(i), b = static_cast<size_t>(j);
  return x.hashes[a] == x.hashes[b] && x.line(a) == x.line(b);
}

void LineDiffer::BlameDiff(const LineIndex& a, const LineIndex& b, std::vector<LineHunk>* out) {
  size_t b_size = 0;
  const size_t a_size = TrimmedSize(a.bytes, b.bytes, &b_size);
  Diff(a, LinesWithin(a, a_size), b, LinesWithin(b, b_size), out);
}

void LineDiffer::Diff(const LineIndex& a, size_t na, const LineIndex& b, size_t nb,
                      std::vector<LineHunk>* out, bool minimal, bool indent_heuristic) {
  out->clear();
  lines_[0] = &a;
  lines_[1] = &b;
  n_[0] = static_cast<int64_t>(na);
  n_[1] = static_cast<int64_t>(nb);
  // 1. The ends.
  const size_t pre = SharedHead(a, na, b, nb);
  const size_t suf = SharedTail(a, na, b, nb, pre);
  changed_[0].assign(na + 2, 0);
  changed_[1].assign(nb + 2, 0);
  const size_t m0 = na - pre - suf, m1 = nb - pre - suf;
  if (m0 == 0 || m1 == 0) {
    // Lines only added or only removed: xdiff's search over an empty side marks every line of
    // the other side's middle changed (xdl_recs_cmp), kept for the search or not, so their
    // classes and counts (a probe of every line at the ends) would change nothing.
    std::fill_n(changed_[0].begin() + 1 + static_cast<std::ptrdiff_t>(pre), m0, 1);
    std::fill_n(changed_[1].begin() + 1 + static_cast<std::ptrdiff_t>(pre), m1, 1);
  } else {
    // 2. Classes, and the lines kept for the search.
    Classify(pre, suf);
    Cleanup(0, pre);
    Cleanup(1, pre);
    // 3. The search.
    Compare(minimal);
  }
  // 4. Sliding.
  Compact(0, indent_heuristic);
  Compact(1, indent_heuristic);
  // 5. The changes.
  const char* c1 = changed_[0].data() + 1;
  const char* c2 = changed_[1].data() + 1;
  size_t i1 = 0, i2 = 0;
  while (i1 < na || i2 < nb) {
    if (c1[i1] || c2[i2]) {
      LineHunk h;
      h.a = i1;
      h.b = i2;
      while (c1[i1]) ++i1;
      while (c2[i2]) ++i2;
      h.a_count = i1 - h.a;
      h.b_count = i2 - h.b;
      out->push_back(h);
    } else {
      // Unchanged lines pair one to one: the run both sides share is stepped at once.
      const auto skip = std::max<int64_t>(
          1, std::min(UnchangedRun(c1, static_cast<int64_t>(i1), static_cast<int64_t>(na)),
                      UnchangedRun(c2, static_cast<int64_t>(i2), static_cast<int64_t>(nb))));
      i1 += static_cast<size_t>(skip);
      i2 += static_cast<size_t>(skip);
    }
  }
}

void LineDiffer::Classify(size_t pre, size_t suf) {
  const size_t m0 = static_cast<size_t>(n_[0]) - pre - suf;
  const size_t m1 = static_cast<size_t>(n_[1]) - pre - suf;
  size_t capacity = 16;
  while (capacity < 2 * (m0 + m1)) capacity <<= 1;
  table_.assign(capacity, Slot{});
  const size_t mask = capacity - 1;
  class_line_.clear();
  auto find = [&](const LineIndex& x, size_t i, bool insert) -> uint32_t {
    const uint64_t h = x.hashes[i];
    const std::string_view line = x.line(i);
    for (size_t s = static_cast<size_t>(h) & mask;; s = (s + 1) & mask) {
      Slot& slot = table_[s];
      if (slot.cls == 0) {
        if (!insert) return 0;
        class_line_.push_back(line);
        slot.hash = h;
        slot.cls = static_cast<uint32_t>(class_line_.size());
        return slot.cls;
      }
      if (slot.hash == h && class_line_[slot.cls - 1] == line) return slot.cls;
    }
  };
  for (int side = 0; side < 2; ++side) {
    const size_t m = side == 0 ? m0 : m1;
    class_[side].resize(m);
    for (size_t i = 0; i < m; ++i) class_[side][i] = find(*lines_[side], pre + i, true) - 1;
  }
  const size_t classes = class_line_.size();
  for (int side = 0; side < 2; ++side) {
    count_[side].assign(classes, 0);
    for (const uint32_t c : class_[side]) ++count_[side][c];
  }
  // The lines set aside at the ends are on both sides.
  const LineIndex& a = *lines_[0];
  const size_t na = static_cast<size_t>(n_[0]);
  auto count_end = [&](size_t i) {
    if (const uint32_t c = find(a, i, false); c != 0) {
      ++count_[0][c - 1];
      ++count_[1][c - 1];
    }
  };
  if (classes > 0) {
    for (size_t i = 0; i < pre; ++i) count_end(i);
    for (size_t i = na - suf; i < na; ++i) count_end(i);
  }
}

void LineDiffer::Cleanup(int side, size_t pre) {
  const int other = 1 - side;
  const std::vector<uint32_t>& cls = class_[side];
  const auto m = static_cast<int64_t>(cls.size());
  const int64_t many_from = ManyMatchesFrom(n_[side]);
  std::vector<char>& matches = matches_[side];
  matches.resize(cls.size());
  for (size_t i = 0; i < cls.size(); ++i) matches[i] = MatchesOf(count_[other][cls[i]], many_from);
  ha_[side].clear();
  rindex_[side].clear();
  char* changed = changed_[side].data() + 1;
  for (int64_t i = 0; i < m; ++i) {
    if (KeptForSearch(matches, static_cast<size_t>(i))) {
      ha_[side].push_back(cls[static_cast<size_t>(i)]);
      rindex_[side].push_back(static_cast<int64_t>(pre) + i);
    } else {
      changed[static_cast<int64_t>(pre) + i] = 1;
    }
  }
}

void LineDiffer::Compare(bool minimal) {
  const auto n1 = static_cast<int64_t>(ha_[0].size()), n2 = static_cast<int64_t>(ha_[1].size());
  const int64_t ndiags = n1 + n2 + 3;
  kv_.assign(static_cast<size_t>(2 * ndiags + 2), 0);
  mxcost_ = std::max(BogoSqrt(ndiags), kMaxCostMin);
  const uint32_t* h1 = ha_[0].data();
  const uint32_t* h2 = ha_[1].data();
  char* c1 = changed_[0].data() + 1;
  char* c2 = changed_[1].data() + 1;
  boxes_.clear();
  boxes_.push_back(Box{0, n1, 0, n2, minimal});
  while (!boxes_.empty()) {
    Box box = boxes_.back();
    boxes_.pop_back();
    while (box.off1 < box.lim1 && box.off2 < box.lim2 && h1[box.off1] == h2[box.off2]) {
      ++box.off1;
      ++box.off2;
    }
    while (box.off1 < box.lim1 && box.off2 < box.lim2 && h1[box.lim1 - 1] == h2[box.lim2 - 1]) {
      --box.lim1;
      --box.lim2;
    }
    if (box.off1 == box.lim1) {
      for (int64_t i = box.off2; i < box.lim2; ++i) c2[rindex_[1][static_cast<size_t>(i)]] = 1;
    } else if (box.off2 == box.lim2) {
      for (int64_t i = box.off1; i < box.lim1; ++i) c1[rindex_[0][static_cast<size_t>(i)]] = 1;
    } else {
      const Split s = SplitBox(box.off1, box.lim1, box.off2, box.lim2, box.need_min);
      boxes_.push_back(Box{s.i1, box.lim1, s.i2, box.lim2, s.min_hi});
      boxes_.push_back(Box{box.off1, s.i1, box.off2, s.i2, s.min_lo});
    }
  }
}

LineDiffer::Split LineDiffer::SplitBox(int64_t off1, int64_t lim1, int64_t off2, int64_t lim2,
                                       bool need_min) {
  const uint32_t* h1 = ha_[0].data();
  const uint32_t* h2 = ha_[1].data();
  const int64_t n2 = static_cast<int64_t>(ha_[1].size());
  const int64_t ndiags = static_cast<int64_t>(ha_[0].size()) + n2 + 3;
  // Diagonal d = i1 - i2 runs from -(n2 + 1) to n1 + 1.
  int64_t* kf = kv_.data() + n2 + 1;
  int64_t* kb = kf + ndiags;
  const int64_t dmin = off1 - lim2, dmax = lim1 - off2;
  const int64_t fmid = off1 - off2, bmid = lim1 - lim2;
  const bool odd = ((fmid - bmid) & 1) != 0;
  int64_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
  kf[fmid] = off1;
  kb[bmid] = lim1;
  for (int64_t ec = 1;; ++ec) {
    bool got_snake = false;
    // Forward: one more edit on every diagonal of the domain, widened by one where it can be.
    if (fmin > dmin) kf[--fmin - 1] = -1;
    else ++fmin;
    if (fmax < dmax) kf[++fmax + 1] = -1;
    else --fmax;
    for (int64_t d = fmax; d >= fmin; d -= 2) {
      int64_t i1 = kf[d - 1] >= kf[d + 1] ? kf[d - 1] + 1 : kf[d + 1];
      const int64_t from = i1;
      int64_t i2 = i1 - d;
      while (i1 < lim1 && i2 < lim2 && h1[i1] == h2[i2]) {
        ++i1;
        ++i2;
      }
      if (i1 - from > kSnakeCount) got_snake = true;
      kf[d] = i1;
      if (odd && bmin <= d && d <= bmax && kb[d] <= i1) return Split{i1, i2, true, true};
    }
    // Backward.
    if (bmin > dmin) kb[--bmin - 1] = kLineMax;
    else ++bmin;
    if (bmax < dmax) kb[++bmax + 1] = kLineMax;
    else --bmax;
    for (int64_t d = bmax; d >= bmin; d -= 2) {
      int64_t i1 = kb[d - 1] < kb[d + 1] ? kb[d - 1] : kb[d + 1] - 1;
      const int64_t from = i1;
      int64_t i2 = i1 - d;
      while (i1 > off1 && i2 > off2 && h1[i1 - 1] == h2[i2 - 1]) {
        --i1;
        --i2;
      }
      if (from - i1 > kSnakeCount) got_snake = true;
      kb[d] = i1;
      if (!odd && fmin <= d && d <= fmax && i1 <= kf[d]) return Split{i1, i2, true, true};
    }
    if (need_min) continue;
    // Past the trigger with a good run found: a diagonal far along and not too far from the
    // middle one, ending in a good run, is split at.
    if (got_snake && ec > kHeurMinCost) {
      int64_t best = 0;
      Split split;
      for (int64_t d = fmax; d >= fmin; d -= 2) {
        const int64_t dd = d > fmid ? d - fmid : fmid - d;
        const int64_t i1 = kf[d], i2 = i1 - d;
        const int64_t v = (i1 - off1) + (i2 - off2) - dd;
        if (v > kHeurFactor * ec && v > best && off1 + kSnakeCount <= i1 && i1 < lim1 &&
            off2 + kSnakeCount <= i2 && i2 < lim2) {
          for (int64_t k = 1; h1[i1 - k] == h2[i2 - k]; ++k)
            if (k == kSnakeCount) {
              best = v;
              split.i1 = i1;
              split.i2 = i2;
              break;
            }
        }
      }
      if (best > 0) {
        split.min_lo = true;
        split.min_hi = false;
        return split;
      }
      for (int64_t d = bmax; d >= bmin; d -= 2) {
        const int64_t dd = d > bmid ? d - bmid : bmid - d;
        const int64_t i1 = kb[d], i2 = i1 - d;
        const int64_t v = (lim1 - i1) + (lim2 - i2) - dd;
        if (v > kHeurFactor * ec && v > best && off1 < i1 && i1 <= lim1 - kSnakeCount &&
            off2 < i2 && i2 <= lim2 - kSnakeCount) {
          for (int64_t k = 0; h1[i1 + k] == h2[i2 + k]; ++k)
            if (k == kSnakeCount - 1) {
              best = v;
              split.i1 = i1;
              split.i2 = i2;
              break;
            }
        }
      }
      if (best > 0) {
        split.min_lo = false;
        split.min_hi = true;
        return split;
      }
    }
    // Too costly: the furthest point either way.
    if (ec >= mxcost_) {
      int64_t fbest = -1, fbest1 = -1;
      for (int64_t d = fmax; d >= fmin; d -= 2) {
        int64_t i1 = std::min(kf[d], lim1);
        int64_t i2 = i1 - d;
        if (lim2 < i2) {
          i1 = lim2 + d;
          i2 = lim2;
        }
        if (fbest < i1 + i2) {
          fbest = i1 + i2;
          fbest1 = i1;
        }
      }
      int64_t bbest = kLineMax, bbest1 = kLineMax;
      for (int64_t d = bmax; d >= bmin; d -= 2) {
        int64_t i1 = std::max(off1, kb[d]);
        int64_t i2 = i1 - d;
        if (i2 < off2) {
          i1 = off2 + d;
          i2 = off2;
        }
        if (i1 + i2 < bbest) {
          bbest = i1 + i2;
          bbest1 = i1;
        }
      }
      if ((lim1 + lim2) - bbest < fbest - (off1 + off2))
        return Split{fbest1, fbest - fbest1, true, false};
      return Split{bbest1, bbest - bbest1, false, true};
    }
  }
}

// A line's indentation for the indent heuristic: its leading spaces and tabs (a tab to the next
// multiple of 8; other white space, as C's isspace has it, counts nothing), at most 200; -1 for a
// line of white space alone.
int LineDiffer::Indent(int side, int64_t i) const {
  constexpr int kMaxIndent = 200;
  int indent = 0;
  for (const char c : lines_[side]->line(static_cast<size_t>(i))) {
    if (c == ' ') {
      ++indent;
    } else if (c == '\t') {
      indent += 8 - indent % 8;
    } else if (c != '\n' && c != '\r' && c != '\v' && c != '\f') {
      return indent;
    }
    if (indent >= kMaxIndent) return kMaxIndent;
  }
  return -1;
}

// The indent heuristic's penalty for splitting `side` before line `split` (git's measure_split and
// score_add_split, their weights); the split's effective indent is added to *effective_indent.
int LineDiffer::SplitScore(int side, int64_t split, int* effective_indent) const {
  constexpr int kMaxBlanks = 20;
  const int64_t n = n_[side];
  const bool end_of_file = split >= n;
  const int at = end_of_file ? -1 : Indent(side, split);
  // The blank lines before the split and the indent of the line above them (-1: none; 0 past
  // kMaxBlanks blank lines); the same after the split's line.
  int pre_blank = 0, pre_indent = -1;
  for (int64_t i = split - 1; i >= 0; --i) {
    if ((pre_indent = Indent(side, i)) != -1) break;
    if (++pre_blank == kMaxBlanks) {
      pre_indent = 0;
      break;
    }
  }
  int post_blank = 0, post_indent = -1;
  for (int64_t i = split + 1; i < n; ++i) {
    if ((post_indent = Indent(side, i)) != -1) break;
    if (++post_blank == kMaxBlanks) {
      post_indent = 0;
      break;
    }
  }
  int penalty = 0;
  if (pre_indent == -1 && pre_blank == 0) penalty += 1;  // the start of the file
  if (end_of_file) penalty += 21;
  const int blank_after = at == -1 ? 1 + post_blank : 0;
  const int total_blank = pre_blank + blank_after;
  penalty += -30 * total_blank + 6 * blank_after;
  const int indent = at != -1 ? at : post_indent;
  *effective_indent += indent;
  const bool blanks = total_blank != 0;
  if (indent == -1 || pre_indent == -1 || indent == pre_indent) {
  } else if (indent > pre_indent) {
    penalty += blanks ? 10 : -4;  // indented
  } else if (post_indent != -1 && post_indent > indent) {
    penalty += blanks ? 17 : 24;  // outdented, with more indented lines after
  } else {
    penalty += blanks ? 17 : 23;  // dedented
  }
  return penalty;
}

// xdl_change_compact for one side, the other kept in step (groups of both sides correspond: the
// unchanged lines between them pair up).
void LineDiffer::Compact(int side, bool indent_heuristic) {
  const int other = 1 - side;
  char* ch = changed_[side].data() + 1;
  char* cho = changed_[other].data() + 1;
  const int64_t n = n_[side], no = n_[other];
  struct Group {
    int64_t start = 0, end = 0;
  };
  auto init = [](const char* c, Group* g) {
    g->start = g->end = 0;
    while (c[g->end]) ++g->end;
  };
  auto next = [](const char* c, int64_t size, Group* g) {
    if (g->end == size) return false;
    g->start = g->end + 1;
    for (g->end = g->start; c[g->end]; ++g->end) {
    }
    return true;
  };
  auto previous = [](const char* c, Group* g) {
    if (g->start == 0) return false;
    g->end = g->start - 1;
    for (g->start = g->end; c[g->start - 1]; --g->start) {
    }
    return true;
  };
  auto slide_down = [&](Group* g) {
    if (g->end < n && Equal(side, g->start, g->end)) {
      ch[g->start++] = 0;
      ch[g->end++] = 1;
      while (ch[g->end]) ++g->end;
      return true;
    }
    return false;
  };
  auto slide_up = [&](Group* g) {
    if (g->start > 0 && Equal(side, g->start - 1, g->end - 1)) {
      ch[--g->start] = 1;
      ch[--g->end] = 0;
      while (ch[g->start - 1]) --g->start;
      return true;
    }
    return false;
  };
  Group g, go;
  init(ch, &g);
  init(cho, &go);
  for (;;) {
    if (g.end != g.start) {
      int64_t size = 0, earliest_end = 0, end_matching_other = -1;
      do {
        size = g.end - g.start;
        end_matching_other = -1;
        while (slide_up(&g)) previous(cho, &go);
        earliest_end = g.end;
        if (go.end > go.start) end_matching_other = g.end;
        while (slide_down(&g)) {
          next(cho, no, &go);
          if (go.end > go.start) end_matching_other = g.end;
        }
      } while (size != g.end - g.start);
      if (g.end != earliest_end && end_matching_other != -1) {
        // Back up to line up with the last change of the other side it can align with.
        while (go.end == go.start) {
          slide_up(&g);
          previous(cho, &go);
        }
      } else if (indent_heuristic && g.end != earliest_end) {
        // Every place the group can end, from the earliest (at most kMaxSliding back from the
        // last) on, scored at both of its splits; the last of the best wins.
        constexpr int64_t kMaxSliding = 100;
        const int64_t group = g.end - g.start;
        int64_t best_shift = -1, best_indent = 0, best_penalty = 0;
        for (int64_t shift = std::max({earliest_end, g.end - group - 1, g.end - kMaxSliding});
             shift <= g.end; ++shift) {
          int indent = 0;
          const int penalty =
              SplitScore(side, shift, &indent) + SplitScore(side, shift - group, &indent);
          // git's score_cmp(score, best) <= 0: the indents' order weighs 60 penalty points.
          const int64_t cmp = 60 * ((indent > best_indent) - (indent < best_indent)) +
                              (penalty - best_penalty);
          if (best_shift == -1 || cmp <= 0) {
            best_shift = shift;
            best_indent = indent;
            best_penalty = penalty;
          }
        }
        while (g.end > best_shift) {
          slide_up(&g);
          previous(cho, &go);
        }
      }
    }
    if (g.end == g.start && go.end == go.start) {
      // Both groups empty: the steps below move both one line on for as long as the lines after
      // are unchanged on both sides (line n, past the last, counts as one: its flag is the zero
      // after the lines), doing nothing else. Taken at once but for the last.
      const int64_t skip = std::min(UnchangedRun(ch, g.end + 1, n + 1),
                                    UnchangedRun(cho, go.end + 1, no + 1));
      g.start = g.end += skip;
      go.start = go.end += skip;
    }
    if (!next(ch, n, &g)) break;
    next(cho, no, &go);
  }
}

}  // namespace shellac::gitfrag

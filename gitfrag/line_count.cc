#include "gitfrag/line_count.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "gitfrag/git.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/set_aside.h"

namespace shellac::gitfrag {

namespace {

// git's and libgit2's binary test looks at this many bytes for a NUL.
constexpr size_t kBinaryProbe = 8000;

// The memo holds at most two generations of this many bytes of hashes.
constexpr size_t kLinesGenerationBytes = size_t{16} << 20;

struct LinesWeight {
  size_t operator()(const std::shared_ptr<const BlobLines>& lines) const {
    return sizeof(BlobLines) + lines->hashes.capacity() * sizeof(uint64_t);
  }
};

// A line's 64-bit hash, 8 bytes a step from the line's start: each step, h -> rotl((h ^ word) *
// odd, 31), is a bijection of h; the last partial word is mixed in with the bytes past the line
// cleared, then the line's length. So two lines of one length that differ in one word never
// collide, and a line's hash does not depend on where it starts. (Intern's table takes a hash's
// low bits for its slot: the last step's rotation brings the product's high bits, which every
// bit of the line mixes, down there.) Lines are compared by these hashes alone.
uint64_t LineStep(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  return (h << 31) | (h >> 33);
}

// The 8 bytes at p, the first in the low byte.
uint64_t LoadWord(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

// The line [p, p + n) of a blob that ends at `end`, 16 bytes a turn: its last partial word is
// read whole when the blob goes on past it, so a line costs no call.
inline uint64_t LineHash(const char* p, size_t n, const char* end) {
  uint64_t h = 0x2545F4914F6CDD1Dull;
  const uint64_t length = n;
  for (; n >= 16; p += 16, n -= 16) h = LineStep(LineStep(h, LoadWord(p)), LoadWord(p + 8));
  if (n >= 8) {
    h = LineStep(h, LoadWord(p));
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    if (end - p >= 8) {
      w = LoadWord(p) & ((uint64_t{1} << (8 * n)) - 1);
    } else {
      for (size_t i = 0; i < n; ++i) w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    }
    h = LineStep(h, w);
  }
  return LineStep(h, length);
}

// The lines between the common head and tail of both files as small ids (equal lines, equal
// ids), with how often each id occurs in each whole file (xdiff counts a line's matches over the
// whole other file): one open-addressing table for the middles, no allocation per line. The head
// and tail lines, the same in both files, are only looked up: a small change to a big file costs
// a table the size of the change and one probe per unchanged line.
struct Interned {
  std::vector<uint32_t> a, b;        // the ids of the middles' lines
  std::vector<uint32_t> in_a, in_b;  // occurrences of each id in a and in b
};

Interned Intern(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, size_t head,
                size_t a_end, size_t b_end) {
  size_t capacity = 16;
  while (capacity < 2 * ((a_end - head) + (b_end - head))) capacity <<= 1;
  const auto keys =
      std::make_unique_for_overwrite<uint64_t[]>(capacity);  // read in used slots only
  std::vector<uint32_t> slots(capacity, UINT32_MAX);         // ids; UINT32_MAX: an empty slot
  Interned out;
  out.a.reserve(a_end - head);
  out.b.reserve(b_end - head);
  const auto slot_of = [&](uint64_t h) {  // h's slot, or the empty one where it would go
    size_t i = static_cast<size_t>(h) & (capacity - 1);
    while (slots[i] != UINT32_MAX && keys[i] != h) i = (i + 1) & (capacity - 1);
    return i;
  };
  const auto id_of = [&](uint64_t h) {
    const size_t i = slot_of(h);
    if (slots[i] == UINT32_MAX) {
      keys[i] = h;
      slots[i] = static_cast<uint32_t>(out.in_a.size());
      out.in_a.push_back(0);
      out.in_b.push_back(0);
    }
    return slots[i];
  };
  for (size_t i = head; i < a_end; ++i) {
    const uint32_t id = id_of(a[i]);
    out.a.push_back(id);
    ++out.in_a[id];
  }
  for (size_t i = head; i < b_end; ++i) {
    const uint32_t id = id_of(b[i]);
    out.b.push_back(id);
    ++out.in_b[id];
  }
  const auto shared = [&](uint64_t h) {  // a line of the common head or tail: once in each file
    const uint32_t id = slots[slot_of(h)];
    if (id == UINT32_MAX) return;  // not in the middles: its counts matter to no kept line
    ++out.in_a[id];
    ++out.in_b[id];
  };
  for (size_t i = 0; i < head; ++i) shared(a[i]);
  for (size_t i = a_end; i < a.size(); ++i) shared(a[i]);
  return out;
}

// The lines of `middle` (the ids of a file of `lines` lines, past the common head and tail) xdiff
// keeps for its search (set_aside.h); `in_other[id]` is how often a line occurs in the whole
// other file.
std::vector<uint32_t> Kept(const std::vector<uint32_t>& middle, size_t lines,
                           const std::vector<uint32_t>& in_other) {
  const int64_t many_from = ManyMatchesFrom(static_cast<int64_t>(lines));
  std::vector<char> matches(middle.size());
  for (size_t i = 0; i < middle.size(); ++i) matches[i] = MatchesOf(in_other[middle[i]], many_from);
  std::vector<uint32_t> kept;
  kept.reserve(middle.size());
  for (size_t i = 0; i < matches.size(); ++i)
    if (KeptForSearch(matches, i)) kept.push_back(middle[i]);
  return kept;
}

// One of the two searches of EditDistance on files of n and m lines: v[k] is the furthest x it
// has reached on diagonal k = x - y (kNone: none); every point reached is inside the grid, and a
// move only leaves one that is. The cells are not cleared first: step d reads diagonals -d - 1 ..
// d + 1, and sets those its predecessors did not write to kNone as it starts (a big file searched
// briefly pays for what it reads). A backward search reads both files from their ends.
struct MyersSearch {
  static constexpr ptrdiff_t kNone = PTRDIFF_MIN / 4;  // no point: below every sum it meets
  ptrdiff_t* v;
  const uint32_t* a;
  const uint32_t* b;
  ptrdiff_t n, m;
  size_t* steps;  // diagonals looked at plus lines matched, by both searches

  // Step d (>= 1): extends each diagonal of d's parity by a move and the equal lines that follow.
  // With kMeet, after each, returns whether the path has met one of the other search's, whose
  // cells are `other` and whose last step was `other_d` (a path of it on diagonal n - m - k that
  // ends at or before this one's x, in this search's terms).
  template <bool kBackward, bool kMeet>
  bool Step(ptrdiff_t d, const ptrdiff_t* other, ptrdiff_t other_d) {
    v[-d - 1] = v[d + 1] = kNone;
    ptrdiff_t low = std::max(-d, -m);
    low += (low + d) & 1;  // diagonals of d's parity only
    const ptrdiff_t high = std::min(d, n);
    for (ptrdiff_t k = low; k <= high; k += 2) {
      // Down from diagonal k + 1 unless that leaves the grid's last row, or right from k - 1
      // unless that leaves its last column, whichever goes further.
      const ptrdiff_t down = v[k + 1], right = v[k - 1] + 1;
      ptrdiff_t x = down - k <= m ? down : kNone;
      if (right <= n && right > x) x = right;
      if (x < 0) continue;
      const ptrdiff_t y = x - k;
      // Most diagonals end where they start: their first pair of lines differs.
      if constexpr (kBackward) {
        if (x < n && y < m && a[n - 1 - x] == b[m - 1 - y]) {
          const ptrdiff_t run = std::min(n - x, m - y);
          ptrdiff_t i = 1;
          while (i < run && a[n - 1 - x - i] == b[m - 1 - y - i]) ++i;
          x += i;
          *steps += static_cast<size_t>(i);
        }
      } else {
        if (x < n && y < m && a[x] == b[y]) {
          const ptrdiff_t run = std::min(n - x, m - y);
          ptrdiff_t i = 1;
          while (i < run && a[x + i] == b[y + i]) ++i;
          x += i;
          *steps += static_cast<size_t>(i);
        }
      }
      v[k] = x;
      if constexpr (kMeet) {
        const ptrdiff_t k2 = n - m - k;  // the diagonal in the other search's terms
        if (k2 >= -other_d && k2 <= other_d && x + other[k2] >= n) return true;
      }
    }
    *steps += static_cast<size_t>(d + 1);  // the diagonals looked at
    return false;
  }

  // Step 0: the equal lines at the start (at the end, backward).
  template <bool kBackward>
  void First() {
    const ptrdiff_t run = std::min(n, m);
    ptrdiff_t i = 0;
    if constexpr (kBackward) {
      while (i < run && a[n - 1 - i] == b[m - 1 - i]) ++i;
    } else {
      while (i < run && a[i] == b[i]) ++i;
    }
    v[-1] = v[1] = kNone;
    v[0] = i;
    *steps += static_cast<size_t>(i);
  }
};

// Myers' search for the fewest insertions and deletions that turn `a` into `b`, from both ends at
// once (his "middle snake"): a forward search from the start and a backward one from the end
// take turns, d steps each, until a path of one meets a path of the other on a diagonal; the
// distance is then the sum of their steps, 2d - 1 or 2d by the parity of |a| - |b|. Together
// they look at about D^2 / 4 diagonals for files D lines apart, where a forward-only search looks
// at D^2 / 2. Gives up (nullopt) once they have taken more than `budget` steps (diagonals looked
// at plus lines matched).
std::optional<size_t> EditDistance(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                                   size_t budget) {
  const ptrdiff_t n = static_cast<ptrdiff_t>(a.size()), m = static_cast<ptrdiff_t>(b.size());
  if (n == 0 || m == 0) return static_cast<size_t>(n + m);
  const ptrdiff_t half = (n + m + 1) / 2;
  const size_t cells = static_cast<size_t>(2 * half + 3);
  const auto cell_memory = std::make_unique_for_overwrite<ptrdiff_t[]>(2 * cells);
  size_t steps = 0;
  MyersSearch fwd{cell_memory.get() + half + 1, a.data(), b.data(), n, m, &steps};
  MyersSearch bwd{fwd.v + cells, a.data(), b.data(), n, m, &steps};
  fwd.First<false>();
  bwd.First<true>();
  if (n == m && fwd.v[0] == n) return 0;  // the same lines
  // With |a| - |b| odd, paths meet after a forward step (d forward, d - 1 backward); even, after
  // a backward one (d each).
  const bool odd = ((n - m) & 1) != 0;
  for (ptrdiff_t d = 1; d <= half; ++d) {
    if (odd) {
      if (fwd.Step<false, true>(d, bwd.v, d - 1)) return static_cast<size_t>(2 * d - 1);
      bwd.Step<true, false>(d, nullptr, 0);
    } else {
      fwd.Step<false, false>(d, nullptr, 0);
      if (bwd.Step<true, true>(d, fwd.v, d)) return static_cast<size_t>(2 * d);
    }
    if (steps > budget) return std::nullopt;
  }
  return static_cast<size_t>(n + m);
}

// Rows of the bit-parallel search's table for `a`: row[id] is the row of a line id of `a`, 0 for
// an id `a` lacks (whose row would be all clear); returns the number of rows, 1 + distinct ids.
uint32_t MaskRows(const std::vector<uint32_t>& a, std::vector<uint32_t>* row) {
  uint32_t rows = 1;
  for (const uint32_t id : a)
    if ((*row)[id] == 0) (*row)[id] = rows++;
  return rows;
}

// The bit-parallel search's table kept sparse: row r's nonzero words only, as (word index, bits)
// pairs in ascending order at [first[r], first[r + 1]). At most one pair per line of `a`, so the
// table is O(|a|) whatever the lines are.
struct SparseMasks {
  std::vector<uint32_t> first;  // rows + 1 entries
  std::vector<uint32_t> word;
  std::vector<uint64_t> bits;
};

SparseMasks MakeMasks(const std::vector<uint32_t>& a, const std::vector<uint32_t>& row,
                      uint32_t rows) {
  SparseMasks t;
  t.first.assign(static_cast<size_t>(rows) + 1, 0);
  std::vector<uint32_t> last(rows, UINT32_MAX);  // each row's last word counted
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t r = row[a[i]], w = static_cast<uint32_t>(i / 64);
    if (last[r] != w) last[r] = w, ++t.first[r + 1];
  }
  for (uint32_t r = 0; r < rows; ++r) t.first[r + 1] += t.first[r];
  t.word.resize(t.first[rows]);
  t.bits.assign(t.first[rows], 0);
  std::vector<uint32_t> next(t.first.begin(), t.first.end() - 1);  // each row's pair being filled
  std::fill(last.begin(), last.end(), UINT32_MAX);
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t r = row[a[i]], w = static_cast<uint32_t>(i / 64);
    if (last[r] != w) last[r] = w, t.word[next[r]++] = w;
    t.bits[next[r] - 1] |= uint64_t{1} << (i % 64);
  }
  return t;
}

// LcsBits with the table made. The recurrence's step on a word whose mask is clear, with no carry
// coming in, leaves it as it is; with a carry it leaves an all-set word as it is (the carry goes
// on) and otherwise sets its lowest clear bit (the carry stops). So each line of `b` costs the
// words where its row has bits plus the carries' walks, not every word: words past `top` (past
// every word a mask has touched) are all set, so a carry that reaches `top` changes nothing more.
size_t LcsBitsWithMasks(size_t a_size, const std::vector<uint32_t>& b,
                        const std::vector<uint32_t>& row, const SparseMasks& t) {
  const size_t words = (a_size + 63) / 64;
  if (words == 0 || b.empty()) return 0;
  std::vector<uint64_t> v(words, ~uint64_t{0});
  size_t top = 0;
  // A carry into word x and on: the first word not all set takes it.
  const auto carry_into = [&](size_t x, size_t end) {
    while (x < end && v[x] == ~uint64_t{0}) ++x;
    if (x < end) {
      v[x] |= v[x] + 1;
      return false;
    }
    return true;  // still carried at `end`
  };
  for (const uint32_t id : b) {
    const uint32_t r = row[id];
    if (r == 0) continue;  // M = 0 leaves V as it is
    uint64_t carry = 0;
    size_t next = 0;  // the word after the last one stepped
    for (uint32_t k = t.first[r]; k < t.first[r + 1]; ++k) {
      const size_t w = t.word[k];
      if (carry != 0 && !carry_into(next, w)) carry = 0;
      const uint64_t m = t.bits[k];
      const uint64_t u = v[w] & m;
      const uint64_t s1 = v[w] + u;
      const uint64_t s2 = s1 + carry;
      carry = static_cast<uint64_t>(s1 < u) | static_cast<uint64_t>(s2 < s1);
      v[w] = s2 | (v[w] & ~m);
      next = w + 1;
    }
    top = std::max(top, next);
    if (carry != 0) carry_into(next, top);
  }
  size_t set = 0;
  for (size_t w = 0; w + 1 < words; ++w) set += static_cast<size_t>(__builtin_popcountll(v[w]));
  const size_t tail = a_size - (words - 1) * 64;  // valid bits of the last word, 1..64
  const uint64_t last = tail == 64 ? v[words - 1] : v[words - 1] & ((uint64_t{1} << tail) - 1);
  set += static_cast<size_t>(__builtin_popcountll(last));
  return a_size - set;
}

}  // namespace

size_t LcsMyers(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  const size_t d = *EditDistance(a, b, SIZE_MAX);
  return (a.size() + b.size() - d) / 2;
}

// The length of a longest common subsequence by the bit-vector recurrence of Crochemore,
// Iliopoulos, Pinzon and Reid (2001): V holds a bit per line of `a`, all set at first; for each
// line of `b`, with M the lines of `a` equal to it, V = (V + (V & M)) | (V & ~M) (the sum carried
// across words); the LCS is the number of cleared bits. No search: at most |a| |b| / 64 word
// steps, and far fewer when lines seldom repeat (LcsBitsWithMasks steps only the words where a
// line of `b` has equal lines in `a`).
size_t LcsBits(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t ids) {
  std::vector<uint32_t> row(ids, 0);
  const uint32_t rows = MaskRows(a, &row);
  return LcsBitsWithMasks(a.size(), b, row, MakeMasks(a, row, rows));
}

size_t LcsLength(const std::vector<uint32_t>& a_in, const std::vector<uint32_t>& b_in, size_t ids) {
  // A line of either side with no equal line in the other is in no common subsequence: left out
  // (xdiff's setting aside counted matches over the whole files, so such lines remain when their
  // only equals are in the common head or tail).
  std::vector<uint32_t> row(ids, 0);
  for (const uint32_t id : b_in) row[id] = 1;
  std::vector<uint32_t> a, b;
  a.reserve(a_in.size());
  for (const uint32_t id : a_in)
    if (row[id] != 0) a.push_back(id), row[id] = 2;
  b.reserve(b_in.size());
  for (const uint32_t id : b_in)
    if (row[id] == 2) b.push_back(id);
  if (a.empty() || b.empty()) return 0;
  // Myers' search from both ends costs about (|a| + |b|) + D^2 / 4 steps for D differing lines
  // (from one end, D^2 / 2: bench/results/myers-both-ends-callgrind.md). It goes first, and
  // gives up once it has spent what the bit-vectors would without their sparse table (|a| / 64
  // words for each line of `b`): on git/git's log pages, a quarter of that budget took 20 % more
  // instructions a page (logcost2-callgrind.md), so the files Myers finishes within it are
  // cheaper with Myers than with the sparse table (their kept lines repeat, and carries walk
  // far); the sparse table bounds what the others cost (no table of |a| / 64 words a row, no
  // cap on its size). Myers is not tried when D is sure to be too large: a line that occurs k
  // times in `a` and l times in `b` leaves |k - l| of them out of any common subsequence.
  for (const uint32_t id : a) row[id] = 0;
  const uint32_t rows = MaskRows(a, &row);
  const size_t budget = b.size() * ((a.size() + 63) / 64) + a.size() + b.size();
  std::vector<int64_t> surplus(rows, 0);  // per row: occurrences in `a` minus those in `b`
  for (const uint32_t id : a) ++surplus[row[id]];
  for (const uint32_t id : b) --surplus[row[id]];
  size_t unpaired = 0;  // a lower bound of D
  for (const int64_t x : surplus) unpaired += static_cast<size_t>(x < 0 ? -x : x);
  if (unpaired * unpaired / 4 <= budget) {
    if (const std::optional<size_t> d = EditDistance(a, b, budget))
      return (a.size() + b.size() - *d) / 2;
  }
  return LcsBitsWithMasks(a.size(), b, row, MakeMasks(a, row, rows));
}

namespace {

// Appends the hashes of the lines of [p, stop) to `out` (and, with `ends`, the offset from `base`
// past each): each ends after its '\n', the last at `stop` when no '\n' ends it. `end` (>= stop)
// is the blob's end: LineHash may read up to it. (Finding the '\n' in the words LineHash reads,
// 8 bytes a step, took more instructions than memchr on git/git's C files: pathlog-callgrind.md.)
void AppendLineHashes(const char* base, const char* p, const char* stop, const char* end,
                      std::vector<uint64_t>* out, std::vector<uint32_t>* ends) {
  while (p < stop) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(stop - p));
    const char* const line_end = nl == nullptr ? stop : static_cast<const char*>(nl) + 1;
    out->push_back(LineHash(p, static_cast<size_t>(line_end - p), end));
    if (ends != nullptr) ends->push_back(static_cast<uint32_t>(line_end - base));
    p = line_end;
  }
}

bool LooksBinary(std::string_view data) {
  return std::memchr(data.data(), '\0', std::min(data.size(), kBinaryProbe)) != nullptr;
}

// Bytes equal at the start of `a` and `b`: blocks compared by memcmp, then words.
size_t CommonPrefix(std::string_view a, std::string_view b) {
  constexpr size_t kBlock = 256;
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i + kBlock <= n && std::memcmp(a.data() + i, b.data() + i, kBlock) == 0) i += kBlock;
  for (; i + 8 <= n; i += 8) {
    const uint64_t x = LoadWord(a.data() + i) ^ LoadWord(b.data() + i);
    if (x != 0) return i + static_cast<size_t>(std::countr_zero(x)) / 8;  // first byte is low
  }
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Bytes equal at the end of `a` and `b`, at most `limit` (<= both sizes).
size_t CommonSuffix(std::string_view a, std::string_view b, size_t limit) {
  constexpr size_t kBlock = 256;
  const char* const a_end = a.data() + a.size();
  const char* const b_end = b.data() + b.size();
  size_t i = 0;
  while (i + kBlock <= limit && std::memcmp(a_end - i - kBlock, b_end - i - kBlock, kBlock) == 0)
    i += kBlock;
  for (; i + 8 <= limit; i += 8) {
    const uint64_t x = LoadWord(a_end - i - 8) ^ LoadWord(b_end - i - 8);
    if (x != 0) return i + static_cast<size_t>(std::countl_zero(x)) / 8;  // last byte is high
  }
  while (i < limit && *(a_end - i - 1) == *(b_end - i - 1)) ++i;
  return i;
}

// The lines as bytes, for CommonPrefix and CommonSuffix: equal hashes are equal bytes.
std::string_view HashBytes(const std::vector<uint64_t>& hashes) {
  return {reinterpret_cast<const char*>(hashes.data()), hashes.size() * sizeof(uint64_t)};
}

}  // namespace

BlobLines HashLines(std::string_view data, std::vector<uint32_t>* ends) {
  BlobLines lines;
  if (ends != nullptr) ends->clear();
  lines.binary = LooksBinary(data);
  if (lines.binary) return lines;
  // Room for lines of 32 bytes (most source lines are shorter than that) saves most of the
  // vector's growing; a file of long lines gives the room back.
  lines.hashes.reserve(data.size() / 32 + 1);
  if (ends != nullptr) ends->reserve(data.size() / 32 + 1);
  const char* const end = data.data() + data.size();
  AppendLineHashes(data.data(), data.data(), end, end, &lines.hashes, ends);
  if (lines.hashes.capacity() > 2 * lines.hashes.size()) lines.hashes.shrink_to_fit();
  return lines;
}

BlobLines HashLinesNear(std::string_view data, std::string_view near, const BlobLines& near_lines,
                        const std::vector<uint32_t>& near_ends, std::vector<uint32_t>* ends) {
  if (near_lines.binary || near.empty() || data.empty() || near_ends.empty() ||
      near_ends.size() != near_lines.hashes.size() || near_ends.back() != near.size())
    return HashLines(data, ends);
  BlobLines lines;
  ends->clear();
  lines.binary = LooksBinary(data);
  if (lines.binary) return lines;
  // The whole lines inside the bytes shared at the start: up to the last '\n' there, the same
  // lines (so hashes) as near's first ones, those that end by then.
  const size_t prefix = CommonPrefix(data, near);
  const void* const head_nl = prefix == 0 ? nullptr : memrchr(data.data(), '\n', prefix);
  const size_t head_end =
      head_nl == nullptr
          ? 0
          : static_cast<size_t>(static_cast<const char*>(head_nl) - data.data()) + 1;
  const size_t head_lines = static_cast<size_t>(
      std::upper_bound(near_ends.begin(), near_ends.end(), head_end) - near_ends.begin());
  // The whole lines inside the bytes shared at the end (not reaching into the head's): from
  // after the first '\n' there, the same lines as near's last ones (the '\n' before them is
  // shared too, so they start a line in both).
  const size_t suffix = CommonSuffix(data, near, std::min(data.size(), near.size()) - head_end);
  size_t tail_start = data.size();
  if (suffix > 0) {
    const char* const from = data.data() + data.size() - suffix;
    if (const void* nl = std::memchr(from, '\n', suffix))
      tail_start = static_cast<size_t>(static_cast<const char*>(nl) - data.data()) + 1;
  }
  const size_t near_tail_start = tail_start + near.size() - data.size();
  const size_t tail_first = static_cast<size_t>(
      std::upper_bound(near_ends.begin(), near_ends.end(), near_tail_start) - near_ends.begin());
  const size_t tail_lines = near_ends.size() - tail_first;
  if (tail_first < head_lines) return HashLines(data, ends);  // cannot be: the spans do not meet
  const char* const end = data.data() + data.size();
  const size_t room = head_lines + tail_lines + (tail_start - head_end) / 32 + 1;
  lines.hashes.reserve(room);
  ends->reserve(room);
  lines.hashes.insert(lines.hashes.end(), near_lines.hashes.begin(),
                      near_lines.hashes.begin() + static_cast<ptrdiff_t>(head_lines));
  ends->insert(ends->end(), near_ends.begin(),
               near_ends.begin() + static_cast<ptrdiff_t>(head_lines));
  AppendLineHashes(data.data(), data.data() + head_end, data.data() + tail_start, end,
                   &lines.hashes, ends);
  lines.hashes.insert(lines.hashes.end(),
                      near_lines.hashes.begin() + static_cast<ptrdiff_t>(tail_first),
                      near_lines.hashes.end());
  // The tail's ends are near's moved by the change in size (mod 2^32): copied, then moved in
  // place (a push_back a line was an out-of-line call a line in the release build).
  const uint32_t shift = static_cast<uint32_t>(data.size() - near.size());
  const size_t tail_at = ends->size();
  ends->insert(ends->end(), near_ends.begin() + static_cast<ptrdiff_t>(tail_first),
               near_ends.end());
  uint32_t* const moved = ends->data();
  for (size_t i = tail_at, n = ends->size(); i < n; ++i) moved[i] += shift;
  if (lines.hashes.capacity() > 2 * lines.hashes.size()) lines.hashes.shrink_to_fit();
  return lines;
}

LineDelta MinimalLineDelta(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  // The common head and tail by the hashes' bytes, memcmp a block at a time (comparing hash by
  // hash took ~2.5 instructions a line on git/git's path logs); only whole equal hashes count.
  const std::string_view a_bytes = HashBytes(a), b_bytes = HashBytes(b);
  const size_t head = CommonPrefix(a_bytes, b_bytes) / sizeof(uint64_t);
  const size_t tail =
      CommonSuffix(a_bytes, b_bytes, (std::min(a.size(), b.size()) - head) * sizeof(uint64_t)) /
      sizeof(uint64_t);
  const size_t a_end = a.size() - tail, b_end = b.size() - tail;
  size_t common = head + (a.size() - a_end);
  if (a_end > head && b_end > head) {
    const Interned lines = Intern(a, b, head, a_end, b_end);
    const std::vector<uint32_t> a_kept = Kept(lines.a, a.size(), lines.in_b);
    const std::vector<uint32_t> b_kept = Kept(lines.b, b.size(), lines.in_a);
    // the search is exact on what is kept
    common += LcsLength(a_kept, b_kept, lines.in_a.size());
  }
  return LineDelta{b.size() - common, a.size() - common};
}

namespace {

using LinesMemo =
    SharedMemo<git_oid, std::shared_ptr<const BlobLines>, OidHash, OidEqual, LinesWeight>;

LinesMemo& Memo() {
  static LinesMemo memo(kLinesGenerationBytes);
  return memo;
}

}  // namespace

namespace {

// The bytes and lines of the last few blobs this render thread read for BlobLinesOf, newest
// first: the versions of a file a log's rows compare, so the next version is hashed from one.
// Bounded: kRecentBlobs blobs of at most kRecentBytes each (a bigger one is not kept).
constexpr size_t kRecentBlobs = 4;
constexpr size_t kRecentBytes = size_t{4} << 20;

struct RecentBlob {
  git_oid id;
  ObjectBytes bytes;
  std::shared_ptr<const BlobLines> lines;
  std::vector<uint32_t> ends;  // where each line ends
};

std::vector<RecentBlob>& Recent() {
  thread_local std::vector<RecentBlob> recent;
  return recent;
}

}  // namespace

std::shared_ptr<const BlobLines> BlobLinesOf(git_repository* repo, const git_oid& id,
                                             const git_oid* near) {
  LinesMemo& memo = Memo();
  if (std::optional<std::shared_ptr<const BlobLines>> known = memo.Find(id)) return *known;
  ObjectBytes bytes = ReadPacked(repo, id, GIT_OBJECT_BLOB);
  if (!bytes) {  // loose, or anything the pack reader leaves to libgit2
    git_blob* raw = nullptr;
    if (git_blob_lookup(&raw, repo, &id) != 0) return nullptr;
    const BlobPtr blob(raw);
    bytes = ObjectBytes::Make(static_cast<size_t>(git_blob_rawsize(blob.get())));
    if (bytes.size() > 0) std::memcpy(bytes.data(), git_blob_rawcontent(blob.get()), bytes.size());
  }
  std::vector<RecentBlob>& recent = Recent();
  const RecentBlob* from = recent.empty() ? nullptr : &recent.front();
  for (const RecentBlob& r : recent)
    if (near != nullptr && OidEqual()(r.id, *near)) from = &r;
  const bool keep = bytes.size() <= kRecentBytes;
  std::vector<uint32_t> ends;
  const std::shared_ptr<const BlobLines> lines = std::make_shared<const BlobLines>(
      !keep ? HashLines(bytes.view())
      : from == nullptr
          ? HashLines(bytes.view(), &ends)
          : HashLinesNear(bytes.view(), from->bytes.view(), *from->lines, from->ends, &ends));
  memo.Add(id, lines);
  if (keep && !lines->binary) {
    if (recent.size() == kRecentBlobs) recent.pop_back();
    recent.insert(recent.begin(), RecentBlob{id, std::move(bytes), lines, std::move(ends)});
  }
  return lines;
}

void RememberBlobLines(const git_oid& id, std::string_view bytes) {
  LinesMemo& memo = Memo();
  if (!memo.Find(id)) memo.Add(id, std::make_shared<const BlobLines>(HashLines(bytes)));
}

}  // namespace shellac::gitfrag

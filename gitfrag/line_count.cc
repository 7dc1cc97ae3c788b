#include "gitfrag/line_count.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "gitfrag/git.h"
#include "gitfrag/memo.h"

namespace shellac::gitfrag {

namespace {

// git's and libgit2's binary test looks at this many bytes for a NUL.
constexpr size_t kBinaryProbe = 8000;

// The memo holds at most two generations of this many bytes of hashes.
constexpr size_t kLinesGenerationBytes = size_t{16} << 20;

struct LinesWeight {
  size_t operator()(const std::shared_ptr<const BlobLines>& lines) const {
    return sizeof(BlobLines) + lines->hashes.size() * sizeof(uint64_t);
  }
};

// xdiff (git 2.39's, libgit2's and so cgit's) sets aside, before its search, the lines it will
// call changed whatever the search finds: a line with no match in the other file, and a line with
// many matches (at least ~sqrt of its file's lines, at most 1024) that sits in a run of such lines
// mostly made of unmatched ones (its xdl_cleanup_records and xdl_clean_mmatch). Even in its minimal
// mode (later git checks XDF_NEED_MINIMAL there too; these versions do not), so its diff is then
// not always minimal, and the counts must set aside the same lines.
constexpr ptrdiff_t kScanWindow = 100;  // XDL_SIMSCAN_WINDOW
constexpr ptrdiff_t kRunRatio = 4;      // XDL_KPDIS_RUN
constexpr size_t kMaxEqualLimit = 1024;  // XDL_MAX_EQLIMIT

size_t BogoSqrt(size_t n) {  // xdiff's rough square root: a power of two
  size_t i = 1;
  for (; n > 0; n >>= 2) i <<= 1;
  return i;
}

enum Match : char { kNone = 0, kSome = 1, kMany = 2 };

// Whether a kMany line at i is set aside: the runs of kNone/kMany lines on both sides of it (within
// the window and [s, e]) each hold an unmatched line, and over both runs, with i counted on each
// side, fewer than a quarter of the lines are kMany.
bool InUnmatchedRun(const std::vector<char>& dis, ptrdiff_t i, ptrdiff_t s, ptrdiff_t e) {
  s = std::max(s, i - kScanWindow);
  e = std::min(e, i + kScanWindow);
  ptrdiff_t none_before = 0, many_before = 1;
  for (ptrdiff_t r = 1; i - r >= s; ++r) {
    const char d = dis[static_cast<size_t>(i - r)];
    if (d == kNone) ++none_before;
    else if (d == kMany) ++many_before;
    else break;
  }
  if (none_before == 0) return false;
  ptrdiff_t none_after = 0, many_after = 1;
  for (ptrdiff_t r = 1; i + r <= e; ++r) {
    const char d = dis[static_cast<size_t>(i + r)];
    if (d == kNone) ++none_after;
    else if (d == kMany) ++many_after;
    else break;
  }
  if (none_after == 0) return false;
  const ptrdiff_t none = none_before + none_after, many = many_before + many_after;
  return many * kRunRatio < many + none;
}

// The lines of `all`[from, to) xdiff keeps for its search; `other` is the whole other file.
std::vector<uint64_t> Kept(const std::vector<uint64_t>& all, size_t from, size_t to,
                           const std::vector<uint64_t>& other) {
  std::unordered_map<uint64_t, size_t> matches;  // how often each of these lines occurs in `other`
  matches.reserve(to - from);
  for (size_t i = from; i < to; ++i) matches.emplace(all[i], 0);
  for (const uint64_t h : other)
    if (const auto it = matches.find(h); it != matches.end()) ++it->second;
  const size_t limit = std::min(BogoSqrt(all.size()), kMaxEqualLimit);
  std::vector<char> dis(to - from);
  for (size_t i = from; i < to; ++i) {
    const size_t n = matches.find(all[i])->second;
    dis[i - from] = n == 0 ? kNone : n >= limit ? kMany : kSome;
  }
  std::vector<uint64_t> kept;
  kept.reserve(to - from);
  const auto last = static_cast<ptrdiff_t>(dis.size()) - 1;
  for (size_t i = 0; i < dis.size(); ++i)
    if (dis[i] == kSome ||
        (dis[i] == kMany && !InUnmatchedRun(dis, static_cast<ptrdiff_t>(i), 0, last)))
      kept.push_back(all[from + i]);
  return kept;
}

// Myers' greedy forward search: the fewest insertions and deletions that turn `a` into `b`. v[k]
// is the furthest x reached on diagonal k = x - y (-1: not yet); every point reached is inside the
// grid, and a move only leaves one that is (so no index is ever negative or past the end).
size_t EditDistance(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  const ptrdiff_t n = static_cast<ptrdiff_t>(a.size()), m = static_cast<ptrdiff_t>(b.size());
  const ptrdiff_t max = n + m;
  if (n == 0 || m == 0) return static_cast<size_t>(max);
  std::vector<ptrdiff_t> v(static_cast<size_t>(2 * max + 3), -1);
  const ptrdiff_t off = max + 1;
  ptrdiff_t start = 0;  // d = 0: the common head
  while (start < n && start < m && a[static_cast<size_t>(start)] == b[static_cast<size_t>(start)])
    ++start;
  if (start >= n && start >= m) return 0;
  v[off] = start;
  for (ptrdiff_t d = 1; d <= max; ++d) {
    for (ptrdiff_t k = std::max(-d, -m); k <= std::min(d, n); ++k) {
      if (((k + d) & 1) != 0) continue;  // diagonals of d's parity only
      ptrdiff_t x = -1;
      const ptrdiff_t down = v[off + k + 1], right = v[off + k - 1];
      if (down >= 0 && down - k <= m) x = down;
      if (right >= 0 && right + 1 <= n) x = std::max(x, right + 1);
      if (x < 0) continue;
      ptrdiff_t y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) ++x, ++y;
      v[off + k] = x;
      if (x >= n && y >= m) return static_cast<size_t>(d);
    }
  }
  return static_cast<size_t>(max);
}

}  // namespace

BlobLines HashLines(std::string_view data) {
  BlobLines lines;
  lines.binary = std::memchr(data.data(), '\0', std::min(data.size(), kBinaryProbe)) != nullptr;
  if (lines.binary) return lines;
  const std::hash<std::string_view> hash;
  size_t start = 0;
  while (start < data.size()) {
    const void* nl = std::memchr(data.data() + start, '\n', data.size() - start);
    const size_t end = nl == nullptr ? data.size() : static_cast<const char*>(nl) - data.data() + 1;
    lines.hashes.push_back(hash(data.substr(start, end - start)));
    start = end;
  }
  return lines;
}

LineDelta MinimalLineDelta(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t head = 0, a_end = a.size(), b_end = b.size();
  while (head < a_end && head < b_end && a[head] == b[head]) ++head;
  while (a_end > head && b_end > head && a[a_end - 1] == b[b_end - 1]) --a_end, --b_end;
  size_t common = head + (a.size() - a_end);
  if (a_end > head && b_end > head) {
    const std::vector<uint64_t> a_kept = Kept(a, head, a_end, b);
    const std::vector<uint64_t> b_kept = Kept(b, head, b_end, a);
    // the search is exact on what is kept: d = (|a'| - lcs) + (|b'| - lcs)
    common += (a_kept.size() + b_kept.size() - EditDistance(a_kept, b_kept)) / 2;
  }
  return LineDelta{b.size() - common, a.size() - common};
}

std::shared_ptr<const BlobLines> BlobLinesOf(git_repository* repo, const git_oid& id) {
  static SharedMemo<git_oid, std::shared_ptr<const BlobLines>, OidHash, OidEqual, LinesWeight> memo(
      kLinesGenerationBytes);
  if (std::optional<std::shared_ptr<const BlobLines>> known = memo.Find(id)) return *known;
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, &id) != 0) return nullptr;
  const BlobPtr blob(raw);
  auto lines = std::make_shared<const BlobLines>(HashLines(
      std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                       static_cast<size_t>(git_blob_rawsize(blob.get())))));
  memo.Add(id, lines);
  return lines;
}

}  // namespace shellac::gitfrag

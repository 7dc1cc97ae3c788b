#include "gitfrag/set_aside.h"

#include <algorithm>

namespace shellac::gitfrag {

namespace {

constexpr ptrdiff_t kScanWindow = 100;  // XDL_SIMSCAN_WINDOW
constexpr ptrdiff_t kRunRatio = 4;      // XDL_KPDIS_RUN

// The lines with none and with many matches in the run next to `i` going by `step` (-1 or +1),
// within the window and [0, last].
void CountRun(const std::vector<char>& matches, ptrdiff_t i, ptrdiff_t step, ptrdiff_t last,
              ptrdiff_t* none, ptrdiff_t* many) {
  const ptrdiff_t from = std::max<ptrdiff_t>(0, i - kScanWindow);
  const ptrdiff_t to = std::min(last, i + kScanWindow);
  for (ptrdiff_t r = i + step; r >= from && r <= to; r += step) {
    const char m = matches[static_cast<size_t>(r)];
    if (m == kNoMatch) ++*none;
    else if (m == kManyMatches) ++*many;
    else break;
  }
}

}  // namespace

bool ManyMatchesKept(const std::vector<char>& matches, size_t i) {
  const auto at = static_cast<ptrdiff_t>(i);
  const auto last = static_cast<ptrdiff_t>(matches.size()) - 1;
  ptrdiff_t none_before = 0, many_before = 1;
  CountRun(matches, at, -1, last, &none_before, &many_before);
  if (none_before == 0) return true;
  ptrdiff_t none_after = 0, many_after = 1;
  CountRun(matches, at, +1, last, &none_after, &many_after);
  if (none_after == 0) return true;
  const ptrdiff_t none = none_before + none_after, many = many_before + many_after;
  return many * kRunRatio >= many + none;
}

}  // namespace shellac::gitfrag

// The search every escaping loop of a page makes: the first byte in a run that needs escaping, so
// that the bytes before it are copied whole. FindAnyOf for a few given byte values (HTML's
// & < > ' ", Atom's & < >), FindInSet for any set (a URL's unsafe bytes).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shellac::gitfrag {

using ByteSet = std::array<bool, 256>;  // indexed by unsigned byte value

// The first byte in [p, end) that `set` holds, or end: one byte at a time.
inline const char* FindInSet(const char* p, const char* const end, const ByteSet& set) {
  while (p != end && !set[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

// The first byte in [p, end) equal to one of `Bytes`, or end: 16 bytes at a time where SSE2 is
// (every x86-64), the last 0..15 through a table. Reads no byte outside [p, end).
template <char... Bytes>
const char* FindAnyOf(const char* p, const char* const end) {
  static_assert(sizeof...(Bytes) > 0);
#if defined(__SSE2__)
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hit = (_mm_cmpeq_epi8(v, _mm_set1_epi8(Bytes)) | ...);
    if (const int mask = _mm_movemask_epi8(hit); mask != 0)
      return p + std::countr_zero(static_cast<unsigned>(mask));
  }
#endif
  static constexpr ByteSet kSpecial = [] {
    ByteSet special{};
    ((special[static_cast<unsigned char>(Bytes)] = true), ...);
    return special;
  }();
  return FindInSet(p, end, kSpecial);
}

// The loop of every escape: `copy(run)` for each run of bytes `find(p, end)` passes over (empty
// runs included), `escape(byte)` for each byte it stops at, in order.
template <typename Find, typename Copy, typename Escape>
void EscapeRuns(std::string_view s, Find find, Copy copy, Escape escape) {
  const char* p = s.data();
  const char* const end = p + s.size();
  for (;;) {
    const char* const run = p;
    p = find(p, end);
    copy(std::string_view(run, static_cast<size_t>(p - run)));
    if (p == end) return;
    escape(*p++);
  }
}

}  // namespace shellac::gitfrag

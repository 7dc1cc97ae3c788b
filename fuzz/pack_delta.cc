// libFuzzer target: git's delta format as the pack reader applies it (gitfrag/pack_reader.h
// ApplyDelta). The input's first byte is the base's length (up to 255 bytes after it); the rest is
// the delta. Checked on every input:
// - no crash, hang or undefined behaviour (no read outside the base or the delta, no write outside
//   the result);
// - a delta that applies makes exactly the target size it states (its second size), at most the
//   bound, and applying it again gives the same bytes;
// - a delta that is refused says why, and a smaller bound never accepts what a larger one refused.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/check.h"
#include "gitfrag/pack_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shellac::gitfrag::ApplyDelta;
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t base_size = std::min<size_t>(data[0], size - 1);
  const std::string_view base = input.substr(1, base_size);
  const std::string_view delta = input.substr(1 + base_size);
  constexpr uint64_t kBound = 1 << 20;
  std::string out, again, error;
  if (ApplyDelta(base, delta, kBound, &out, &error)) {
    // The target size: the second little-endian base-128 number of the delta.
    size_t pos = 0;
    uint64_t sizes[2] = {0, 0};
    for (uint64_t& value : sizes) {
      for (unsigned shift = 0;; shift += 7) {
        const auto c = static_cast<unsigned char>(delta[pos++]);
        value |= uint64_t{c & 0x7fu} << shift;
        if ((c & 0x80) == 0) break;
      }
    }
    FUZZ_CHECK(sizes[0] == base.size());
    FUZZ_CHECK(out.size() == sizes[1] && out.size() <= kBound);
    FUZZ_CHECK(ApplyDelta(base, delta, kBound, &again, &error) && again == out);
  } else {
    FUZZ_CHECK(!error.empty());
    std::string smaller_error;
    FUZZ_CHECK(!ApplyDelta(base, delta, kBound / 2, &again, &smaller_error));
  }
  return 0;
}

// What every fuzz target uses to state an invariant: a failed check prints itself and aborts, which
// libFuzzer reports as a crash and saves the input for (see fuzz/README.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(condition)                                                               \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace shellac::fuzz {

// A small deterministic generator seeded from the input, for choices (split points, sizes) that
// must repeat exactly when a saved input is run again.
class Choices {
 public:
  explicit Choices(std::string_view input) {
    for (unsigned char c : input) state_ = (state_ ^ c) * 1099511628211u;
  }
  // A number in [0, bound); 0 when bound is 0.
  uint64_t Below(uint64_t bound) {
    state_ = state_ * 6364136223846793005u + 1442695040888963407u;
    return bound == 0 ? 0 : (state_ >> 33) % bound;
  }

 private:
  uint64_t state_ = 14695981039346656037u;
};

}  // namespace shellac::fuzz

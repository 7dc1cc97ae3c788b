#include "base/text.h"

namespace shellac::base {

std::string ToLower(std::string_view text) {
  std::string out;
  AppendLower(&out, text);
  return out;
}

void AppendLower(std::string* out, std::string_view text) {
  const size_t at = out->size();
  out->append(text);
  for (size_t i = at; i < out->size(); ++i) (*out)[i] = AsciiLower((*out)[i]);
}

bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  constexpr uint64_t kMax = UINT64_MAX;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (v > (kMax - digit) / 10) return false;  // v * 10 + digit would pass 2^64-1
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

}  // namespace shellac::base

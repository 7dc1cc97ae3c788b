// base/text: ASCII text helpers shared by every module (header names, tokens, config words).
// Locale-free on purpose: HTTP and config syntax are ASCII, and std::tolower would depend on the
// process locale. Bytes >= 0x80 and non-letters compare as themselves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shellac::base {

constexpr char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Case-insensitive ASCII comparison (header names, tokens, month names).
constexpr bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// True when `s` begins with `prefix`, ASCII case ignored.
constexpr bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// `text` with ASCII letters lower-cased.
std::string ToLower(std::string_view text);
// Appends `text` to `out` with ASCII letters lower-cased.
void AppendLower(std::string* out, std::string_view text);

// `s` without the leading and trailing bytes that are in `set`.
constexpr std::string_view Trim(std::string_view s, std::string_view set) {
  const size_t first = s.find_first_not_of(set);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(set) - first + 1);
}

// `s` without leading and trailing spaces and tabs: HTTP's optional whitespace (RFC 9110 5.6.3).
constexpr std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A decimal number, 1*DIGIT and nothing else (no sign, no spaces), whose value fits in 64 bits:
// any number of digits is accepted (leading zeros included) as long as the value is at most
// 2^64-1. On failure (empty, another byte, overflow) returns false and leaves *out untouched.
// Callers with a smaller range (a port, a Content-Length) check the value afterwards.
bool ParseDecimal(std::string_view s, uint64_t* out);

}  // namespace shellac::base

#include "base/entities.h"

#include <cstring>
#include <utility>

namespace shellac::base {

void AppendXmlDecoded(std::string_view s, std::string* out) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&apos;", '\''}, {"&quot;", '"'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}};
  while (!s.empty()) {
    const size_t amp = s.find('&');
    out->append(s.substr(0, amp));
    if (amp == std::string_view::npos) return;
    s.remove_prefix(amp);
    size_t taken = 1;
    char decoded = '&';
    for (const auto& [name, c] : kEntities) {
      if (s.starts_with(name)) {
        taken = name.size();
        decoded = c;
        break;
      }
    }
    out->push_back(decoded);
    s.remove_prefix(taken);
  }
}

std::string XmlDecoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  AppendXmlDecoded(s, &out);
  return out;
}

}  // namespace shellac::base

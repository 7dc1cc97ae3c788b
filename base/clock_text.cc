#include "base/clock_text.h"

namespace shellac::base {

const std::string& SecondText::At(time_t now) {
  if (now != second_) {
    struct tm tm;
    gmtime_r(&now, &tm);
    char buf[128];
    const size_t n = strftime(buf, sizeof buf, format_, &tm);
    text_.assign(buf, n);
    second_ = now;
  }
  return text_;
}

}  // namespace shellac::base

// base/clock_text: a time rendered as text once per second (the HTTP Date header, the access log's
// stamp), for code that writes it on every response.
//
// Not thread-safe: each thread (each proxy Worker, each access-log writer) keeps its own, which
// costs one strftime a second per thread and no lock on the response path.
#pragma once

#include <ctime>
#include <string>

namespace shellac::base {

class SecondText {
 public:
  // `format`: a strftime format, applied to UTC (gmtime). Must outlive this object (a literal).
  explicit SecondText(const char* format) : format_(format) {}

  // `now` formatted; made again only when `now` is another second than the last call's.
  const std::string& At(time_t now);

 private:
  const char* format_;
  time_t second_ = -1;
  std::string text_;
};

// RFC 9110 5.6.7 IMF-fixdate, as in the Date header: "Sun, 06 Nov 1994 08:49:37 GMT".
inline constexpr char kHttpDateFormat[] = "%a, %d %b %Y %H:%M:%S GMT";

}  // namespace shellac::base

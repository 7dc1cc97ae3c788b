// libFuzzer target: how a response's headers decide whether and how long it is cached
// (cache/freshness.h: Cache-Control, Expires, Date, Age, Vary, Set-Cookie; HTTP-dates) and whether
// Surrogate-Control asks for ESI. Input: two bytes of status and policy, then header lines
// "Name: value" separated by LF. Checked on every input:
// - no crash, hang or undefined behaviour;
// - the decision is sane: a reason always; not storable means no ttl and no grace; ttl within
//   0..2^31 s; grace never negative;
// - no-store (unless a rule forces storing) always wins, wherever it is added;
// - every HTTP-date written in any of the three forms parses back to the same second, and a parsed
//   date written as IMF-fixdate parses to the same second again.
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cache/freshness.h"
#include "fuzz/check.h"

namespace {

using namespace shellac::cache;
using namespace std::chrono;
using shellac::fuzz::Choices;

constexpr const char* kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kLongWeekdays[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

enum class Form { kImf, kRfc850, kAsctime };

std::string Format(sys_seconds t, Form form) {
  const sys_days day = floor<days>(t);
  const year_month_day date(day);
  const hh_mm_ss<seconds> time(t - day);
  const unsigned weekday = year_month_weekday(day).weekday().c_encoding();
  const int y = static_cast<int>(date.year());
  const unsigned m = static_cast<unsigned>(date.month()), d = static_cast<unsigned>(date.day());
  const int h = static_cast<int>(time.hours().count()), min = static_cast<int>(time.minutes().count()),
            s = static_cast<int>(time.seconds().count());
  char out[64];
  switch (form) {
    case Form::kImf:
      std::snprintf(out, sizeof out, "%s, %02u %s %04d %02d:%02d:%02d GMT", kWeekdays[weekday], d,
                    kMonths[m - 1], y, h, min, s);
      break;
    case Form::kRfc850:
      std::snprintf(out, sizeof out, "%s, %02u-%s-%02d %02d:%02d:%02d GMT", kLongWeekdays[weekday],
                    d, kMonths[m - 1], y % 100, h, min, s);
      break;
    case Form::kAsctime:
      std::snprintf(out, sizeof out, "%s %s %2u %02d:%02d:%02d %04d", kWeekdays[weekday],
                    kMonths[m - 1], d, h, min, s, y);
      break;
  }
  return out;
}

void CheckDecision(const FreshnessDecision& d) {
  FUZZ_CHECK(!d.reason.empty());
  if (!d.storable) {
    FUZZ_CHECK(d.ttl.count() == 0 && d.grace.count() == 0);
  } else {
    FUZZ_CHECK(d.ttl.count() >= 0 && d.ttl.count() <= 2147483648);
    FUZZ_CHECK(d.grace.count() >= 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static constexpr int kStatuses[] = {200, 203, 204, 206, 300, 301, 302, 304, 307, 404, 410, 500};
  const int status = kStatuses[data[0] % std::size(kStatuses)];
  FreshnessPolicy policy;
  policy.store_uncacheable = data[1] & 1;
  policy.default_ttl = seconds((data[1] >> 1) * 7);
  const std::string_view input(reinterpret_cast<const char*>(data + 2), size - 2);

  std::vector<Header> headers;
  for (std::string_view rest = input; !rest.empty();) {
    const size_t eol = rest.find('\n');
    const std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (value.starts_with(' ')) value.remove_prefix(1);
    headers.push_back(Header{line.substr(0, colon), value});
  }
  const sys_seconds now{seconds(1700000000)};
  const FreshnessDecision decision = DecideFreshness(status, headers, now, policy);
  CheckDecision(decision);

  Choices choices(input);
  if (!policy.store_uncacheable) {
    std::vector<Header> with = headers;
    const size_t at = choices.Below(with.size() + 1);
    with.insert(with.begin() + static_cast<ptrdiff_t>(at),
                Header{"cache-control", choices.Below(2) ? "no-store" : "max-age=60, No-Store"});
    const FreshnessDecision d = DecideFreshness(status, with, now, policy);
    CheckDecision(d);
    FUZZ_CHECK(!d.storable);
  }

  for (const Header& h : headers) {
    (void)SurrogateControlWantsEsi(h.value);
    const auto parsed = ParseHttpDate(h.value);
    if (!parsed) continue;
    const year_month_day date(floor<days>(*parsed));
    FUZZ_CHECK(date.ok());
    // Leap second 60 rolls over; years outside 0..9999 cannot be written in four digits.
    if (date.year() < year(1) || date.year() > year(9999)) continue;
    FUZZ_CHECK(ParseHttpDate(Format(*parsed, Form::kImf)) == parsed);
  }

  // Dates from the input's bytes, in every form.
  uint64_t bits = 0;
  for (size_t i = 0; i < 8 && i < input.size(); ++i) bits = bits << 8 | static_cast<uint8_t>(input[i]);
  const sys_seconds t{seconds(static_cast<int64_t>(bits % 253402300800))};  // up to 9999-12-31
  FUZZ_CHECK(ParseHttpDate(Format(t, Form::kImf)) == t);
  FUZZ_CHECK(ParseHttpDate(Format(t, Form::kAsctime)) == t);
  const int y = static_cast<int>(year_month_day(floor<days>(t)).year());
  if (y >= 1970 && y <= 2069) FUZZ_CHECK(ParseHttpDate(Format(t, Form::kRfc850)) == t);

  std::string value(input.substr(0, 64));
  FUZZ_CHECK(SurrogateControlWantsEsi(value + ", content=\"ESI/1.0\""));
  return 0;
}

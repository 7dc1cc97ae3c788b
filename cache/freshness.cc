#include "cache/freshness.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "base/text.h"

namespace shellac::cache {
namespace {

using std::chrono::seconds;

// RFC 9111 1.2.2: a delta-seconds too large to represent is taken as 2^31.
constexpr int64_t kMaxDelta = 2147483648;

using base::EqualsIgnoreCase;
using base::TrimOws;

// delta-seconds: 1*DIGIT. nullopt when not a number.
std::optional<int64_t> ParseDelta(std::string_view text) {
  text = TrimOws(text);
  if (text.empty()) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = std::min<int64_t>(v * 10 + (c - '0'), kMaxDelta);
  }
  return v;
}

// The Cache-Control directives shellac acts on. Values of a repeated directive: the first counts.
struct CacheControl {
  bool no_store = false;
  bool is_private = false;
  bool no_cache = false;
  std::optional<std::string_view> s_maxage;
  std::optional<std::string_view> max_age;
  std::optional<std::string_view> stale_while_revalidate;
  std::optional<std::string_view> stale_if_error;

  // One field value: comma-separated directives; a quoted-string value may contain commas.
  void Parse(std::string_view field) {
    size_t i = 0;
    while (i < field.size()) {
      size_t start = i;
      bool quoted = false;
      while (i < field.size() && (quoted || field[i] != ',')) {
        if (field[i] == '"') quoted = !quoted;
        if (quoted && field[i] == '\\' && i + 1 < field.size()) ++i;
        ++i;
      }
      Directive(TrimOws(field.substr(start, i - start)));
      ++i;  // the comma
    }
  }

  void Directive(std::string_view d) {
    if (d.empty()) return;
    size_t eq = d.find('=');
    std::string_view name = TrimOws(d.substr(0, eq));
    std::string_view value;
    if (eq != std::string_view::npos) {
      value = TrimOws(d.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
    }
    auto set = [&](std::optional<std::string_view>& slot) {
      if (!slot) slot = value;
    };
    if (EqualsIgnoreCase(name, "no-store"))
      no_store = true;
    else if (EqualsIgnoreCase(name, "private"))
      is_private = true;
    else if (EqualsIgnoreCase(name, "no-cache"))
      no_cache = true;
    else if (EqualsIgnoreCase(name, "s-maxage"))
      set(s_maxage);
    else if (EqualsIgnoreCase(name, "max-age"))
      set(max_age);
    else if (EqualsIgnoreCase(name, "stale-while-revalidate"))
      set(stale_while_revalidate);
    else if (EqualsIgnoreCase(name, "stale-if-error"))
      set(stale_if_error);
  }
};

bool CacheableByDefault(int status) {
  static constexpr std::array<int, 11> kStatuses = {200, 203, 204, 300, 301, 308,
                                                    404, 405, 410, 414, 501};
  return std::find(kStatuses.begin(), kStatuses.end(), status) != kStatuses.end();
}

// Vary on anything but Accept-Encoding would need variants, which the store does not keep.
bool VaryIsServable(std::string_view field) {
  while (!field.empty()) {
    size_t comma = field.find(',');
    std::string_view token = TrimOws(field.substr(0, comma));
    if (!token.empty() && !EqualsIgnoreCase(token, "Accept-Encoding")) return false;
    field = comma == std::string_view::npos ? std::string_view() : field.substr(comma + 1);
  }
  return true;
}

// ---- HTTP-date ---------------------------------------------------------------------------------

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool Done() const { return i_ == s_.size(); }
  bool Char(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void Spaces() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  // Exactly `min`..`max` digits.
  bool Number(int min, int max, int* out) {
    int n = 0, v = 0;
    while (i_ < s_.size() && n < max && s_[i_] >= '0' && s_[i_] <= '9') {
      v = v * 10 + (s_[i_++] - '0');
      ++n;
    }
    *out = v;
    return n >= min;
  }
  bool Month(unsigned* out) {
    static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (s_.size() - i_ < 3) return false;
    for (unsigned m = 0; m < 12; ++m) {
      if (EqualsIgnoreCase(s_.substr(i_, 3), kMonths[m])) {
        i_ += 3;
        *out = m + 1;
        return true;
      }
    }
    return false;
  }
  bool Time(int* h, int* m, int* s) {
    return Number(2, 2, h) && Char(':') && Number(2, 2, m) && Char(':') && Number(2, 2, s);
  }
  bool Word(std::string_view w) {
    if (s_.size() - i_ < w.size() || !EqualsIgnoreCase(s_.substr(i_, w.size()), w)) return false;
    i_ += w.size();
    return true;
  }
  std::string_view Rest() const { return s_.substr(i_); }
  void Skip(size_t n) { i_ += n; }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

std::optional<std::chrono::sys_seconds> MakeTime(int year, unsigned month, int day, int h, int m,
                                                 int s) {
  std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(month),
                                   std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok() || h > 23 || m > 59 || s > 60) return std::nullopt;  // 60: a leap second
  return std::chrono::sys_days(date) + std::chrono::hours(h) + std::chrono::minutes(m) + seconds(s);
}

}  // namespace

std::optional<std::chrono::sys_seconds> ParseHttpDate(std::string_view text) {
  text = TrimOws(text);
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view weekday = text.substr(0, space);  // checked for shape only: it is redundant
  Cursor c(text);
  c.Skip(space);
  c.Spaces();
  int year = 0, day = 0, h = 0, m = 0, s = 0;
  unsigned month = 0;
  if (!weekday.empty() && weekday.back() == ',') {
    if (c.Rest().size() > 2 && c.Rest()[2] == '-') {
      // rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"
      if (!(c.Number(2, 2, &day) && c.Char('-') && c.Month(&month) && c.Char('-') &&
            c.Number(2, 2, &year))) {
        return std::nullopt;
      }
      year += year < 70 ? 2000 : 1900;
    } else {
      // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
      if (!(c.Number(2, 2, &day) && c.Char(' ') && c.Month(&month) && c.Char(' ') &&
            c.Number(4, 4, &year))) {
        return std::nullopt;
      }
    }
    if (!(c.Char(' ') && c.Time(&h, &m, &s) && c.Char(' ') && c.Word("GMT"))) return std::nullopt;
  } else {
    // asctime-date: "Sun Nov  6 08:49:37 1994"
    if (!c.Month(&month) || !c.Char(' ')) return std::nullopt;
    c.Spaces();
    if (!(c.Number(1, 2, &day) && c.Char(' ') && c.Time(&h, &m, &s) && c.Char(' ') &&
          c.Number(4, 4, &year))) {
      return std::nullopt;
    }
  }
  if (!c.Done()) return std::nullopt;
  return MakeTime(year, month, day, h, m, s);
}

FreshnessDecision DecideFreshness(int status, std::span<const Header> headers,
                                  std::chrono::sys_seconds now, const FreshnessPolicy& policy) {
  FreshnessDecision d;
  if (status < 200 || status == 206 || status == 304 || status >= 500) {
    d.reason = "status";
    return d;
  }
  CacheControl cc;
  std::optional<std::string_view> expires, date, age;
  bool set_cookie = false;
  for (const Header& h : headers) {
    if (EqualsIgnoreCase(h.name, "Cache-Control")) {
      cc.Parse(h.value);
    } else if (EqualsIgnoreCase(h.name, "Expires")) {
      if (!expires) expires = h.value;
    } else if (EqualsIgnoreCase(h.name, "Date")) {
      if (!date) date = h.value;
    } else if (EqualsIgnoreCase(h.name, "Age")) {
      if (!age) age = h.value;
    } else if (EqualsIgnoreCase(h.name, "Set-Cookie")) {
      set_cookie = true;
    } else if (EqualsIgnoreCase(h.name, "Vary")) {
      if (!VaryIsServable(h.value)) {
        d.reason = "Vary";
        return d;
      }
    }
  }
  if (!policy.store_uncacheable) {
    if (cc.no_store)
      d.reason = "no-store";
    else if (cc.is_private)
      d.reason = "private";
    else if (cc.no_cache)
      d.reason = "no-cache";
    else if (set_cookie)
      d.reason = "Set-Cookie";
    if (!d.reason.empty()) return d;
  }

  int64_t ttl = 0;
  if (cc.s_maxage) {
    ttl = ParseDelta(*cc.s_maxage).value_or(0);  // invalid: treat as stale (RFC 9111 4.2.1)
    d.reason = "s-maxage";
  } else if (cc.max_age) {
    ttl = ParseDelta(*cc.max_age).value_or(0);
    d.reason = "max-age";
  } else if (expires) {
    std::optional<std::chrono::sys_seconds> expiry = ParseHttpDate(*expires);
    std::optional<std::chrono::sys_seconds> origin_now = date ? ParseHttpDate(*date) : std::nullopt;
    // Expires is measured against the origin's clock (Date), so clock skew between origin and
    // proxy cancels out. An invalid Expires ("0", "-1") means already expired.
    ttl = expiry ? (*expiry - origin_now.value_or(now)).count() : 0;
    d.reason = "Expires";
  } else if (CacheableByDefault(status)) {
    ttl = policy.default_ttl.count();
    d.reason = "default-ttl";
  } else {
    d.reason = "status";
    return d;
  }
  if (age) ttl -= ParseDelta(*age).value_or(0);  // it spent that long in caches upstream
  d.storable = true;
  d.ttl = seconds(std::clamp<int64_t>(ttl, 0, kMaxDelta));

  std::optional<int64_t> swr =
      cc.stale_while_revalidate ? ParseDelta(*cc.stale_while_revalidate) : std::nullopt;
  std::optional<int64_t> sie = cc.stale_if_error ? ParseDelta(*cc.stale_if_error) : std::nullopt;
  d.grace = swr || sie ? seconds(std::max(swr.value_or(0), sie.value_or(0))) : policy.grace;
  return d;
}

bool SurrogateControlWantsEsi(std::string_view field) {
  const auto content = field.find("content=");
  return content != std::string_view::npos &&
         field.find("ESI/1.0", content) != std::string_view::npos;
}

}  // namespace shellac::cache

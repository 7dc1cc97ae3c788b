#include "ctl/prom.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace shellac::ctl {

Metrics Metrics::Parse(std::string_view text) {
  Metrics m;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line.front() == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') break;
        std::string key(line.substr(i, eq - i)), value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;
          value.push_back(line[j]);
        }
        s.labels.emplace(std::move(key), std::move(value));
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size() || s.name.empty()) continue;
    const std::string number(line.substr(i, line.find(' ', i) - i));
    char* end = nullptr;
    s.value = std::strtod(number.c_str(), &end);
    if (end == number.c_str()) continue;
    m.samples_.push_back(std::move(s));
  }
  return m;
}

namespace {
bool Includes(const std::map<std::string, std::string>& have,
              const std::map<std::string, std::string>& want) {
  for (const auto& [k, v] : want) {
    const auto it = have.find(k);
    if (it == have.end() || it->second != v) return false;
  }
  return true;
}
}  // namespace

double Metrics::Sum(std::string_view name, const std::map<std::string, std::string>& labels) const {
  double total = 0;
  for (const auto& s : samples_) {
    if (s.name == name && Includes(s.labels, labels)) total += s.value;
  }
  return total;
}

std::vector<std::string> Metrics::LabelValues(std::string_view name, std::string_view label) const {
  std::vector<std::string> out;
  for (const auto& s : samples_) {
    if (s.name != name) continue;
    const auto it = s.labels.find(std::string(label));
    if (it != s.labels.end() && std::find(out.begin(), out.end(), it->second) == out.end())
      out.push_back(it->second);
  }
  return out;
}

std::vector<std::pair<double, double>> Metrics::Buckets(
    std::string_view name, const std::map<std::string, std::string>& labels) const {
  const std::string bucket = std::string(name) + "_bucket";
  std::map<double, double> by_le;
  for (const auto& s : samples_) {
    if (s.name != bucket || !Includes(s.labels, labels)) continue;
    const auto le = s.labels.find("le");
    if (le == s.labels.end()) continue;
    const double bound = le->second == "+Inf" ? std::numeric_limits<double>::infinity()
                                              : std::strtod(le->second.c_str(), nullptr);
    by_le[bound] += s.value;
  }
  return {by_le.begin(), by_le.end()};
}

double Quantile(const std::vector<std::pair<double, double>>& cumulative, double q) {
  if (cumulative.empty() || cumulative.back().second <= 0) return -1;
  const double rank = q * cumulative.back().second;
  double lower_bound = 0, lower_count = 0;
  for (const auto& [le, count] : cumulative) {
    if (count >= rank && count > lower_count) {
      if (std::isinf(le)) return lower_bound;
      return lower_bound + (le - lower_bound) * (rank - lower_count) / (count - lower_count);
    }
    if (!std::isinf(le)) lower_bound = le;
    lower_count = count;
  }
  return lower_bound;
}

std::vector<std::pair<double, double>> Delta(const std::vector<std::pair<double, double>>& now,
                                             const std::vector<std::pair<double, double>>& before) {
  std::vector<std::pair<double, double>> out = now;
  for (auto& [le, count] : out) {
    for (const auto& [ble, bcount] : before) {
      if (ble == le) count = std::max(0.0, count - bcount);
    }
  }
  return out;
}

}  // namespace shellac::ctl

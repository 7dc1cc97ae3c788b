// prom: reads the Prometheus text format that shellac's /metrics writes, for `shellac stat`.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shellac::ctl {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

class Metrics {
 public:
  // Parses every sample line; comments and malformed lines are skipped.
  static Metrics Parse(std::string_view text);

  // Sum of the samples of `name` whose labels include every pair of `labels`; 0 when none.
  double Sum(std::string_view name, const std::map<std::string, std::string>& labels = {}) const;
  // The values of label `label` that samples of `name` carry, in order of first appearance.
  std::vector<std::string> LabelValues(std::string_view name, std::string_view label) const;
  // The cumulative buckets (le, count) of histogram `name` (the "_bucket" series) whose other
  // labels include `labels`, summed over the rest, in increasing le (+Inf last).
  std::vector<std::pair<double, double>> Buckets(
      std::string_view name, const std::map<std::string, std::string>& labels = {}) const;
  bool empty() const { return samples_.empty(); }

 private:
  std::vector<Sample> samples_;
};

// Quantile `q` (0..1) of a histogram given as cumulative buckets, interpolated linearly inside the
// bucket that holds it (as Prometheus' histogram_quantile does); a quantile in the +Inf bucket is
// the largest finite bound. -1 when the histogram is empty.
double Quantile(const std::vector<std::pair<double, double>>& cumulative, double q);

// Bucket-wise `now - before` (the observations between two samples); `before` may be empty.
std::vector<std::pair<double, double>> Delta(const std::vector<std::pair<double, double>>& now,
                                             const std::vector<std::pair<double, double>>& before);

}  // namespace shellac::ctl

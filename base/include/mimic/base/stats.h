// Order statistics over timing samples. Pure functions; thread-safe.
#pragma once

#include <vector>

namespace mimic {

// The p-th percentile (0..100) by linear interpolation between closest ranks.
// REQUIRES: !samples.empty().
double Percentile(std::vector<double> samples, double p);
// The same over samples already sorted ascending, without a copy. REQUIRES: !sorted.empty().
double PercentileOfSorted(const std::vector<double>& sorted, double p);
inline double Median(const std::vector<double>& samples) { return Percentile(samples, 50.0); }

// The ordinary least-squares line y = intercept + slope x through the points (x[i], y[i]);
// slope 0 when the xs do not differ. REQUIRES: x.size() == y.size() > 0.
struct Line {
  double intercept = 0;
  double slope = 0;
};
Line FitLine(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace mimic

#include "mimic/base/stats.h"

#include <algorithm>
#include <cmath>

#include "mimic/base/status.h"

namespace mimic {

double Percentile(std::vector<double> samples, double p) {
  MIMIC_CHECK(!samples.empty());
  std::sort(samples.begin(), samples.end());
  return PercentileOfSorted(samples, p);
}

double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  MIMIC_CHECK(!sorted.empty());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

Line FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  MIMIC_CHECK(!x.empty() && x.size() == y.size());
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  const double den = n * sxx - sx * sx;
  const double slope = den > 0 ? (n * sxy - sx * sy) / den : 0;
  return {(sy - slope * sx) / n, slope};
}

}  // namespace mimic

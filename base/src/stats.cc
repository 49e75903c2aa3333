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

}  // namespace mimic

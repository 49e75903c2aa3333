#include "mimic/base/stats.h"

#include <algorithm>
#include <cmath>

#include "mimic/base/status.h"

namespace mimic {

double Percentile(std::vector<double> samples, double p) {
  MIMIC_CHECK(!samples.empty());
  std::sort(samples.begin(), samples.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(samples.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, samples.size() - 1);
  return samples[lo] + (samples[hi] - samples[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace mimic

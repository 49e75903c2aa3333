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

}  // namespace mimic

// Order statistics and the least-squares line the calibrations fit (base/stats.h).
#include "mimic/base/stats.h"

#include <vector>

#include "testing.h"

namespace mimic {
namespace {

TEST(Stats, MedianInterpolatesBetweenTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5}, 100), 5);
}

// Points on y = 3 + 2x come back exactly; noise symmetric about the line leaves it.
TEST(Stats, FitLineRecoversTheInterceptAndSlope) {
  const Line exact = FitLine({1, 2, 4, 8}, {5, 7, 11, 19});
  EXPECT_DOUBLE_EQ(exact.intercept, 3);
  EXPECT_DOUBLE_EQ(exact.slope, 2);
  const Line noisy = FitLine({0, 0, 10, 10}, {2, 4, 22, 24});
  EXPECT_DOUBLE_EQ(noisy.intercept, 3);
  EXPECT_DOUBLE_EQ(noisy.slope, 2);
}

// Without two distinct xs there is no slope to fit: 0, and the mean of y as the intercept.
TEST(Stats, FitLineOfOneXHasNoSlope) {
  const Line flat = FitLine({5, 5, 5}, {1, 2, 6});
  EXPECT_DOUBLE_EQ(flat.slope, 0);
  EXPECT_DOUBLE_EQ(flat.intercept, 3);
}

}  // namespace
}  // namespace mimic

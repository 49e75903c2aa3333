// The chunked sequence the Kineto reader keeps its events in (base/chunked_vector.h).
#include "mimic/base/chunked_vector.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "testing.h"

namespace mimic {
namespace {

// Across chunk boundaries: elements in order, by index and by iteration, and appending leaves
// every earlier element where it was.
TEST(ChunkedVector, KeepsOrderAndAddressesAcrossChunks) {
  ChunkedVector<std::string, 3> v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.begin(), v.end());
  std::vector<const std::string*> where;
  for (int i = 0; i < 10; ++i) where.push_back(&v.emplace_back(std::to_string(i)));
  ASSERT_EQ(v.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(v[i], std::to_string(i));
    EXPECT_EQ(&v[i], where[i]) << i;
  }
  std::vector<std::string> seen(v.begin(), v.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  for (std::string& s : v) s += "!";
  const ChunkedVector<std::string, 3>& c = v;
  EXPECT_EQ(std::count_if(c.begin(), c.end(), [](const std::string& s) { return s.back() == '!'; }),
            10);
  v.clear();
  EXPECT_EQ(v.size(), 0u);
  EXPECT_EQ(v.begin(), v.end());
  v.push_back("again");
  EXPECT_EQ(v[0], "again");
}

// A size that fills its chunks exactly, and one element over.
TEST(ChunkedVector, ExactlyFullChunks) {
  ChunkedVector<int, 4> v;
  for (int i = 0; i < 8; ++i) v.push_back(i);
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), 28);
  v.push_back(8);
  EXPECT_EQ(v[8], 8);
  EXPECT_EQ(std::distance(v.begin(), v.end()), 9);
}

}  // namespace
}  // namespace mimic

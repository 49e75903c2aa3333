#include "mimic/base/host.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "testing.h"

namespace mimic {
namespace {

// Three 8 MiB blocks allocated, written and freed, ten times over. Left to itself, glibc
// serves them from the top of its heap and trims that top once they are freed, so every round
// faults all 6,144 pages in again; with the heap retained, only the first round does.
TEST(Host, RetainedHeapDoesNotFaultFreedBlocksInAgain) {
  if (RetainFreedHeap().empty()) GTEST_SKIP() << "malloc is not glibc's here (a sanitizer build?)";
  constexpr size_t kBlock = 8 << 20;
  int64_t faults_after_first = 0;
  volatile unsigned char sink = 0;
  for (int round = 0; round < 10; ++round) {
    if (round == 1) faults_after_first = MinorPageFaults();
    std::vector<unsigned char*> blocks;
    for (int i = 0; i < 3; ++i) {
      auto* p = static_cast<unsigned char*>(std::malloc(kBlock));
      ASSERT_NE(p, nullptr);
      std::memset(p, round + i, kBlock);
      blocks.push_back(p);
    }
    for (unsigned char* p : blocks) {
      sink = sink + p[kBlock - 1];
      std::free(p);
    }
  }
  const int64_t faults = MinorPageFaults() - faults_after_first;
  // 9 rounds x 6,144 pages if the heap were trimmed; a few stray pages otherwise.
  EXPECT_LT(faults, 1000) << "minor faults in rounds 2-10";
}

// Each page of a FreshPages faults once when first written, not again until it is handed back.
TEST(Host, FreshPagesFaultOncePerPageUntilHandedBack) {
  FreshPages pages(512);
  ASSERT_EQ(pages.pages(), 512);
  const auto touch = [&pages](int64_t n) {  // claims the next n pages and writes them
    const auto [first, end] = pages.Claim(n);
    pages.Touch(first, end);
  };
  int64_t before = MinorPageFaults();
  touch(300);
  touch(300);  // the last 212 pages, then none left
  EXPECT_GE(MinorPageFaults() - before, 512);
  before = MinorPageFaults();
  touch(100);  // all touched since the last Release: nothing to write
  EXPECT_LT(MinorPageFaults() - before, 64);
  pages.Release();
  before = MinorPageFaults();
  touch(256);
  const int64_t again = MinorPageFaults() - before;
  EXPECT_GE(again, 256);
  EXPECT_LT(again, 256 + 64);
}

TEST(Host, PageFaultCountGrowsWithFreshPages) {
  const int64_t before = MinorPageFaults();
  constexpr size_t kBytes = 64 << 20;  // above the mmap threshold: fresh pages
  auto* p = static_cast<unsigned char*>(std::malloc(kBytes));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, kBytes);
  const int64_t after = MinorPageFaults();
  std::free(p);
  // 16,384 pages of 4 KiB; fewer with transparent huge pages, never none.
  EXPECT_GT(after - before, 16);
}

}  // namespace
}  // namespace mimic

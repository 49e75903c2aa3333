#include "page_faults.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "mimic/base/host.h"
#include "mimic/base/stats.h"
#include "mimic/replay/page_faults.h"

namespace mimic::calibrate {
namespace {

constexpr int64_t kRegionBytes = int64_t{64} << 20;

// One round: microseconds per counted fault, or -1 where the region could not be mapped or
// nothing faulted. A fault as the replay takes the original's (FaultInOnIntraOpThreads): first
// writes on the intra-op threads, each a page the kernel zeroes, and the hand-back of them all
// (MADV_DONTNEED, as glibc trims its heap's top).
double MicrosecondsPerFault() {
  FreshPages pages(kRegionBytes / sysconf(_SC_PAGESIZE));
  if (pages.pages() == 0) return -1;
  const int64_t before = MinorPageFaults();
  const auto t0 = std::chrono::steady_clock::now();
  replay::FaultInOnIntraOpThreads(pages, pages.pages());
  const int64_t faults = MinorPageFaults() - before;
  pages.Release();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return faults > 0 ? us / static_cast<double>(faults) : -1;
}

}  // namespace

std::string MeasurePageFaults(int rounds, proto::CpuOverheads& c,
                              const std::function<void(const std::string&)>& log) {
  std::vector<double> per_fault;
  for (int r = 0; r < rounds; ++r)
    if (const double us = MicrosecondsPerFault(); us > 0) per_fault.push_back(us);
  if (per_fault.empty()) return "page_fault_us not measured (no fault counted)";
  c.set_page_fault_us(Median(per_fault));
  log("page fault: " + std::to_string(c.page_fault_us()) + " us");
  return "page_fault_us = median over " + std::to_string(per_fault.size()) +
         " rounds of a first write to each page of 64 MiB of fresh anonymous memory on the "
         "intra-op threads, and its hand-back, over the minor faults counted";
}

}  // namespace mimic::calibrate

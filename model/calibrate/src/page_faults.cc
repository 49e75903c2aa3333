#include "page_faults.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "mimic/base/host.h"
#include "mimic/base/stats.h"

namespace mimic::calibrate {
namespace {

constexpr size_t kRegionBytes = size_t{64} << 20;

// One round: microseconds per counted fault, or -1 where the region could not be mapped or
// nothing faulted. A page as a trimming heap takes it: its first write, the kernel zeroing a
// fresh page, and its hand-back (munmap, as glibc unmaps a large block or trims its heap's
// top), about a fifth of the whole on a Linux VM.
double MicrosecondsPerFault() {
  void* region =
      mmap(nullptr, kRegionBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return -1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  volatile char* bytes = static_cast<char*>(region);
  const int64_t before = MinorPageFaults();
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t offset = 0; offset < kRegionBytes; offset += page) bytes[offset] = 1;
  const int64_t faults = MinorPageFaults() - before;
  munmap(region, kRegionBytes);
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
         " rounds of a first write to each page of 64 MiB of fresh anonymous memory and its "
         "munmap, over the minor faults counted";
}

}  // namespace mimic::calibrate

// What machine this is, for reports and provenance. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

namespace mimic {

// gethostname(), or "" when it fails.
std::string HostName();
// The "model name" of /proc/cpuinfo, or "unknown".
std::string CpuModel();

// Bytes of the largest cache one core of this host sees (sysfs cpu0's highest cache level,
// else sysconf), 0 if unknown. Unlike sysconf on AMD hosts, sysfs gives the slice of an L3
// that this core's complex shares, not the socket's total.
double LastLevelCacheBytes();

// Bytes this process may still allocate: the kernel's MemAvailable, lowered to what the
// process's cgroup (v2 memory.max - memory.current) and its address-space limit (RLIMIT_AS)
// leave; 0 if none of them can be read.
int64_t AvailableHostMemory();

// Minor page faults of this process so far (getrusage): each is a fresh page the kernel
// mapped and zeroed on first touch.
int64_t MinorPageFaults();

// What this process has used so far (getrusage RUSAGE_SELF): CPU time, its peak resident set,
// page faults and context switches. Subtract two to get a span's use.
struct ProcessUsage {
  double user_ms = 0, sys_ms = 0;
  int64_t peak_rss_bytes = 0;  // over the whole life of the process
  int64_t minor_faults = 0, major_faults = 0;
  int64_t voluntary_switches = 0, involuntary_switches = 0;
};
ProcessUsage CurrentProcessUsage();

// Keeps freed host memory in the process's heap instead of handing it back to the kernel.
// glibc trims the top of its heap once more than 128 KiB-64 MiB is free there, and serves
// larger blocks with mmap, so a loop that frees and reallocates the same tensors page-faults
// every page of them again, each iteration, by an amount that depends on the heap's layout
// (docs/benchmarks.md, section 2). A long-running training process rarely trims (its heap top
// is pinned by other objects); this makes a replay or a probe behave the same way,
// deterministically: no trimming, mmap only for blocks of 32 MiB and more (glibc's own upper
// bound). Process-wide and lasting; returns what was set ("" where the C library is not
// glibc and nothing was changed).
std::string RetainFreedHeap();

// Host pages to page-fault on purpose, as a heap that hands memory back to the kernel faults
// it in again: a private anonymous mapping (no transparent huge pages) whose pages are claimed
// and first written a few at a time, each a minor fault and a page the kernel zeroes, and
// handed back all together (madvise MADV_DONTNEED, as glibc's trim does), so that the next
// writes fault again. Claim and Touch may be called from several threads at once (each thread
// writing its own pages). Linux; elsewhere it maps nothing.
class FreshPages {
 public:
  explicit FreshPages(int64_t pages);
  ~FreshPages();
  FreshPages(const FreshPages&) = delete;
  FreshPages& operator=(const FreshPages&) = delete;

  int64_t pages() const { return pages_; }  // 0 where the mapping failed
  int64_t page_bytes() const { return page_bytes_; }
  char* page(int64_t k) const { return base_ + k * page_bytes_; }
  // Takes the next `n` untouched pages (fewer once all were taken since Release): [first, end).
  std::pair<int64_t, int64_t> Claim(int64_t n);
  // Writes pages [first, end) of a claim; threads may each write a part of one.
  void Touch(int64_t first, int64_t end);
  // Hands every page back; the next Claim starts again from the first.
  void Release();

 private:
  char* base_ = nullptr;
  int64_t pages_ = 0, page_bytes_ = 0;
  std::atomic<int64_t> next_{0};
};

}  // namespace mimic

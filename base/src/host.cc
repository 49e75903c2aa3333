#include "mimic/base/host.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>

namespace mimic {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

double LastLevelCacheBytes() {
  int best_level = 0;
  double best = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_in(dir + "level"), size_in(dir + "size");
    int level = 0;
    std::string size;  // "32768K"
    if (!(level_in >> level) || !(size_in >> size) || size.empty()) continue;
    double bytes = std::atof(size.c_str());
    if (size.back() == 'K') bytes *= 1024;
    if (size.back() == 'M') bytes *= 1024 * 1024;
    if (level > best_level && bytes > 0) best_level = level, best = bytes;
  }
  if (best > 0) return best;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return static_cast<double>(l3 > 0 ? l3 : l2 > 0 ? l2 : 0);
}

namespace {

// The first integer of a one-line file, or -1 ("max" and unreadable files included).
int64_t ReadInt(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  return in >> v ? v : -1;
}

}  // namespace

int64_t AvailableHostMemory() {
  int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") available = kib * 1024;
  auto lower = [&available](int64_t limit) {
    if (limit >= 0 && (available < 0 || limit < available)) available = limit;
  };
  const int64_t cg_max = ReadInt("/sys/fs/cgroup/memory.max");
  const int64_t cg_used = ReadInt("/sys/fs/cgroup/memory.current");
  if (cg_max >= 0 && cg_used >= 0) lower(std::max<int64_t>(cg_max - cg_used, 0));
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::ifstream statm("/proc/self/statm");
    int64_t pages = 0;
    if (statm >> pages)
      lower(
          std::max<int64_t>(static_cast<int64_t>(as.rlim_cur) - pages * sysconf(_SC_PAGESIZE), 0));
  }
  return std::max<int64_t>(available, 0);
}

ProcessUsage CurrentProcessUsage() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return {};
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return {ms(ru.ru_utime), ms(ru.ru_stime), static_cast<int64_t>(ru.ru_maxrss) * 1024,
          ru.ru_minflt,    ru.ru_majflt,    ru.ru_nvcsw,
          ru.ru_nivcsw};
}

int64_t MinorPageFaults() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return ru.ru_minflt;
}

std::string RetainFreedHeap() {
#if defined(__GLIBC__)
  // glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit hosts.
  constexpr int kMmapThreshold = 32 << 20;
  // Setting either threshold also turns off glibc's dynamic adjustment of both.
  if (mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1 && mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1)
    return "retained (glibc: no trim, mmap >= 32 MiB)";
#endif
  return "";
}

FreshPages::FreshPages(int64_t pages) {
#if defined(__linux__)
  page_bytes_ = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes_ <= 0) return;
  void* p = mmap(nullptr, static_cast<size_t>(pages * page_bytes_), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, static_cast<size_t>(pages * page_bytes_), MADV_NOHUGEPAGE);  // a fault per page
  base_ = static_cast<char*>(p), pages_ = pages;
#else
  (void)pages;
#endif
}

FreshPages::~FreshPages() {
#if defined(__linux__)
  if (base_) munmap(base_, static_cast<size_t>(pages_ * page_bytes_));
#endif
}

std::pair<int64_t, int64_t> FreshPages::Claim(int64_t n) {
  if (n <= 0 || !base_) return {0, 0};
  const int64_t first = std::min(next_.fetch_add(n, std::memory_order_relaxed), pages_);
  return {first, std::min(first + n, pages_)};
}

void FreshPages::Touch(int64_t first, int64_t end) {
  for (int64_t k = first; k < end; ++k) *static_cast<volatile char*>(base_ + k * page_bytes_) = 1;
}

void FreshPages::Release() {
#if defined(__linux__)
  if (base_) madvise(base_, static_cast<size_t>(pages_ * page_bytes_), MADV_DONTNEED);
#endif
  next_.store(0, std::memory_order_relaxed);
}

}  // namespace mimic

// Plain figures about replay devices, shared by the executor interface (executor.h) and the
// replay's results (replayer.h); no LibTorch types, so that reports and the command line can
// use them without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mimic::replay {

struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by tensors now
  int64_t peak_allocated_bytes = 0;  // since the last ResetPeakMemory
  int64_t reserved_bytes = -1;       // held by a caching allocator; -1 for one without a cache
  int64_t allocations = 0;           // since the last ResetPeakMemory
};

// One device of this machine, as `mimic devices` lists it.
struct DeviceInfo {
  std::string name;         // "cpu", "cuda:0"
  std::string description;  // "AMD EPYC 7B13 (2 intra-op threads, ...)", "NVIDIA H100 ..., sm_90"
  int64_t memory_bytes = 0;
};

// The devices of one executor type compiled into this Mimic.
struct ExecutorDevices {
  std::string type;                 // "cpu", "cuda"
  std::vector<DeviceInfo> devices;  // present on this machine; empty when none
  std::string note;                 // why none, where known ("no CUDA device visible")
};

// Figures an executor samples from its device while a replay runs (NVML on CUDA).
struct DeviceMetrics {
  int samples = 0;
  double sm_utilization_pct_mean = -1, sm_utilization_pct_max = -1;
  double memory_used_mib_max = -1;
  double power_w_mean = -1, power_w_max = -1;
  double sm_clock_mhz_mean = -1;
  std::string source;  // "nvml", or why there are none
};

}  // namespace mimic::replay

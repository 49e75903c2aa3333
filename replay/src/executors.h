// The executor types of the registry (mimic/replay/executor.h), each in a file of its own:
// cpu_executor.cc always, cuda_executor.cc in CUDA builds (MIMIC_WITH_CUDA).
#pragma once

#include <memory>
#include <vector>

#include "mimic/replay/executor.h"

namespace mimic::replay {

Result<std::unique_ptr<Executor>> CreateCpuExecutor(const c10::Device& device);
std::vector<DeviceInfo> ListCpuDevices();

#if defined(MIMIC_WITH_CUDA)
Result<std::unique_ptr<Executor>> CreateCudaExecutor(const c10::Device& device);
std::vector<DeviceInfo> ListCudaDevices();
#endif

}  // namespace mimic::replay

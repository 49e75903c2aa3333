// Where a replay runs. One interface, one implementation per device type; the CPU one is
// complete on its own, the CUDA one (streams, events, NVML) slots in behind the same calls.
// Not thread-safe.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "mimic/base/status.h"

namespace mimic::replay {

class Device {
 public:
  virtual ~Device() = default;
  // The LibTorch device every recorded device is remapped to.
  virtual c10::Device torch_device() const = 0;
  // Waits until all work issued so far has finished.
  virtual void Synchronize() = 0;
  // "cpu (2 threads)", "cuda:0 (NVIDIA H200)", ...
  virtual std::string Describe() const = 0;
};

// Creates the device named `name` ("cpu", "cuda", "cuda:N"). Errors: InvalidInput for a
// malformed name, Unsupported for a device this build or machine cannot replay on.
Result<std::unique_ptr<Device>> CreateDevice(const std::string& name);

}  // namespace mimic::replay

// NVML, loaded at run time from the driver (libnvidia-ml.so.1; no link-time dependency, so a
// machine without an NVIDIA driver runs Mimic as well): a sampler of one GPU's utilisation,
// memory, power and SM clock while a replay runs. Every NVML call goes through one checking
// macro that keeps the call's text and place. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "mimic/replay/device_info.h"

namespace mimic::replay {

class NvmlSampler {
 public:
  // Samples the GPU at PCI bus id `pci_bus_id` ("0000:65:00.0") every `period` on a thread of
  // its own until Stop. Where NVML or the device cannot be had, samples nothing: Stop then
  // says why in DeviceMetrics::source.
  static std::unique_ptr<NvmlSampler> Start(const std::string& pci_bus_id,
                                            std::chrono::milliseconds period);
  virtual ~NvmlSampler() = default;
  virtual DeviceMetrics Stop() = 0;
};

}  // namespace mimic::replay

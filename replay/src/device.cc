#include "device.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

namespace mimic::replay {
namespace {

class CpuDevice final : public Device {
 public:
  c10::Device torch_device() const override { return c10::Device(c10::kCPU); }
  void Synchronize() override {}  // CPU kernels finish before the dispatcher returns
  std::string Describe() const override {
    return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  }
};

}  // namespace

Result<std::unique_ptr<Device>> CreateDevice(const std::string& name) {
  c10::Device parsed(c10::kCPU);
  try {
    parsed = c10::Device(name);
  } catch (const c10::Error&) {
    return Status::InvalidInput("--device " + name + ": not a device name (try cpu or cuda:0)");
  }
  if (parsed.is_cpu()) return std::unique_ptr<Device>(new CpuDevice());
  return Status::Unsupported("--device " + name +
                             ": this Mimic replays on the CPU only; GPU replay is not built yet");
}

}  // namespace mimic::replay

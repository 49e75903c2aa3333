// The registry of executor types: the one place that knows which are compiled in.
#include <c10/util/Exception.h>

#include "executors.h"
#include "mimic/replay/replayer.h"

namespace mimic::replay {

const std::vector<ExecutorType>& ExecutorTypes() {
  static const std::vector<ExecutorType> types = {
    {"cpu", &CreateCpuExecutor, &ListCpuDevices},
#if defined(MIMIC_WITH_CUDA)
    {"cuda", &CreateCudaExecutor, &ListCudaDevices},
#endif
  };
  return types;
}

Result<std::unique_ptr<Executor>> CreateExecutor(const std::string& name) {
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const c10::Error&) {
    return Status::InvalidInput("--device " + name + ": not a device name (try cpu or cuda:0)");
  }
  const std::string type = c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  std::string compiled;
  for (const ExecutorType& t : ExecutorTypes()) {
    if (type == t.name) return t.create(device);
    compiled += (compiled.empty() ? "" : ", ") + std::string(t.name);
  }
  return Status::Unsupported("--device " + name + ": this Mimic has executors for " + compiled +
                             " only");
}

std::string BestDevice() {
  const std::vector<ExecutorType>& types = ExecutorTypes();
  for (auto t = types.rbegin(); t != types.rend(); ++t)
    if (!t->list().empty()) return t->name;
  return "cpu";
}

std::vector<ExecutorDevices> ListDevices() {
  std::vector<ExecutorDevices> out;
  for (const ExecutorType& t : ExecutorTypes()) {
    ExecutorDevices d{t.name, t.list(), ""};
    if (d.devices.empty()) d.note = "no " + std::string(t.name) + " device visible";
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace mimic::replay

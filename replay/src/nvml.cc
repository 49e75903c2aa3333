#include "nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace mimic::replay {
namespace {

// The part of nvml.h Mimic uses (NVML's C ABI is stable; the toolkit here ships no nvml.h).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kNvmlClockSm = 1;

struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  nvmlReturn_t (*HandleByPciBusId)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*Utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*Memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*Power)(nvmlDevice_t, unsigned int*) = nullptr;  // milliwatts
  nvmlReturn_t (*Clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
};

// Checks an NVML call, keeping its text and place for the message (nccl-tests' NCCLCHECK).
#define MIMIC_NVML_CHECK(nvml, call, error)                                                       \
  do {                                                                                            \
    const nvmlReturn_t mimic_nvml_rc = (call);                                                    \
    if (mimic_nvml_rc != kNvmlSuccess) {                                                          \
      *(error) = std::string(#call) + " failed at " + __FILE__ + ":" + std::to_string(__LINE__) + \
                 ": " + ((nvml).ErrorString ? (nvml).ErrorString(mimic_nvml_rc) : "error");       \
    }                                                                                             \
  } while (0)

// Loads the library and its symbols; "" on success, else why not.
std::string Load(Nvml& n) {
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) return "NVML not loaded: libnvidia-ml.so.1 not found (no NVIDIA driver)";
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(n.lib, name));
    return fn != nullptr;
  };
  if (!sym(n.Init, "nvmlInit_v2") || !sym(n.Shutdown, "nvmlShutdown") ||
      !sym(n.HandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !sym(n.Utilization, "nvmlDeviceGetUtilizationRates") ||
      !sym(n.Memory, "nvmlDeviceGetMemoryInfo") || !sym(n.Power, "nvmlDeviceGetPowerUsage") ||
      !sym(n.Clock, "nvmlDeviceGetClockInfo") || !sym(n.ErrorString, "nvmlErrorString"))
    return "NVML lacks a function Mimic samples with";
  return "";
}

class Sampler final : public NvmlSampler {
 public:
  Sampler(const std::string& pci, std::chrono::milliseconds period) {
    error_ = Load(nvml_);
    if (error_.empty()) MIMIC_NVML_CHECK(nvml_, nvml_.Init(), &error_);
    if (error_.empty()) {
      initialized_ = true;
      MIMIC_NVML_CHECK(nvml_, nvml_.HandleByPciBusId(pci.c_str(), &device_), &error_);
    }
    if (error_.empty()) thread_ = std::thread([this, period] { Loop(period); });
  }
  ~Sampler() override {
    Join();
    if (initialized_) nvml_.Shutdown();
    if (nvml_.lib) dlclose(nvml_.lib);
  }

  DeviceMetrics Stop() override {
    Join();
    DeviceMetrics m;
    if (!error_.empty() && samples_.empty()) {
      m.source = error_;
      return m;
    }
    m.source = "nvml";
    m.samples = static_cast<int>(samples_.size());
    if (samples_.empty()) return m;
    double util = 0, power = 0, clock = 0;
    m.sm_utilization_pct_max = m.memory_used_mib_max = m.power_w_max = 0;
    for (const Sample& s : samples_) {
      util += s.util;
      power += s.power_w;
      clock += s.clock_mhz;
      m.sm_utilization_pct_max = std::max(m.sm_utilization_pct_max, s.util);
      m.memory_used_mib_max = std::max(m.memory_used_mib_max, s.memory_mib);
      m.power_w_max = std::max(m.power_w_max, s.power_w);
    }
    const double n = static_cast<double>(samples_.size());
    m.sm_utilization_pct_mean = util / n;
    m.power_w_mean = power / n;
    m.sm_clock_mhz_mean = clock / n;
    return m;
  }

 private:
  struct Sample {
    double util, memory_mib, power_w, clock_mhz;
  };

  void Loop(std::chrono::milliseconds period) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      nvmlUtilization_t u{};
      nvmlMemory_t mem{};
      unsigned int mw = 0, mhz = 0;
      std::string error;
      MIMIC_NVML_CHECK(nvml_, nvml_.Utilization(device_, &u), &error);
      MIMIC_NVML_CHECK(nvml_, nvml_.Memory(device_, &mem), &error);
      MIMIC_NVML_CHECK(nvml_, nvml_.Power(device_, &mw), &error);
      MIMIC_NVML_CHECK(nvml_, nvml_.Clock(device_, kNvmlClockSm, &mhz), &error);
      if (error.empty())
        samples_.push_back({static_cast<double>(u.gpu), mem.used / 1048576.0, mw / 1000.0,
                            static_cast<double>(mhz)});
      else
        error_ = error;
      wake_.wait_for(lock, period, [this] { return stop_; });
    }
  }

  void Join() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  Nvml nvml_;
  nvmlDevice_t device_ = nullptr;
  bool initialized_ = false;
  std::string error_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<Sample> samples_;
};

}  // namespace

std::unique_ptr<NvmlSampler> NvmlSampler::Start(const std::string& pci_bus_id,
                                                std::chrono::milliseconds period) {
  return std::make_unique<Sampler>(pci_bus_id, period);
}

}  // namespace mimic::replay

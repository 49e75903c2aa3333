// The CUDA executor: each lane is a CUDA stream (lane 0 the device's default stream, the
// others from LibTorch's stream pool), cross-lane order is CUDA events, iterations (and, with
// --per-op, every op) are timed with CUDA events, memory figures come from LibTorch's caching
// allocator and the device's figures from NVML loaded at run time. Every work item runs on the
// driving thread with its lane's stream current: the host issues in order, the device runs the
// lanes concurrently where the plan lets it. Compiled in CUDA builds only (MIMIC_WITH_CUDA).
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <optional>

#include "backends.h"
#include "executors.h"
#include "nvml.h"

namespace mimic::replay {
namespace {

// Checks a CUDA runtime call, keeping its text and place for the message (nccl-tests'
// CUDACHECK). For calls whose failure ends what the caller is doing.
#define MIMIC_CUDA_CHECK(call)                                                      \
  do {                                                                              \
    const cudaError_t mimic_cuda_rc = (call);                                       \
    if (mimic_cuda_rc != cudaSuccess)                                               \
      return Status::Internal(std::string(#call) + " failed at " + __FILE__ + ":" + \
                              std::to_string(__LINE__) + ": " +                     \
                              cudaGetErrorString(mimic_cuda_rc));                   \
  } while (0)

constexpr std::chrono::milliseconds kSamplePeriod{50};

class CudaExecutor final : public Executor {
 public:
  // LibTorch starts CUDA (its caching allocator among it) at the first CUDA tensor; the
  // executor asks the allocator for figures before that, so it starts it itself.
  explicit CudaExecutor(c10::DeviceIndex index) : device_(c10::kCUDA, index), guard_(device_) {
    at::globalContext().lazyInitDevice(c10::kCUDA);
  }

  const char* type() const override { return "cuda"; }
  c10::Device device() const override { return device_; }
  std::string Describe() const override {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(device_.index());
    return device_.str() + " (" + p->name + ")";
  }

  Status Configure(int lanes, int events, int timed, bool per_op_device_time) override {
    streams_.clear();
    streams_.push_back(c10::cuda::getDefaultCUDAStream(device_.index()));
    for (int k = 1; k < lanes; ++k)
      streams_.push_back(c10::cuda::getStreamFromPool(false, device_.index()));
    events_ = std::vector<at::cuda::CUDAEvent>(std::max(events, 0));
    per_op_ = per_op_device_time;
    op_start_ = TimingEvents(per_op_ ? timed : 0);
    op_end_ = TimingEvents(per_op_ ? timed : 0);
    ran_.assign(per_op_ ? timed : 0, 0);
    times_.assign(std::max(timed, 0), WorkTime{});
    return Status::Ok();
  }

  // LibTorch's events do not time unless asked (cudaEventDisableTiming is their default).
  static std::vector<at::cuda::CUDAEvent> TimingEvents(int n) {
    std::vector<at::cuda::CUDAEvent> events;
    events.reserve(std::max(n, 0));
    for (int i = 0; i < n; ++i) events.emplace_back(cudaEventDefault);
    return events;
  }

  void BeginIteration() override {
    std::fill(ran_.begin(), ran_.end(), 0);
    start_ = at::cuda::CUDAEvent(cudaEventDefault);
    start_.record(streams_[0]);
    for (size_t k = 1; k < streams_.size(); ++k) start_.block(streams_[k]);
  }

  void Submit(int lane, std::span<const int32_t> waits, const Work& work, int32_t done,
              int32_t timed) override {
    const c10::cuda::CUDAStream& stream = streams_[std::max(lane, 0)];
    c10::cuda::CUDAStreamGuard current(stream);
    for (int32_t e : waits) events_[e].block(stream);
    const bool time_it = per_op_ && timed >= 0;
    if (time_it) op_start_[timed].record(stream);
    work.fn(work.ctx, work.step);
    if (time_it) {
      op_end_[timed].record(stream);
      ran_[timed] = static_cast<char>(1 + std::max(lane, 0));
    }
    if (done >= 0) events_[done].record(stream);
  }

  double EndIteration() override {
    // Lane 0 waits for the others, so that its end event closes the whole iteration.
    for (size_t k = 1; k < streams_.size(); ++k) {
      at::cuda::CUDAEvent joined;
      joined.record(streams_[k]);
      joined.block(streams_[0]);
    }
    at::cuda::CUDAEvent end(cudaEventDefault);
    end.record(streams_[0]);
    end.synchronize();
    for (size_t i = 0; i < ran_.size(); ++i) {
      if (!ran_[i]) {
        times_[i].start_ms = -1;
        continue;
      }
      times_[i] = {start_.elapsed_time(op_start_[i]), op_start_[i].elapsed_time(op_end_[i]),
                   ran_[i] - 1};
    }
    return start_.elapsed_time(end);
  }

  void Synchronize() override { c10::cuda::device_synchronize(); }
  const std::vector<WorkTime>& work_times() const override { return times_; }

  MemoryStats Memory() const override {
    using c10::CachingDeviceAllocator::StatType;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
    const auto aggregate = static_cast<size_t>(StatType::AGGREGATE);
    return {stats.allocated_bytes[aggregate].current, stats.allocated_bytes[aggregate].peak,
            stats.reserved_bytes[aggregate].current, stats.allocation[aggregate].allocated};
  }
  void ResetPeakMemory() override {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
    c10::cuda::CUDACachingAllocator::resetAccumulatedStats(device_.index());
  }
  // What the device has free, plus what the caching allocator holds and no tensor uses.
  int64_t AvailableMemory() const override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    const MemoryStats m = Memory();
    return static_cast<int64_t>(free) + std::max<int64_t>(m.reserved_bytes - m.allocated_bytes, 0);
  }

  at::Generator MakeGenerator(uint64_t seed) const override {
    at::Generator g = at::cuda::detail::createCUDAGenerator(device_.index());
    g.set_current_seed(seed);
    return g;
  }

  Result<c10::intrusive_ptr<c10d::Backend>> CreateCollectiveBackend(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
      std::chrono::milliseconds timeout, const std::string& /*rendezvous_host*/) override {
    return CreateNcclBackend(store, rank, size, timeout);
  }
  const char* collective_backend() const override { return "nccl"; }

  void StartSampling() override {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_.index()) != cudaSuccess) return;
    sampler_ = NvmlSampler::Start(bus, kSamplePeriod);
  }
  DeviceMetrics StopSampling() override {
    if (!sampler_) return {.source = "NVML not sampled: the device's PCI bus id is unknown"};
    DeviceMetrics m = sampler_->Stop();
    sampler_.reset();
    return m;
  }

 private:
  c10::Device device_;
  c10::cuda::CUDAGuard guard_;  // the replay's device is current while the executor lives
  std::vector<c10::cuda::CUDAStream> streams_;
  std::vector<at::cuda::CUDAEvent> events_;
  bool per_op_ = false;
  std::vector<at::cuda::CUDAEvent> op_start_, op_end_;
  std::vector<char> ran_;  // per timed slot: 1 + the lane it ran on this iteration, 0 if it did not
  std::vector<WorkTime> times_;
  at::cuda::CUDAEvent start_;
  std::unique_ptr<NvmlSampler> sampler_;
};

Status CheckDevice(const c10::Device& device) {
  int count = 0;
  MIMIC_CUDA_CHECK(cudaGetDeviceCount(&count));
  const int index = device.has_index() ? device.index() : 0;
  if (index >= count)
    return Status::Unsupported("--device " + device.str() + ": this machine has " +
                               std::to_string(count) + " CUDA device(s)");
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Executor>> CreateCudaExecutor(const c10::Device& device) {
  if (Status st = CheckDevice(device); !st.ok())
    return Status::Unsupported("--device " + device.str() + ": no CUDA device: " + st.message());
  return std::unique_ptr<Executor>(new CudaExecutor(device.has_index() ? device.index() : 0));
}

std::vector<DeviceInfo> ListCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return {};
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(i);
    out.push_back({"cuda:" + std::to_string(i),
                   std::string(p->name) + ", sm_" + std::to_string(p->major) +
                       std::to_string(p->minor) + ", " + std::to_string(p->multiProcessorCount) +
                       " SMs",
                   static_cast<int64_t>(p->totalGlobalMem)});
  }
  return out;
}

}  // namespace mimic::replay

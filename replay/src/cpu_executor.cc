// The CPU executor: one lane runs on the thread that drives the replay; with several, each lane
// runs on a thread of its own while the driving thread only submits, so that a plan with
// several streams runs, orders and overlaps its work on the CPU as a GPU would. Events are counters
// that a lane bumps once per iteration; tensor memory is counted by an allocator that wraps
// LibTorch's CPU allocation.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "backends.h"
#include "executors.h"
#include "mimic/base/host.h"

namespace mimic::replay {
namespace {

using Clock = std::chrono::steady_clock;

// LibTorch's CPU allocation (c10::alloc_cpu: aligned, from the C library's heap), counted.
// Installed once per process, the first time a CPU executor is created, and never removed:
// tensors allocated through it may outlive any replay. The data pointer is its own context, as
// c10::Allocator::raw_allocate requires; sizes come back from malloc_usable_size.
class CountingAllocator final : public c10::Allocator {
 public:
  static CountingAllocator& Installed() {
    static CountingAllocator* allocator = [] {
      auto* a = new CountingAllocator();
      c10::SetCPUAllocator(a, /*priority=*/100);
      return a;
    }();
    return *allocator;
  }

  c10::DataPtr allocate(size_t n) override {
    void* data = c10::alloc_cpu(n);
    const int64_t bytes = data == nullptr ? 0 : static_cast<int64_t>(malloc_usable_size(data));
    Add(bytes);
    Report(data, bytes);
    return {data, data, &Free, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  MemoryStats Stats() const { return {live_.load(), peak_.load(), -1, allocations_.load()}; }
  void ResetPeak() {
    peak_.store(live_.load());
    allocations_.store(0);
  }

 private:
  static void Free(void* data) {
    if (data == nullptr) return;
    const int64_t bytes = static_cast<int64_t>(malloc_usable_size(data));
    Installed().live_.fetch_sub(bytes);
    Installed().Report(data, -bytes);
    c10::free_cpu(data);
  }
  // Under a profiler recording memory (replay --profile), each allocation and free is a
  // [memory] event, as LibTorch's own CPU allocator reports them in the original's trace.
  void Report(void* data, int64_t bytes) const {
    if (data != nullptr && c10::memoryProfilingEnabled())
      c10::reportMemoryUsageToProfiler(data, bytes, static_cast<size_t>(live_.load()), 0,
                                       c10::Device(c10::kCPU));
  }
  void Add(int64_t bytes) {
    const int64_t now = live_.fetch_add(bytes) + bytes;
    allocations_.fetch_add(1, std::memory_order_relaxed);
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }

  std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0};
};

// One submission to a lane of its own thread.
struct Item {
  std::vector<int32_t> waits;
  Work work;
  int32_t done;
  int32_t timed;
};

class CpuExecutor final : public Executor {
 public:
  CpuExecutor() : allocator_(CountingAllocator::Installed()) {}
  ~CpuExecutor() override { StopLanes(); }

  const char* type() const override { return "cpu"; }
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  std::string Describe() const override {
    return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  }

  Status Configure(int lanes, int events, int timed, bool /*per_op_device_time*/) override {
    StopLanes();
    events_ = std::vector<std::atomic<int64_t>>(std::max(events, 0));
    times_.assign(std::max(timed, 0), WorkTime{});
    lanes_.clear();
    for (int k = 0; k < std::max(lanes, 1); ++k) lanes_.push_back(std::make_unique<Lane>());
    first_threaded_ = lanes_.size() == 1 ? 1 : 0;
    const int threads = at::get_num_threads();
    for (size_t k = first_threaded_; k < lanes_.size(); ++k)
      lanes_[k]->thread =
          std::thread([this, k, threads] { LaneLoop(*lanes_[k], static_cast<int>(k), threads); });
    return Status::Ok();
  }

  void BeginIteration() override {
    ++iteration_;
    // The lanes run with the driving thread's LibTorch state (grad mode, the profiler's
    // callbacks), as LibTorch's own worker threads do.
    tls_ = at::ThreadLocalState();
    for (WorkTime& t : times_) t.start_ms = -1;
    t0_ = Clock::now();
  }

  void Submit(int lane, std::span<const int32_t> waits, const Work& work, int32_t done,
              int32_t timed) override {
    if (lane < static_cast<int>(first_threaded_))
      return Run(waits, work, done, timed, std::max(lane, 0));
    Lane& l = *lanes_[lane];
    {
      std::lock_guard<std::mutex> lock(l.mu);
      l.queue.push_back({{waits.begin(), waits.end()}, work, done, timed});
      ++l.submitted;
    }
    l.wake.notify_one();
  }

  double EndIteration() override {
    Synchronize();
    return MsSince(t0_);
  }

  // CPU kernels finish before the dispatcher returns: only the lanes' threads can be behind.
  void Synchronize() override {
    for (size_t k = first_threaded_; k < lanes_.size(); ++k) {
      Lane& l = *lanes_[k];
      std::unique_lock<std::mutex> lock(l.mu);
      l.idle.wait(lock, [&l] { return l.completed == l.submitted; });
    }
  }

  const std::vector<WorkTime>& work_times() const override { return times_; }
  bool TimesWorkOnHost() const override { return true; }
  int HostThreadOf(int lane) const override {
    return lane < static_cast<int>(first_threaded_) ? 0 : lane + 1;
  }

  MemoryStats Memory() const override { return allocator_.Stats(); }
  void ResetPeakMemory() override { allocator_.ResetPeak(); }
  int64_t AvailableMemory() const override { return AvailableHostMemory(); }

  at::Generator MakeGenerator(uint64_t seed) const override {
    return at::make_generator<at::CPUGeneratorImpl>(seed);
  }

  Result<c10::intrusive_ptr<c10d::Backend>> CreateCollectiveBackend(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
      std::chrono::milliseconds timeout, const std::string& rendezvous_host) override {
    return CreateGlooBackend(store, rank, size, timeout, rendezvous_host);
  }
  const char* collective_backend() const override { return "gloo"; }

 private:
  struct Lane {
    std::thread thread;
    std::mutex mu;
    std::condition_variable wake, idle;
    std::deque<Item> queue;
    int64_t submitted = 0, completed = 0;
    bool stop = false;
  };

  double MsSince(Clock::time_point t) const {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  }

  void Run(std::span<const int32_t> waits, const Work& work, int32_t done, int32_t timed,
           int lane) {
    for (int32_t e : waits) {
      std::atomic<int64_t>& ev = events_[e];
      for (int64_t seen = ev.load(std::memory_order_acquire); seen < iteration_;
           seen = ev.load(std::memory_order_acquire))
        ev.wait(seen, std::memory_order_acquire);
    }
    const auto start = Clock::now();
    work.fn(work.ctx, work.step);
    if (timed >= 0) {
      const auto end = Clock::now();
      times_[timed] = {std::chrono::duration<double, std::milli>(start - t0_).count(),
                       std::chrono::duration<double, std::milli>(end - start).count(), lane};
    }
    if (done >= 0) {
      events_[done].store(iteration_, std::memory_order_release);
      events_[done].notify_all();
    }
  }

  // A new thread starts with OpenMP's and MKL's default thread count, not the one the replay
  // set on its driving thread: each lane takes the driver's, or two lanes would each run a pool
  // of all the host's cores.
  void LaneLoop(Lane& l, int lane, int threads) {
    at::set_num_threads(threads);
    std::unique_lock<std::mutex> lock(l.mu);
    while (true) {
      l.wake.wait(lock, [&l] { return l.stop || !l.queue.empty(); });
      if (l.queue.empty()) return;  // stopped
      Item item = std::move(l.queue.front());
      l.queue.pop_front();
      lock.unlock();
      {
        at::ThreadLocalStateGuard state(tls_);
        Run(item.waits, item.work, item.done, item.timed, lane);
      }
      lock.lock();
      if (++l.completed == l.submitted) l.idle.notify_all();
    }
  }

  void StopLanes() {
    for (auto& l : lanes_) {
      if (!l->thread.joinable()) continue;
      {
        std::lock_guard<std::mutex> lock(l->mu);
        l->stop = true;
      }
      l->wake.notify_one();
      l->thread.join();
    }
  }

  CountingAllocator& allocator_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  size_t first_threaded_ = 1;  // lanes below run on the driving thread
  std::vector<std::atomic<int64_t>> events_;
  std::vector<WorkTime> times_;
  int64_t iteration_ = 0;
  Clock::time_point t0_;
  at::ThreadLocalState tls_;
};

}  // namespace

Result<std::unique_ptr<Executor>> CreateCpuExecutor(const c10::Device& device) {
  if (device.has_index() && device.index() != 0)
    return Status::Unsupported("cpu:" + std::to_string(device.index()) +
                               ": the CPU is one device, cpu (or cpu:0)");
  return std::unique_ptr<Executor>(new CpuExecutor());
}

std::vector<DeviceInfo> ListCpuDevices() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return {{"cpu",
           CpuModel() + " (" + std::to_string(at::get_num_threads()) + " intra-op threads, " +
               std::to_string(std::thread::hardware_concurrency()) + " logical CPUs)",
           pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0}};
}

}  // namespace mimic::replay

// Where a replay runs: one interface for every device type, one implementation per type,
// chosen by name from a registry (ggml's backends). An executor owns what a replay needs of its
// device: the lanes (streams) ops run on and the events that order them across lanes, the
// device's clock for per-op and per-iteration timing, its allocator's statistics, the random
// generator tensor contents come from, and the collective backend of a process group. The
// replay's plan, tensors and bookkeeping are the same on every device.
//
// Thread-safety: one thread drives an executor (Configure, BeginIteration, Submit,
// EndIteration). The work it submits may run on threads of the executor's own (with several
// lanes the CPU runs each on a thread of its own); everything else is not thread-safe.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/replay/device_info.h"

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace mimic::replay {

// The lane of work that must run on the driving thread itself (communication: its backend is
// driven from there), ordered with the other lanes by events like any lane.
inline constexpr int kHostLane = -1;

// Work for a lane: fn(ctx, step). A function pointer and its context, so that submitting an op
// allocates nothing.
struct Work {
  void (*fn)(void* ctx, int32_t step) = nullptr;
  void* ctx = nullptr;
  int32_t step = 0;
};

// When a timed piece of work ran, on the executor's clock, from the start of the iteration.
struct WorkTime {
  double start_ms = -1;  // -1: it did not run (or was not timed) this iteration
  double duration_ms = 0;
  int32_t lane = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;

  virtual const char* type() const = 0;      // the registry name: "cpu", "cuda"
  virtual c10::Device device() const = 0;    // recorded devices are remapped to it
  virtual std::string Describe() const = 0;  // "cpu (2 threads)", "cuda:0 (NVIDIA H100 ...)"

  // Sets up `lanes` lanes (lane 0 runs work that has no stream of its own; kHostLane runs on
  // the driving thread, and on a GPU issues on lane 0's stream), `events` events
  // and `timed` timing slots. With `per_op_device_time`, timed work is timed on the device
  // itself (CUDA events around it; without it, only iterations are). REQUIRES: before the
  // first BeginIteration. Errors: Internal when the device refuses (no streams left, say).
  virtual Status Configure(int lanes, int events, int timed, bool per_op_device_time) = 0;

  // Starts an iteration: events and work times of the previous one are forgotten.
  virtual void BeginIteration() = 0;
  // Runs `work` on `lane` once every event in `waits` has been recorded this iteration, then
  // records event `done` (-1: none), timing it into slot `timed` (-1: untimed). Work on one
  // lane runs in submission order; `work` must not throw.
  virtual void Submit(int lane, std::span<const int32_t> waits, const Work& work, int32_t done,
                      int32_t timed) = 0;
  // Waits until every lane has run everything submitted; returns the iteration's time in
  // milliseconds on the device's clock, from BeginIteration.
  virtual double EndIteration() = 0;
  // Waits until the device has finished everything issued so far, on every lane and stream
  // (the collective backend's included), without ending the iteration.
  virtual void Synchronize() = 0;
  // The work times of the last ended iteration, by timing slot.
  virtual const std::vector<WorkTime>& work_times() const = 0;
  // The host thread that runs `lane`'s work (kHostLane included): 0 is the driving thread,
  // others count from 1. A GPU issues every lane from the driving thread.
  virtual int HostThreadOf(int lane) const { return (void)lane, 0; }
  // Whether work_times() are on the host's clock (CPU), not the device's (CUDA events).
  virtual bool TimesWorkOnHost() const { return false; }

  virtual MemoryStats Memory() const = 0;
  virtual void ResetPeakMemory() = 0;
  // Bytes a replay may still allocate on the device (CPU: the memory the kernel says is
  // available to this process, cgroup limits included).
  virtual int64_t AvailableMemory() const = 0;

  // The generator random tensor contents are drawn from, seeded.
  virtual at::Generator MakeGenerator(uint64_t seed) const = 0;

  // The collective backend of one process group (Gloo on the CPU, NCCL on CUDA) on `store`;
  // `rendezvous_host` is where the job met (a loopback address keeps a CPU job's traffic on
  // this host). Errors: Internal with the backend's message.
  virtual Result<c10::intrusive_ptr<c10d::Backend>> CreateCollectiveBackend(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
      std::chrono::milliseconds timeout, const std::string& rendezvous_host) = 0;
  virtual const char* collective_backend() const = 0;  // "gloo", "nccl"

  // Starts sampling the device's own metrics until StopSampling (no-op where the device has
  // none to sample; DeviceMetrics::source then says why).
  virtual void StartSampling() {}
  virtual DeviceMetrics StopSampling() { return {.source = "none on this device"}; }
};

// One executor type of the registry.
struct ExecutorType {
  const char* name;  // "cpu", "cuda"
  // Creates the executor for `device` (of this type). Errors: Unsupported when the device is
  // not present (no GPU, an index past the last one).
  Result<std::unique_ptr<Executor>> (*create)(const c10::Device& device);
  // The devices of this type present on this machine; empty when none.
  std::vector<DeviceInfo> (*list)();
};

// The executor types compiled into this Mimic, in order of preference (best last).
const std::vector<ExecutorType>& ExecutorTypes();

// Creates the executor for `name` ("cpu", "cuda", "cuda:N"). Errors: InvalidInput for a name
// that is not a device, Unsupported for a device type this build lacks or a device this
// machine does not have.
Result<std::unique_ptr<Executor>> CreateExecutor(const std::string& name);

}  // namespace mimic::replay

// `mimic calibrate`: measures a platform (proto/platform.proto) on the local device through
// LibTorch: GEMM and convolution sweeps, memory-bound kernels by size, the dispatcher's
// per-op overhead, the replay's own cost per op and the capture's cost per event boundary
// (replay/overheads.h), the host time before an op by what issued it on given captures
// (model/host_gaps.h). Medians of repeated trials, for shared and noisy machines. Not
// reentrant (sets LibTorch's global thread count).
#pragma once

#include <functional>
#include <string>

#include "mimic/base/status.h"
#include "mimic/model/host_gaps.h"
#include "mimic/model/shapes.h"
#include "proto/platform.pb.h"

namespace mimic::calibrate {

struct CalibrateOptions {
  std::string device = "cpu";  // "cpu", or "cuda"/"cuda:N" in a LibTorch with CUDA
  std::string name;            // the platform's name; default "cpu_host" or "local_cuda"
  std::string base;            // start from this platform (its datasheet figures and sources)
  int threads = 0;             // intra-op threads; 0 keeps LibTorch's default
  int trials = 5;              // timed trials per point; the median is kept
  double min_trial_ms = 2.0;   // each trial repeats the call until it lasts this long
  bool quick = false;          // a smaller sweep (tests)
  // How the trials of one point combine: "median", or "min" (interference from other work on
  // a shared machine only ever adds time; the minimum estimates the uncontended cost).
  std::string statistic = "median";
  // Shapes to measure besides the grid: the GEMMs and convolutions of workloads the platform
  // will predict (model::ShapesOf), so that their efficiencies are measured, not interpolated.
  std::vector<model::WorkloadShapes> workloads;
  // One sweep alone into a copy of `base`, every other figure of the base kept: "index" (the
  // index/scatter ops, index_ops) or "conv_transpose" (conv_efficiency's transposed_* passes).
  // "" runs everything.
  std::string only;
  // Kineto-linked captures to measure the per-issuer host time (T1) on: cpu_overheads'
  // t1_<issuer>_us (model::MeasureIssuerT1, with the capture cost measured here). Not owned.
  std::vector<model::GapCapture> captures;
};

// Called with one line per measured group ("gemm 80 points", ...).
using LogFn = std::function<void(const std::string&)>;

// Measures the platform. Errors: InvalidInput for a device name LibTorch does not know,
// Unsupported for a device this build or machine does not have.
Result<proto::Platform> Calibrate(const CalibrateOptions& options, const LogFn& log = nullptr);

// How this host runs a calibrated platform's GEMM points now against when they were measured:
// on a shared machine the same CPU runs slower or faster from one hour to the next, and a
// prediction prices the host as it was at calibration.
struct HostSpeed {
  int points = 0;    // GEMM points re-timed (fp32, one matrix each, 50 us-5 ms when measured)
  double ratio = 0;  // median over the points of now / then (above 1: slower now)
  std::string how;   // how each was timed, as calibrate timed it
};

// Re-times up to four of `platform`'s measured fp32 GEMM points on `device` as calibrate timed
// them (its statistic over its round-robin trials; into preallocated outputs, so that the
// process's heap settings do not matter). `points` is 0 where the platform measured none.
Result<HostSpeed> RetimeGemmPoints(const proto::Platform& platform, const std::string& device);

}  // namespace mimic::calibrate

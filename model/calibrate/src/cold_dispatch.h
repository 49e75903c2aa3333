// What a dispatcher call costs on the CPU once its code went cold: the platform's
// cpu_overheads.in_turn and after_traffic (proto/platform.proto), for ops that compute and for
// views. Internal to mimic::calibrate.
#pragma once

#include <functional>
#include <string>

#include "proto/platform.pb.h"

namespace mimic::calibrate {

// Measures, on one-element tensors of ATen ops that take one or two tensors (their order
// shuffled with a fixed seed), each call's time beyond the same call right after it:
// - in_turn(_views): with K distinct ops called in turn, so K - 1 others ran since its last call;
// - after_traffic(_views): after a copy that reads and writes that many bytes in all.
// Each figure is the mean over the ops of their median over `rounds` rounds. Replaces those
// fields of `c`; returns how they were measured, for the platform's sources. Runs on the CPU
// with LibTorch's current thread count.
std::string MeasureColdDispatch(int rounds, proto::CpuOverheads& c,
                                const std::function<void(const std::string&)>& log);

}  // namespace mimic::calibrate

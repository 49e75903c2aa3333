#!/usr/bin/env python3
"""The execution-trace observer's cost per call when Python issues the op, beside the same call
from C++: the Python half of `mimic_capture_callback_order_bench`. Two RecordFunction callbacks,
built here as a small C++ extension (torch.utils.cpp_extension.load_inline, about a minute the
first time), bracket the capture's: A added before the observer and Kineto start, B after. Per
top-level call, medians over the calls: the callbacks between A and B on entry (the observer
recording the inputs, which lies in the recorded gap) and on exit (writing the node, inside the
op's span), and the time outside all callbacks (the host's own time between two calls and the
rest of Kineto's). With --cxx BIN the C++ bench runs between rounds, so that both meet the same
speed of this VM (whose modes differ by up to 2x between minutes, docs/benchmarks.md §2).

Usage: OMP_NUM_THREADS=1 python3 bench/capture_callback_order.py [--rounds 3]
           [--cxx build/default/bench/mimic_capture_callback_order_bench]"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import capture_fleet_samples  # noqa: E402,F401  (sets the observer's environment first)
import torch  # noqa: E402
from torch import profiler  # noqa: E402
from torch.utils.cpp_extension import load_inline  # noqa: E402

BRACKET = r"""
#include <torch/extension.h>
#include <ATen/record_function.h>
#include <c10/util/ApproximateClock.h>
#include <algorithm>

namespace {
struct Stamps { int64_t a_enter = 0, b_enter = 0, a_exit = 0, b_exit = 0; };
std::vector<Stamps> calls;
bool recording = false;
thread_local int depth_a = 0, depth_b = 0;
at::CallbackHandle a = 0, b = 0;

std::unique_ptr<at::ObserverContext> AEnter(const at::RecordFunction&) {
  if (recording && depth_a++ == 0) calls.push_back({c10::getTime(), 0, 0, 0});
  return nullptr;
}
void AExit(const at::RecordFunction&, at::ObserverContext*) {
  if (recording && --depth_a == 0) calls.back().a_exit = c10::getTime();
}
std::unique_ptr<at::ObserverContext> BEnter(const at::RecordFunction&) {
  if (recording && depth_b++ == 0) calls.back().b_enter = c10::getTime();
  return nullptr;
}
void BExit(const at::RecordFunction&, at::ObserverContext*) {
  if (recording && --depth_b == 0) calls.back().b_exit = c10::getTime();
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

void add_a() { a = at::addGlobalCallback(at::RecordFunctionCallback(AEnter, AExit)); }
void add_b() {
  b = at::addGlobalCallback(at::RecordFunctionCallback(BEnter, BExit));
  calls.clear();
  recording = true;
}
// The medians (us): A -> B on entry, A -> B on exit, outside all callbacks; and the calls seen.
std::vector<double> stop() {
  recording = false;
  at::removeCallback(a);
  at::removeCallback(b);
  std::vector<double> enter, exit, outside;
  for (size_t i = 1; i < calls.size(); ++i) {
    enter.push_back((calls[i].b_enter - calls[i].a_enter) / 1e3);
    exit.push_back((calls[i].b_exit - calls[i].a_exit) / 1e3);
    outside.push_back((calls[i].a_enter - calls[i - 1].b_exit) / 1e3);
  }
  return {Median(enter), Median(exit), Median(outside), static_cast<double>(calls.size())};
}
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cxx", help="mimic_capture_callback_order_bench, run between rounds")
    args = p.parse_args()
    ext = load_inline("mimic_bracket", cpp_sources=BRACKET, functions=["add_a", "add_b", "stop"])
    mat = torch.ones(128, 128)
    kinds = [("float (calls nothing)", torch.ones(())),
             ("double (converted first)", torch.ones((), dtype=torch.float64)),
             ("long (converted first, ranged)", torch.ones((), dtype=torch.int64))]
    tmp = tempfile.mkdtemp()
    for r in range(1, args.rounds + 1):
        print(f"\nround {r}, from Python\n\n| p.add_(0-dim tensor) | A -> B on entry us | A -> B on exit us "
              "| outside all callbacks us |\n|---|---:|---:|---:|")
        for name, other in kinds:
            for _ in range(500):
                mat.add_(other)
            ext.add_a()
            observer = profiler.ExecutionTraceObserver().register_callback(os.path.join(tmp, "et.json"))
            with profiler.profile(activities=[profiler.ProfilerActivity.CPU], record_shapes=True,
                                  profile_memory=True, execution_trace_observer=observer):
                ext.add_b()
                for _ in range(3000):
                    mat.add_(other)
                enter, exit_, outside, _ = ext.stop()
            print(f"| {name} | {enter:.2f} | {exit_:.2f} | {outside:.2f} |", flush=True)
        if args.cxx:
            print(f"\nround {r}, from C++\n", flush=True)
            subprocess.run([args.cxx], check=True, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()

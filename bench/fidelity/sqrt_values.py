#!/usr/bin/env python3
"""Why an optimizer's sqrt replays at another speed than it ran: the time of torch.sqrt on the
CPU depends on the values. This times it on one [10000, 32] float tensor filled four ways (the
replay's fill, uniform in [0, 1/sqrt(32)); all zeros; denormals; normals with whole rows of zeros
in the share a state has), and on the state itself: Adam's exp_avg_sq of the zoo's wide_deep
embedding after 30 steps, whose rows that no batch looked up are still the zeros Adam started
them at. Medians of five rounds of 100 calls, alternated.

With --ops, it times instead each operator of eg::TimeDependsOnValues' table (eg/src/op_class.cc)
on the same tensor filled uniformly in [1e-3, 1e-3 + 1/sqrt(32)), with zeros and with
subnormals, and its ratio to the uniform fill: the table holds the operators at 1.7x or more.

Usage: OMP_NUM_THREADS=2 python3 bench/fidelity/sqrt_values.py [--ops]"""
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
sys.path.insert(0, os.path.dirname(__file__))
import capture_fleet_samples as cfs  # noqa: E402
import torch  # noqa: E402
import zoo  # noqa: E402


def wide_deep_state() -> torch.Tensor:
    """Adam's exp_avg_sq of wide_deep's embedding table after 30 training steps."""
    torch.manual_seed(cfs.SEED)
    w = zoo.ZOO["wide_deep"]()
    for _ in range(30):
        w.step()
    adam = next(o for o in gc.get_objects() if isinstance(o, torch.optim.Adam))  # the model's own
    return next(s["exp_avg_sq"] for p, s in adam.state.items() if p.shape == (10000, 32)).clone()


def us_per_call(x: torch.Tensor, calls: int = 100, op=torch.sqrt) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        op(x)
    return (time.perf_counter() - start) / calls * 1e6


# eg::TimeDependsOnValues' operators (their in-place forms run the same kernels), each on the
# tensor whose values vary; `other` is a uniform tensor of the same shape.
OTHER = torch.rand(10000, 32) + 0.5
OPS = {
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "pow (0.5)": lambda x: torch.pow(x, 0.5),
    "log": torch.log, "exp": torch.exp, "div (x / other)": lambda x: torch.div(x, OTHER),
    "div (other / x)": lambda x: torch.div(OTHER, x),
    "addcdiv (other / x)": lambda x: torch.addcdiv(OTHER, OTHER, x, value=0.1),
    "reciprocal": torch.reciprocal,
    "_foreach_sqrt (4 tensors)": lambda x: torch._foreach_sqrt([x] * 4),
    "_foreach_rsqrt (4 tensors)": lambda x: torch._foreach_rsqrt([x] * 4),
    "_foreach_reciprocal (4 tensors)": lambda x: torch._foreach_reciprocal([x] * 4),
}


def ops_table() -> None:
    """Each operator's time on a uniform fill, on zeros and on subnormals, and the ratios."""
    uniform = torch.rand(10000, 32) / 32 ** 0.5 + 1e-3
    fills = {"uniform": uniform, "zeros": torch.zeros_like(uniform),
             "subnormals (1e-40)": torch.full_like(uniform, 1e-40)}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, [10000, 32] float32")
    print("| op | " + " | ".join(f"us, {f}" for f in fills) + " | zeros / uniform | subnormals / uniform |")
    print("|---|" + "---:|" * (len(fills) + 2))
    for name, op in OPS.items():
        for x in fills.values():  # warm up
            us_per_call(x, 10, op)
        times = {f: [] for f in fills}
        for _ in range(5):
            for f, x in fills.items():
                times[f].append(us_per_call(x, 50, op))
        med = {f: statistics.median(t) for f, t in times.items()}
        cells = " | ".join(f"{m:.0f}" for m in med.values())
        print(f"| {name} | {cells} | {med['zeros'] / med['uniform']:.1f} | "
              f"{med['subnormals (1e-40)'] / med['uniform']:.1f} |")


def main() -> None:
    if "--ops" in sys.argv[1:]:
        ops_table()
        return
    state = wide_deep_state()
    zero_rows = (state == 0).all(dim=1)
    fills = {
        "the replay's fill: uniform [0, 1/sqrt(32))": torch.rand(10000, 32) / 32 ** 0.5,
        "zeros": torch.zeros(10000, 32),
        "denormals (1e-40)": torch.full((10000, 32), 1e-40),
        f"uniform with {zero_rows.float().mean().item():.0%} of rows zero":
            torch.where(zero_rows[:, None], 0.0, torch.rand(10000, 32) / 32 ** 0.5),
        "wide_deep's exp_avg_sq after 30 steps": state,
    }
    for x in fills.values():  # warm up
        us_per_call(x, 10)
    times = {name: [] for name in fills}
    for _ in range(5):
        for name, x in fills.items():
            times[name].append(us_per_call(x))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| values | us per sqrt |\n|---|---:|")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.0f} |")


if __name__ == "__main__":
    main()

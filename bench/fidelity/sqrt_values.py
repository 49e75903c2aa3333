#!/usr/bin/env python3
"""Why an optimizer's sqrt replays at another speed than it ran: the time of torch.sqrt on the
CPU depends on the values. This times it on one [10000, 32] float tensor filled four ways (the
replay's fill, uniform in [0, 1/sqrt(32)); all zeros; denormals; normals with whole rows of zeros
in the share a state has), and on the state itself: Adam's exp_avg_sq of the zoo's wide_deep
embedding after 30 steps, whose rows that no batch looked up are still the zeros Adam started
them at. Medians of five rounds of 100 calls, alternated.

Usage: OMP_NUM_THREADS=2 python3 bench/fidelity/sqrt_values.py"""
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


def us_per_call(x: torch.Tensor, calls: int = 100) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        x.sqrt()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
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

"""Benchmark of the design checks an architect runs on big designs: ``validate``,
``info`` and ``bom``.

Run ``python benchmarks/design_checks.py`` (about half a minute). It builds the
4,096-GPU DGX B200 SuperPOD (16 SU) and the 16,384-GPU one (64 SU) with every spine
failed, then prints each check's best of three wall-clock times with its goal beside it:

- validate, 4,096 GPUs (management plane on): <= 2.0 s
- info (counts, NVLink domains, oversubscription, bisection), 4,096 GPUs: <= 3.0 s
- bom (rows, text and CSV), 4,096 GPUs: <= 1.0 s
- validate, 16,384 GPUs with every spine failed (the reachability rules at work): <= 10 s

The tests check what these return; the times are measured here, not in the tests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from designer.memory import tune_process
from designer.model.bom import bom, format_bom, to_csv
from designer.model.report import info
from designer.model.rules import validate
from designer.model.templates import build_template

GOALS_S = {"validate 4,096": 2.0, "info 4,096": 3.0, "bom 4,096": 1.0,
           "validate 16,384, spines failed": 10.0}


def best_of(fn: Callable[[], object], runs: int = 3) -> float:
    """The shortest of ``runs`` wall-clock times of ``fn()``, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    tune_process()  # numpy and the allocator as the app sets them
    pod = build_template("superpod", gpu="B200", sus=16, management=True)
    plain = build_template("superpod", gpu="B200", sus=16)
    big = build_template("superpod", gpu="B200", sus=64)
    for spine in [n.id for n in big.nodes("spine")]:
        big.update_node(spine, failed=True)

    def bom_all():
        b = bom(plain)
        return format_bom(b), to_csv(b)

    figures = {
        "validate 4,096": best_of(lambda: validate(pod)),
        "info 4,096": best_of(lambda: info(plain)),
        "bom 4,096": best_of(bom_all),
        "validate 16,384, spines failed": best_of(lambda: validate(big), runs=1),
    }
    print(f"{'check':34s} {'time':>9s} {'goal':>8s}")
    missed = 0
    for name, seconds in figures.items():
        goal = GOALS_S[name]
        mark = "met" if seconds <= goal else "MISSED"
        missed += seconds > goal
        print(f"{name:34s} {seconds:8.2f}s {goal:7.1f}s  {mark}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

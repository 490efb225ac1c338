"""``fabric-designer simulate``: every job of a design (and of workload files) at once.

``simulate FILE [--workload W.workload.toml]... [--iterations N] [--routing MODE]
[--json]`` places the design's own jobs, then each workload file's jobs on GPUs no
earlier job holds, builds one iteration of each (`designer.workload.traffic`), and runs
them together on the fabric, each also alone (`designer.workload.simulate`): per job the
iteration time shared and alone, the slowdown, where the time went and the memory fit;
the busiest links with who crossed them.  A bad workload or a job the fabric cannot run
is one line on stderr and exit 1.

`designer.cli` builds the parser (`add_simulate_parser`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time

from designer.cli_base import load_design as _load
from designer.model.errors import DesignError

log = logging.getLogger("designer.cli")

ROUTINGS = ("ecmp", "adaptive", "static")


def add_simulate_parser(sub) -> None:
    """Add ``simulate`` to the subparsers ``sub``."""
    s = sub.add_parser(
        "simulate",
        help="run every job of the design (and of workload "
        "files) at once on the fabric: iteration times "
        "shared and alone, slowdown, busiest links",
    )
    s.add_argument("file", help="the design (.fabric.json)")
    s.add_argument(
        "--workload",
        action="append",
        metavar="W.workload.toml",
        help="add the jobs of a workload file (repeatable), placed after the "
        "design's own jobs on GPUs no other job holds",
    )
    s.add_argument(
        "--iterations",
        type=int,
        default=1,
        metavar="N",
        help="iterations run back to back; times are per iteration",
    )
    s.add_argument("--routing", choices=ROUTINGS, help="routing to use instead of the design's own")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_simulate)


def repeated(traffic, n: int):
    """``traffic``'s iteration ``n`` times back to back: iteration ``k + 1`` starts when
    every task of iteration ``k`` has ended (ids offset by the largest id + 1)."""
    from designer.workload.tasks import JobTraffic

    if n == 1:
        return traffic
    step = max(t.id for t in traffic.tasks) + 1
    ends = tuple(t.id for t in traffic.tasks)
    tasks = []
    for k in range(n):
        for t in traffic.tasks:
            deps = tuple(d + k * step for d in t.deps)
            if k and not t.deps:
                deps = tuple(e + (k - 1) * step for e in ends)
            tasks.append(dataclasses.replace(t, id=t.id + k * step, deps=deps))
    return JobTraffic(traffic.job, tuple(tasks))


def cmd_simulate(args: argparse.Namespace) -> int:
    from designer.solver import SolverError, take_snapshot
    from designer.workload.files import design_jobs, read_workload
    from designer.workload.memory import memory_fit
    from designer.workload.placement import place
    from designer.workload.simulate import simulate
    from designer.workload.traffic import gpu_memory_gb, iteration_traffic, job_speeds

    if args.iterations < 1:
        raise DesignError(f"--iterations must be at least 1, got {args.iterations}")
    t0 = time.perf_counter()
    topo = _load(args.file)
    try:
        jobs = design_jobs(topo, args.file)
        for path in args.workload or ():
            jobs += read_workload(path)
    except ValueError as exc:
        raise DesignError(str(exc)) from None
    if not jobs:
        raise DesignError(f"{args.file}: no jobs to simulate (add one with --workload)")
    if args.routing:
        topo.set_setting("routing", args.routing)
    snap = take_snapshot(topo)
    taken: dict[str, str] = {}
    traffics, fits = [], []
    try:
        names: set[str] = set()
        for job in jobs:
            if job.name in names:
                raise ValueError(f"two jobs are named {job.name!r}")
            names.add(job.name)
            placement = place(job, snap, taken)
            taken.update(dict.fromkeys(placement.gpus, job.name))
            fits.append(memory_fit(job, gpu_memory_gb(snap, placement)))
            traffic = iteration_traffic(job, placement, *job_speeds(job, snap, placement))
            traffics.append(repeated(traffic, args.iterations))
        t_built = time.perf_counter()
        res = simulate(snap, traffics)
    except (ValueError, SolverError) as exc:
        raise DesignError(f"{args.file}: {exc}") from None
    n = args.iterations
    per = lambda x: None if x is None else x / n  # noqa: E731
    res = dataclasses.replace(
        res,
        jobs=tuple(
            dataclasses.replace(
                j,
                iteration_s=j.iteration_s / n,
                alone_s=per(j.alone_s),
                breakdown={k: v / n for k, v in j.breakdown.items()},
                stages=tuple(
                    {k: v / n if isinstance(v, float) else v for k, v in st.items()}
                    for st in j.stages
                ),
                memory_gb_per_gpu=fit.total_GB,
                fits=fit.fits,
            )
            for j, fit in zip(res.jobs, fits, strict=True)
        ),
    )
    timing = {"load": (t_built - t0) * 1e3} | res.timing_ms
    log.info(
        "simulated %d job(s) on %s: %s",
        len(jobs),
        args.file,
        ", ".join(f"{k} {v:.0f} ms" for k, v in timing.items()),
    )
    if args.json:
        out = res.to_json() | {
            "timing_ms": {k: round(v, 2) for k, v in timing.items()},
            "iterations": n,
        }
        print(json.dumps(out, indent=1))
        return 0
    _print(res, n, timing)
    return 0


def _seconds(x: float) -> str:
    """A time as an architect reads it: seconds, or milliseconds below one second."""
    return f"{x:.4f} s" if x >= 1 else f"{x * 1e3:.3f} ms"


def _print(res, n: int, timing: dict) -> None:
    print(f"{len(res.jobs)} job(s), {n} iteration(s) each; times per iteration")
    print(
        f"{'job':<20} {'GPUs':>6} {'shared':>10} {'alone':>10} {'slowdown':>9} "
        f"{'memory/GPU':>11} {'bubble':>10}  exposed communication"
    )
    for j in res.jobs:
        alone = "" if j.alone_s is None else _seconds(j.alone_s)
        slow = "" if j.slowdown is None else f"{j.slowdown:9.3f}"
        mem = f"{j.memory_gb_per_gpu:7.1f} GB" + ("" if j.fits else "!")
        lanes = ", ".join(
            f"{k} {v * 1e3:.1f} ms"
            for k, v in j.breakdown.items()
            if v > 0 and k not in ("compute", "exposed_comm", "bubble")
        )
        print(
            f"{j.name:<20} {j.gpus:>6} {_seconds(j.iteration_s):>10} {alone:>10} {slow:>9} "
            f"{mem:>11} {_seconds(j.breakdown.get('bubble', 0.0)):>10}  {lanes or 'none'}"
        )
        if len(j.stages) > 1:
            for k, st in enumerate(j.stages):
                share = st["bubble"] / j.iteration_s if j.iteration_s > 0 else 0.0
                print(
                    f"  stage {k:<3} {st['gpus']:>5} GPUs from {st['first_gpu']}: "
                    f"compute {_seconds(st['compute'])}, bubble {_seconds(st['bubble'])} "
                    f"({share:.1%}), exposed communication {_seconds(st['exposed_comm'])}"
                )
    if any(j.fits is False for j in res.jobs):
        print("(!: does not fit in the GPUs' memory; see `workload check`)")
    rows = {row["id"]: row for row in res.links.to_json()}
    if res.busiest:
        print("busiest links (mean / peak utilisation, bytes, jobs):")
        for link, mean in res.busiest[:5]:
            row = rows[link]
            jobs = ", ".join(f"{k} {v:.0%}" for k, v in row["jobs"].items())
            print(
                f"  {mean * 100:5.1f}% / {row['peak_util'] * 100:5.1f}%  "
                f"{row['bytes'] / 1e9:9.2f} GB  {link}  ({jobs})"
            )
    print("timing (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in timing.items()))

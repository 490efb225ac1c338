"""Benchmark of the flow solver end to end: snapshot -> routes -> max-min rates -> time.

Run ``python benchmarks/solver.py`` (ten minutes or so, four of them building the
131,072-GPU design three times) or ``python benchmarks/solver.py --quick`` (a 2,048-GPU
ring instead of cases a and b); ``--case a`` runs one case, ``--processes 1`` each case
once.

Each case runs in fresh processes, three by default, since this VM's timings swing by
10-30 % from one process to the next: the table gives the medians over the processes,
and the details are those of the process with the median cold time (every process's
cold time is listed in brackets).  Each process sets numpy and the allocator as the app
does (`designer.memory.tune_process`: huge pages off, freed memory kept), first solves
the built-in example design, as the app does when it opens (so that lazy imports, such as the masked
arrays numpy loads on its first ``unique``, are not counted), and then builds its
design; build times are printed apart (building a topology, which also writes its solver
columns, is not part of the solver's budget), and the peak RSS is the case's own (``RSS
in``: once the design is built; ``peak``: its peak, the largest over the processes).
Two figures per case:

cold
    the design's first snapshot (from the columns the topology keeps, see
    `designer.model.columns`) plus a solve (routes from scratch, max-min rates, the
    NCCL time model); the solve is the median of a few runs where a run is cheap (3
    for case a, 1 for case b), and the details give the first run too: the later runs
    reuse the memory the earlier ones freed, as the app's re-solves do
    (`designer.memory.keep_freed_memory`).
    ``kernel``: the kernel's CPU time within it and the page faults it took (see
    `Kernel`).
edit
    snapshot plus solve after a one-link what-if edit, the GUI's path on every edit: the
    snapshot reuses what it derived from the design's columns that the edit left as it
    was (after a capacity edit, everything but the capacities), and the solve reuses
    the routes of the previous snapshot that the edit left valid (a `RouteMemo` carried
    from snapshot to snapshot, as the GUI does).  Two kinds of edit,
    reported apart: ``capacity`` (a leaf-spine bundle gains or loses a link: the splits
    through it change) and ``fail`` (a leaf-spine link fails, then is restored: arcs are
    renumbered and routes through it move).  Median of the rounds (best in the details).

Cases (issue 3, "Speed"):

a. ring all-reduce on a 16,384-GPU DGX B200 SuperPOD (rail-optimised fat tree, 64 SUs):
   snapshot + routes + rates + time.  Goal 50 ms.
b. the same at 131,072 GPUs (a rail-optimised Clos of 16,384 HGX B200 servers; RoCE on
   128-port switches, as a 64-port three-tier Clos tops out at 65,536 NICs).  Goal 0.5 s.
c. all-to-all among 1,024 GPUs (1,047,552 flows) on the 4-SU SuperPOD, adaptive routing
   (the design's setting) and ECMP.  Goal 1 s.
d. the same with unequal capacities: a random 30% of the bundles lose links, 2% of the
   leaf-spine bundles fail.  Goal 3 s.
e. busbw sweep, 20 sizes (32 KiB .. 16 GiB), all-reduce with automatic algorithm
   choice, on the 4-SU SuperPOD.  Goal 1 s.

"flows / pairs" are those of the largest phase solved (a ring is one flow per channel
crossing every arc of its ring), pairs counted as if every flow listed its whole route;
"stored" is what the solver holds when routes shared by many flows are kept once
(adaptive routing); "rounds" are the max-min solver's freezing steps.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from designer.memory import tune_process
from designer.model.templates import build_template
from designer.solver import SWEEP, RouteMemo, solve_collective, take_snapshot
from designer.solver import pipeline as timing


# ----------------------------------------------------------------- machine
def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, "
            f"numpy {np.__version__}, {platform.system()} {platform.release()}")


def rss_mb() -> float:
    """Current resident set size in MB (Linux), else the peak so far."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_mb()


def peak_mb() -> float:
    """Peak resident set size of this process in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes vs KiB


class Kernel:
    """This process's kernel (system) CPU time and minor page faults so far; two
    readings subtract to the span between them.

    Why: the kernel's share of a cold solve is mostly page faults on fresh memory, and
    on the VM this project is measured on their price depends on the host more than on
    the code (a fault cost 2 us in one process and 12 us in another), so each cold figure
    says how much of it was that.
    """

    def __init__(self, sys_s: float | None = None, faults: int | None = None):
        if sys_s is None or faults is None:
            ru = resource.getrusage(resource.RUSAGE_SELF)
            sys_s, faults = ru.ru_stime, ru.ru_minflt
        self.sys_s, self.faults = sys_s, faults

    def __sub__(self, other: Kernel) -> Kernel:
        return Kernel(self.sys_s - other.sys_s, self.faults - other.faults)

    def __add__(self, other: Kernel) -> Kernel:
        return Kernel(self.sys_s + other.sys_s, self.faults + other.faults)

    def text(self) -> str:
        return f"{self.sys_s * 1e3:.0f} ms, {self.faults:,} page faults"


# ----------------------------------------------------------------- solver counters
class Counters:
    """Flows, pairs and max-min rounds of the largest phase a solve meets."""

    def __init__(self):
        self.flows = self.pairs = self.rounds = self.stored = 0
        self._solve_phase = timing.solve_phase
        self._max_min = timing.max_min_rates

    def __enter__(self):
        def solve_phase(snap, phase):
            # Pairs as if expanded: shared routes count once per flow that takes them.
            if phase.n_pairs > self.pairs:
                self.flows, self.pairs = phase.n_flows, phase.n_pairs
                routes = phase.routes
                self.stored = len(phase.pair_arc) + (
                    0 if routes is None else len(routes.pair_flow) + len(routes.link))
            return self._solve_phase(snap, phase)

        def max_min(*args, **kwargs):
            res = self._max_min(*args, **kwargs)
            self.rounds = max(self.rounds, res.rounds)
            return res

        timing.solve_phase, timing.max_min_rates = solve_phase, max_min
        return self

    def __exit__(self, *exc):
        timing.solve_phase, timing.max_min_rates = self._solve_phase, self._max_min

    def text(self) -> str:
        stored = f" ({self.stored:,} stored)" if self.stored != self.pairs else ""
        return f"{self.flows:,} / {self.pairs:,}{stored} / {self.rounds}"


# ----------------------------------------------------------------- designs
def degrade(topology, seed: int = 1) -> None:
    """Unequal capacities: each bundle of several links (NVLink x9, leaf-spine x2) loses
    some of them with probability 0.3, and 2% of the leaf-spine bundles fail."""
    rng = np.random.default_rng(seed)
    for link in list(topology.links()):
        kinds = {topology.node(link.a).kind, topology.node(link.b).kind}
        if link.count > 1 and rng.random() < 0.3:
            topology.update_link(link.id, count=int(rng.integers(1, link.count)))
        elif kinds == {"leaf", "spine"} and rng.random() < 0.02:
            topology.update_link(link.id, failed=True)


def _degraded_pod():
    topo = build_template("superpod", gpu="B200", sus=4)
    degrade(topo)
    return topo


DESIGNS: dict[str, tuple[str, Callable]] = {
    "pod": ("SuperPOD B200, 4 SU", lambda: build_template("superpod", gpu="B200", sus=4)),
    "degraded": ("SuperPOD B200, 4 SU, degraded", _degraded_pod),
    "pod8": ("SuperPOD B200, 8 SU", lambda: build_template("superpod", gpu="B200", sus=8)),
    "pod64": ("SuperPOD B200, 64 SU",
              lambda: build_template("superpod", gpu="B200", sus=64)),
    "rail131k": ("rail cluster, 16,384 x HGX B200",
                 lambda: build_template("rail-cluster", nodes=16384, gpu="B200",
                                        fabric="roce", leaf_radix=128)),
}


# ----------------------------------------------------------------- cases
def nudge(topology) -> None:
    """A small what-if edit: one leaf-spine bundle gains a link, or loses it again."""
    for link in topology.links():
        if {topology.node(link.a).kind, topology.node(link.b).kind} == {"leaf", "spine"}:
            topology.update_link(link.id, count=link.count + 1 if link.count % 2 else
                                 link.count - 1)
            return


def toggle(topology) -> None:
    """A what-if failure: the last leaf-spine link fails, or is restored if it failed."""
    last = None
    for link in topology.links():
        if {topology.node(link.a).kind, topology.node(link.b).kind} == {"leaf", "spine"}:
            last = link
    topology.update_link(last.id, failed=not last.failed)


EDITS = {"capacity": nudge, "fail": toggle}


def measure(topo, solve: Callable, runs: int, edits: int) -> dict:
    """Cold: the first snapshot of the design plus a solve (median of ``runs`` solves of
    that snapshot; each builds its routes from scratch).  After an edit, for each kind
    of `EDITS`: the edit, then snapshot + solve with the design's `RouteMemo`, median of
    ``edits`` rounds (the GUI's path: the snapshot reuses what it read before, patched
    from the edit, and the solve what it routed before)."""
    k0 = Kernel()
    t = time.perf_counter()
    snap = take_snapshot(topo)
    cold_snap = time.perf_counter() - t
    k_snap = Kernel() - k0
    with Counters() as counters:
        solve_s, res, k_solve, first_s = time_runs(lambda: solve(snap), runs)
    ms = res.timing_ms
    k_cold = k_snap + k_solve
    out = {"cold": cold_snap + solve_s, "edit": {}, "kernel": k_cold,
           "detail": f"cold: snapshot {cold_snap * 1e3:.0f} ms + solve {solve_s * 1e3:.0f} ms "
                     f"(first of {runs}: {first_s * 1e3:.0f} ms; "
                     f"routes {ms['route']:.0f}, rates {ms['rates']:.0f}, time "
                     f"{ms['time']:.0f} ms; kernel {k_cold.text()}); "
                     f"busbw {res.busbw_GBps[-1]:.1f} GB/s",
           "counts": counters.text()}
    if not edits:
        return out
    memo = RouteMemo()
    solve(snap, memo=memo)   # the design as the GUI had solved it before the edit
    for kind, edit in EDITS.items():
        rounds = []
        for _ in range(edits):
            edit(topo)
            t = time.perf_counter()
            snap = take_snapshot(topo)
            t_snap = time.perf_counter() - t
            r = solve(snap, memo=memo)
            rounds.append((time.perf_counter() - t, t_snap, r.timing_ms["route"],
                           r.timing_ms["rates"], r.timing_ms["time"]))
        med = statistics.median(x[0] for x in rounds)
        best = min(rounds)
        out["edit"][kind] = med
        out["detail"] += (f"\n      edit, {kind}: {med * 1e3:.0f} ms (best {best[0] * 1e3:.0f}: "
                          f"snapshot {best[1] * 1e3:.0f} + routes {best[2]:.0f} + rates "
                          f"{best[3]:.0f} + time {best[4]:.0f} ms)")
    return out


def time_runs(fn: Callable, runs: int) -> tuple[float, object, Kernel, float]:
    """Median wall time of ``runs`` calls of ``fn``, the last result, the kernel's share
    of the median run, and the first run's wall time."""
    times, out = [], None
    for _ in range(runs):
        k = Kernel()
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t, Kernel() - k))
    wall, kernel = sorted(times, key=lambda x: x[0])[(len(times) - 1) // 2]
    return wall, out, kernel, times[0][0]


def ring(snap, memo=None):
    return solve_collective(snap, "allreduce", sizes=[1 << 30], algorithm="ring", memo=memo)


def alltoall(snap, memo=None):
    return solve_collective(snap, "alltoall", sizes=[1 << 30], memo=memo)


def sweep(snap, memo=None):
    return solve_collective(snap, "allreduce", sizes=SWEEP, memo=memo)


CASES: dict[str, tuple[str, float | None, str, str | None, Callable, int, int]] = {
    # key: (label, goal s, design, routing, solve, solve runs, edit rounds)
    "a": ("a. ring all-reduce, 16,384 GPUs", 0.050, "pod64", None, ring, 3, 4),
    "a-quick": ("a. ring all-reduce, 2,048 GPUs", None, "pod8", None, ring, 3, 4),
    "b": ("b. ring all-reduce, 131,072 GPUs", 0.5, "rail131k", None, ring, 1, 2),
    "c-adaptive": ("c. all-to-all 1,024 GPUs, adaptive", 1.0, "pod", "adaptive", alltoall,
                   1, 0),
    "c-ecmp": ("c. all-to-all 1,024 GPUs, ECMP", 1.0, "pod", "ecmp", alltoall, 1, 0),
    "d-adaptive": ("d. all-to-all, degraded, adaptive", 3.0, "degraded", "adaptive",
                   alltoall, 1, 0),
    "d-ecmp": ("d. all-to-all, degraded, ECMP", 3.0, "degraded", "ecmp", alltoall, 1, 0),
    "e": ("e. busbw sweep, 20 sizes, 1,024 GPUs", 1.0, "pod", None, sweep, 3, 4),
}


def _child(key: str, conn) -> None:
    """One case in a fresh process: build its design, then measure."""
    tune_process()  # numpy and the allocator as the app sets them
    _, _, design, routing, solve, runs, edits = CASES[key]
    try:
        ring(take_snapshot(build_template("example")))   # warm-up (module docstring)
        name, make = DESIGNS[design]
        t = time.perf_counter()
        topo = make()
        build_s = time.perf_counter() - t
        if routing:
            topo.set_setting("routing", routing)
        rss_in = rss_mb()
        out = measure(topo, solve, runs, edits)
        gpus = sum(1 for _ in topo.nodes("gpu"))
        out.update(rss_in=rss_in, rss_peak=peak_mb(),
                   build=(name, gpus, topo.graph.number_of_edges(), build_s))
    except Exception as e:  # reported in the table
        out = {"error": f"{type(e).__name__}: {e}"}
    conn.send(out)
    conn.close()


def run_case(key: str) -> dict:
    """Run case ``key`` in a fresh (spawned) process, so its peak RSS and cold snapshot
    are its own (a forked child would pay copy-on-write for the parent's objects)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(key, child))
    proc.start()
    out = parent.recv()
    proc.join()
    return out


def combine(outs: list[dict]) -> dict:
    """One case's processes as one: the median cold run's details, with ``colds`` (every
    process's cold time, sorted), the median of the processes' edit medians per kind
    and the largest peak RSS.  An error in any process is the case's outcome."""
    bad = [o for o in outs if "error" in o]
    if bad:
        return bad[0]
    outs = sorted(outs, key=lambda o: o["cold"])
    out = dict(outs[len(outs) // 2])
    out["colds"] = [o["cold"] for o in outs]
    out["cold"] = statistics.median(out["colds"])
    out["edit"] = {k: statistics.median(o["edit"][k] for o in outs) for k in out["edit"]}
    out["rss_peak"] = max(o["rss_peak"] for o in outs)
    return out


# ----------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    tune_process()  # numpy and the allocator as the app sets them
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smaller ring (2,048 GPUs) and no 131k design: a smoke run")
    ap.add_argument("--case", action="append", choices=sorted(CASES),
                    help="run only this case (repeatable)")
    ap.add_argument("--processes", type=int, default=3, metavar="N",
                    help="fresh processes per case; the median is reported (default 3)")
    args = ap.parse_args(argv)
    keys = (["a-quick"] if args.quick else ["a", "b"]) + [
        "c-adaptive", "c-ecmp", "d-adaptive", "d-ecmp", "e"]
    if args.case:
        keys = args.case
    print(f"Machine: {machine()}")
    n = max(1, args.processes)
    print(f"Each case runs in {n} fresh process{'es' if n > 1 else ''}, each of which first "
          "builds its design (not timed);\nthe figures are the medians over the processes, "
          "the details those of the median cold run.\nmalloc: the app's (tune_process: "
          "freed memory kept for the next solve, designer/memory.py).", flush=True)
    results = []
    for key in keys:
        label, goal = CASES[key][:2]
        out = combine([run_case(key) for _ in range(n)])
        results.append((label, goal, out))
        if "error" in out:
            print(f"  {label}: {out['error']}", flush=True)
            continue
        name, gpus, links, build_s = out["build"]
        spread = ", ".join(f"{c:.3f}" for c in out["colds"])
        print(f"  {label}: {out['cold']:.3f} s cold [{spread}]  ({out['detail']})\n"
              f"      design: {name}, {gpus:,} GPUs, {links:,} links, built in {build_s:.1f} s",
              flush=True)

    print()
    counts = "flows / pairs (stored) / rounds"
    head = (f"{'case':38s} {'goal':>6s} {'cold':>8s} {'kernel':>7s} {'edit cap':>8s} "
            f"{'edit fail':>9s}  {counts:>46s} {'RSS in':>7s} {'peak':>7s}")
    print(head)
    print("-" * len(head))
    for label, goal, out in results:
        goal_s = f"{goal:.3g} s" if goal else "-"
        if "error" in out:
            print(f"{label:38s} {goal_s:>6s} {'error':>8s}  {out['error']}")
            continue
        cap, fail = (f"{out['edit'][k]:.3f} s" if k in out["edit"] else "-"
                     for k in ("capacity", "fail"))
        print(f"{label:38s} {goal_s:>6s} {out['cold']:>6.3f} s {out['kernel'].sys_s:>5.3f} s "
              f"{cap:>8s} {fail:>9s}  "
              f"{out['counts']:>46s} {out['rss_in']:>5.0f} M {out['rss_peak']:>5.0f} M")
    print("\ncold = first snapshot of the design + solve (routes, max-min rates, time model);"
          "\nkernel = the kernel's CPU time within cold (page faults on fresh memory, mostly);"
          "\nedit = snapshot + solve after a one-link edit (what the GUI does on every edit),"
          "\n       routes reused from the previous snapshot where still valid: cap = a"
          "\n       leaf-spine bundle's count changes, fail = a leaf-spine link fails or"
          "\n       is restored;"
          "\nRSS in / peak: the case's process once its design is built / at its peak.")


if __name__ == "__main__":
    main()

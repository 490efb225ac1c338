"""The solver's subcommands of ``fabric-designer``: ``solve`` (a collective on a design:
times, bus bandwidth, bottlenecks, link loads) and ``train`` (a training step: step
time, communication share, jitter, stragglers).  `designer.cli` builds their
parsers.

Both start from what the design file saves, the scenario and the training workload the
GUI evaluates (`designer.model.scenario`), so the command and the window give the same
figures for the same file; every option overrides one field of it.  A mistake in an
option is a usage error (exit 2); a saved scenario the design cannot satisfy is a bad
file (exit 1), and its message says it came from the file.  A solve estimated to need
more memory than ``--max-memory`` (or the memory available) is refused before it starts
(exit 1), naming the estimate and what would fit (`designer.solver.memory_estimate`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time

from designer.cli_base import Range, UsageError, check_count, check_ranges
from designer.cli_base import load_design as _load
from designer.model.errors import DesignError
from designer.model.scenario import Scenario, TrainingSpec

log = logging.getLogger("designer.cli")

#: The algorithms the flow solver runs for each collective besides ``auto``: every one
#: for all-reduce, the ring for the other rank-ordered collectives, and none for the
#: point-to-point ones (all-to-all and send/recv always run point-to-point).
ALGORITHMS_FOR: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree", "nvls", "nvlstree", "hierarchical", "collnet", "direct"),
    "allgather": ("ring", "pat", "direct"), "reducescatter": ("ring", "pat", "direct"),
    "broadcast": ("ring",),
    "reduce": ("ring",), "alltoall": (), "sendrecv": (),
}


MAX_BYTES = 1 << 44  # 16 TiB, the largest message a scenario holds

#: The ranges of the numeric options (checked before the design is read; each option's
#: ``--help`` states its range).  Message sizes are 1 B..16 TiB (`parse_size`); ``--dp``
#: and ``--ranks N`` are 2 up to the design's GPU count.
SOLVE_RANGES = {
    # nccl-tests -g: GPUs one thread drives, at most a node's; 1,024 is beyond any node.
    "gpus_per_thread": Range(1, 1024),
}
TRAIN_RANGES = {
    # The jitter simulation's memory grows with the steps: 100,000 steps peak at ~100 MB
    # in ~2 s (measured on an 8-GPU HGX and a 1,016-GPU SuperPOD ring); 100 million
    # tried to allocate 46 GiB.
    "steps": Range(1, 100_000),
    "seed": Range(0, 2**32 - 1),
    "compute_s": Range(0, 86_400),  # a step of at most a day
    "flops": Range(0, 1e21, low_open=True),
    "tflops": Range(0, 1e5, low_open=True),
    "mfu": Range(0, 1, low_open=True),
    "overlap": Range(0, 1),
}
#: ``--params``: up to a quadrillion parameters (the largest models are ~2e12).
PARAMS_RANGE = Range(0, 1e15, low_open=True)
#: ``solve --max-memory``: 16 MiB (the smallest solve takes ~10 MB) to 64 TiB (beyond the
#: largest servers' memory).
MAX_MEMORY_RANGE = (16 << 20, 64 << 40)
MAX_MEMORY_HELP = ("refuse a solve estimated to need more memory than SIZE, e.g. 8GiB "
                   "(default: $FABRIC_DESIGNER_MAX_MEMORY, else the memory available; "
                   "range: 16MiB..64TiB)")


def parse_size(text: str) -> int:
    """``8GiB``, ``32KiB``, ``1MB`` or a plain integer -> bytes (at most `MAX_BYTES`)."""
    units = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
             "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "k": 1 << 10,
             "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    try:
        value = float(num)
    except ValueError:
        raise UsageError(f"not a size: {text!r} (use e.g. 1048576, 32KiB, 8GiB)") from None
    if unit not in units or not value * units[unit] >= 1:
        raise UsageError(f"not a size: {text!r} (use e.g. 1048576, 32KiB, 8GiB)")
    if value * units[unit] > MAX_BYTES:
        raise UsageError(f"size {text!r} is too large (at most 16TiB)")
    return int(value * units[unit])


def parse_count(text: str, option: str = "--params") -> float:
    """A count such as a model's parameters: ``70B``, ``405e9``, ``1.2T``, ``125M``.

    The suffixes are decimal (K 10^3, M 10^6, B or G 10^9, T 10^12), as model sizes are
    quoted.  ``--params`` must be within `PARAMS_RANGE`.

    >>> parse_count("70B"), parse_count("405e9"), parse_count("1.2T")
    (70000000000.0, 405000000000.0, 1200000000000.0)
    """
    units = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
    t = text.strip().lower()
    scale = units.get(t[-1:], 1.0)
    try:
        value = float(t[:-1] if t[-1:] in units else t) * scale
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UsageError(f"{option}: not a count: {text!r} (use e.g. 70B, 405e9, 1.2T)")
    return check_count(value, option, PARAMS_RANGE, text) if option == "--params" else value


def parse_max_memory(text: str | None) -> int | None:
    """``--max-memory`` in bytes (None when not given), within `MAX_MEMORY_RANGE`."""
    if text is None:
        return None
    from designer.solver import parse_memory

    value = parse_memory(text)
    if value is None:
        raise UsageError(f"--max-memory: not a size: {text[:24]!r} (use e.g. 512MiB, 8GiB)")
    low, high = MAX_MEMORY_RANGE
    if not low <= value <= high:
        raise UsageError(f"--max-memory must be in the range 16MiB..64TiB, got {text[:24]!r}")
    return value


def _algorithm_mismatch(collective: str, algorithm: str) -> str | None:
    """Why ``algorithm`` cannot run ``collective``, or None when it can."""
    if algorithm == "auto" or algorithm in ALGORITHMS_FOR[collective]:
        return None
    if not ALGORITHMS_FOR[collective]:
        return (f"{collective} is point-to-point and has no algorithm to choose "
                "(leave --algorithm at auto)")
    only = ", ".join(ALGORITHMS_FOR[collective])
    runs = [c for c, algs in ALGORITHMS_FOR.items() if algorithm in algs]
    return f"{algorithm} runs {' and '.join(runs)}; {collective} runs {only} (or auto)"


def _choose(args: argparse.Namespace, saved: Scenario) -> tuple[str, str, list[str]]:
    """The collective and algorithm to solve: the flags over the file's scenario; the
    notes say what of the file's scenario was set aside."""
    collective = args.collective or saved.collective
    if args.algorithm:
        why = _algorithm_mismatch(collective, args.algorithm)
        if why:
            raise UsageError(f"--algorithm {args.algorithm} does not apply: {why}")
        return collective, args.algorithm, []
    if _algorithm_mismatch(collective, saved.algorithm):
        return collective, "auto", [f"the file's algorithm {saved.algorithm} does not "
                                    f"apply to {collective}; auto is used"]
    return collective, saved.algorithm, []


def _rank_spec(text: str):
    """``--ranks`` as the file writes ranks: ``all``, N, ``group:<id>`` or a list of ids."""
    text = text.strip()
    if text == "all" or text.startswith("group:"):
        return text
    if text.isascii() and text.isdigit():  # "²".isdigit() is True too
        if len(text) > 9:
            raise UsageError(f"--ranks {text[:12]}...: more ranks than any design has GPUs")
        return int(text)
    return [x.strip() for x in text.split(",") if x.strip()]


def _ranks(spec, snap, topo, *, from_file: bool) -> list[int] | None:
    """Rank indices for a ranks spec (see `_rank_spec`), resolved as the GUI resolves
    them (`designer.solver.resolve_ranks`).

    A spec the design cannot satisfy is a `UsageError` when typed, a `DesignError` (a
    bad file) when read from the file; either names the spec.
    """
    from designer.solver import SolverError, rank_spec, resolve_ranks

    shown = ",".join(spec) if isinstance(spec, list) else spec
    where = f"the file's scenario: ranks {shown}" if from_file else f"--ranks {shown}"
    try:
        return resolve_ranks(snap, rank_spec(topo, spec))
    except SolverError as exc:
        raise (DesignError if from_file else UsageError)(f"{where}: {exc}") from None


def _sizes(args: argparse.Namespace, saved: Scenario) -> list[int]:
    if args.sweep:
        lo, sep, hi = args.sweep.partition(":")
        if not sep:
            raise UsageError("--sweep takes LOW:HIGH, e.g. 32KiB:16GiB")
        lo_b, hi_b = parse_size(lo), parse_size(hi)
        if lo_b > hi_b:
            raise UsageError(f"--sweep {args.sweep}: the low size is above the high size")
        sizes, s = [], lo_b
        while s <= hi_b:
            sizes.append(s)
            s *= 2
        return sizes
    return [parse_size(args.bytes) if args.bytes is not None else saved.bytes]


def cmd_solve(args: argparse.Namespace) -> int:
    from designer.solver import check_solve_memory, memory_limit, solve_collective, take_snapshot

    check_ranges(args, SOLVE_RANGES)
    max_memory = parse_max_memory(args.max_memory)
    t0 = time.perf_counter()
    topo = _load(args.file)
    saved = Scenario.from_dict(topo.settings["scenario"])
    collective, algorithm, notes = _choose(args, saved)
    sizes = _sizes(args, saved)
    if args.routing:
        topo.set_setting("routing", args.routing)
    t_load = time.perf_counter()
    snap = take_snapshot(topo)
    t_snap = time.perf_counter()
    if args.ranks is not None:
        ranks = _ranks(_rank_spec(args.ranks), snap, topo, from_file=False)
    else:
        ranks = _ranks(saved.ranks, snap, topo, from_file=True)
    # A solve that would not fit is refused before it starts (exit 1), with what fits.
    check_solve_memory(snap, collective, ranks, algorithm, limit=memory_limit(max_memory),
                       hints=("--routing adaptive", "--ranks {} or fewer"))
    res = solve_collective(snap, collective, sizes=sizes, algorithm=algorithm,
                           ranks=ranks, launch=args.launch or saved.launch,
                           gpus_per_thread=args.gpus_per_thread)
    notes += res.notes
    timing = {"load": (t_load - t0) * 1e3, "snapshot": (t_snap - t_load) * 1e3,
              "route": res.timing_ms["route"], "rates": res.timing_ms["rates"],
              "total": (time.perf_counter() - t_load) * 1e3}
    log.info("solved %s on %d GPUs (%d size(s), %s): %s", res.collective, res.n_ranks,
             len(sizes), args.file, ", ".join(f"{k} {v:.1f} ms" for k, v in timing.items()))
    bottlenecks = res.bottlenecks(snap, top=10)
    if args.json:
        out = {
            "collective": res.collective, "algorithm": res.algorithm, "ranks": res.n_ranks,
            "nodes": res.n_nodes, "routing": res.routing,
            "ceiling_busbw_GBps": round(res.ceiling_busbw_GBps, 3),
            "results": [{"bytes": int(b), "time_s": float(t), "algbw_GBps": float(a),
                         "busbw_GBps": float(bb), "protocol": str(p), "algorithm": alg}
                        for b, t, a, bb, p, alg in zip(res.sizes, res.time_s, res.algbw_GBps,
                                                       res.busbw_GBps, res.protocol,
                                                       res.algorithm_by_size, strict=True)],
            "bottlenecks": [{"link": name, "utilization": round(u, 4)}
                            for name, u in bottlenecks],
            "links": [{"id": snap.link_ids[k],
                       "utilization": round(float(max(res.arc_util[2 * k],
                                                      res.arc_util[2 * k + 1])), 4),
                       "load_GBps": round(float(max(res.arc_load_GBps[2 * k],
                                                    res.arc_load_GBps[2 * k + 1])), 3)}
                      for k, live in enumerate(snap.live_links().tolist()) if live],
            "timeline": [{"phase": b.phase, "group": b.group, "start_s": b.start_s,
                          "end_s": b.end_s, "steps": b.steps, "bottleneck": b.bottleneck}
                         for b in res.timeline],
            "timing_ms": {k: round(v, 2) for k, v in timing.items()},
            "notes": notes,
        }
        print(json.dumps(out, indent=2))
        return 0
    print(f"{res.collective} on {res.n_ranks} GPUs in {res.n_nodes} NVLink domain(s), "
          f"routing {res.routing}; bandwidth ceiling {res.ceiling_busbw_GBps:.1f} GB/s busbw")
    print(f"{'size':>10} {'time (us)':>12} {'algbw GB/s':>11} {'busbw GB/s':>11}  algorithm/proto")
    for b, t, a, bb, p, alg in zip(res.sizes, res.time_s, res.algbw_GBps, res.busbw_GBps,
                                   res.protocol, res.algorithm_by_size, strict=True):
        print(f"{_fmt_size(int(b)):>10} {t * 1e6:12.1f} {a:11.2f} {bb:11.2f}  {alg}/{p}")
    if bottlenecks:
        print("busiest links:")
        for name, u in bottlenecks[:5]:
            print(f"  {u * 100:6.1f}%  {name}")
    for note in notes:
        print(f"note: {note}")
    print("timing (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    return 0


#: `TrainingWorkload` fields -> the `train` options that set them (for its messages).
_TRAIN_OPTIONS = {"params": "--params", "grad_dtype": "--dtype", "dp_size": "--dp",
                  "compute_s": "--compute-s", "model_flops_per_step": "--flops",
                  "gpu_tflops": "--tflops", "mfu": "--mfu", "overlap": "--overlap"}


def cmd_train(args: argparse.Namespace) -> int:
    from designer.solver import SolverError, TrainingWorkload, take_snapshot, training_report

    if (args.flops is None) != (args.tflops is None):
        raise UsageError("--flops and --tflops go together: the compute time is FLOPs / "
                         "(TFLOP/s x MFU); or give --compute-s")
    if args.flops is not None and args.compute_s is not None:
        raise UsageError("give --compute-s, or --flops with --tflops, not both")
    check_ranges(args, TRAIN_RANGES)
    if args.flops is not None:
        compute = args.flops / (args.tflops * 1e12 * args.mfu)
        allowed = TRAIN_RANGES["compute_s"]
        if not allowed.holds(compute):
            raise UsageError(f"--flops / (--tflops x --mfu) is a compute time of {compute:g} s "
                             f"per step; it must be {allowed.rule()}")
    topo = _load(args.file)
    saved = TrainingSpec.from_dict(topo.settings["training"])
    if args.routing:
        topo.set_setting("routing", args.routing)
    snap = take_snapshot(topo)
    if args.dp is None:
        dp = min(saved.dp_size or snap.n_gpus, snap.n_gpus)  # as the GUI reads the file
    elif args.dp < 2:
        raise UsageError(f"--dp must be at least 2 (GPUs in the all-reduce), got {args.dp}")
    elif args.dp > snap.n_gpus:
        raise UsageError(f"--dp {args.dp}: the design has only {snap.n_gpus} GPUs")
    else:
        dp = args.dp
    compute_s = args.compute_s
    if compute_s is None and args.flops is None:
        compute_s = saved.compute_s
    try:
        workload = TrainingWorkload(
            params=saved.params if args.params is None else parse_count(args.params),
            grad_dtype=args.dtype or saved.grad_dtype, dp_size=dp,
            compute_s=compute_s, model_flops_per_step=args.flops, gpu_tflops=args.tflops,
            mfu=args.mfu, overlap=saved.overlap if args.overlap is None else args.overlap)
    except SolverError as exc:
        # The workload names its fields; the user typed options.
        text = str(exc)
        for field, option in _TRAIN_OPTIONS.items():
            text = text.replace(f"TrainingWorkload.{field}", option)
        raise UsageError(text) from None
    rep = training_report(snap, workload, algorithm=args.algorithm or "auto",
                          compute_cv=saved.compute_cv, n_steps=args.steps, seed=args.seed)
    est, dist = rep.estimate, rep.distribution
    out = {
        "gradient_bytes": est.gradient_bytes, "dp_size": workload.dp_size,
        "allreduce": {"algorithm": rep.allreduce.algorithm_by_size[0],
                      "time_s": float(rep.allreduce.time_s[0]),
                      "busbw_GBps": float(rep.allreduce.busbw_GBps[0])},
        "compute_s": est.compute_s, "comm_s": est.comm_s, "exposed_comm_s": est.exposed_comm_s,
        "step_s": est.step_s, "comm_share": est.comm_share,
        "idle_gpu_s_per_step": est.idle_gpu_s_per_step,
        "jitter": {"p50_s": dist.p50_s, "p99_s": dist.p99_s, "mean_s": dist.mean_s,
                   "ideal_s": dist.ideal_s, "hop_jitter_s": rep.hop_jitter_s,
                   "comm_steps": rep.comm_steps,
                   "straggler_gpu_s_per_step": dist.straggler_gpu_s_per_step},
        "notes": list(rep.allreduce.notes),
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"gradients: {est.gradient_bytes / 1e9:.2f} GB ({workload.grad_dtype}), "
          f"data-parallel over {workload.dp_size} GPUs")
    print(f"all-reduce: {out['allreduce']['algorithm']}, {est.comm_s * 1e3:.2f} ms "
          f"({out['allreduce']['busbw_GBps']:.1f} GB/s busbw)")
    print(f"step: compute {est.compute_s * 1e3:.2f} ms + exposed comm "
          f"{est.exposed_comm_s * 1e3:.2f} ms = {est.step_s * 1e3:.2f} ms; "
          f"communication share {est.comm_share * 100:.1f}%")
    print(f"idle GPU cost: {est.idle_gpu_s_per_step:.3f} GPU-s per step")
    print(f"with jitter ({args.steps} steps): p50 {dist.p50_s * 1e3:.2f} ms, "
          f"p99 {dist.p99_s * 1e3:.2f} ms; stragglers cost "
          f"{dist.straggler_gpu_s_per_step:.3f} GPU-s per step")
    for note in rep.allreduce.notes:
        print(f"note: {note}")
    return 0


def _fmt_size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"

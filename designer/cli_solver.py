"""The solver's subcommands of ``fabric-designer``: ``solve`` (a collective on a design:
times, bus bandwidth, bottlenecks, link loads) and ``train`` (a training step: step
time, communication share, jitter, stragglers).  Split from `designer.cli`, which
builds their parsers."""

from __future__ import annotations

import argparse
import json
import logging
import time

from designer.cli_base import UsageError
from designer.cli_base import load_design as _load

log = logging.getLogger("designer.cli")


def parse_size(text: str) -> int:
    """``8GiB``, ``32KiB``, ``1MB`` or a plain integer -> bytes."""
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
    return int(value * units[unit])


def _parse_ranks(text: str, n_gpus: int) -> list[int] | None:
    if text == "all":
        return None
    if text.isdigit():
        n = int(text)
        if not 2 <= n <= n_gpus:
            raise UsageError(f"--ranks {n}: the design has {n_gpus} GPUs")
        return list(range(n))
    return [x.strip() for x in text.split(",") if x.strip()]  # ids, resolved later


def cmd_solve(args: argparse.Namespace) -> int:
    from designer.solver.snapshot import take_snapshot
    from designer.solver.timing import solve_collective

    t0 = time.perf_counter()
    topo = _load(args.file)
    if args.routing:
        topo.set_setting("routing", args.routing)
    t_load = time.perf_counter()
    snap = take_snapshot(topo)
    t_snap = time.perf_counter()
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
    else:
        sizes = [parse_size(args.bytes)]
    ranks = _parse_ranks(args.ranks, snap.n_gpus)
    if ranks and isinstance(ranks[0], str):
        index = {snap.node_ids[g]: r for r, g in enumerate(snap.gpus.tolist())}
        missing = [x for x in ranks if x not in index]
        if missing:
            raise UsageError(f"--ranks: no GPU {missing[0]!r} in the design")
        ranks = [index[x] for x in ranks]
    res = solve_collective(snap, args.collective, sizes=sizes, algorithm=args.algorithm,
                           ranks=ranks, launch=args.launch,
                           gpus_per_thread=args.gpus_per_thread)
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
            "notes": list(res.notes),
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
    for note in res.notes:
        print(f"note: {note}")
    print("timing (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    return 0


#: `TrainingWorkload` fields -> the `train` options that set them (for its messages).
_TRAIN_OPTIONS = {"params": "--params", "grad_dtype": "--dtype", "dp_size": "--dp",
                  "compute_s": "--compute-s", "model_flops_per_step": "--flops",
                  "gpu_tflops": "--tflops", "mfu": "--mfu", "overlap": "--overlap"}


def cmd_train(args: argparse.Namespace) -> int:
    from designer.solver.errors import SolverError
    from designer.solver.snapshot import take_snapshot
    from designer.solver.training import TrainingWorkload
    from designer.solver.workload import training_report

    if args.compute_s is None and (args.flops is None or args.tflops is None):
        # (the workload's own message names its fields, not these options)
        raise UsageError("train needs --compute-s SECONDS, or both --flops and --tflops")
    topo = _load(args.file)
    if args.routing:
        topo.set_setting("routing", args.routing)
    snap = take_snapshot(topo)
    try:
        workload = TrainingWorkload(
            params=args.params, grad_dtype=args.dtype,
            dp_size=snap.n_gpus if args.dp is None else args.dp,
            compute_s=args.compute_s, model_flops_per_step=args.flops, gpu_tflops=args.tflops,
            mfu=args.mfu, overlap=args.overlap)
    except SolverError as exc:
        # The workload names its fields; the user typed options.
        text = str(exc)
        for field, option in _TRAIN_OPTIONS.items():
            text = text.replace(f"TrainingWorkload.{field}", option)
        raise UsageError(text) from None
    rep = training_report(snap, workload, algorithm=args.algorithm, n_steps=args.steps,
                          seed=args.seed)
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

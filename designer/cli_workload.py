"""``fabric-designer workload``: training jobs as files.

``workload presets`` lists the published models; ``workload new PRESET --set key=value
-o W.workload.toml`` writes a job from one; ``workload check W.workload.toml FILE`` places
its jobs on a design (after the jobs the design file holds) and prints each one's
placement, memory fit and the traffic of one iteration per lane.  A bad workload
(parallel sizes that do not multiply to the GPUs, EP not dividing the experts, an unknown
preset, more GPUs than the design has, a GPU in two jobs) is one line on stderr and exit
1; a mistake in an option is exit 2.

`designer.cli` builds the parser (`add_workload_parser`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path

from designer.cli_base import UsageError, parse_sets
from designer.cli_base import load_design as _load
from designer.model.errors import DesignError

log = logging.getLogger("designer.cli")

#: ``--set`` keys of ``workload new``: where each goes and its type.
SET_KEYS: dict[str, tuple[str, type]] = {
    "name": ("job", str), "placement": ("job", str), "colour": ("job", str),
    "mfu": ("job", float), "tflops": ("job", float),
    "tp": ("parallel", int), "pp": ("parallel", int), "dp": ("parallel", int),
    "ep": ("parallel", int), "cp": ("parallel", int), "vp": ("parallel", int),
    "gpus": ("gpus", int),
    "global_batch": ("training", int), "micro_batch": ("training", int),
    "seq_len": ("training", int), "dtype": ("training", str), "zero": ("training", str),
    "recompute": ("training", str), "sequence_parallel": ("training", bool),
    "grad_dtype": ("training", str), "bucket_mb": ("training", float),
    "flash_attention": ("training", bool), "ep_dispatcher": ("training", str),
}


def add_workload_parser(sub) -> None:
    """Add ``workload`` and its subcommands to the subparsers ``sub``."""
    w = sub.add_parser("workload", help="training jobs: presets, new job files, check "
                                        "a job's placement, memory and traffic on a design")
    wsub = w.add_subparsers(dest="workload_command", metavar="SUBCOMMAND", required=True)
    s = wsub.add_parser("presets", help="the published models a job can start from")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_presets)
    s = wsub.add_parser("new", help="write a *.workload.toml job from a preset")
    s.add_argument("preset", help="preset name (see `workload presets`)")
    s.add_argument("--set", action="extend", nargs="+", metavar="KEY=VALUE",
                   help="change a setting; keys: " + ", ".join(SET_KEYS)
                   + " (gpus sets dp = gpus / (tp cp pp))")
    s.add_argument("-o", "--output", required=True, help="the .workload.toml file to write")
    s.set_defaults(func=cmd_new)
    s = wsub.add_parser("check", help="place a workload's jobs on a design, after the "
                                      "design's own jobs; print placement, memory fit and "
                                      "the traffic of one iteration")
    s.add_argument("workload", help="the .workload.toml file")
    s.add_argument("file", help="the design (.fabric.json)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_check)


def cmd_presets(args: argparse.Namespace) -> int:
    from designer.workload.presets import presets

    rows = []
    for p in presets().values():
        m = p.model
        rows.append({"name": p.name, "title": p.title, "params": m.params(),
                     "active_params": m.params(active=True), "layers": m.layers,
                     "hidden": m.hidden, "experts": m.experts, "seq_len": m.seq_len,
                     "parallel": dict(p.parallel), "source": p.source})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    for r in rows:
        active = f", {_count(r['active_params'])} active" if r["experts"] else ""
        par = " ".join(f"{k}{v}" for k, v in r["parallel"].items() if k != "gpus")
        source = r["source"].split(" ")[0] if r["source"].startswith("http") else r["source"]
        print(f"{r['name']:<14} {_count(r['params']):>8} params{active}; {r['layers']} "
              f"layers, hidden {r['hidden']}, seq {r['seq_len']}; default {par} on "
              f"{r['parallel'].get('gpus', '?')} GPUs")
        print(f"{'':14} {r['title']}; source: {source}")
    return 0


def _count(n: float) -> str:
    """A parameter count as papers quote it: 405.85B, 3.67M."""
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"


def _value(key: str, text: str, want: type):
    if want is str:
        return text
    if want is bool:
        if text.lower() in ("true", "yes", "on", "1"):
            return True
        if text.lower() in ("false", "no", "off", "0"):
            return False
        raise UsageError(f"--set {key}: expected true or false, got {text!r}")
    try:
        return want(text)
    except ValueError:
        kind = "a whole number" if want is int else "a number"
        raise UsageError(f"--set {key}: expected {kind}, got {text!r}") from None


def cmd_new(args: argparse.Namespace) -> int:
    from designer.workload.files import job_from_dict, job_to_dict, write_workload
    from designer.workload.job import Job
    from designer.workload.presets import preset

    out = Path(args.output)
    if not out.name.endswith(".workload.toml"):
        raise UsageError(f"{out}: a workload file's name ends in .workload.toml")
    sets = parse_sets(args.set or [])
    for key in sets:
        if key not in SET_KEYS:
            from designer.cli_base import did_you_mean

            raise UsageError(f"--set: unknown key {key!r}{did_you_mean(key, SET_KEYS)}; "
                             f"keys: {', '.join(SET_KEYS)}")
    try:
        p = preset(args.preset)
    except ValueError as exc:
        raise DesignError(str(exc)) from None
    data = job_to_dict(Job.from_preset(p.name, p))
    gpus = None
    for key, text in sets.items():
        where, want = SET_KEYS[key]
        value = _value(key, text, want)
        if where == "job":
            data[key] = value
        elif where == "gpus":
            gpus = value
        else:
            data[where][key] = value
    if gpus is not None:
        par = data["parallel"]
        per = par["tp"] * par["cp"] * par["pp"]
        if "dp" in sets and per * par["dp"] != gpus:
            raise DesignError(f"job {data['name']!r}: tp x cp x pp x dp = {per * par['dp']}, "
                              f"not gpus={gpus}")
        if gpus % per:
            raise DesignError(f"job {data['name']!r}: gpus={gpus} is not a multiple of "
                              f"tp x cp x pp = {per}")
        par["dp"] = gpus // per
    try:
        job = job_from_dict(data, f"preset {p.name!r} with --set")
    except ValueError as exc:
        raise DesignError(str(exc)) from None
    write_workload(out, [job])
    par = job.parallel
    print(f"wrote {out}: {job.name} ({p.title}) on {par.gpus} GPUs, TP{par.tp} CP{par.cp} "
          f"PP{par.pp} DP{par.dp} EP{par.ep}" + (f" VP{par.vp}" if par.vp > 1 else ""))
    return 0


def check_jobs(topo, jobs) -> list[dict]:
    """Place ``jobs`` one after the other on ``topo`` (each on GPUs no earlier job
    holds) and report each one's placement, memory fit and iteration traffic.

    Raises
    ------
    ValueError
        One line naming the job, when one does not fit or is inconsistent.
    """
    from designer.solver import take_snapshot
    from designer.workload.memory import memory_fit
    from designer.workload.placement import place
    from designer.workload.traffic import (
        gpu_memory_gb,
        gpu_models,
        iteration_traffic,
        job_speeds,
        lane_volumes,
    )

    snap = take_snapshot(topo)
    taken: dict[str, str] = {}
    names: set[str] = set()
    rows = []
    for job in jobs:
        if job.name in names:
            raise ValueError(f"two jobs are named {job.name!r}")
        names.add(job.name)
        placement = place(job, snap, taken)
        taken.update(dict.fromkeys(placement.gpus, job.name))
        models = gpu_models(snap, placement)
        tflops, hbm_gbps = job_speeds(job, snap, placement)
        fit = memory_fit(job, gpu_memory_gb(snap, placement))
        traffic = iteration_traffic(job, placement, tflops, hbm_gbps)
        traffic.validate()
        lanes = lane_volumes(traffic)
        par = job.parallel
        rows.append({
            "name": job.name, "preset": job.preset, "gpus": par.gpus, "gpu_models": models,
            "parallel": dataclasses.asdict(par),
            "micro_batches": job.config.micro_batches(par),
            "params": job.model.params(), "active_params": job.model.params(active=True),
            "placement": {"policy": job.placement, "domains": placement.domains,
                          "tp_groups_split": placement.tp_split,
                          "summary": placement.summary(),
                          "warnings": list(placement.warnings)},
            "tflops": tflops, "mfu": job.mfu, "hbm_gbps": hbm_gbps,
            "memory": dataclasses.asdict(fit) | {"summary": fit.summary()},
            "tasks": len(traffic.tasks),
            "lanes": lanes,
        })
    return rows


def _gb(n: float) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.2f} MB"


def cmd_check(args: argparse.Namespace) -> int:
    from designer.workload.files import read_workload

    try:
        jobs = read_workload(args.workload)
    except ValueError as exc:
        raise DesignError(str(exc)) from None
    from designer.workload.files import design_jobs

    topo = _load(args.file)
    try:
        # The design's own jobs are placed first, on the GPUs they name or get.
        rows = check_jobs(topo, design_jobs(topo, args.file) + jobs)
    except ValueError as exc:
        raise DesignError(f"{args.workload} on {args.file}: {exc}") from None
    log.info("checked %d job(s) of %s on %s", len(rows), args.workload, args.file)
    for r in rows:
        for w in r["placement"]["warnings"]:
            print(f"warning: {w}", file=sys.stderr)
    if args.json:
        json.dump({"jobs": rows}, sys.stdout, indent=1)
        print()
        return 0
    for r in rows:
        par = r["parallel"]
        active = (f" ({_count(r['active_params'])} active)"
                  if r["active_params"] != r["params"] else "")
        print(f"job {r['name']!r}" + (f" ({r['preset']})" if r["preset"] else "")
              + f": {_count(r['params'])} parameters{active}; TP{par['tp']} CP{par['cp']} "
              f"PP{par['pp']}" + (f"x{par['vp']}" if par["vp"] > 1 else "")
              + f" DP{par['dp']} EP{par['ep']}; {r['micro_batches']} micro-batches per "
              "iteration")
        print(f"  placement ({r['placement']['policy']}): {r['placement']['summary']}")
        speed = (f"{r['tflops']:.0f} TFLOP/s x MFU {r['mfu']:.2f}" if r["tflops"]
                 else "per-layer times given")
        if r["tflops"] and r["hbm_gbps"]:
            speed += f", memory-bound work at {r['hbm_gbps']:,.0f} GB/s"
        print(f"  compute: {', '.join(r['gpu_models'])} at {speed}")
        print(f"  memory: {r['memory']['summary']}")
        print(f"  one iteration: {r['tasks']} tasks")
        gpus, pp = r["gpus"], par["pp"]
        print(f"    {'lane':<8} {'tasks':>7} {'collectives':>12} {'sum of sizes':>14} "
              f"{'sent per GPU':>14}")
        for lane, v in r["lanes"].items():
            if lane == "compute":
                print(f"    {lane:<8} {v['tasks']:>7} {'':>12} {'':>14} "
                      f"{v['seconds'] / pp:>12,.3f} s busy per GPU")
            else:
                print(f"    {lane:<8} {v['tasks']:>7} {v['collectives']:>12} "
                      f"{_gb(v['bytes']):>14} {_gb(v['sent'] / gpus):>14}")
        if not r["memory"]["fits"]:
            print(f"  warning: job {r['name']!r} does not fit in GPU memory", file=sys.stderr)
    return 0

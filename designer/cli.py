"""The ``fabric-designer`` command.

With no arguments (or just a design file) it opens the GUI; otherwise the first
argument names a subcommand.  Everything the GUI computes is available here, headless.
Exit codes: 0 success, 1 a failed check or a bad file, 2 a usage error.  Errors are one
line on stderr, never a traceback (``--verbose`` shows the traceback of a bug).

Every run appends to the log file (`designer.logs`); ``--verbose`` also prints DEBUG
records on stderr, and an internal error names the log file that holds its traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from designer import __version__
from designer.io.atomic import save_error_message
from designer.logs import FILE_ONLY, setup_logging
from designer.model.errors import DesignError

PROG = "fabric-designer"
log = logging.getLogger(__name__)


class UsageError(Exception):
    """A command-line mistake (exit code 2)."""


def _parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--set takes key=value, got {pair!r}")
        params[key.strip()] = value.strip()
    return params


def _load(path: str):
    from designer.io.fabric_json import load

    t0 = time.perf_counter()
    topo = load(Path(path))
    log.info("opened %s: %d nodes in %.0f ms", path, len(topo), (time.perf_counter() - t0) * 1e3)
    return topo


# ----------------------------------------------------------------- subcommands
def cmd_templates(args: argparse.Namespace) -> int:
    from designer.model.templates import TEMPLATES

    if args.json:
        out = {
            name: {
                "help": t.help,
                "params": {p.name: {"default": p.default, "help": p.help,
                                    "choices": list(p.choices) if p.choices else None}
                           for p in t.params},
            }
            for name, t in TEMPLATES.items()
        }
        print(json.dumps(out, indent=2))
        return 0
    for name, t in TEMPLATES.items():
        print(f"{name}: {t.help}")
        for p in t.params:
            choices = f" (one of {', '.join(map(str, p.choices))})" if p.choices else ""
            print(f"    {p.name}={p.default}  {p.help}{choices}")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from designer.io.fabric_json import save
    from designer.model.templates import build_template

    params = _parse_sets(args.set or [])
    try:
        topo = build_template(args.template, **params)
    except DesignError as exc:
        raise UsageError(str(exc)) from None
    save(topo, Path(args.output))
    log.info("saved %s (template %s)", args.output, args.template)
    gpus = sum(1 for _ in topo.nodes("gpu"))
    print(f"wrote {args.output}: {len(topo)} nodes, {sum(1 for _ in topo.links())} links, "
          f"{gpus} GPUs")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from designer.model.rules import validate

    findings = validate(_load(args.file))
    errors = [f for f in findings if f.severity == "error"]
    if args.json:
        print(json.dumps({"ok": not errors, "findings": [
            {"severity": f.severity, "code": f.code, "subject": f.subject, "message": f.message}
            for f in findings]}, indent=2))
    else:
        for f in findings:
            print(f"{f.severity}: [{f.code}] {f.message}")
        warnings = len(findings) - len(errors)
        verdict = "FAILED" if errors else "OK"
        print(f"{args.file}: {verdict} ({len(errors)} error(s), {warnings} warning(s))")
    return 1 if errors else 0


def cmd_info(args: argparse.Namespace) -> int:
    from designer.model.report import format_info, info

    result = info(_load(args.file))
    print(json.dumps(result, indent=2) if args.json else format_info(result))
    return 0


def cmd_bom(args: argparse.Namespace) -> int:
    from designer.model.bom import as_dict, bom, format_bom, to_csv

    result = bom(_load(args.file))
    if args.csv:
        sys.stdout.write(to_csv(result))
    elif args.json:
        print(json.dumps(as_dict(result), indent=2))
    else:
        print(format_bom(result))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    out = Path(args.output)
    name, suffix = out.name.lower(), out.suffix.lower()
    diagram = suffix in (".svg", ".png", ".pdf")
    if not diagram and not name.endswith((".graphml", ".json")):
        raise UsageError(f"{out}: unknown export format {suffix or '(none)'!r} "
                         "(use .svg, .png, .pdf, .graphml, .json or .fabric.json)")
    if args.scale is not None and suffix != ".png":
        raise UsageError("--scale applies to .png exports only")
    if args.scale is not None and not (0 < args.scale < float("inf")):
        raise UsageError(f"--scale must be a positive number, got {args.scale:g}")
    topo = _load(args.file)
    if diagram:
        # Headless by default: without a display Qt's default platform plugin would abort.
        # Must happen before PySide6 is first imported.
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from designer.gui.export import export_topology

        export_topology(topo, out, scale=2.0 if args.scale is None else args.scale)
    elif name.endswith(".fabric.json"):
        from designer.io.fabric_json import save

        save(topo, out)
    else:
        from designer.io.graph_export import export

        export(topo, out)
    log.info("exported %s to %s", args.file, out)
    print(f"wrote {out}")
    return 0


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


def cmd_gui(file: str | None, verbose: bool = False) -> int:
    # The editor lands with issue 4; until then say so clearly instead of failing.
    try:
        from designer.gui.app import run  # type: ignore[import-not-found]
    except ImportError:
        print(f"{PROG}: the graphical editor is not built yet. Use the subcommands "
              f"(`{PROG} --help`), e.g. `{PROG} new example -o example.fabric.json`.",
              file=sys.stderr)
        return 1
    # The plain call stays plain: wrappers and tests stand in for `run` with `run(file)`.
    return run(file, verbose=True) if verbose else run(file)


# ----------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Sketch AI GPU clusters and see how the network behaves. "
                    "With no subcommand (or just a FILE) the GUI opens.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show tracebacks of bugs and debug logging on stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("templates", help="list templates, their parameters and defaults")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_templates)

    s = sub.add_parser("new", help="create a design from a template")
    s.add_argument("template", help="template name (see `templates`)")
    s.add_argument("--set", action="extend", nargs="+", metavar="KEY=VALUE",
                   help="template parameter; repeatable, several per --set")
    s.add_argument("-o", "--output", required=True, help="the .fabric.json file to write")
    s.set_defaults(func=cmd_new)

    s = sub.add_parser("validate", help="check design rules; exit 1 when a rule fails")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("info", help="counts, NVLink domains, oversubscription, bisection")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("bom", help="bill of materials: devices, cables, cost and power")
    s.add_argument("file")
    fmt = s.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true")
    fmt.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_bom)

    s = sub.add_parser("export", help="export the diagram (SVG, PNG, PDF) or the graph "
                                      "(GraphML, node-link JSON, .fabric.json)")
    s.add_argument("file")
    s.add_argument("-o", "--output", required=True,
                   help="OUT.svg | OUT.png | OUT.pdf | OUT.graphml | OUT.json | OUT.fabric.json")
    s.add_argument("--scale", type=float, metavar="S",
                   help="PNG pixels per canvas unit (default 2)")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("solve", help="route a collective, compute max-min rates and timing")
    s.add_argument("file")
    s.add_argument("--collective", default="allreduce",
                   choices=["allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                            "alltoall", "sendrecv"])
    size = s.add_mutually_exclusive_group()
    size.add_argument("--bytes", default="8GiB", help="message size: 1048576, 32KiB, 8GiB")
    size.add_argument("--sweep", metavar="LOW:HIGH", help="powers of two, e.g. 32KiB:16GiB")
    s.add_argument("--algorithm", default="auto",
                   choices=["auto", "ring", "tree", "nvls", "hierarchical", "collnet"])
    s.add_argument("--ranks", default="all", help="all | N (first N GPUs) | id,id,...")
    s.add_argument("--routing", choices=["ecmp", "adaptive", "static"],
                   help="override the design's routing mode")
    s.add_argument("--launch", choices=["eager", "graph"], default="eager",
                   help="kernel launches: eager (default) or CUDA graphs")
    s.add_argument("--gpus-per-thread", type=int, default=1, metavar="G",
                   help="GPUs per process thread, like nccl-tests -g (eager launch cost)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_solve)

    s = sub.add_parser("train", help="training-step estimate: gradient all-reduce, overlap, "
                                     "jitter and stragglers")
    s.add_argument("file")
    s.add_argument("--params", type=float, required=True, help="model parameters, e.g. 70e9")
    s.add_argument("--dtype", default="bf16", choices=["fp32", "bf16", "fp16", "fp8"],
                   help="gradient dtype")
    s.add_argument("--dp", type=int, help="data-parallel size (default: every GPU)")
    s.add_argument("--compute-s", type=float, help="compute time per step, seconds")
    s.add_argument("--flops", type=float, help="model FLOPs per GPU per step")
    s.add_argument("--tflops", type=float, help="GPU dense TFLOP/s (with --flops)")
    s.add_argument("--mfu", type=float, default=0.4, help="model FLOPs utilisation")
    s.add_argument("--overlap", type=float, default=0.0, help="fraction of comm hidden")
    s.add_argument("--algorithm", default="auto",
                   choices=["auto", "ring", "tree", "nvls", "hierarchical", "collnet"])
    s.add_argument("--routing", choices=["ecmp", "adaptive", "static"])
    s.add_argument("--steps", type=int, default=1000, help="Monte Carlo steps")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_train)
    return p


COMMANDS: tuple[str, ...] = (
    "templates", "new", "validate", "info", "bom", "export", "solve", "train")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv or "--verbose" in argv
    # No subcommand: the GUI, optionally on a design file (``-v`` allowed around it).
    rest = [a for a in argv if a not in ("-v", "--verbose")]
    if not rest or (rest[0] not in COMMANDS and not rest[0].startswith("-")):
        if len(rest) > 1:
            print(f"{PROG}: error: unknown command {rest[0]!r} (see --help)", file=sys.stderr)
            return 2
        # Logging first, so a failure while the window is built lands in the log too.
        log_path = setup_logging(verbose=verbose, gui=True)
        file = rest[0] if rest else None
        return _run(lambda _args: cmd_gui(file, verbose=verbose), argparse.Namespace(),
                    verbose, log_path)
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on usage errors
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    log_path = setup_logging(verbose=verbose)
    log.info("run: %s %s", PROG, shlex.join(argv))
    t0 = time.perf_counter()
    code = _run(func, args, verbose, log_path)
    log.info("exit %d after %.2f s", code, time.perf_counter() - t0)
    return code


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, verbose: bool,
         log_path: Path | None) -> int:
    """Run one subcommand, turning every failure into an exit code and one line."""
    try:
        return func(args)
    except UsageError as exc:
        log.info("usage error: %s", exc)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except DesignError as exc:
        message = save_error_message(exc)  # a failed save says why in plain words
        log.info("error: %s", message)
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        log.info("interrupted")
        return 130
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    except Exception as exc:  # a bug: one line unless --verbose
        # The traceback goes to the log file; the terminal gets it from `raise` below.
        log.error("internal error", exc_info=True, extra=FILE_ONLY)
        if verbose:
            raise
        where = f"the traceback is in {log_path}" if log_path else "run with --verbose"
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} ({where})",
              file=sys.stderr)
        return 1

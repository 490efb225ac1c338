"""``fabric-designer study``: failure studies and design sweeps (`designer.studies`).

``study failures FILE`` fails each link, switch or NIC of a design in turn (or sampled
pairs) and lists what each failure does to the design's collective or training step,
worst first; ``study sweep TEMPLATE`` builds every combination of a template's
parameters and tabulates cost, power, time and the Pareto front.  Both run on a Dask
LocalCluster of this machine's cores by default, on an existing cluster with
``--scheduler``, or in this process with ``--workers 0``.  Progress goes to stderr: a
bar with the ETA on a terminal, a line every 10 % otherwise.  Ctrl+C cancels the
outstanding tasks and stops the cluster (exit 130).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from designer.cli_base import UsageError, parse_sets, shown
from designer.cli_base import load_design as _load
from designer.model.errors import DesignError
from designer.model.scenario import Scenario, TrainingSpec

log = logging.getLogger("designer.cli")

ELEMENTS = ("links", "switches", "nics", "all")
WHERE_HELP = (
    "where the solves run: --workers N starts a Dask LocalCluster of N worker "
    "processes (default: one per core; 0: in this process, no Dask), "
    "--scheduler tcp://HOST:8786 uses an existing Dask cluster"
)


# ----------------------------------------------------------------- progress
class Progress:
    """Progress of a study's stages on stderr: a redrawn bar with percentage and ETA on
    a terminal, otherwise one line per 10 %."""

    def __init__(self, stream=None, quiet: bool = False):
        stream = stream or sys.stderr
        self.stream = getattr(stream, "stream", stream)  # (our own text: no escaping)
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.quiet = quiet
        self.stage, self.t0, self.shown = "", 0.0, -1

    def __call__(self, done: int, total: int, stage: str) -> None:
        if self.quiet or total <= 0:
            return
        now = time.monotonic()
        if stage != self.stage:
            self.stage, self.t0, self.shown = stage, now, -1
        frac = done / total
        elapsed = now - self.t0
        eta = elapsed / frac * (1 - frac) if frac > 0 else math.inf
        eta_text = _duration(eta) if math.isfinite(eta) else "?"
        if self.tty:
            width = 30
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            self.stream.write(
                f"\r{stage}: [{bar}] {frac:4.0%} {done}/{total} tasks, ETA {eta_text} "
            )
            if done == total:
                self.stream.write(
                    f"\r{stage}: {done}/{total} tasks in {_duration(elapsed)}{' ' * 40}\n"
                )
        else:
            tenth = int(frac * 10)
            if tenth == self.shown:
                return
            self.shown = tenth
            self.stream.write(
                f"{stage}: {frac:.0%} ({done}/{total} tasks), "
                + (f"ETA {eta_text}\n" if done < total else f"done in {_duration(elapsed)}\n")
            )
        self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}" if m < 60 else f"{m // 60}:{m % 60:02d}:{s:02d}"


# ----------------------------------------------------------------- inputs
def _read_toml_or_json(path: str, what: str) -> dict:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DesignError(f"{path}: cannot read the {what} file: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise DesignError(f"{path}: not a valid {what} file: {exc}") from None
    if not isinstance(data, dict):
        raise DesignError(f"{path}: a {what} file holds a table of fields")
    return data


def read_scenario(path: str) -> Scenario:
    """A ``--scenario`` file: TOML or JSON with the scenario's fields (collective, bytes,
    algorithm, ranks, launch), at the top or under ``[scenario]``."""
    data = _read_toml_or_json(path, "scenario")
    try:
        return Scenario.from_dict(data.get("scenario", data))
    except DesignError as exc:
        raise DesignError(f"{path}: {exc}") from None


def read_workload(path: str) -> TrainingSpec:
    """A ``--workload`` file: TOML or JSON with the training fields (params, grad_dtype,
    dp_size, compute_s, overlap, compute_cv), at the top or under ``[training]``."""
    data = _read_toml_or_json(path, "workload")
    try:
        return TrainingSpec.from_dict(data.get("training", data))
    except DesignError as exc:
        raise DesignError(f"{path}: {exc}") from None


def _where(args: argparse.Namespace) -> dict[str, Any]:
    if args.scheduler is not None and args.workers is not None:
        raise UsageError(
            "--workers and --scheduler exclude each other (an existing cluster has its own workers)"
        )
    if args.workers is not None and not 0 <= args.workers <= 1024:
        raise UsageError(f"--workers must be 0..1024, got {args.workers}")
    if args.scheduler is not None and "://" not in args.scheduler:
        raise UsageError(
            f"--scheduler takes an address such as tcp://HOST:8786, got {args.scheduler!r}"
        )
    return {"workers": args.workers, "scheduler": args.scheduler}


def _run_study(func, *a, **kw):
    """Run a study, turning an unreachable scheduler into one line (exit 1) and Ctrl+C
    into a line saying what was stopped (then exit 130)."""
    try:
        return func(*a, **kw)
    except KeyboardInterrupt:
        progress = kw.get("progress")
        stream = progress.stream if progress is not None else sys.stderr
        stream.write("\ncancelled: no result; the outstanding tasks were dropped\n")
        raise
    except (OSError, TimeoutError) as exc:
        if kw.get("scheduler"):
            raise DesignError(
                f"cannot use the Dask scheduler at {kw['scheduler']}: {exc}"
            ) from None
        raise


def _write_table(rows: list[dict], out: str) -> None:
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa  # (there: `_check_output` found it)
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
        return
    if suffix == ".json":
        path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        return
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["id"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def _check_output(out: str | None) -> None:
    """Refuse an ``-o`` the study could not write, before the study runs."""
    suffix = Path(out).suffix.lower() if out is not None else None
    if out is not None and suffix not in (".csv", ".parquet", ".json"):
        raise UsageError(f"-o {out}: write .csv, .parquet or .json")
    if suffix == ".parquet":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise UsageError(
                f"-o {out}: writing Parquet needs pyarrow "
                "(pip install pyarrow); or write .csv or .json"
            )


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


# ----------------------------------------------------------------- failures
def cmd_failures(args: argparse.Namespace) -> int:
    from designer.studies import failure_study

    where = _where(args)
    _check_output(args.output)
    if args.k == 1 and args.samples is not None:
        raise UsageError("--samples applies to --k 2 (N-1 fails every element)")
    if args.samples is not None and not 1 <= args.samples <= 10_000_000:
        raise UsageError(f"--samples must be 1..10000000, got {args.samples}")
    scenario = read_scenario(args.scenario) if args.scenario else None
    training = read_workload(args.workload) if args.workload else None
    topo = _load(args.file)
    from designer.solver import SolverError

    progress = Progress(quiet=args.quiet)
    try:
        report = _run_study(
            failure_study,
            topo,
            elements=args.elements,
            k=args.k,
            samples=args.samples or 1000,
            seed=args.seed,
            scenario=scenario,
            training=training,
            reduce=not args.no_reduce,
            progress=progress,
            **where,
        )
    except SolverError as exc:
        raise DesignError(str(exc)) from None
    doc = report.as_json()
    if args.output:
        _write_table(doc["elements"], args.output)
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    sc = report.scenario
    ranks = f"{len(sc.ranks)} listed GPUs" if isinstance(sc.ranks, list) else sc.ranks
    what = (
        "training step"
        if training is not None
        else f"{sc.collective} {sc.bytes:,} B ({sc.algorithm}, ranks {shown(ranks)})"
    )
    n = len(report.elements)
    print(f"intact: {what}: {_ms(report.intact.time_s)}")
    eng = report.engine
    if args.k == 1:
        print(
            f"{n} element(s) in {report.classes} class(es) under the design's symmetry; "
            f"{report.enumerated_classes} class(es) whose members disagreed were "
            f"enumerated; {report.solves} solve(s) on {eng.where} in "
            f"{report.timing_ms['total'] / 1e3:.1f} s"
        )
    else:
        print(
            f"{n} sampled pair(s); {report.solves} solve(s) on {eng.where} in "
            f"{report.timing_ms['total'] / 1e3:.1f} s"
        )
    cut = sum(not e.connected for e in report.elements)
    slower = sum(e.connected and (e.slowdown or 1) > 1 + 1e-9 for e in report.elements)
    print(
        f"{cut} disconnect ranks, {slower} slow the {'step' if training else 'collective'} "
        f"down, {n - cut - slower} change nothing"
    )
    top = report.elements[: args.top]
    print(f"{'slowdown':>9}  {'time':>12}  {'connected':9}  {'class':>5}  {'kind':9}  element")
    for e in top:
        slow = "-" if e.slowdown is None else f"{e.slowdown:.3f}x"
        print(
            f"{slow:>9}  {_ms(e.time_s):>12}  {'yes' if e.connected else 'NO':9}  "
            f"{e.cls:>5}  {e.kind:9}  {shown(e.id)}"
        )
    if n > len(top):
        print(f"(the worst {len(top)} of {n}; --top N, --json or -o FILE.csv for more)")
    return 0


# ----------------------------------------------------------------- sweep
def cmd_sweep(args: argparse.Namespace) -> int:
    from designer.studies.sweep import parse_grid, sweep_study, variants

    where = _where(args)
    _check_output(args.output)
    try:
        grid = parse_grid(args.grid or [])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sets = parse_sets(args.set or [])
    try:
        combos = variants(args.template, grid, sets)  # every combination checked first
    except DesignError as exc:
        raise UsageError(str(exc)) from None
    if len(combos) > 10_000:
        raise UsageError(f"the grid makes {len(combos):,} variants; at most 10,000")
    scenario = read_scenario(args.scenario) if args.scenario else None
    training = read_workload(args.workload) if args.workload else None
    report = _run_study(
        sweep_study,
        args.template,
        grid,
        sets,
        scenario=scenario,
        training=training,
        progress=Progress(quiet=args.quiet),
        **where,
    )
    doc = report.as_json()
    if args.output:
        _write_table(
            [
                {**{f"param_{k}": v for k, v in row.pop("params").items()}, **row}
                for row in json.loads(json.dumps(doc["variants"]))
            ],
            args.output,
        )
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    keys = list(grid)
    widths = {k: max(6, len(k), *(len(v.params[k]) for v in report.variants)) for k in keys}
    head = "  ".join(f"{k:>{widths[k]}}" for k in keys)
    print(
        f"{head}  {'GPUs':>6}  {'$/GPU':>9}  {'W/GPU':>7}  {'busbw GB/s':>10}  "
        f"{'time':>12}  {'step':>10}  {'bisect GB/s':>11}  {'oversub':>7}  pareto"
    )
    for v in report.variants:
        cells = "  ".join(f"{v.params[k]:>{widths[k]}}" for k in keys)
        step = "-" if v.step_s is None else f"{v.step_s:.3f} s"
        bus = "-" if v.busbw_GBps is None else f"{v.busbw_GBps:.1f}"
        bis = "-" if v.bisection_GBps is None else f"{v.bisection_GBps:,.0f}"
        over = "-" if v.oversubscription is None else f"{v.oversubscription:g}"
        print(
            f"{cells}  {v.gpus:>6}  {v.cost_per_gpu_usd:>9,.0f}  {v.power_per_gpu_w:>7,.0f}"
            f"  {bus:>10}  {_ms(v.time_s):>12}  {step:>10}  {bis:>11}  {over:>7}  "
            f"{'*' if v.pareto else ''}{('  ' + v.error) if v.error else ''}"
        )
    front = sum(v.pareto for v in report.variants)
    print(
        f"{len(report.variants)} variant(s) in {report.timing_ms['total'] / 1e3:.1f} s on "
        f"{report.engine.where}; * marks the Pareto front of cost per GPU against "
        f"{'step' if training else 'collective'} time ({front})"
    )
    return 0


# ----------------------------------------------------------------- parser
def add_study_parser(sub) -> None:
    """Add ``study failures`` and ``study sweep`` to the top-level subparsers."""
    s = sub.add_parser(
        "study",
        help="failure studies (N-1, sampled N-2) and design "
        "sweeps, on this machine or a Dask cluster",
        description="Many solves at once: see `study failures --help` and `study sweep --help`.",
    )
    kinds = s.add_subparsers(dest="study", metavar="STUDY")
    kinds.required = True

    def common(p) -> None:
        p.add_argument(
            "--scenario",
            metavar="FILE",
            help="TOML or JSON with the collective's fields (collective, bytes, "
            "algorithm, ranks, launch; default: the design's saved scenario)",
        )
        p.add_argument(
            "--workload",
            metavar="W.toml",
            help="TOML or JSON with a training workload (params, grad_dtype, "
            "dp_size, compute_s, overlap): time the training step instead",
        )
        p.add_argument("--workers", type=int, metavar="N", help=WHERE_HELP)
        p.add_argument(
            "--scheduler", metavar="tcp://HOST:8786", help="address of an existing Dask scheduler"
        )
        p.add_argument(
            "-o",
            "--output",
            metavar="OUT.csv",
            help="also write the table: .csv, .parquet (needs pyarrow) or .json",
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")

    f = kinds.add_parser(
        "failures",
        help="fail each link, switch or NIC (or sampled pairs) and list the slowdowns, worst first",
    )
    f.add_argument("file")
    f.add_argument(
        "--elements", choices=ELEMENTS, default="links", help="what fails (default: links)"
    )
    f.add_argument(
        "--k",
        type=int,
        choices=(1, 2),
        default=1,
        help="elements failed at once: 1 (every one) or 2 (sampled pairs)",
    )
    f.add_argument("--samples", type=int, metavar="N", help="pairs drawn with --k 2 (default 1000)")
    f.add_argument("--seed", type=int, default=0, help="seed of the samples")
    f.add_argument(
        "--no-reduce",
        action="store_true",
        help="solve every element instead of one per symmetry class",
    )
    f.add_argument(
        "--top", type=int, default=20, metavar="N", help="rows shown without --json (default 20)"
    )
    common(f)
    f.set_defaults(func=cmd_failures)

    w = kinds.add_parser(
        "sweep",
        help="every combination of a template's parameters: "
        "cost, power, time, bisection, Pareto front",
    )
    w.add_argument("template", help="template name (see `templates`)")
    w.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2,...",
        help="a swept parameter and its values; repeatable",
    )
    w.add_argument(
        "--set",
        action="extend",
        nargs="+",
        metavar="KEY=VALUE",
        help="a parameter fixed for every variant; repeatable",
    )
    common(w)
    w.set_defaults(func=cmd_sweep)

"""Accuracy table: the whole pipeline, run the way a user runs it, against measured NCCL.

Every measured figure in ``resources/reference/measured-allreduce.json`` becomes a design
built from a template with ``fabric-designer new`` and a ``fabric-designer solve ... --json``
run in a temporary directory (``python -m designer`` in a subprocess).  Nothing is fitted
here and no row is special-cased: the table shows how far the shipped catalog, templates,
flow solve and NCCL time model land from the measurement.

The cases, and how each reference row maps to a design and a solve, are in
``accuracy_cases.py``.

Usage::

    python benchmarks/accuracy.py                 # the table and the summary (~20 s)
    python benchmarks/accuracy.py --json          # the same as JSON
    python benchmarks/accuracy.py --reference other.json

Goals (issues 3 and 31): median |error| <= 5 % on sizes >= 1 GiB, <= 15 % over the whole
A100 curve from 32 KiB (and <= 15 % over each case, a bound), no row beyond 25 %
(`goal_misses`: printed, with the rows that miss it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The cases module beside this file, also when this file is imported by path (the tests).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_cases import (  # noqa: F401 - re-exported for the tests
    _FIGURE_KEYS,
    LARGE,
    Case,
    Design,
    GiB,
    _fmt_size,
    build_cases,
    parse_size,
)

REPO = Path(__file__).resolve().parents[1]
#: Published measurements, each with its source, kept in the repository (resources/reference).
REFERENCE = REPO / "resources/reference/measured-allreduce.json"
#: Published multi-node, mid-size, EFA and all-to-all measurements (each row names its
#: design, its setup and its source URL), part of the same table.
MULTINODE = REPO / "resources/reference/measured-multinode.json"


def load_reference(*paths: Path) -> dict:
    """The measured rows of ``paths`` (default: `REFERENCE` and `MULTINODE`) as one
    reference: their ``cases`` in order."""
    cases = []
    for path in paths or (REFERENCE, MULTINODE):
        cases.extend(json.loads(path.read_text(encoding="utf-8"))["cases"])
    return {"cases": cases}
#: Public figures on hardware no calibration row covers (Blackwell): printed as a check,
#: never fitted, no goal of their own.
UNSEEN = REPO / "resources/reference/unseen-blackwell.json"
#: The same for the other new hardware (AMD xGMI boards, multi-rack NVL72), printed after it.
UNSEEN_MORE = REPO / "resources/reference/unseen-new-hardware.json"

#: Goals of issue 3 and the per-row regression bounds checked by the test.
GOAL_LARGE_MEDIAN_PCT = 5.0  # median |error| on sizes >= 1 GiB
GOAL_CURVE_MEDIAN_PCT = 15.0  # median |error| over the A100 curve from 32 KiB
BOUND_LARGE_ROW_PCT = 10.0  # every row >= 1 GiB
BOUND_ANY_ROW_PCT = 50.0  # every row at all (small sizes are latency-model territory)
BOUND_CASE_MEDIAN_PCT = 15.0  # median |error| of each case
GOAL_ANY_ROW_PCT = 25.0  # issue 31: no row beyond it (`goal_misses`)
CURVE_CASE = "a100-8gpu-curve"

#: A CLI runner: argv (without the program name) and a working directory -> stdout.
Runner = Callable[[Sequence[str], Path], str]


class AccuracyError(RuntimeError):
    """The CLI failed on a design or a solve (the message names the command)."""

    def __init__(self, argv: Sequence[str], stderr: str) -> None:
        self.stderr = stderr.strip().removeprefix("fabric-designer: ")
        super().__init__(f"fabric-designer {' '.join(argv)}: {self.stderr}")


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    case: str
    row: str
    nbytes: int
    metric: str
    measured: float
    predicted: float
    error_pct: float
    algorithm: str
    protocol: str
    design: str


@dataclass
class Report:
    """Rows, rows that could not be predicted (with the reason), and notes."""

    rows: list[Row] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- running


def subprocess_runner(argv: Sequence[str], cwd: Path) -> str:
    """Run ``python -m designer ARGV`` in ``cwd``; its stdout, or `AccuracyError`."""
    # this checkout's `designer` first, whether or not it is the installed one
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "designer", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    if proc.returncode != 0:
        raise AccuracyError(argv, proc.stderr)
    return proc.stdout


def in_process_runner(argv: Sequence[str], cwd: Path) -> str:
    """Run ``designer.cli.main(ARGV)`` in this process (same CLI, no interpreter start).

    Paths in ``argv`` must be absolute; sees monkeypatched solver state (for tests).
    """
    from designer.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    if rc != 0:
        raise AccuracyError(argv, err.getvalue())
    return out.getvalue()


def _solve_argv(path: Path, case: Case) -> list[str]:
    sizes = sorted(s for s, _ in case.measured)
    span = ["--bytes", str(sizes[0])] if len(sizes) == 1 else ["--sweep", f"{sizes[0]}:{sizes[-1]}"]
    return ["solve", str(path), *span, *case.options, "--json"]


def _rows_of(case: Case, design: Design, solved: dict) -> list[Row]:
    by_size = {int(r["bytes"]): r for r in solved["results"]}
    rows = []
    for nbytes, measured in case.measured:
        r = by_size[nbytes]
        pred = float(r["time_s"]) * 1e6 if case.metric == "time_us" else float(r["busbw_GBps"])
        rows.append(
            Row(
                case=case.case,
                row=case.row,
                nbytes=nbytes,
                metric=case.metric,
                measured=measured,
                predicted=pred,
                error_pct=(pred - measured) / measured * 100.0,
                algorithm=r["algorithm"],
                protocol=r["protocol"],
                design=design.label,
            )
        )
    return rows


def run_cases(
    cases: Iterable[Case], workdir: Path, runner: Runner = subprocess_runner, workers: int = 2
) -> Report:
    """Build each case's design with ``new``, solve it with ``solve --json``, compare.

    ``workers`` solves run at once (only with the subprocess runner: the in-process one
    captures this process's stdout, so it runs one at a time).
    """
    cases = list(cases)
    report = Report()
    if runner is not subprocess_runner:
        workers = 1
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    built: dict[Design, Path | str] = {}  # design -> file, or why `new` failed

    def new(d: Design) -> Path | str:
        path = workdir / d.filename
        argv = [
            "new",
            d.template,
            *(["--set", *(f"{k}={v}" for k, v in d.params)] if d.params else []),
            "-o",
            str(path),
        ]
        try:
            runner(argv, workdir)
        except AccuracyError as exc:
            return f"`new {d.label}`: {exc.stderr}"
        return path

    with pool:
        # every design any case may need; alternatives too (cheap, and keeps it simple)
        wanted = list(dict.fromkeys(d for c in cases for d in c.designs))
        built.update(zip(wanted, pool.map(new, wanted), strict=True))

        def solve(case: Case) -> tuple[list[Row], str | None, list[str]]:
            notes = []
            for d in case.designs:
                made = built[d]
                if isinstance(made, Path):
                    break
                notes.append(f"{case.case}: {made}")
            else:
                return [], "no template builds this design: " + "; ".join(notes), []
            try:
                solved = json.loads(runner(_solve_argv(made, case), workdir))
            except AccuracyError as exc:
                return [], str(exc), notes
            if notes:
                notes.append(f"{case.case}: using `new {d.label}` instead")
            return _rows_of(case, d, solved), None, notes

        for case, (rows, why, notes) in zip(cases, pool.map(solve, cases), strict=True):
            report.rows.extend(rows)
            report.notes.extend(notes)
            if why is not None:
                report.skipped.append((case.case, why))
    return report


def predict_reference(
    reference: dict, runner: Runner = subprocess_runner, workers: int = 2
) -> Report:
    """Every mapped reference row through the CLI, in a temporary directory."""
    cases, unmapped = build_cases(reference)
    with tempfile.TemporaryDirectory(prefix="fabric-accuracy-") as tmp:
        report = run_cases(cases, Path(tmp), runner, workers)
    report.skipped[:0] = unmapped
    return report


# --------------------------------------------------------------------------- summary


def _median_abs(rows: Iterable[Row]) -> float:
    errs = [abs(r.error_pct) for r in rows]
    return statistics.median(errs) if errs else float("nan")


def summarize(rows: Sequence[Row]) -> dict[str, float]:
    """Median |error| (%) on sizes >= 1 GiB, over the A100 curve, overall, and the max."""
    return {
        "median_abs_error_ge_1GiB_pct": _median_abs(r for r in rows if r.nbytes >= GiB),
        "median_abs_error_a100_curve_pct": _median_abs(r for r in rows if r.case == CURVE_CASE),
        "median_abs_error_overall_pct": _median_abs(rows),
        "max_abs_error_pct": max((abs(r.error_pct) for r in rows), default=float("nan")),
        "rows": float(len(rows)),
    }


def goal_failures(rows: Sequence[Row]) -> list[str]:
    """The issue-3 goals and per-row regression bounds that ``rows`` miss (empty: all met)."""
    s = summarize(rows)
    fails = []
    if not s["median_abs_error_ge_1GiB_pct"] <= GOAL_LARGE_MEDIAN_PCT:
        fails.append(
            f"median |error| on >= 1 GiB is {s['median_abs_error_ge_1GiB_pct']:.1f} %"
            f" (goal <= {GOAL_LARGE_MEDIAN_PCT:g} %)"
        )
    if not s["median_abs_error_a100_curve_pct"] <= GOAL_CURVE_MEDIAN_PCT:
        fails.append(
            f"median |error| over the A100 curve is "
            f"{s['median_abs_error_a100_curve_pct']:.1f} % "
            f"(goal <= {GOAL_CURVE_MEDIAN_PCT:g} %)"
        )
    for r in rows:
        bound = BOUND_LARGE_ROW_PCT if r.nbytes >= GiB else BOUND_ANY_ROW_PCT
        if not abs(r.error_pct) <= bound:
            fails.append(
                f"{r.case} at {_fmt_size(r.nbytes)}: {r.error_pct:+.1f} % (bound {bound:g} %)"
            )
    for case in dict.fromkeys(r.case for r in rows):
        med = _median_abs(r for r in rows if r.case == case)
        if not med <= BOUND_CASE_MEDIAN_PCT:
            fails.append(f"{case}: median |error| {med:.1f} % (bound {BOUND_CASE_MEDIAN_PCT:g} %)")
    return fails


def goal_misses(rows: Sequence[Row]) -> list[str]:
    """The rows beyond issue 31's `GOAL_ANY_ROW_PCT` (empty: the goal is met).

    Kept apart from `goal_failures`, whose bounds the test asserts on every row: the
    A100 curve's mid sizes, in the table since issue 3, still miss this goal (see
    docs/model.md), and the table says so rather than hiding them."""
    return [
        f"{r.case} at {_fmt_size(r.nbytes)}: {r.error_pct:+.1f} % (goal <= {GOAL_ANY_ROW_PCT:g} %)"
        for r in rows
        if not abs(r.error_pct) <= GOAL_ANY_ROW_PCT
    ]


def machine() -> dict[str, object]:
    """CPU model and core count of this machine (for the timing line)."""
    model = platform.processor()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.MULTILINE)
        model = m.group(1).strip() if m else model
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return {
        "cpu": model or platform.machine(),
        "cores": usable,
        "python": platform.python_version(),
    }


def format_table(report: Report, goals: bool = True) -> str:
    """``case | size | measured | predicted | error %`` and the summary lines (with the
    issue's goals, or, without ``goals``, the median and largest errors alone)."""
    lines = [
        f"{'case':32s} | {'size':>6s} | {'measured':>10s} | {'predicted':>10s} | "
        f"{'error %':>7s} | algorithm/proto"
    ]
    lines.append("-" * len(lines[0]))
    for r in report.rows:
        unit = "us" if r.metric == "time_us" else "  "
        lines.append(
            f"{r.case:32s} | {_fmt_size(r.nbytes):>6s} | {r.measured:8.2f}{unit} | "
            f"{r.predicted:8.2f}{unit} | {r.error_pct:+7.1f} | {r.algorithm}/{r.protocol}"
        )
    lines.append("(busbw in GB/s; 'us' rows are times in microseconds)")
    for case, why in report.skipped:
        lines.append(f"skipped {case}: {why}")
    for note in dict.fromkeys(report.notes):
        lines.append(f"note: {note}")
    s = summarize(report.rows)
    if not goals:
        lines += [
            f"median |error|, all {len(report.rows)} rows:               "
            f"{s['median_abs_error_overall_pct']:5.1f} %",
            f"max |error|:                              {s['max_abs_error_pct']:5.1f} %",
        ]
        return "\n".join(lines)
    lines += [
        f"median |error|, sizes >= 1 GiB:           {s['median_abs_error_ge_1GiB_pct']:5.1f} %"
        f"  (goal <= {GOAL_LARGE_MEDIAN_PCT:g} %)",
        f"median |error|, A100 curve from 32 KiB:   {s['median_abs_error_a100_curve_pct']:5.1f} %"
        f"  (goal <= {GOAL_CURVE_MEDIAN_PCT:g} %)",
        f"median |error|, all {len(report.rows)} rows:             "
        f"{s['median_abs_error_overall_pct']:5.1f} %",
        f"max |error|:                              {s['max_abs_error_pct']:5.1f} %",
    ]
    fails = goal_failures(report.rows)
    lines.append("goals and bounds: " + ("all met" if not fails else "MISSED"))
    lines += [f"  missed: {f}" for f in fails]
    misses = goal_misses(report.rows)
    lines.append(f"rows beyond {GOAL_ANY_ROW_PCT:g} % (goal: none): "
                 + (f"{len(misses)}" if misses else "none"))
    lines += [f"  beyond: {m}" for m in misses]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, action="append",
                    help="measured json (repeatable; default: measured-allreduce.json and "
                         "measured-multinode.json in resources/reference)")
    ap.add_argument("--unseen", type=Path, default=UNSEEN,
                    help="public figures the fit never saw, printed after the table "
                         "(default: resources/reference/unseen-blackwell.json; 'none' to skip)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--workers", type=int, default=2, help="CLI runs at once (default 2)")
    args = ap.parse_args(argv)
    paths = args.reference or [REFERENCE, MULTINODE]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(
            f"accuracy: no reference file at {missing[0]} (use --reference PATH)",
            file=sys.stderr,
        )
        return 2
    t0 = time.perf_counter()
    reference = load_reference(*paths)
    report = predict_reference(reference, workers=args.workers)
    unseen = more = None
    if str(args.unseen) != "none" and args.unseen.is_file():
        unseen = predict_reference(json.loads(args.unseen.read_text(encoding="utf-8")),
                                   workers=args.workers)
        if args.unseen == UNSEEN and UNSEEN_MORE.is_file():
            more = predict_reference(json.loads(UNSEEN_MORE.read_text(encoding="utf-8")),
                                     workers=args.workers)
    elapsed = time.perf_counter() - t0
    host = machine()
    if args.json:
        out = {
            "rows": [asdict(r) for r in report.rows],
            "skipped": [{"case": c, "reason": w} for c, w in report.skipped],
            "notes": list(dict.fromkeys(report.notes)),
            "summary": summarize(report.rows),
            "goal_failures": goal_failures(report.rows),
            "goal_misses": goal_misses(report.rows),
            "unseen": None if unseen is None else {
                "rows": [asdict(r) for r in unseen.rows],
                "skipped": [{"case": c, "reason": w} for c, w in unseen.skipped],
                "summary": summarize(unseen.rows)},
            "unseen_more": None if more is None else {
                "rows": [asdict(r) for r in more.rows],
                "skipped": [{"case": c, "reason": w} for c, w in more.skipped],
                "summary": summarize(more.rows)},
            "machine": host,
            "elapsed_s": round(elapsed, 2),
        }
        print(json.dumps(out, indent=2))
    else:
        print(format_table(report))
        if unseen is not None:
            print(f"\nHardware no calibration row covers ({args.unseen.name}: public "
                  "figures, never fitted):")
            print(format_table(unseen, goals=False))
        if more is not None:
            print(f"\nOther new hardware ({UNSEEN_MORE.name}: public figures, never fitted):")
            print(format_table(more, goals=False))
        print(
            f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}; "
            f"elapsed {elapsed:.1f} s ({args.workers} CLI runs at once)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

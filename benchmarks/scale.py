"""Benchmark of 100,000-GPU designs (issue 34): load, save, open, solve, edit.

Run ``python benchmarks/scale.py`` (builds the designs from templates first, into
``--workdir``, default a folder in the system's temporary directory, reused by later
runs), or name cases: ``python benchmarks/scale.py load-16k save-16k``.  Each case runs
in a fresh process; its row prints the measured time and the process's peak resident
memory with the goals beside them.

The cases live beside this file, one module per family, each exposing ``CASES``, a list
of `Case`:

- ``scale_io.py``: load and save of ``.fabric.json`` files
- ``scale_alltoall.py``: all-to-all solves at 4,096 and 16,384 GPUs
- ``scale_gui.py``: opening, panning and editing big designs in the GUI

The designs (built once per work folder by `design`):

- ``superpod-16k``: ``superpod sus=64`` (DGX SuperPOD H100, 16,376 GPUs: NVIDIA's SU
  table keeps one node slot of the first SU for the fabric manager)
- ``superpod-131k``: ``superpod gpu=B300 sus=227`` (130,752 GPUs)
- ``rail-4k`` / ``rail-16k``: ``rail-cluster`` of 512 / 2,048 HGX H100 servers
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: Template and parameters of each named design.
DESIGNS: dict[str, tuple[str, dict[str, object]]] = {
    "superpod-16k": ("superpod", {"sus": 64}),
    # 64-port switches join at most 256 H100 SUs (65,528 GPUs): the B300 XDR SU (72
    # nodes) is the SuperPOD that reaches 131k within the templates' 131,072-GPU cap.
    "superpod-131k": ("superpod", {"gpu": "B300", "sus": 227}),
    "rail-4k": ("rail-cluster", {"nodes": 512}),
    "rail-16k": ("rail-cluster", {"nodes": 2048}),
}
FAMILIES = ("scale_io", "scale_alltoall", "scale_gui")


@dataclass(frozen=True)
class Measure:
    """What one run of a case measured.

    Attributes
    ----------
    seconds : float
        The time the goal is about.
    rss_gb : float or None
        Peak resident memory of the process the goal is about, when that is not the
        case's own process (for example a ``fabric-designer`` it started); None means
        the case's process, which the runner reads itself.
    note : str
        A few words printed at the end of the row (sizes, counts).
    """

    seconds: float
    rss_gb: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Case:
    """One row of the table.

    Attributes
    ----------
    name : str
        Short name used on the command line.
    title : str
        What is measured, as printed.
    goal_s : float
        Time goal, seconds.
    goal_gb : float or None
        Peak-memory goal, GB (None: reported, no goal).
    run : callable
        ``run(workdir) -> Measure``, called in a fresh process; it may call `design`.
    """

    name: str
    title: str
    goal_s: float
    goal_gb: float | None
    run: Callable[[Path], Measure]


def design(workdir: Path, key: str) -> Path:
    """The ``.fabric.json`` of design `key` in `workdir`, built by the CLI when missing."""
    path = workdir / f"{key}.fabric.json"
    if not path.exists():
        template, params = DESIGNS[key]
        sets = [arg for k, v in params.items() for arg in ("--set", f"{k}={v}")]
        tmp = path.with_suffix(".tmp.json")
        cmd = [*fabric_designer(), "new", template, *sets, "-o", str(tmp)]
        print(f"    building {key}: {' '.join(cmd[2:])}", file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        tmp.replace(path)
    return path


def fabric_designer() -> list[str]:
    """The command line that runs this checkout's ``fabric-designer``."""
    return [sys.executable, "-m", "designer"]


def timed_child(cmd: list[str], **kwargs) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run `cmd`; return its wall time (s), its peak RSS (GB) and the finished process.

    The child is reaped with ``os.wait4``, which returns that one process's resource
    usage (its own peak RSS, not the largest of every child this process ever had).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, **kwargs)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())
    return seconds, usage.ru_maxrss / 1e6, done


def _cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for family in FAMILIES:
        try:
            module = __import__(family)
        except ModuleNotFoundError as err:
            if err.name != family:
                raise
            continue
        cases.update({case.name: case for case in module.CASES})
    return cases


def _child(name: str, workdir: Path) -> None:
    measure = _cases()[name].run(workdir)
    print(json.dumps({"seconds": measure.seconds, "note": measure.note, "rss_gb": measure.rss_gb}))


def _row(case: Case, result: dict | None, error: str = "") -> bool:
    load = os.getloadavg()[0]
    if result is None:
        print(f"{case.name:16s} {case.title:56s} {'failed':>9s}  {error}", flush=True)
        return False
    ok_t = result["seconds"] <= case.goal_s
    ok_m = case.goal_gb is None or result["rss_gb"] <= case.goal_gb
    goal_m = "" if case.goal_gb is None else f"<= {case.goal_gb:g} GB"
    print(
        f"{case.name:16s} {case.title:56s} {result['seconds']:8.2f} s <= {case.goal_s:g} s"
        f"  {result['rss_gb']:5.2f} GB {goal_m:10s} {'met' if ok_t and ok_m else 'MISSED':6s}"
        f" {result['note']}; load average {load:.1f}",
        flush=True,
    )
    return ok_t and ok_m


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: every case)")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "fabric-designer-scale"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.child:
        _child(args.child, args.workdir)
        return 0
    cases = _cases()
    unknown = [name for name in args.cases if name not in cases]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(cases)}")
    print(f"{'case':16s} {'what':56s} {'time':>9s} {'goal':>8s}  {'peak RSS':>8s}")
    met = True
    for name in args.cases or list(cases):
        _, rss, done = timed_child(
            [sys.executable, __file__, "--child", name, "--workdir", str(args.workdir)]
        )
        if done.returncode != 0:
            tail = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            met = _row(cases[name], None, tail) and met
            continue
        result = json.loads(done.stdout.decode().strip().splitlines()[-1])
        if result["rss_gb"] is None:  # the goal is about the case's own process
            result["rss_gb"] = rss
        met = _row(cases[name], result) and met
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

"""Live-analysis latency: edit -> colours on the canvas, and event-loop stalls while a
large design solves in the background.

Prints:
- edit-to-colour latency (debounce included) for the example design and a 1,024-GPU
  SuperPOD: the time from pushing an edit (failing a link) to the canvas links being
  recoloured from the new result (goals: <= 150 ms and <= 400 ms).  Edits are spaced
  by a pause longer than the debounce, as a user's separate edits are, so the first
  edit solves at once (leading edge); the "burst" row is the last of five edits made
  20 ms apart, which waits out the debounce (trailing edge);
- the workload row: four training jobs on the 1,024-GPU SuperPOD (the Workloads dock's
  presets, cut to the free GPUs as the dock does), an edit of a job (its MFU) and of
  the design (a leaf-spine link failed: one that carries none of the jobs' bytes, and
  the one that carries the most) -> the canvas links recoloured from the new
  simulation of every job (goal <= 400 ms), and the longest event-loop stall from the
  edit to that result (goal <= 50 ms);
- the longest event-loop stall while a 16,384-GPU SuperPOD re-solves after an edit (goal
  <= 50 ms), measured with a 1 ms timer on the GUI thread from the edit to the applied
  result (GUI-thread capture, worker snapshot and solve, result application); the
  design's first snapshot, taken once when it is opened, is reported apart.

Run: ``python benchmarks/live.py [--quick] [--workload]`` (offscreen; a few minutes for
16k GPUs; ``--workload``: the workload row only).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The real window autosaves recovery copies and writes settings: keep them out of the
# user's own folders (a benchmark stopped half way would offer its design at next start).
os.environ.setdefault("FABRIC_DESIGNER_DATA_DIR", tempfile.mkdtemp(prefix="fabric-bench-data-"))
os.environ.setdefault("FABRIC_DESIGNER_LOG_DIR", tempfile.mkdtemp(prefix="fabric-bench-log-"))
os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="fabric-bench-config-"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

from designer.gui.app import application
from designer.gui.document import Document
from designer.gui.main_window import MainWindow
from designer.memory import tune_process
from designer.model.commands import SetLinkProps
from designer.model.templates import build_template
from designer.solver import build_snapshot, capture_design, take_snapshot


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class Rig:
    """The real main window (canvas, overlay, docks, the four panels), shown at
    1400x900 on the design, opened the way File > Open does (`Document.replace`)."""

    def __init__(self, topology):
        self.document = Document(build_template("example"))
        self.window = MainWindow(self.document)
        self.window.resize(1400, 900)
        self.window.show()
        self.document.replace(topology)
        self.scene, self.view = self.window.scene, self.window.view
        self.runner = self.window.analysis.runner
        self.overlay = self.window.analysis.overlay
        self.coloured_at: float | None = None
        self.runner.focus_ready.connect(self._on_result)

    def _on_result(self, _result) -> None:
        # The overlay's slot is connected first, so links are recoloured by now.
        self.coloured_at = time.perf_counter()

    def wait(self, app: QApplication, timeout: float = 600.0, full: bool = False) -> float:
        _run_until(lambda: self.coloured_at is not None and not (full and self.runner.busy),
                   timeout)
        if self.coloured_at is None:
            raise RuntimeError("no result within the timeout")
        return self.coloured_at

    def close(self) -> None:
        self.runner.shutdown()
        self.document.undo_stack.setClean()  # no "save changes?" question on close
        self.window.close()


def _run_until(condition, timeout: float) -> None:
    """Run the event loop until ``condition()`` holds (looked at every 20 ms) or
    ``timeout`` seconds pass.  A nested `QEventLoop.exec`, as the application runs:
    Qt waits for events, paints and lays out without the interpreter, which the worker
    threads then have.  (A Python loop around ``processEvents`` holds the interpreter
    while Qt works, and slowed every worker it waited for.)"""
    if condition():
        return
    loop = QEventLoop()
    t0 = time.perf_counter()

    def check() -> None:
        if condition() or time.perf_counter() - t0 >= timeout:
            loop.quit()

    poll = QTimer()
    poll.setInterval(20)
    poll.timeout.connect(check)
    poll.start()
    loop.exec()
    poll.stop()


def _idle(app: QApplication, seconds: float) -> None:
    end = time.perf_counter() + seconds
    _run_until(lambda: time.perf_counter() >= end, seconds + 1)


def edit_to_colour(app: QApplication, template: str, params: dict,
                   repeats: int) -> tuple[list[float], float]:
    rig = Rig(build_template(template, **params))
    rig.runner.schedule()
    rig.wait(app, full=True)  # the first solve warms caches
    link = next(lk for lk in rig.document.topology.links()
                if rig.overlay.utilisation.get(lk.id, 0) > 0)
    out = []
    for i in range(repeats):
        rig.wait(app, full=True)  # let the sweep finish before the next edit
        _idle(app, 0.3)  # a pause between separate edits (longer than the debounce)
        rig.coloured_at = None
        t0 = time.perf_counter()
        rig.document.push(SetLinkProps([link.id], failed=(i % 2 == 0)))
        out.append((rig.wait(app) - t0) * 1e3)
    rig.wait(app, full=True)
    _idle(app, 0.3)
    for i in range(5):  # a burst: only the last edit's result is applied
        rig.coloured_at = None
        t0 = time.perf_counter()
        rig.document.push(SetLinkProps([link.id], failed=(i % 2 == 0)))
        _idle(app, 0.02)
    burst = (rig.wait(app) - t0) * 1e3
    rig.close()
    return out, burst


def stall_during_solve(app: QApplication, sus: int) -> dict:
    """The longest event-loop stall while the design re-solves after an edit.

    The design is opened and solved once first (not measured: opening a 40,000-node
    design builds the scene's index once, ~1 s, whatever the solver does), as an
    architect's window is before they edit.  Then two edits (a leaf-spine link fails,
    then another): for each, a 1 ms timer runs from the edit until the full result
    (focus, sweep, training) is applied, so the GUI-thread capture, the worker's
    snapshot and solve and the result application all count.  The first edit after
    opening also builds the snapshot's link index once."""
    topo = build_template("superpod", gpu="B200", sus=sus)
    t0 = time.perf_counter()
    take_snapshot(topo)
    out = {"cold_snap_ms": (time.perf_counter() - t0) * 1e3,
           "nodes": topo.graph.number_of_nodes(), "stalls": [], "solve_s": []}
    rig = Rig(topo)
    app.processEvents()  # the scene's first index build
    rig.runner.schedule()
    rig.wait(app, full=True)
    spine_links = [lk.id for lk in topo.links()
                   if {topo.node(lk.a).kind, topo.node(lk.b).kind} == {"leaf", "spine"}]
    for link in spine_links[:2]:
        _idle(app, 0.5)
        gaps: list[float] = []
        clock = QElapsedTimer()
        last = [0]

        def tick(gaps=gaps, clock=clock, last=last) -> None:
            now = clock.elapsed()
            gaps.append(now - last[0])
            last[0] = now

        timer = QTimer()
        timer.setInterval(1)
        timer.timeout.connect(tick)
        clock.start()
        timer.start()
        rig.coloured_at = None
        t1 = time.perf_counter()
        rig.document.push(SetLinkProps([link], failed=True))
        rig.wait(app, full=True)
        out["solve_s"].append(time.perf_counter() - t1)
        timer.stop()
        out["stalls"].append(max(gaps) if gaps else 0.0)
    topo.update_link(spine_links[2], failed=True)
    t2 = time.perf_counter()
    capture = capture_design(topo)  # the runner's GUI-thread part after an edit
    t3 = time.perf_counter()
    build_snapshot(capture)  # the worker's: patched columns, not re-read
    out["edit_capture_ms"] = (t3 - t2) * 1e3
    out["edit_snap_ms"] = (time.perf_counter() - t3) * 1e3
    rig.close()
    return out


#: The workload row's jobs, added in this order (each cut to the free GPUs by the dock).
WORKLOAD_PRESETS = ("llama3.1-70b", "llama3.1-70b", "mixtral-8x7b", "gpt3-175b")


class _Ticks:
    """A 1 ms timer on the GUI thread: the longest gap between its ticks is the
    longest stall of the event loop while it runs."""

    def __init__(self):
        self.gaps: list[float] = []
        self.clock = QElapsedTimer()
        self.last = 0
        self.timer = QTimer()
        self.timer.setInterval(1)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = self.clock.elapsed()
        self.gaps.append(now - self.last)
        self.last = now

    def start(self) -> None:
        self.gaps, self.last = [], 0
        self.clock.start()
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        return max(self.gaps) if self.gaps else 0.0


def workload_edit_to_colour(app: QApplication, repeats: int = 3) -> dict:
    """Edit -> links recoloured from the simulation of four jobs on 1,024 GPUs, and the
    longest event-loop stall meanwhile (see the module)."""
    from designer.model.commands import SetSetting
    from designer.workload.files import job_to_dict

    topo = build_template("superpod", gpu="B200", sus=4)
    rig = Rig(topo)
    wl = rig.window.workload
    done: list[float] = []
    # Connected after the workload overlay's slot: the links are recoloured by now.
    wl.runner.result_ready.connect(lambda r: done.append(time.perf_counter()) if r else None)

    def settle(timeout: float = 600.0) -> float:
        _run_until(lambda: done and not (wl.runner.busy or wl.runner.pending), timeout)
        if not done:
            raise RuntimeError("no workload result within the timeout")
        return done[-1]

    def quiet() -> None:
        """Every runner of the window idle (the scenario's solve and the design review
        wait while the jobs simulate, then run): each edit starts from a settled window."""
        others = [rig.runner, rig.window.review.runner]
        _run_until(lambda: not any(r.busy or r.pending for r in others), 600)
        _idle(app, 0.3)

    for name in WORKLOAD_PRESETS:
        wl.dock.add_job(name)
    t0 = time.perf_counter()
    settle()
    first_s = time.perf_counter() - t0
    out = {"jobs": [(j.name, j.n_gpus) for j in wl.dock.jobs], "first_s": first_s,
           "job_ms": [], "job_stall": []}
    ticks = _Ticks()
    for i in range(repeats):
        quiet()
        jobs = list(wl.dock.jobs)
        edited = [job_to_dict(j) for j in jobs]
        edited[1]["mfu"] = 0.40 + 0.01 * (i % 2 + 1)
        done.clear()
        ticks.start()
        t1 = time.perf_counter()
        rig.document.push(SetSetting("workloads", edited))
        out["job_ms"].append((settle() - t1) * 1e3)
        out["job_stall"].append(ticks.stop())
    # Two leaf-spine links: the one carrying the most of the jobs' bytes, and the first
    # by id of those carrying none (what each edit costs depends on it: a failure that
    # moves no job's traffic changes no result, one that does re-solves and re-runs).
    spine = {lk.id for lk in topo.links()
             if {topo.node(lk.a).kind, topo.node(lk.b).kind} == {"leaf", "spine"}}
    carried = {row["id"]: row["bytes"] for row in wl.runner.latest.simulation.to_json(
        timeline=False)["links"] if row["id"] in spine}
    links = {"idle": min(spine - {k for k, v in carried.items() if v > 0}),
             "busy": max(sorted(carried), key=carried.get)}
    for kind, lid in links.items():
        out[f"{kind}_ms"], out[f"{kind}_stall"], out[f"{kind}_link"] = [], [], lid
        for i in range(repeats):
            quiet()
            done.clear()
            ticks.start()
            t1 = time.perf_counter()
            rig.document.push(SetLinkProps([lid], failed=(i % 2 == 0)))
            out[f"{kind}_ms"].append((settle() - t1) * 1e3)
            out[f"{kind}_stall"].append(ticks.stop())
    out["links_coloured"] = wl.overlay.showing_workload()
    rig.close()
    return out


def workload_rows(app: QApplication) -> list[tuple[str, str, str]]:
    w = workload_edit_to_colour(app)
    gpus = sum(n for _, n in w["jobs"])
    label = f"4 jobs ({gpus:,} GPUs) on the 1,024-GPU SuperPOD"
    rows = [(f"workload: first simulation after adding {label}", "-", f"{w['first_s']:.1f} s")]
    for what, key in (("job edit", "job"),
                      (f"link failed, no job's bytes on it ({w['idle_link']})", "idle"),
                      (f"link failed, the jobs' busiest ({w['busy_link']})", "busy")):
        ms, stall = w[f"{key}_ms"], w[f"{key}_stall"]
        rows.append((f"workload: {what} -> recoloured links, {label}", "<= 400 ms",
                     f"{statistics.median(ms):.0f} ms (median of {len(ms)}; max {max(ms):.0f})"))
        rows.append((f"workload: event-loop stall during that simulation ({what})", "<= 50 ms",
                     f"{max(stall):.0f} ms (max of {len(stall)})"))
    if not w["links_coloured"]:
        rows.append(("workload: links were NOT coloured by the workload", "-", "check"))
    return rows


def main() -> int:
    tune_process()  # numpy and the allocator as the app sets them
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,024 GPUs for the stall test")
    ap.add_argument("--workload", action="store_true", help="the workload row only")
    args = ap.parse_args()
    app = application()  # as the app runs: garbage collected on the GUI thread
    print(f"machine: {_cpu()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    if args.workload:
        _print(workload_rows(app))
        return 0
    rows = []
    for label, template, params, goal in (
            ("example (32 GPUs)", "example", {}, 150),
            ("SuperPOD B200 4 SU (1,024 GPUs)", "superpod", {"gpu": "B200", "sus": 4}, 400)):
        ms, burst = edit_to_colour(app, template, params, repeats=5)
        rows.append((f"edit -> colour, {label}", f"<= {goal} ms",
                     f"{statistics.median(ms):.0f} ms (median of {len(ms)}; max {max(ms):.0f})"))
        rows.append((f"  last edit of a 5-edit burst -> colour, {label}", "-", f"{burst:.0f} ms"))
    sus = 4 if args.quick else 64
    st = stall_during_solve(app, sus)
    gpus = 256 * sus
    for which, stall, solve_s in zip(("first edit after opening", "next edit"), st["stalls"],
                                     st["solve_s"], strict=True):
        rows.append((f"event-loop stall, {gpus:,}-GPU re-solve, {which}", "<= 50 ms",
                     f"{stall:.0f} ms (edit -> full result {solve_s:.1f} s)"))
    rows.append((f"  capture on the GUI thread after an edit, {gpus:,} GPUs", "-",
                 f"{st['edit_capture_ms']:.2f} ms"))
    rows.append((f"  snapshot built from it on the worker, {gpus:,} GPUs", "-",
                 f"{st['edit_snap_ms']:.0f} ms"))
    rows.append((f"  first snapshot of the design ({st['nodes']:,} nodes; once per open)",
                 "-", f"{st['cold_snap_ms']:.0f} ms"))
    rows.extend(workload_rows(app))
    _print(rows)
    return 0


def _print(rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'goal':>10}  measured")
    for case, goal, measured in rows:
        print(f"{case:<{width}}  {goal:>10}  {measured}")


if __name__ == "__main__":
    sys.exit(main())

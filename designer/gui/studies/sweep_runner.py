"""`SweepRunner`: one design sweep (`designer.studies.sweep_study`) at a time, in the
background, with progress and a cooperative Cancel.

As `designer.gui.studies.runner.StudyRunner`: a single superqt worker drives a
generator that runs the sweep on a helper thread and relays its progress; Cancel is
checked after each finished variant (the progress callback raises `Cancelled`, which
stops the serial loop, or cancels the outstanding Dask futures).  A sweep builds its
variants from a template, so it does not depend on the open design and is never stale.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Generator
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal
from superqt.utils import GeneratorWorker, create_worker

from designer.model.errors import DesignError
from designer.solver import Cancelled, SolverError

__all__ = ["SweepRunner"]


@dataclass(frozen=True)
class _Run:
    template: str
    grid: dict
    sets: dict
    workers: int | None
    cancel: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


def _sweep(run: _Run) -> Generator[tuple[int, int, str], None, tuple]:
    """Yields ``(done, total, stage)``; returns ``(report, error)`` (both None: cancelled)."""
    from designer.studies import sweep_study

    steps: list[tuple[int, int, str]] = []

    def progress(done: int, total: int, stage: str) -> None:
        steps.append((done, total, stage))
        if run.cancel.is_set():
            raise Cancelled("sweep cancelled")

    run.entered.set()
    try:
        if run.cancel.is_set():
            return None, None
        yield (
            0,
            0,
            "Building variants…" if run.workers == 0 else "Starting the local Dask cluster…",
        )
        box: dict = {}

        def work() -> None:
            try:
                box["report"] = sweep_study(
                    run.template, run.grid, run.sets, workers=run.workers, progress=progress
                )
            except BaseException as exc:  # handed to the generator below
                box["error"] = exc

        helper = threading.Thread(target=work, name="design-sweep", daemon=True)
        helper.start()
        sent = 0
        while helper.is_alive():
            helper.join(0.05)
            while sent < len(steps):
                yield steps[sent]
                sent += 1
        if "error" in box:
            raise box["error"]
        return box["report"], None
    except Cancelled:
        return None, None
    except (DesignError, SolverError, ValueError) as exc:
        return None, str(exc)
    except Exception as exc:  # a bug: one line, keep the GUI alive
        traceback.print_exc()
        return None, f"internal error: {type(exc).__name__}: {exc}"
    finally:
        run.done.set()


class SweepRunner(QObject):
    """Runs design sweeps one at a time.

    Signals
    -------
    started(str)
        Where the sweep runs.
    progress(int, str)
        Percent of the variants done and the stage's name.
    result_ready(object)
        The `designer.studies.SweepReport`.
    failed(str)
    cancelled()
    """

    started = Signal(str)
    progress = Signal(int, str)
    result_ready = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._worker: GeneratorWorker | None = None
        self._run: _Run | None = None

    @property
    def busy(self) -> bool:
        return self._worker is not None

    def start(self, template: str, grid: dict, sets: dict, workers: int | None = 0) -> bool:
        """Sweep ``grid`` over ``template`` (``workers`` 0: here, None: local Dask);
        False when a sweep is already running."""
        if self.busy:
            return False
        run = _Run(template, dict(grid), dict(sets), workers)
        self._run = run
        self.started.emit("this process" if workers == 0 else "local Dask cluster")
        self._worker = create_worker(
            _sweep,
            run,
            _start_thread=False,
            _connect={
                "yielded": self._on_yielded,
                "returned": self._on_returned,
                "errored": self._on_errored,
                "finished": self._on_finished,
            },
        )
        self._worker.start()
        return True

    def _on_yielded(self, step: tuple[int, int, str]) -> None:
        done, total, stage = step
        self.progress.emit(round(100 * done / total) if total else 0, stage)

    def _on_returned(self, outcome: tuple) -> None:
        report, error = outcome
        if self._run is not None and self._run.cancel.is_set():
            self.cancelled.emit()
        elif error is not None:
            self.failed.emit(error)
        elif report is None:
            self.cancelled.emit()
        else:
            self.result_ready.emit(report)

    def _on_errored(self, exc: Exception) -> None:
        self.failed.emit(f"internal error: {type(exc).__name__}: {exc}")

    def _on_finished(self) -> None:
        self._worker = None
        self._run = None

    def cancel(self) -> None:
        """Stop the running sweep after the variant in hand."""
        if self._run is not None:
            self._run.cancel.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel and wait for the sweep to wind down (window close)."""
        run = self._run
        self.cancel()
        if run is not None and run.entered.is_set():
            run.done.wait(timeout)
        self._worker = None
        self._run = None

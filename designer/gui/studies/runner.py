"""`StudyRunner`: one failure study of the open design at a time, in the background.

It follows `designer.gui.workload.runner.WorkloadRunner`: the design is captured on the
GUI thread (its file text, so the worker never touches the live `Topology`), a single
superqt worker runs `designer.studies.failure_study` on it, and the report comes back
tagged with the design's generation.  A report of a design that has been edited since
is dropped (the panel says the design changed); Cancel is cooperative, checked after
each finished batch of solves (about a second of work, `designer.studies.engine`).

The study runs on this process (``workers=0``, the default: no cluster to start) or on
a local Dask cluster (``workers=None``, a process per core; starting it takes seconds).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Generator
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal
from superqt.utils import GeneratorWorker, create_worker

from designer.gui.document import Document
from designer.model.errors import DesignError
from designer.solver import Cancelled, SolverError

__all__ = ["StudyRunner"]


@dataclass(frozen=True)
class _Run:
    """What one study needs, taken from the live design on the GUI thread."""

    generation: int
    text: str
    elements: str
    workers: int | None
    cancel: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class _Outcome:
    generation: int
    report: object = None
    error: str | None = None


def _study(run: _Run) -> Generator[tuple[int, int, str], None, _Outcome]:
    """The worker's generator: yields ``(done, total, stage)``, returns the `_Outcome`
    (every exception becomes one, so the worker always ends with ``returned``)."""
    from designer.io.fabric_json import loads
    from designer.studies import failure_study

    steps: list[tuple[int, int, str]] = []

    def progress(done: int, total: int, stage: str) -> None:
        steps.append((done, total, stage))
        if run.cancel.is_set():
            raise Cancelled("failure study cancelled")

    run.entered.set()
    try:
        if run.cancel.is_set():
            return _Outcome(run.generation)
        yield (0, 0, "Preparing…" if run.workers == 0 else "Starting the local Dask cluster…")
        topo = loads(run.text)
        if run.cancel.is_set():
            return _Outcome(run.generation)
        # failure_study is one call: its progress arrives through the callback, and is
        # passed on after it returns only as the last step.  To stream it, the study
        # runs on a helper thread while this generator relays the steps.
        box: dict = {}

        def work() -> None:
            try:
                box["report"] = failure_study(
                    topo, elements=run.elements, workers=run.workers, progress=progress
                )
            except BaseException as exc:  # handed to the generator below
                box["error"] = exc

        helper = threading.Thread(target=work, name="failure-study", daemon=True)
        helper.start()
        sent = 0
        while helper.is_alive():
            helper.join(0.05)
            while sent < len(steps):
                yield steps[sent]
                sent += 1
        if "error" in box:
            raise box["error"]
        return _Outcome(run.generation, report=box["report"])
    except Cancelled:
        return _Outcome(run.generation)
    except (DesignError, SolverError, ValueError) as exc:
        return _Outcome(run.generation, error=str(exc))
    except Exception as exc:  # a bug: one line, keep the GUI alive
        traceback.print_exc()
        return _Outcome(run.generation, error=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        run.done.set()


class StudyRunner(QObject):
    """Runs failure studies of one `Document`'s design, one at a time.

    Signals
    -------
    started(str)
        A study began; where it runs ("this process" or "local Dask cluster").
    progress(int, str)
        Percent done of the current stage (0-100) and the stage's name.
    result_ready(object)
        A fresh `designer.studies.FailureReport` of the design as it is.
    failed(str)
        The study failed, or its design was edited before it finished (one line).
    cancelled()
        The user's Cancel stopped the study.
    """

    started = Signal(str)
    progress = Signal(int, str)
    result_ready = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, document: Document, parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.latest = None
        self._worker: GeneratorWorker | None = None
        self._run: _Run | None = None
        document.topology_replaced.connect(lambda _topo: self.cancel())

    @property
    def busy(self) -> bool:
        """A study is running (or winding down after a cancel)."""
        return self._worker is not None

    def start(self, elements: str = "links", workers: int | None = 0) -> bool:
        """Start a study failing ``elements`` (links, switches, nics, all) in turn;
        ``workers`` 0 runs it here, None on a local Dask cluster.  False when one is
        already running."""
        if self.busy:
            return False
        from designer.io.fabric_json import dumps

        topo = self.document.topology
        try:
            text = dumps(topo)
        except (DesignError, ValueError) as exc:
            self.failed.emit(str(exc))
            return False
        run = _Run(topo.generation, text, elements, workers)
        self._run = run
        self.started.emit("this process" if workers == 0 else "local Dask cluster")
        worker = create_worker(
            _study,
            run,
            _start_thread=False,
            _connect={
                "yielded": self._on_yielded,
                "returned": self._on_returned,
                "errored": self._on_errored,
                "finished": self._on_finished,
            },
        )
        self._worker = worker
        worker.start()
        return True

    def _on_yielded(self, step: tuple[int, int, str]) -> None:
        done, total, stage = step
        self.progress.emit(round(100 * done / total) if total else 0, stage)

    def _on_returned(self, outcome: _Outcome) -> None:
        run = self._run
        if run is not None and run.cancel.is_set():
            self.cancelled.emit()
        elif outcome.error is not None:
            self.failed.emit(outcome.error)
        elif outcome.report is None:
            self.cancelled.emit()
        elif outcome.generation != self.document.topology.generation:
            self.failed.emit("The design changed while the study ran; run it again.")
        else:
            self.latest = outcome.report
            self.result_ready.emit(outcome.report)

    def _on_errored(self, exc: Exception) -> None:
        self.failed.emit(f"internal error: {type(exc).__name__}: {exc}")

    def _on_finished(self) -> None:
        self._worker = None
        self._run = None

    def cancel(self) -> None:
        """Stop the running study (the user's Cancel, or another design opened)."""
        if self._run is not None:
            self._run.cancel.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop for good (window close): cancel and wait for the study to wind down."""
        run = self._run
        self.cancel()
        # No worker.quit(): a quit worker stops driving the generator at its next yield,
        # which would then never finish (nor its study thread be waited for).
        if run is not None and run.entered.is_set():
            run.done.wait(timeout)  # (a worker that never started has nothing to stop)
        self._worker = None
        self._run = None

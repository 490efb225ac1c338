"""What the failure-study and sweep runners share: one long call at a time in the
background, its progress streamed, a cooperative Cancel and a shutdown that waits.

A study or sweep is a single call (`designer.studies.failure_study`, `sweep_study`)
that reports progress through a callback.  `relay` runs that call on a helper thread
while the superqt generator worker that drives it yields each progress step to the GUI
thread; the callback raises `Cancelled` once Cancel is pressed, which stops the call
after the step in hand.  `BackgroundRunner` owns the worker and the run's events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Signal
from superqt.utils import GeneratorWorker

from designer.gui.workers import create_worker
from designer.solver import Cancelled

__all__ = ["BackgroundRunner", "RunEvents", "RunProgressView", "relay"]

Step = tuple[int, int, str]  # (done, total, stage)


@dataclass(frozen=True, kw_only=True)
class RunEvents:
    """The events of one run, shared by the GUI thread and the worker (a base of each
    runner's frozen run record).

    Attributes
    ----------
    cancel : threading.Event
        Set by Cancel; the progress callback then raises `Cancelled`.
    entered, done : threading.Event
        The worker's generator has started, and has finished (whatever the outcome).
    """

    cancel: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


def relay(
    events: RunEvents, name: str, call: Callable[[Callable[[int, int, str], None]], Any]
) -> Generator[Step, None, Any]:
    """Run ``call(progress)`` on a helper thread named ``name``, yielding each
    ``(done, total, stage)`` it reports; return what it returns, or raise what it raised
    (`Cancelled` once ``events.cancel`` is set)."""
    steps: list[Step] = []

    def progress(done: int, total: int, stage: str) -> None:
        steps.append((done, total, stage))
        if events.cancel.is_set():
            raise Cancelled(f"{name} cancelled")

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = call(progress)
        except BaseException as exc:  # handed to the generator below
            box["error"] = exc

    helper = threading.Thread(target=work, name=name, daemon=True)
    helper.start()
    sent = 0
    while helper.is_alive():
        helper.join(0.05)
        while sent < len(steps):
            yield steps[sent]
            sent += 1
    if "error" in box:
        raise box["error"]
    return box["result"]


class BackgroundRunner(QObject):
    """One run at a time of a generator function on a superqt worker.

    Subclasses start runs with `_launch` and turn the generator's return value into
    signals in `_on_returned`.

    Signals
    -------
    started(str)
        A run began; where it runs ("this process" or "local Dask cluster").
    progress(int, str)
        Percent done of the current stage (0-100) and the stage's name.
    result_ready(object)
        The run's report.
    failed(str)
        One line saying why it failed.
    cancelled()
        The user's Cancel stopped it.
    """

    started = Signal(str)
    progress = Signal(int, str)
    result_ready = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._worker: GeneratorWorker | None = None
        self._run: RunEvents | None = None

    @property
    def busy(self) -> bool:
        """A run is going on (or winding down after a cancel)."""
        return self._worker is not None

    def _launch(self, generator: Callable[[Any], Generator], run: RunEvents, where: str) -> None:
        self._run = run
        self.started.emit(where)
        self._worker = create_worker(
            generator,
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

    def _on_yielded(self, step: Step) -> None:
        done, total, stage = step
        self.progress.emit(round(100 * done / total) if total else 0, stage)

    def _on_returned(self, outcome: Any) -> None:  # pragma: no cover - subclasses'
        raise NotImplementedError

    def _on_errored(self, exc: Exception) -> None:
        self.failed.emit(f"internal error: {type(exc).__name__}: {exc}")

    def _on_finished(self) -> None:
        self._worker = None
        self._run = None

    def cancel(self) -> None:
        """Stop the running run after the step in hand."""
        if self._run is not None:
            self._run.cancel.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop for good (window close): cancel and wait for the run to wind down."""
        run = self._run
        self.cancel()
        # No worker.quit(): a quit worker stops driving the generator at its next yield,
        # which would then never finish (nor its helper thread be waited for).
        if run is not None and run.entered.is_set():
            run.done.wait(timeout)  # (a worker that never started has nothing to stop)
        self._worker = None
        self._run = None


class RunProgressView:
    """The progress part of a panel that shows a `BackgroundRunner`'s run: a mixin for
    a widget with ``bar`` (QProgressBar), ``status`` (QLabel) and ``_busy(bool)``."""

    def _on_started(self, where: str) -> None:
        self._busy(True)
        self.bar.setValue(0)
        self.status.setText(f"Running on {where}…")

    def _on_progress(self, percent: int, stage: str) -> None:
        self.bar.setValue(percent)
        self.status.setText(stage if stage.endswith("…") else f"{stage}: {percent} %")

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

import traceback
from collections.abc import Generator
from dataclasses import dataclass

from PySide6.QtCore import QObject

from designer.gui.document import Document
from designer.gui.studies.background import BackgroundRunner, RunEvents, relay
from designer.model.errors import DesignError
from designer.solver import Cancelled, SolverError

__all__ = ["StudyRunner"]


@dataclass(frozen=True)
class _Run(RunEvents):
    """What one study needs, taken from the live design on the GUI thread."""

    generation: int
    text: str
    elements: str
    workers: int | None


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

    run.entered.set()
    try:
        if run.cancel.is_set():
            return _Outcome(run.generation)
        yield (0, 0, "Preparing…" if run.workers == 0 else "Starting the local Dask cluster…")
        topo = loads(run.text)
        if run.cancel.is_set():
            return _Outcome(run.generation)
        report = yield from relay(
            run,
            "failure-study",
            lambda progress: failure_study(
                topo, elements=run.elements, workers=run.workers, progress=progress
            ),
        )
        return _Outcome(run.generation, report=report)
    except Cancelled:
        return _Outcome(run.generation)
    except (DesignError, SolverError, ValueError) as exc:
        return _Outcome(run.generation, error=str(exc))
    except Exception as exc:  # a bug: one line, keep the GUI alive
        traceback.print_exc()
        return _Outcome(run.generation, error=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        run.done.set()


class StudyRunner(BackgroundRunner):
    """Runs failure studies of one `Document`'s design, one at a time (signals: see
    `BackgroundRunner`; ``result_ready`` carries a `designer.studies.FailureReport` of
    the design as it is, ``failed`` also says when the design was edited meanwhile)."""

    def __init__(self, document: Document, parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.latest = None
        document.topology_replaced.connect(lambda _topo: self.cancel())

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
        self._launch(_study, run, "this process" if workers == 0 else "local Dask cluster")
        return True

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

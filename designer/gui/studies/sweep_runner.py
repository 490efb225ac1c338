"""`SweepRunner`: one design sweep (`designer.studies.sweep_study`) at a time, in the
background, with progress and a cooperative Cancel.

As `designer.gui.studies.runner.StudyRunner` (both on `background`): a superqt worker drives a
generator that runs the sweep on a helper thread and relays its progress; Cancel is
checked after each finished variant (the progress callback raises `Cancelled`, which
stops the serial loop, or cancels the outstanding Dask futures).  A sweep builds its
variants from a template, so it does not depend on the open design and is never stale.
"""

from __future__ import annotations

import traceback
from collections.abc import Generator
from dataclasses import dataclass

from designer.gui.studies.background import BackgroundRunner, RunEvents, relay
from designer.model.errors import DesignError
from designer.solver import Cancelled, SolverError

__all__ = ["SweepRunner"]


@dataclass(frozen=True)
class _Run(RunEvents):
    template: str
    grid: dict
    sets: dict
    workers: int | None


def _sweep(run: _Run) -> Generator[tuple[int, int, str], None, tuple]:
    """Yields ``(done, total, stage)``; returns ``(report, error)`` (both None: cancelled)."""
    from designer.studies import sweep_study

    run.entered.set()
    try:
        if run.cancel.is_set():
            return None, None
        yield (
            0,
            0,
            "Building variants…" if run.workers == 0 else "Starting the local Dask cluster…",
        )
        report = yield from relay(
            run,
            "design-sweep",
            lambda progress: sweep_study(
                run.template, run.grid, run.sets, workers=run.workers, progress=progress
            ),
        )
        return report, None
    except Cancelled:
        return None, None
    except (DesignError, SolverError, ValueError) as exc:
        return None, str(exc)
    except Exception as exc:  # a bug: one line, keep the GUI alive
        traceback.print_exc()
        return None, f"internal error: {type(exc).__name__}: {exc}"
    finally:
        run.done.set()


class SweepRunner(BackgroundRunner):
    """Runs design sweeps one at a time (signals: see `BackgroundRunner`;
    ``result_ready`` carries the `designer.studies.SweepReport`)."""

    def start(self, template: str, grid: dict, sets: dict, workers: int | None = 0) -> bool:
        """Sweep ``grid`` over ``template`` (``workers`` 0: here, None: local Dask);
        False when a sweep is already running."""
        if self.busy:
            return False
        run = _Run(template, dict(grid), dict(sets), workers)
        self._launch(_sweep, run, "this process" if workers == 0 else "local Dask cluster")
        return True

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

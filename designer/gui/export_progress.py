"""`ExportProgress`: File > Export of a big design, with a progress bar and Cancel.

The same dialog as opening a big file (`designer.gui.open_progress.OpenProgress`, whose
bar, label, Cancel and Escape it reuses), for the two kinds of export:

- a diagram (SVG, PNG, PDF) is painted from the canvas, which only the GUI thread may
  touch: it is painted in steps (`designer.gui.export.png_steps`: bands of rows) with the
  event loop run between them, so the window stays painted and Cancel is heard; SVG and
  PDF are one vector document each, painted in one step.  The file is then written on a
  worker thread.
- any other format (`designer.io.graph_export`) needs only the model: it is written on a
  worker thread into a hidden file next to the target, renamed over it when done.

A cancelled export writes nothing: a diagram is in memory until its last step (then
written atomically, `designer.io.atomic`), and the hidden file of another format is
deleted.  The dialog shows only for a design of at least `MIN_LINKS` links: a small
export is over before a dialog could be read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication, QWidget

from designer.gui.canvas.scene import FabricScene
from designer.gui.export import ExportError, Steps, drain, pdf_bytes, png_steps, svg_bytes
from designer.gui.export_sheet import Sheet
from designer.gui.open_progress import MIN_LINKS, OpenProgress
from designer.gui.workers import create_worker
from designer.io.atomic import atomic_write_bytes

__all__ = ["ExportProgress", "diagram_steps"]


def _one_step(make: Callable[[], bytes]) -> Steps:
    yield 0.0
    data = make()
    yield 1.0
    return data


def diagram_steps(
    scene: FabricScene, path: Path, *, scale: float | None = None, sheet: Sheet | None = None
) -> Steps:
    """The export of ``scene`` to ``path`` (by its suffix: .svg, .png, .pdf) in steps."""
    suffix = path.suffix.lower()
    if suffix == ".png":
        return png_steps(scene, scale=scale, sheet=sheet)
    if suffix == ".svg":
        return _one_step(lambda: svg_bytes(scene, sheet=sheet))
    if suffix == ".pdf":
        return _one_step(lambda: pdf_bytes(scene, sheet=sheet))
    raise ExportError(f"{os.fspath(path)}: not a diagram format {suffix or '(none)'!r}")


def _write(path: Path, data: bytes) -> None:
    try:
        atomic_write_bytes(path, data)
    except OSError as err:
        raise ExportError(f"{os.fspath(path)}: cannot write: {err.strerror or err}") from err


class ExportProgress(OpenProgress):
    """A modal dialog that exports a design, with its progress and Cancel."""

    STAGES: ClassVar = {"drawing": (0, 900), "writing": (900, 1000)}
    LABELS: ClassVar = {
        "drawing": "Drawing {name}…",
        "writing": "Writing {name}…",
        "exporting": "Exporting {name}…",
    }
    BUSY = ("writing", "exporting")
    TITLE = "Exporting"

    def __init__(self, parent: QWidget | None, path: Path):
        super().__init__(parent, path.name)
        self.setObjectName("export_progress")

    @staticmethod
    def wanted(scene: FabricScene) -> bool:
        """Whether an export of ``scene``'s design is big enough to show the dialog."""
        return scene.document.topology.link_count() >= MIN_LINKS

    def export_diagram(self, steps: Steps, path: Path) -> bool:
        """Run ``steps`` (`diagram_steps`) with the event loop live in between, then
        write ``path`` atomically; False if the user cancelled (nothing written).
        Raises `ExportError` (naming the file) when the export fails."""
        self._show("drawing", 0, 1, force=True)
        self.show()
        try:
            while True:
                try:
                    done = next(steps)
                except StopIteration as stop:
                    data = stop.value
                    break
                self._show("drawing", round(done * 1000), 1000)
                QApplication.processEvents()
                if self._stop.is_set():
                    return False
        except ExportError as exc:
            raise ExportError(f"{os.fspath(path)}: {exc}") from None
        finally:
            steps.close()  # a cancelled export restores the scene here
        self._buttons.setEnabled(False)  # an atomic write is over in a moment
        self._in_worker("writing", _write, path, data)
        return True

    def cancel(self) -> None:
        """Stop the export at its next step (the last write is not stopped)."""
        if self.stage != "writing":
            self._stop.set()
            self._label.setText("Cancelling…")

    def export_file(self, write: Callable[[Path], None], path: Path) -> bool:
        """Call ``write(hidden)`` on a worker thread, ``hidden`` a file next to
        ``path`` with its suffix, and rename it over ``path``; False (and no file) if
        the user cancelled."""
        hidden = path.with_name(f".{path.stem}.exporting{path.suffix}")
        try:
            if not self._in_worker("exporting", write, hidden):
                return False
            os.replace(hidden, path)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(hidden)

    def _in_worker(self, stage: str, function: Callable, *args) -> bool:
        """Run ``function(*args)`` on a worker with the event loop live; False if the
        user cancelled meanwhile.  Raises what ``function`` raises."""
        self._outcome = (None, None)
        self._loop = QEventLoop()
        self._show(stage, 0, 1, force=True)
        if not self.isVisible():
            self.show()
        create_worker(
            function,
            *args,
            _connect={"errored": self._on_worker_errored, "finished": self._on_worker_finished},
        )
        self._loop.exec()
        self._loop = None
        _, error = self._outcome
        self._outcome = (None, None)
        if error is not None:
            raise error
        return not self._stop.is_set()


def run_export(
    parent: QWidget | None,
    scene: FabricScene,
    path: Path,
    *,
    scale: float | None = None,
    sheet: Sheet | None = None,
) -> bool:
    """Export the diagram to ``path``, behind `ExportProgress` for a big design; False
    if the user cancelled."""
    steps = diagram_steps(scene, path, scale=scale, sheet=sheet)
    if not ExportProgress.wanted(scene):
        try:
            data = drain(steps)
        except ExportError as exc:
            raise ExportError(f"{os.fspath(path)}: {exc}") from None
        _write(path, data)
        return True
    dialog = ExportProgress(parent, path)
    try:
        return dialog.export_diagram(steps, path)
    finally:
        dialog.hide()  # (close() would be Cancel: see `reject`)
        dialog.deleteLater()

"""`OpenProgress`: the dialog that opens a big design, with its progress and Cancel.

Opening a 16,384-GPU design takes a few seconds: reading and checking the file and
building the model, then the canvas (its pods collapsed, `designer.gui.canvas.collapse`:
about a second; a design drawn in full makes an item per node and link, seconds more
at that size).  The first part is
pure Python with no Qt in it, so it runs on a superqt worker (Qt's thread pool) while
this dialog's own event loop keeps the window painted, the bar moving and Cancel
working; a cancelled or failed load changes nothing.  The second part must run on the
GUI thread and cannot be interrupted halfway (a half-built canvas is no state to leave
the user in): the event loop does not run during it (timers and queued work must not
touch a half-built canvas), so the dialog repaints itself on each update, at most every
`MIN_INTERVAL_S`, and Cancel is off.

Reading and checking the file are single calls that report nothing on the way, so the
bar is busy then; building the model and drawing share it about evenly, as the time
goes on a 16k design opened collapsed.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import QEventLoop, Qt, Signal
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from designer.gui.workers import create_worker
from designer.io.fabric_json import LoadCancelled, load
from designer.model.topology import Topology

#: Files at least this big open through the dialog (a small one opens before it shows).
MIN_BYTES = 1 << 20
#: Designs with at least this many links are drawn with the dialog (New from Template).
MIN_LINKS = 20_000

MIN_INTERVAL_S = 0.1

# (start, end) of each stage on the bar, in thousandths; reading and checking the file
# are single calls that report nothing on the way (the bar is busy then).
_STAGES = {"building": (0, 500), "drawing": (500, 1000)}
_BUSY = ("reading", "checking")
_LABELS = {"reading": "Reading {name}…", "checking": "Checking {name}…",
           "building": "Building the model of {name}…", "drawing": "Drawing {name}…"}


class OpenProgress(QDialog):
    """A modal dialog that loads a design file (`load`) and then shows the canvas being
    drawn (`drawing`, a slot for the canvas's ``build_progress``)."""

    _progressed = Signal(str, int, int)   # from the worker thread: queued to this one
    #: Stages on the bar, their labels and those that report no progress (subclasses
    #: such as `designer.gui.export_progress.ExportProgress` name their own).
    STAGES, LABELS, BUSY = _STAGES, _LABELS, _BUSY
    TITLE = "Opening design"

    def __init__(self, parent: QWidget | None, name: str):
        super().__init__(parent)
        self.setObjectName("open_progress")
        self.setWindowTitle(self.TITLE)
        self.setWindowModality(Qt.WindowModality.ApplicationModal)
        self._name = name
        self._label = QLabel(f"Opening {name}…")
        self._bar = QProgressBar()
        self._bar.setRange(0, 1000)
        self._bar.setMinimumWidth(360)
        self._buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self._buttons.rejected.connect(self.cancel)
        layout = QVBoxLayout(self)
        layout.addWidget(self._label)
        layout.addWidget(self._bar)
        layout.addWidget(self._buttons)
        self._stop = threading.Event()
        self._last = 0.0
        self.stage = ""
        self._progressed.connect(self._show)
        self._loop: QEventLoop | None = None
        self._outcome: tuple[Topology | None, BaseException | None] = (None, None)

    # ------------------------------------------------------------------ loading
    def load(self, path: Path) -> Topology | None:
        """The design in ``path``, read on a worker thread while this dialog runs the
        event loop; None if the user cancelled.  Raises what `load` raises
        (`FileFormatError`, with its one-line message)."""
        self._outcome = (None, None)
        self._loop = QEventLoop()
        self._show("reading", 0, 1, force=True)
        self.show()
        create_worker(load, path, progress=self._on_progress,
                      _connect={"returned": self._on_worker_returned,
                                "errored": self._on_worker_errored,
                                "finished": self._on_worker_finished})
        self._loop.exec()  # until the worker's `finished`, queued after its outcome
        self._loop = None
        topology, error = self._outcome
        self._outcome = (None, None)
        if error is not None:
            raise error
        return topology

    def _on_worker_returned(self, topology: Topology) -> None:
        self._outcome = (topology, None)

    def _on_worker_errored(self, error: Exception) -> None:
        # A cancelled load changes nothing; any other error is raised by `load` above.
        self._outcome = (None, None if isinstance(error, LoadCancelled) else error)

    def _on_worker_finished(self) -> None:
        if self._loop is not None:
            self._loop.quit()

    def _on_progress(self, stage: str, done: int, total: int) -> bool:
        """`designer.io.fabric_json.Progress`, on the worker thread."""
        if self._stop.is_set():
            return False
        self._progressed.emit(stage, done, total)
        return True

    def cancel(self) -> None:
        """Stop the load at its next progress report (the drawing cannot be stopped)."""
        if self.stage != "drawing":
            self._stop.set()
            self._label.setText("Cancelling…")

    def reject(self) -> None:  # Escape: cancel, do not just hide the dialog
        self.cancel()

    # ------------------------------------------------------------------ drawing
    def draw(self, scene, replace) -> None:
        """Call ``replace()`` (which makes ``scene``'s items, a canvas with a
        ``build_progress`` signal, or None) with the drawing shown, under a busy cursor."""
        self._show("drawing", 0, 1, force=True)
        self._buttons.setEnabled(False)
        if not self.isVisible():
            self.show()
        self.repaint()
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        if scene is not None:
            scene.build_progress.connect(self.drawing)
        try:
            replace()
        finally:
            if scene is not None:
                scene.build_progress.disconnect(self.drawing)
            QApplication.restoreOverrideCursor()

    def drawing(self, done: int, total: int) -> None:
        """Slot for the canvas's ``build_progress``: the event loop is not running, so
        the dialog repaints itself."""
        if self._show("drawing", done, total):
            self.repaint()

    def _show(self, stage: str, done: int, total: int, force: bool = False) -> bool:
        """Show ``stage`` at ``done`` of ``total``; whether anything changed (updates
        closer than `MIN_INTERVAL_S` within a stage are skipped)."""
        now = time.monotonic()
        if not force and stage == self.stage and now - self._last < MIN_INTERVAL_S:
            return False
        self._last, self.stage = now, stage
        if stage in self.BUSY:
            self._bar.setRange(0, 0)
        else:
            lo, hi = self.STAGES.get(stage, (0, 1000))
            self._bar.setRange(0, 1000)
            self._bar.setValue(lo + round((hi - lo) * min(done / total, 1.0)) if total else lo)
        if not self._stop.is_set():
            self._label.setText(self.LABELS.get(stage, "{name}").format(name=self._name))
        return True

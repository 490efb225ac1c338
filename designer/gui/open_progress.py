"""`OpenProgress`: how far the opening of a big design has got, in the status bar.

Opening a 16,384-GPU design holds the GUI thread for seconds: reading and checking the
file, building the model, then an item per node and link on the canvas.  The event loop
does not run meanwhile (running it would let timers and queued work touch a half-built
canvas), so the bar repaints the status bar itself on each update, at most every
`MIN_INTERVAL_S`.  The stages' shares of the bar follow where the time goes on a 16k
design (checking ~30 %, building the model ~15 %, drawing the links ~55 %).
"""

from __future__ import annotations

import time

from PySide6.QtWidgets import QMainWindow, QProgressBar

#: Files at least this big get a progress bar (a small one opens before it would show).
MIN_BYTES = 1 << 20

MIN_INTERVAL_S = 0.1

# (start, end) of each stage on the bar, in thousandths.
_STAGES = {"checking": (0, 300), "building": (300, 450), "drawing": (450, 1000)}
_LABELS = {"checking": "Checking", "building": "Building", "drawing": "Drawing"}


class OpenProgress:
    """A progress bar in ``window``'s status bar while a design opens (a context
    manager: it goes away on exit).  `loading` is the ``progress`` callback of
    `designer.io.fabric_json.load`; `drawing` is a slot for the canvas's
    ``build_progress`` signal."""

    def __init__(self, window: QMainWindow, name: str):
        self._status = window.statusBar()
        self._bar = QProgressBar()
        self._bar.setObjectName("open_progress")
        self._bar.setRange(0, 1000)
        self._bar.setMaximumWidth(260)
        self._bar.setToolTip(f"Opening {name}")
        self._last = 0.0
        self.stage = ""

    def __enter__(self) -> OpenProgress:
        self._status.addPermanentWidget(self._bar)
        self._bar.show()
        self._show("checking", 0, 1, force=True)
        return self

    def __exit__(self, *exc) -> None:
        self._status.removeWidget(self._bar)
        self._bar.setParent(None)  # gone now, not at the next turn of the event loop
        self._bar.deleteLater()
        self._status.repaint()

    def loading(self, stage: str, done: int, total: int) -> None:
        self._show(stage, done, total)

    def drawing(self, done: int, total: int) -> None:
        self._show("drawing", done, total)

    def _show(self, stage: str, done: int, total: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and stage == self.stage and now - self._last < MIN_INTERVAL_S:
            return
        self._last, self.stage = now, stage
        lo, hi = _STAGES.get(stage, (0, 1000))
        self._bar.setValue(lo + round((hi - lo) * min(done / total, 1.0)) if total else lo)
        self._bar.setFormat(f"{_LABELS.get(stage, stage)} %p%")
        self._status.repaint()  # now: the event loop will not run until the design is open

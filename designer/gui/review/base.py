"""`ReviewDock`: what the three review docks share: a headline with the key answer at
the top (readable without scrolling at any window size), a body under it, and a note
while the answer is being worked out again after an edit."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QVBoxLayout, QWidget

from designer.gui.review.runner import ReviewRunner


class ReviewDock(QDockWidget):
    """A dock showing one of the `ReviewRunner`'s answers (``what``)."""

    what = ""

    def __init__(self, title: str, runner: ReviewRunner, parent: QWidget | None = None):
        super().__init__(title, parent)
        self.setObjectName(f"review_{self.what}_dock")
        self.runner = runner
        body = QWidget(self)
        self.layout_ = QVBoxLayout(body)
        self.layout_.setContentsMargins(6, 4, 6, 4)
        self.layout_.setSpacing(4)
        self.headline = QLabel("Checking…", body)
        self.headline.setObjectName(f"review_{self.what}_headline")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.headline.font()
        font.setBold(True)
        self.headline.setFont(font)
        self.layout_.addWidget(self.headline)
        self.setWidget(body)
        self.setMinimumWidth(220)
        runner.answer.connect(self._on_runner_answer)
        runner.started.connect(self._on_runner_started)

    def replay(self) -> None:
        """Show the runner's latest answer (a dock made after it came): the subclass
        calls it once its body is built."""
        if self.what in self.runner.latest:
            self._on_runner_answer(self.what, self.runner.latest[self.what])

    def _on_runner_started(self, _generation: int) -> None:
        text = self.headline.text()
        if not text.endswith(" (updating…)") and text != "Checking…":
            self.headline.setText(text + " (updating…)")

    def _on_runner_answer(self, what: str, value: Any) -> None:
        if what != self.what:
            return
        if isinstance(value, tuple) and value[:1] == ("error",):
            self.headline.setText(f"Could not work this out: {value[1]}")
            self.show_error()
            return
        self.show_answer(value)

    def show_answer(self, value: Any) -> None:  # pragma: no cover - each dock has one
        raise NotImplementedError

    def show_error(self) -> None:
        """Empty the body after a failed answer."""

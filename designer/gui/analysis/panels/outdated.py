"""`OutdatedMark`: how a panel says its figures are of the design before the last edit.

While a re-solve runs (a large design takes seconds), the panels still show the previous
result; unmarked, a user reads old figures as the new design's.  The mark greys the
panel's plot and table out and shows a badge beside its controls ("Updating…", or "Out
of date" once the solve was cancelled) until the new result is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QGraphicsItem, QLabel, QWidget

#: Opacity of a panel's contents while they are out of date.
FADED_OPACITY = 0.35

UPDATING = "Updating…"
CANCELLED = "Out of date"

_TIPS = {
    UPDATING: "The design changed: these figures are of the design before the edit, "
    "until the analysis running now is done",
    CANCELLED: "The design changed and its analysis was cancelled: these figures are of "
    "the design before the edit (the next edit solves again)",
}


class OutdatedMark:
    """The badge and the fading of one panel (see module docstring).

    Parameters
    ----------
    parent : QWidget
        The panel's body; the badge is its child, to be put in the panel's toolbar.
    """

    def __init__(self, parent: QWidget):
        self.badge = QLabel(UPDATING, parent)
        self.badge.setObjectName("outdated-badge")
        self.badge.setStyleSheet(
            "QLabel { border-radius: 3px; padding: 1px 6px;"
            " background: rgba(230, 159, 0, 0.85); color: black; }"
        )
        self.badge.hide()
        self.on = False
        self._plot: QGraphicsItem | None = None
        self._widgets: list[QWidget] = []

    def fade(self, plot: QGraphicsItem, widgets: Sequence[QWidget] = ()) -> None:
        """Grey ``plot`` (the graphics layout holding the plot) and ``widgets`` (a
        table) out while marked: the plot through its opacity, the widgets' text in the
        palette's disabled colour (they stay usable)."""
        self._plot = plot
        self._widgets = list(widgets)
        self._apply()

    def set(self, on: bool, text: str = UPDATING) -> None:
        """Mark (``on``) with ``text`` on the badge, or unmark."""
        self.on = on
        self.badge.setText(text)
        self.badge.setToolTip(_TIPS.get(text, ""))
        self.badge.setVisible(on)
        self._apply()

    def _apply(self) -> None:
        if self._plot is not None:
            self._plot.setOpacity(FADED_OPACITY if self.on else 1.0)
        for widget in self._widgets:
            widget.setPalette(_greyed(widget.palette()) if self.on else QPalette())

    @property
    def faded(self) -> bool:
        """Whether the contents are greyed out now."""
        return self._plot is not None and self._plot.opacity() < 1.0


def _greyed(palette: QPalette) -> QPalette:
    """``palette`` with its text in the colour of disabled text."""
    palette = QPalette(palette)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText):
        grey = palette.color(QPalette.ColorGroup.Disabled, role)
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            palette.setColor(group, role, grey)
    return palette

"""`OutdatedMark`: how a panel says its figures are of the design before the last edit.

While a re-solve runs (a large design takes seconds), the panels still show the previous
result; unmarked, a user reads old figures as the new design's.  The mark greys the
panel's plot and table out and shows a badge beside its controls ("Updating…", or "Out
of date" once the solve was cancelled) until the new result is drawn.
"""

from __future__ import annotations

from PySide6.QtWidgets import QGraphicsOpacityEffect, QLabel, QWidget

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
        self._effect: QGraphicsOpacityEffect | None = None

    def fade(self, contents: QWidget) -> None:
        """Grey ``contents`` (the plot, or the plot and table) out while marked."""
        self._effect = QGraphicsOpacityEffect(contents)
        self._effect.setOpacity(FADED_OPACITY)
        self._effect.setEnabled(self.on)
        contents.setGraphicsEffect(self._effect)

    def set(self, on: bool, text: str = UPDATING) -> None:
        """Mark (``on``) with ``text`` on the badge, or unmark."""
        self.on = on
        self.badge.setText(text)
        self.badge.setToolTip(_TIPS.get(text, ""))
        self.badge.setVisible(on)
        if self._effect is not None:
            self._effect.setEnabled(on)

    @property
    def faded(self) -> bool:
        """Whether the contents are greyed out now."""
        return self._effect is not None and self._effect.isEnabled()

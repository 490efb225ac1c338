"""`marked_line`: a guide line across a plot with a text label beside it.

Why not ``pg.InfiniteLine(label=...)``: its label (an ``InfLineLabel``, a child item of the
line) and the line refer to each other, so a dropped line outlives every redraw until the
cyclic garbage collector frees the pair, in no set order.  Such pairs crashed the
interpreter inside Shiboken's deallocation of the label (a segfault in the collection of
`designer.gui.document.settle_heap`).  Here the line and its label are two items of the
plot with no reference to each other: a redraw's ``plot.clear()`` frees both at once, by
reference count.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPen


def marked_line(plot: pg.PlotItem, value: float, angle: float, pen: QPen, text: str,
                at: tuple[float, float], anchor: tuple[float, float], color: QColor,
                fill: QColor) -> pg.InfiniteLine:
    """Add a line at ``value`` (``angle`` 90: vertical, 0: horizontal) and the label
    ``text`` at the data point ``at``, placed by ``anchor`` (as `pg.TextItem`'s: (0, 0.5)
    puts its left middle there); the label is left out of the auto-range.

    Returns the line.
    """
    line = pg.InfiniteLine(value, angle=angle, pen=pen)
    plot.addItem(line)
    label = pg.TextItem(text, color=color, fill=fill, anchor=anchor)
    label.setPos(*at)
    plot.addItem(label, ignoreBounds=True)
    return line

"""A failure study on the canvas: every studied element coloured by the slowdown its
failure causes, with a legend.

Links take the colour themselves (`LinkItem.set_color`, no geometry change; the
aggregated bundles of collapsed groups show their worst member,
`FabricScene.set_link_values`); switches and NICs get a coloured ring drawn by one
overlay item (`SlowdownMarks`), so the canvas's own node painting is untouched.  The
scale is *plasma*, from no slowdown (1.00×, dark blue) to the study's worst finite
slowdown (yellow); a failure that cuts ranks off is vermillion; links the study did not
fail are grey.  Every member of a class shares its class's figure, hence its colour.

While on, the analysis overlay's utilisation colouring steps aside
(``AnalysisOverlay.colour_override``): a new solve (after a what-if, say) repaints the
slowdowns, and turning the colouring off hands the links back to utilisation.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from designer.gui.analysis.overlay import Legend
from designer.gui.canvas.geometry import ICON_RECT

__all__ = ["DISCONNECTS", "NOT_STUDIED", "SlowdownColours", "SlowdownMarks", "slowdown_color"]

CMAP = pg.colormap.get("plasma")
_LUT = [CMAP.map(0.85 * i / 255, mode="qcolor") for i in range(256)]  # (no pale end)
DISCONNECTS = QColor("#D55E00")
NOT_STUDIED = QColor(150, 150, 150, 70)
RING_PX = 4.0  # a node's ring, screen pixels


def slowdown_color(slowdown: float | None, worst: float) -> QColor:
    """The colour of a failure with ``slowdown`` (None or infinite: it disconnects
    ranks) on a scale whose top is ``worst``."""
    if slowdown is None or not math.isfinite(slowdown):
        return DISCONNECTS
    span = max(worst - 1.0, 1e-9)
    t = min(max((slowdown - 1.0) / span, 0.0), 1.0)
    return _LUT[int(t * 255)]


class SlowdownLegend(Legend):
    """The slowdown scale in the canvas's corner (the utilisation legend's look)."""

    END_COLOUR = DISCONNECTS
    WIDTH = 250

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.worst = 1.0
        self.figure = "collective"

    def colour_at(self, t: float) -> QColor:
        return _LUT[round(t * 255)]

    def labels(self) -> tuple[str, str, str, str]:
        return (
            "1.00×",
            f"{self.worst:.2f}×",
            "disconnects",
            f"{self.figure} slowdown when it fails",
        )


class SlowdownMarks(QGraphicsItem):
    """Coloured rings around the studied switches and NICs (one item for all)."""

    def __init__(self):
        super().__init__()
        self.setZValue(11)  # over the nodes (10)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.marks: list[tuple[object, QColor]] = []  # (node item, colour)
        self._bounds = QRectF()

    def set_marks(self, marks: list[tuple[object, QColor]]) -> None:
        self.prepareGeometryChange()
        self.marks = list(marks)
        bounds = QRectF()
        pad = ICON_RECT.adjusted(-40, -40, 40, 40)
        for item, _c in self.marks:
            bounds = bounds.united(pad.translated(item.pos()))
        self._bounds = bounds
        self.setVisible(bool(self.marks))
        self.update()

    def colours(self) -> dict[str, QColor]:
        """``{node id: ring colour}``."""
        return {item.node_id: c for item, c in self.marks}

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        painter.setBrush(Qt.BrushStyle.NoBrush)
        ring = ICON_RECT.adjusted(-5, -5, 5, 5)
        for item, colour in self.marks:
            if getattr(item, "hidden", False) or not shiboken6.isValid(item):
                continue
            pen = QPen(colour, RING_PX)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.drawRoundedRect(ring.translated(item.pos()), 6, 6)


class SlowdownColours(QObject):
    """Shows a `FailureReport` on the canvas while ``on`` (see the module docstring)."""

    def __init__(self, scene, view, overlay=None, parent: QObject | None = None):
        super().__init__(parent)
        self.scene, self.view, self.overlay = scene, view, overlay
        self.report = None
        self.on = False
        self.legend = SlowdownLegend(view.viewport())
        self.legend.hide()
        self._marks: SlowdownMarks | None = None
        self._place_legend()
        view.view_changed.connect(self._place_legend)

    # ------------------------------------------------------------ state
    def show_report(self, report) -> None:
        """Colour by ``report`` (and turn the colouring on)."""
        self.report = report
        self.set_on(True)

    def on_topology_replaced(self, _topology) -> None:
        """Another design opened: its canvas shows no study (`clear`)."""
        self.clear()

    def clear(self) -> None:
        """No study any more (another design opened): back to utilisation.

        Nothing is repainted here: the old design's items are about to go, and a
        repaint pass started over them now would hold them until it ran out; the new
        design's solve colours the new items."""
        was_on = self.on
        self.report = None
        self.on = False
        if self.overlay is not None:
            self.overlay.colour_override = None
        if was_on:
            self.legend.hide()
            if self._marks is not None and shiboken6.isValid(self._marks):
                self._marks.set_marks([])

    def set_on(self, on: bool) -> None:
        """Slowdown colours (True) or the analysis overlay's again (False)."""
        self.on = bool(on) and self.report is not None
        if self.overlay is not None:
            self.overlay.colour_override = self.paint if self.on else None
            self.overlay.apply()  # calls `paint` while on; utilisation otherwise
        elif self.on:
            self.paint()
        if not self.on:
            self.legend.hide()
            self.scene.clear_link_values()
            if self.overlay is None:
                for item in list(self.scene.links.values()):
                    item.set_color(None)
            if self._marks is not None and shiboken6.isValid(self._marks):
                self._marks.set_marks([])

    def colours(self) -> tuple[dict[str, float | None], float]:
        """``({element id: slowdown (inf: disconnects)}, worst finite slowdown)``."""
        values: dict[str, float] = {}
        for e in self.report.elements if self.report is not None else ():
            if "+" in e.kind:
                continue  # a sampled pair colours neither element
            values[e.id] = math.inf if not e.connected else (e.slowdown or 1.0)
        finite = [v for v in values.values() if math.isfinite(v)]
        return values, max(finite, default=1.0)

    # ------------------------------------------------------------ painting
    def paint(self) -> None:
        """Recolour the links and ring the nodes from the report."""
        if not self.on or not shiboken6.isValid(self.scene):
            return
        values, worst = self.colours()
        kinds = {e.id: e.kind for e in self.report.elements}
        links = self.scene.links
        link_ids = [i for i in values if kinds[i] == "link"]
        self.scene.set_link_values(
            link_ids, [values[i] for i in link_ids], lambda v: slowdown_color(v, worst)
        )
        self.scene.recolour_held = True  # one repaint for all
        try:
            for lid, item in list(links.items()):
                v = values.get(lid)
                c = NOT_STUDIED if v is None else slowdown_color(v, worst)
                if item.color != c:
                    item.set_color(c)
        finally:
            self.scene.recolour_held = False
        nodes = self.scene.nodes
        marks = [
            (nodes[i], slowdown_color(values[i], worst))
            for i in values
            if kinds[i] == "node" and i in nodes
        ]
        self._marks_item().set_marks(marks)
        self.legend.worst = worst
        self.legend.figure = "step" if self.report.training is not None else "collective"
        self.legend.show()
        self.legend.update()
        self.scene.request_repaint()
        self.view.viewport().update()

    def _marks_item(self) -> SlowdownMarks:
        if (
            self._marks is None
            or not shiboken6.isValid(self._marks)
            or self._marks.scene() is not self.scene
        ):
            self._marks = SlowdownMarks()
            self.scene.addItem(self._marks)
            self.scene.overlays.add(self._marks)  # far-out views paint it too
        return self._marks

    def _place_legend(self) -> None:
        vp = self.view.viewport()
        # The utilisation legend's corner: only one of the two shows at a time.
        self.legend.move(10, max(vp.height() - self.legend.height() - 10, 0))

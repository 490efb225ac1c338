"""What a picture export adds around the diagram: a legend, a title block, and pages of
a standard size.

* **Legend**: a swatch per link technology the design uses, in the canvas's colours
  (`tech_color`); or, when the export carries a solve's utilisation colours, the
  utilisation scale.
* **Title block**: the design's name, the date, the scenario (collective and message
  size) and a headline result when one is given (the GUI passes the live solve's).
* **Pages** (PDF): A4, A3, Letter or Tabloid, landscape, with 10 mm margins; the
  diagram either *scaled* to fit one page or *tiled* over as many pages as it needs at
  print scale (1 canvas unit = 0.75 pt, as the one-page PDF), every page carrying the
  title block with its page number.  SVG and PNG get the legend and title block as a
  band under the diagram; a page size applies to PDF only.

`Sheet` holds the choices; the CLI (``export --legend --title-block --page A4 --fit
tile``) and File > Export (`ask_sheet`) fill it.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass

from PySide6.QtCore import QMarginsF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPageLayout, QPageSize, QPainter, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QWidget,
)

from designer.gui.canvas.style import tech_color
from designer.io.exports.common import SATURATED_COLOR, utilisation_color
from designer.model.scenario import Scenario
from designer.model.topology import Topology

__all__ = [
    "BAND",
    "FITS",
    "PAGES",
    "Sheet",
    "ask_sheet",
    "band_height",
    "page_layout",
    "paint_band",
    "title_lines",
]

PAGES = {
    "A4": QPageSize.PageSizeId.A4,
    "A3": QPageSize.PageSizeId.A3,
    "Letter": QPageSize.PageSizeId.Letter,
    "Tabloid": QPageSize.PageSizeId.Tabloid,
}
FITS = ("scale", "tile")
BAND = 64.0  # scene units: the height of the legend / title band
PAGE_MARGIN_MM = 10.0
_FONT = QFont("Sans Serif", 8)
_BOLD = QFont("Sans Serif", 10, QFont.Weight.Bold)


@dataclass(frozen=True)
class Sheet:
    """What to add to a picture export (all off: the plain diagram, as before)."""

    legend: bool = False
    title_block: bool = False
    page: str | None = None  # a key of PAGES; PDF only
    fit: str = "scale"  # "scale" to one page or "tile" over pages
    headline: str | None = None
    date: str | None = None  # ISO date; today when None
    utilisation: bool = False  # the legend shows the utilisation scale

    def __post_init__(self) -> None:
        if self.page is not None and self.page not in PAGES:
            raise ValueError(f"page must be one of {', '.join(PAGES)}, got {self.page!r}")
        if self.fit not in FITS:
            raise ValueError(f"fit must be scale or tile, got {self.fit!r}")

    @property
    def band(self) -> bool:
        return self.legend or self.title_block


def band_height(sheet: Sheet | None) -> float:
    """Scene units the legend / title band adds under the diagram (0 without one)."""
    return BAND if sheet is not None and sheet.band else 0.0


def page_layout(sheet: Sheet) -> QPageLayout:
    """The landscape page of ``sheet.page`` with `PAGE_MARGIN_MM` margins."""
    m = PAGE_MARGIN_MM
    return QPageLayout(
        QPageSize(PAGES[sheet.page]),
        QPageLayout.Orientation.Landscape,
        QMarginsF(m, m, m, m),
        QPageLayout.Unit.Millimeter,
    )


def _size_text(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def title_lines(topology: Topology, sheet: Sheet, page: str | None = None) -> list[str]:
    """The title block's lines: name; date and page; scenario; headline."""
    try:
        s = Scenario.from_dict(topology.settings.get("scenario", {}))
        scenario = f"scenario: {s.collective} of {_size_text(s.bytes)}, {s.algorithm}"
    except Exception:  # a design without a valid scenario still prints
        scenario = "scenario: none"
    date = sheet.date or _dt.date.today().isoformat()
    lines = [
        topology.name or "Fabric design",
        f"{date}{'  ·  ' + page if page else ''}  ·  Fabric Designer",
        scenario,
    ]
    if sheet.headline:
        lines.append(sheet.headline)
    return lines


def _legend_entries(topology: Topology) -> list[tuple[str, QColor]]:
    used = sorted({link.tech for link in topology.links()})
    seen: dict[str, QColor] = {}
    for key in used:
        tech = topology.catalog.tech(key)
        seen.setdefault(tech.name, tech_color(tech.protocol, tech.family))
    return list(seen.items())


def paint_band(
    painter: QPainter, rect: QRectF, topology: Topology, sheet: Sheet, page: str | None = None
) -> None:
    """Paint the legend (left) and the title block (right) into ``rect``."""
    painter.save()
    painter.setPen(QPen(QColor("#9E9E9E"), 0.8))
    painter.drawLine(rect.topLeft(), rect.topRight())
    x, y = rect.left() + 6, rect.top() + 8
    if sheet.legend:
        painter.setFont(_FONT)
        if sheet.utilisation:
            steps = 20
            for i in range(steps):  # the canvas's scale (cividis, vermillion saturated)
                color = utilisation_color(0.01 + 0.98 * i / (steps - 1))
                painter.fillRect(QRectF(x + i * 6, y, 6, 10), QColor(color))
            painter.fillRect(QRectF(x + steps * 6 + 4, y, 10, 10), QColor(SATURATED_COLOR))
            painter.setPen(QColor("#333333"))
            painter.drawText(QPointF(x, y + 22), "0 %")
            painter.drawText(QPointF(x + steps * 6 - 20, y + 22), "99 %  saturated")
            painter.drawText(
                QPointF(x + steps * 6 + 20, y + 9), "link utilisation (busiest direction)"
            )
        else:
            col_w = 150.0
            for row, (name, color) in enumerate(_legend_entries(topology)):
                cx = x + (row // 3) * col_w
                cy = y + (row % 3) * 16
                painter.setPen(QPen(color, 3))
                painter.drawLine(QPointF(cx, cy + 5), QPointF(cx + 22, cy + 5))
                painter.setPen(QColor("#333333"))
                painter.drawText(QPointF(cx + 28, cy + 9), name)
    if sheet.title_block:
        lines = title_lines(topology, sheet, page)
        w = min(360.0, rect.width() * 0.6)
        box = QRectF(rect.right() - w - 6, rect.top() + 4, w, rect.height() - 8)
        painter.setPen(QPen(QColor("#333333"), 0.8))
        painter.drawRect(box)
        painter.setFont(_BOLD)
        painter.drawText(
            box.adjusted(6, 2, -6, 0),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
            painter.fontMetrics().elidedText(lines[0], Qt.TextElideMode.ElideRight, int(w - 12)),
        )
        painter.setFont(_FONT)
        for i, line in enumerate(lines[1:]):
            painter.drawText(
                QPointF(box.left() + 6, box.top() + 30 + i * 12),
                painter.fontMetrics().elidedText(line, Qt.TextElideMode.ElideRight, int(w - 12)),
            )
    painter.restore()


def tiles(width: float, height: float, page_w: float, page_h: float) -> list[QRectF]:
    """The diagram areas (scene units) of the pages that tile a ``width`` x ``height``
    diagram with pages holding ``page_w`` x ``page_h`` units, row by row."""
    cols = max(1, math.ceil(width / page_w - 1e-9))
    rows = max(1, math.ceil(height / page_h - 1e-9))
    return [
        QRectF(c * page_w, r * page_h, page_w, page_h) for r in range(rows) for c in range(cols)
    ]


def ask_sheet(parent: QWidget | None, suffix: str, *, utilisation: bool) -> Sheet | None:
    """File > Export's question for a picture: legend, title block and, for PDF, the
    page; None when cancelled."""
    dialog = QDialog(parent)
    dialog.setWindowTitle("Diagram options")
    form = QFormLayout(dialog)
    legend = QCheckBox("Legend (technologies, or the utilisation scale)")
    legend.setChecked(True)
    title = QCheckBox("Title block (name, date, scenario, result)")
    title.setChecked(True)
    form.addRow(legend)
    form.addRow(title)
    page = QComboBox()
    page.addItem("Fit to the diagram", None)
    for name in PAGES:
        page.addItem(f"{name}, landscape", name)
    fit = QComboBox()
    fit.addItem("Scale to one page", "scale")
    fit.addItem("Tile over pages at print scale", "tile")
    if suffix == ".pdf":
        form.addRow("Page:", page)
        form.addRow("Large diagrams:", fit)
    buttons = QDialogButtonBox(
        QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
    )
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    form.addRow(buttons)
    try:
        if run_dialog(dialog) != QDialog.DialogCode.Accepted:
            return None
        return Sheet(
            legend=legend.isChecked(),
            title_block=title.isChecked(),
            page=page.currentData(),
            fit=fit.currentData(),
            utilisation=utilisation,
        )
    finally:
        dialog.deleteLater()


def run_dialog(dialog: QDialog) -> QDialog.DialogCode:
    """Run ``dialog`` modally (the one function tests patch)."""
    return QDialog.DialogCode(dialog.exec())


def paint_pages(
    writer, painter: QPainter, render, source: QRectF, topology: Topology, sheet: Sheet
) -> int:
    """Paint a diagram of ``source`` (scene units) on ``writer``'s pages of
    `page_layout`, scaled to one page or tiled (``sheet.fit``); the number of pages.

    ``render(painter, target, source)`` draws the scene's ``source`` rect into
    ``target``; the writer's device unit is one scene unit (96 dpi)."""
    band = band_height(sheet)
    pw, ph = float(writer.width()), float(writer.height())
    area_h = max(1.0, ph - band)
    if sheet.fit == "scale":
        s = min(pw / source.width(), area_h / source.height())
        w, h = source.width() * s, source.height() * s
        render(painter, QRectF((pw - w) / 2, (area_h - h) / 2, w, h), source)
        if band:
            paint_band(painter, QRectF(0, area_h, pw, band), topology, sheet)
        return 1
    parts = tiles(source.width(), source.height(), pw, area_h)
    for i, part in enumerate(parts):
        if i:
            writer.newPage()
        src = part.translated(source.topLeft()).intersected(source)
        painter.save()
        painter.setClipRect(QRectF(0, 0, src.width(), src.height()))
        render(painter, QRectF(0, 0, src.width(), src.height()), src)
        painter.restore()
        if band:
            paint_band(
                painter,
                QRectF(0, area_h, pw, band),
                topology,
                sheet,
                page=f"page {i + 1} of {len(parts)}",
            )
    return len(parts)

"""`PanelDock`: what every analysis panel shares.

A panel is a dock with a row of controls, one pyqtgraph plot (in a graphics layout, so a
legend or a caption can sit beside it and still be exported) and an *Export* menu: the
picture as PNG or SVG (pyqtgraph's exporters, run on the layout that holds the plot) and
the panel's data as CSV.  Every file is written atomically.

A panel shows one `AnalysisResult` at a time (``set_result``); with no result, or after
a failed solve, it shows an empty plot with a centred message (``set_message``).
Colours follow the canvas theme (light or dark) and the Okabe-Ito colour-blind-safe
palette.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
import shiboken6
from pyqtgraph.exporters import ImageExporter, SVGExporter
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QGraphicsTextItem,
    QHBoxLayout,
    QMenu,
    QMessageBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from designer.gui.analysis.panels.outdated import CANCELLED, UPDATING, OutdatedMark
from designer.gui.analysis.panels.svg_export import svg_close_path_support
from designer.gui.analysis.panels.titles import fit_title, title_width
from designer.gui.canvas.style import Theme, system_theme
from designer.gui.idle import IdleWork
from designer.io.atomic import atomic_write_bytes, atomic_write_text
from designer.model.safe_text import csv_writer

__all__ = [
    "OKABE_ITO",
    "PanelDock",
    "accent",
    "collective_title",
    "format_bytes",
    "format_seconds",
    "size_tick",
]

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}

#: Smallest picture an export produces (logical pixels): a docked panel may be tiny.
MIN_EXPORT_SIZE = (960, 420)

_COLLECTIVE_TITLES = {
    "allreduce": "all-reduce", "allgather": "all-gather", "reducescatter": "reduce-scatter",
    "alltoall": "all-to-all", "broadcast": "broadcast", "reduce": "reduce",
    "sendrecv": "send/recv",
}


def collective_title(name: str) -> str:
    """How architects write a collective: ``allreduce`` -> ``all-reduce``."""
    return _COLLECTIVE_TITLES.get(name, name)


def accent(theme: Theme) -> QColor:
    """The colour of "this design" in plots: the blue that reads on the theme."""
    return QColor(OKABE_ITO["sky"] if theme.dark else OKABE_ITO["blue"])


def size_tick(n: float) -> str:
    """Short size label as nccl-tests users read them: 32K, 1M, 16G.

    >>> size_tick(32 << 10), size_tick(1 << 20), size_tick(16 << 30), size_tick(3000)
    ('32K', '1M', '16G', '3000')
    """
    n = int(n)
    for power, unit in ((40, "T"), (30, "G"), (20, "M"), (10, "K")):
        base = 1 << power
        if n >= base and n % base == 0:
            return f"{n // base}{unit}"
    return str(n)


def format_bytes(n: float) -> str:
    """Binary-prefixed size: ``1 GiB``, ``1.5 MiB``, ``512 B``.

    >>> format_bytes(1 << 30), format_bytes(3 << 19), format_bytes(512)
    ('1 GiB', '1.5 MiB', '512 B')
    """
    for power, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << power:
            return f"{n / (1 << power):.4g} {unit}"
    return f"{n:.0f} B"


def format_seconds(s: float) -> str:
    """A duration in the unit that keeps it readable: ``850 ns``, ``5.83 ms``, ``1.72 s``.

    >>> format_seconds(0.0058295), format_seconds(2.5e-5), format_seconds(1.723)
    ('5.83 ms', '25 µs', '1.723 s')
    """
    a = abs(s)
    if a == 0 or not math.isfinite(a):
        return f"{s:g} s"
    for limit, scale, unit in ((1e-6, 1e9, "ns"), (1e-3, 1e6, "µs"), (1.0, 1e3, "ms")):
        if a < limit:
            return f"{s * scale:.3g} {unit}"
    return f"{s:.4g} s"


_TITLE_MARGIN = 16  # px the title keeps clear of the plot's edges


class PanelDock(QDockWidget):
    """Base of the analysis panels (see module docstring).

    Subclasses draw a result in `_draw` (the plot is already cleared), describe their data
    in `data_rows` (from ``self.result``: a hidden panel defers drawing until it is shown),
    and may draw result-independent overlays in `_draw_overlays`.

    Signals
    -------
    exported(str)
        A file was written (its path).
    """

    exported = Signal(str)

    #: File name stem offered by the export dialogs.
    export_stem = "panel"
    #: Message shown when there is no result.
    empty_text = "No analysis yet: the design is solved after each edit."

    def __init__(self, title: str, object_name: str, parent: QWidget | None = None,
                 axis_items: dict[str, pg.AxisItem] | None = None):
        super().__init__(title, parent)
        self.setObjectName(object_name)
        self.theme: Theme = system_theme()
        self.result = None
        self.message = ""
        self._title = ""
        self._shown_title: str | None = None  # the title as laid out (lines broken)
        self._stale = False
        self._fresh_on_draw = False  # the next redraw shows the newest result

        self.body = QWidget(self)
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setContentsMargins(4, 4, 4, 4)
        self.body_layout.setSpacing(4)
        self.toolbar = QHBoxLayout()
        self.toolbar.setSpacing(6)
        self.body_layout.addLayout(self.toolbar)

        self.graphics = pg.GraphicsLayoutWidget(self.body)
        self.graphics.setMinimumSize(240, 100)
        self.plot: pg.PlotItem = self.graphics.addPlot(row=0, col=0, axisItems=axis_items)
        self.plot.hideButtons()
        # One export path (ours, atomic): no pyqtgraph context menu with its own dialog.
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        # The title spans the axes' columns too: long y labels (the timeline's rows)
        # would otherwise leave it a narrow strip and many lines.
        layout = self.plot.layout
        layout.removeItem(self.plot.titleLabel)
        layout.addItem(self.plot.titleLabel, 0, 0, 1, layout.columnCount())

        self._message_item = QGraphicsTextItem(self.plot.vb)
        self._message_item.document().setDefaultTextOption(
            QTextOption(Qt.AlignmentFlag.AlignCenter))
        self._message_item.setZValue(1000)
        self._message_item.hide()
        self.plot.vb.sigResized.connect(self._on_viewbox_resized)

        self.export_button = QToolButton(self.body)
        self.export_button.setText("Export")
        self.export_button.setToolTip("Save the plot as PNG or SVG, or its data as CSV")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        self.export_actions: dict[str, QAction] = {}
        for kind, text in (("png", "Image (PNG)…"), ("svg", "Vector image (SVG)…"),
                           ("csv", "Data (CSV)…")):
            action = menu.addAction(text)
            action.triggered.connect(lambda _=False, k=kind: self._on_export_triggered(k))
            self.export_actions[kind] = action
        self.export_button.setMenu(menu)
        self._outdated = OutdatedMark(self.body)
        #: The badge saying the figures are of the design before the last edit.
        self.outdated_badge = self._outdated.badge
        QGuiApplication.styleHints().colorSchemeChanged.connect(
            self._on_style_hints_color_scheme_changed)

    def _finish(self, central: QWidget | None = None) -> None:
        """End of a subclass's ``__init__``: place the body, style it, show the empty text."""
        self.toolbar.addStretch(1)
        self.toolbar.addWidget(self.outdated_badge)
        self.toolbar.addWidget(self.export_button)
        self.body_layout.addWidget(central if central is not None else self.graphics, 1)
        self._outdated.fade(self.graphics.ci, self._faded_widgets())
        self.setWidget(self.body)
        self.apply_theme(self.theme)
        self.set_result(None)

    # ------------------------------------------------------------------ wiring
    def follow(self, runner, document) -> None:
        """Show ``runner``'s (a `SolveRunner`) results and states, and forget them when
        ``document`` opens another design.  Bound slots: PySide drops the connections
        with the panel, which the runner and the document may outlive."""
        runner.started.connect(self._on_runner_started)
        runner.result_ready.connect(self._on_runner_result_ready)
        runner.failed.connect(self._on_runner_failed)
        runner.cancelled.connect(self._on_runner_cancelled)
        document.topology_replaced.connect(self._on_document_topology_replaced)

    def _on_runner_started(self, _generation: int) -> None:
        # Until the new result is drawn, the figures shown are the previous design's.
        self.set_outdated(True)

    def _on_runner_result_ready(self, result) -> None:
        # Drawn one panel per turn of the event loop: the GUI stays responsive.
        self.set_result(result, later=True)

    def _on_runner_failed(self, _generation: int, message: str) -> None:
        self.set_message(f"Solve failed: {message}")

    def _on_runner_cancelled(self, _generation: int) -> None:
        self.set_outdated(True, CANCELLED)

    def _on_document_topology_replaced(self, _topology) -> None:
        self.set_result(None)

    # ------------------------------------------------------------------ content
    def set_result(self, result, *, later: bool = False) -> None:
        """Show ``result`` (an `AnalysisResult`), or the empty message for None.

        ``later``: take the result now but draw it on a later turn of the event loop,
        as `IdleWork` (about one panel per turn), so that a new result does not hold
        the GUI for the sum of every panel's drawing.
        """
        if result is None:
            self.set_message(self.empty_text)
            return
        self.result = result
        self._fresh_on_draw = True
        self.message = ""
        self._message_item.hide()
        if not self.isVisible():
            self._stale = True  # a dock tabbed away draws when it is shown: keep the GUI free
        elif later:
            self._stale = True
            IdleWork.instance().add(self, self._draw_task)
        else:
            self._redraw()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._ensure_drawn()

    def _ensure_drawn(self) -> None:
        if self._stale:
            self._redraw()

    def _draw_task(self, _deadline: float) -> bool:
        """The `IdleWork` task of ``set_result(..., later=True)``: one whole redraw."""
        if shiboken6.isValid(self):
            self._ensure_drawn()
        return True

    @property
    def pending(self) -> bool:
        """Whether the panel holds a result it has not drawn yet."""
        return self._stale

    def set_message(self, text: str) -> None:
        """Empty the plot and show ``text`` in its middle (no result, a failed solve)."""
        self.result = None
        self._fresh_on_draw = True
        self.message = text
        self._redraw()
        self.set_title("")
        self._message_item.setPlainText(text)
        self._message_item.show()
        self._place_message()

    def data_rows(self) -> tuple[list[str], list[Sequence[Any]]]:
        """The panel's data as a CSV header and rows (empty rows when nothing is shown)."""
        raise NotImplementedError

    def set_title(self, html: str) -> None:
        """Title above the plot (kept across theme changes), broken into lines at its
        commas while the plot is too narrow for it (`fit_title`)."""
        self._title = html
        self._shown_title = None
        self._fit_title()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # The plot cannot shrink below its title's widest line, so a narrower panel may
        # not resize the view box: fit the title to the panel as well.
        self._fit_title()

    def _fit_title(self) -> None:
        # Over the whole plot (axes included), and never wider than what the panel
        # shows of it: a title too wide holds the whole plot wider than that.
        width = self.graphics.viewport().width() - 8 - _TITLE_MARGIN
        html = fit_title(self._title, width, title_width) if width > 0 else self._title
        if html == self._shown_title:
            return  # (a new line of title resizes the view box, which calls back here)
        self._shown_title = html
        self.plot.setTitle(html or None, color=self.theme.text.name(), size="10pt")
        if html:
            # pyqtgraph gives the title a row of 30 px: one line.  Each further line
            # would spill over the plot and off the top of a short panel.
            label = self.plot.titleLabel
            height = max(30, math.ceil(label.item.boundingRect().height()) + 4)
            label.setMaximumHeight(height)
            self.plot.layout.setRowFixedHeight(0, height)
        self.refit_plot()

    def refit_plot(self) -> None:
        """Size the plot to the panel again once its layout has taken in a change (a
        title or legend laid out anew): the plot is only re-sized when the panel is,
        and one narrower panel ago it may have been held wider by its old title."""
        def apply() -> None:
            g = self.graphics
            if shiboken6.isValid(g) and g.centralWidget is not None:
                g.centralWidget.setGeometry(g.range)
        QTimer.singleShot(0, self, apply)

    # ------------------------------------------------------------------ freshness
    def _faded_widgets(self) -> Sequence[QWidget]:
        """Widgets besides the plot greyed out while out of date (a table)."""
        return ()

    def set_outdated(self, on: bool = True, text: str = UPDATING) -> None:
        """Mark the figures as those of the design before the last edit (a re-solve
        runs: ``text`` says so on a badge, the contents are greyed out), or unmark them.
        Drawing the next result, or a message, unmarks them."""
        self._fresh_on_draw = False
        self._outdated.set(on, text)

    @property
    def outdated(self) -> bool:
        """Whether the panel is marked out of date (`set_outdated`)."""
        return self._outdated.on

    def faded(self) -> bool:
        """Whether the contents are greyed out (while out of date)."""
        return self._outdated.faded

    def _redraw(self) -> None:
        if self._fresh_on_draw:
            self._fresh_on_draw = False
            self._outdated.set(False)
        self._stale = False
        self.plot.clear()
        if self.result is not None:
            self._draw(self.result)
        self._draw_overlays()

    def _draw(self, result) -> None:
        raise NotImplementedError

    def _draw_overlays(self) -> None:
        """Items shown whatever the result (busbw baselines); nothing by default."""

    # ------------------------------------------------------------------ theme
    def apply_theme(self, theme: Theme) -> None:
        """Recolour the panel for ``theme`` (the canvas's light or dark theme)."""
        self.theme = theme
        self.graphics.setBackground(theme.background)
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(theme.text)
            axis.setTextPen(theme.text)
        self._message_item.setDefaultTextColor(theme.text)
        self._theme_changed()
        self.set_title(self._title)
        self._redraw()

    def _theme_changed(self) -> None:
        """Recolour items that live across redraws (legends, captions)."""

    def _on_style_hints_color_scheme_changed(self, _scheme) -> None:
        theme = system_theme()
        if theme is not self.theme:
            self.apply_theme(theme)

    # ------------------------------------------------------------------ message
    def _on_viewbox_resized(self, _vb=None) -> None:
        self._fit_title()
        self._place_message()

    def _place_message(self) -> None:
        if not self._message_item.isVisible():
            return
        box = self.plot.vb.boundingRect()
        self._message_item.setTextWidth(max(120.0, min(box.width() - 24.0, 520.0)))
        text = self._message_item.boundingRect()
        self._message_item.setPos(box.center().x() - text.width() / 2,
                                  box.center().y() - text.height() / 2)

    # ------------------------------------------------------------------ export
    def export_item(self):
        """The graphics item the picture exporters run on: the layout holding the plot."""
        return self.graphics.ci

    def _with_export_geometry(self, render):
        """Run ``render()`` with the layout at least `MIN_EXPORT_SIZE`: a hidden or
        squeezed dock still exports a readable picture (and one out of date is not
        exported greyed out)."""
        self._ensure_drawn()
        item = self.export_item()
        old, opacity = item.geometry(), item.opacity()
        item.setOpacity(1.0)
        w, h = MIN_EXPORT_SIZE
        grow = old.width() < w or old.height() < h
        if grow:
            item.setGeometry(QRectF(0, 0, max(old.width(), w), max(old.height(), h)))
            self._place_message()
        try:
            return render(item)
        finally:
            item.setOpacity(opacity)
            if grow:
                item.setGeometry(old)
                self._place_message()

    def export_png(self, path: str | Path) -> Path:
        """Write the plot as a PNG image; returns the path."""
        image = self._with_export_geometry(lambda item: ImageExporter(item).export(toBytes=True))
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        image.save(buffer, "PNG")
        buffer.close()
        return self._written(path, lambda p: atomic_write_bytes(p, bytes(data.data())))

    def export_svg(self, path: str | Path) -> Path:
        """Write the plot as an SVG drawing; returns the path."""
        with svg_close_path_support():
            data = self._with_export_geometry(
                lambda item: SVGExporter(item).export(toBytes=True))
        return self._written(path, lambda p: atomic_write_bytes(p, data))

    def export_csv(self, path: str | Path) -> Path:
        """Write `data_rows` as CSV (comma separated, ``\\n`` line ends); returns the path.

        Every cell goes through `csv_writer`: an id or a baseline label beginning with
        ``=``, ``+``, ``-`` or ``@`` would run as a formula in a spreadsheet."""
        header, rows = self.data_rows()
        out = io.StringIO()
        writer = csv_writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return self._written(path, lambda p: atomic_write_text(p, out.getvalue()))

    def _written(self, path: str | Path, write) -> Path:
        path = Path(path)
        write(path)
        self.exported.emit(str(path))
        return path

    _last_folder: Path | None = None  # shared by all panels: exports tend to go together

    def _on_export_triggered(self, kind: str) -> None:
        filters = {"png": "PNG image (*.png)", "svg": "SVG drawing (*.svg)",
                   "csv": "CSV table (*.csv)"}
        folder = PanelDock._last_folder or Path.home()
        name, _ = QFileDialog.getSaveFileName(self, f"Export {self.windowTitle()}",
                                              str(folder / f"{self.export_stem}.{kind}"),
                                              filters[kind])
        if not name:
            return
        path = Path(name)
        if path.suffix.lower() != f".{kind}":
            path = path.with_name(path.name + f".{kind}")
        PanelDock._last_folder = path.parent
        try:
            {"png": self.export_png, "svg": self.export_svg, "csv": self.export_csv}[kind](path)
        except OSError as exc:
            QMessageBox.warning(self, "Export failed",
                                f"Cannot write {path}: {exc.strerror or exc}")


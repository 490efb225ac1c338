"""Diagram export: the canvas as SVG, PNG or PDF, and File > Export.

An export shows the *design*, not the editing session: nodes, links, aggregated bundles
and groups (expanded or collapsed, as on the canvas), without the selection, the grid, a
link being drawn or any other temporary item.  It is always drawn in the light theme on
a white background, whatever the desktop's colour scheme, so a diagram reads the same in
a document, on a slide and on paper.  The area is the bounding box of the visible design
items plus `MARGIN`, aligned to whole scene units.

One scene unit is one pixel at 96 dpi, as on a standard screen, so fonts (sized in
points) keep their on-screen proportion to the icons in every format:

- SVG: one user unit per scene unit; labels are ``<text>`` elements (real, selectable
  text, not outlines), which is why item caching is switched off while rendering (a cached
  item would be embedded as a bitmap).
- PNG: ``scale`` pixels per scene unit.  Labels follow the canvas's level of detail: they
  appear from scale 0.5, link badges from 0.6 — below that they would be unreadable
  anyway.  The file records ``96 * scale`` dpi, so every scale prints at the same size.
- PDF: one vector page fitted to the diagram (0.75 pt per scene unit), fonts embedded.
  The device resolution is 96 dpi on purpose: QPainter sizes a point-sized font for the
  device's resolution *before* the world transform, so at 1200 dpi with the matching
  12.5x transform the labels would come out 12.5 times too large.  Coordinates are
  floating point in the file, so nothing is lost.  A SuperPOD-wide design makes a page
  wider than the 200 inches Acrobat accepts; poppler, pdf.js and browsers open it.

Every file is rendered in memory and then written atomically: a failed export never
leaves a partial file.

Example
-------
>>> from designer.gui.export import export_scene        # doctest: +SKIP
>>> export_scene(window.scene, "cluster.svg")            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRect, QRectF, QSizeF, Qt
from PySide6.QtGui import QColor, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QGraphicsItem,
    QInputDialog,
    QMessageBox,
    QWidget,
)

from designer import __version__
from designer.gui.canvas.items import BundleItem, GroupItem, LinkItem, NodeItem
from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.style import LIGHT, Theme
from designer.gui.document import Document
from designer.io.atomic import atomic_write_bytes
from designer.model.errors import DesignError

__all__ = [
    "DIAGRAM_SUFFIXES",
    "MARGIN",
    "PRINT_THEME",
    "ExportError",
    "export_dialog",
    "export_rect",
    "export_scene",
    "export_topology",
    "pdf_bytes",
    "png_bytes",
    "png_size",
    "render_pdf",
    "render_png",
    "render_svg",
    "svg_bytes",
]

MARGIN = 24  # scene units of white space around the design
SCREEN_DPI = 96.0  # one scene unit is one pixel at this resolution
MAX_PNG_SIDE = 32767  # raster painting and most image viewers stop here
MAX_PNG_PIXELS = 1 << 27  # 512 MiB of ARGB32
DIAGRAM_SUFFIXES = (".svg", ".png", ".pdf")
GRAPH_NOTE = "use .svg, .png, .pdf, .graphml, .json or .fabric.json"

#: The light theme on pure white: what every export is drawn in.
PRINT_THEME: Theme = dataclasses.replace(LIGHT, background=QColor("#FFFFFF"))


#: What an export shows; any other top-level item (a plain line for a link being drawn, a
#: drop preview, `FabricScene.overlays`) is editing furniture and is hidden.
_DESIGN_ITEMS = (NodeItem, LinkItem, BundleItem, GroupItem)


def _is_design(item: QGraphicsItem) -> bool:
    return isinstance(item, _DESIGN_ITEMS)


_APP: QApplication | None = None


class ExportError(DesignError):
    """A diagram cannot be exported (names the file and the reason)."""


# ------------------------------------------------------------------ preparing the scene
@contextlib.contextmanager
def _export_state(scene: FabricScene) -> Iterator[None]:
    """Show only the design, in the print theme, for the duration of the block.

    Selection, grid, theme, temporary items and item caches are restored afterwards.
    Scene signals are blocked meanwhile, so the inspector and status bar do not see the
    selection flicker nor the theme change.
    """
    scene.refresh()  # deferred work first: group frames must fit the latest edit
    blocked = scene.blockSignals(True)
    selected = scene.selectedItems()
    show_grid = scene.show_grid
    scene_theme = scene.theme
    items = scene.items()
    # A link being drawn, a drop preview, ...: anything not part of the design.
    temporary = [
        item
        for item in items
        if item.parentItem() is None and not _is_design(item) and item.isVisible()
    ]
    cached = [
        (item, item.cacheMode())
        for item in items
        if item.cacheMode() != QGraphicsItem.CacheMode.NoCache
    ]
    try:
        scene.clearSelection()
        scene.show_grid = False
        scene.set_theme(PRINT_THEME)
        for item in temporary:
            item.setVisible(False)
        for item, _ in cached:
            item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
        yield
    finally:
        for item, mode in cached:
            item.setCacheMode(mode)
        for item in temporary:
            item.setVisible(True)
        scene.set_theme(scene_theme)
        scene.show_grid = show_grid
        for item in selected:
            item.setSelected(True)
        scene.blockSignals(blocked)


def export_rect(scene: FabricScene) -> QRect:
    """The scene area an export shows: the visible design items' bounding box plus
    `MARGIN`, widened to whole scene units.

    Only the canvas's design items count (a link being drawn does not).  Raises
    `ExportError` for an empty design.
    """
    rect = QRectF()
    for item in scene.items():
        if item.isVisible() and _is_design(item.topLevelItem()):
            r = item.sceneBoundingRect()
            if not r.isEmpty():
                rect = rect.united(r)
    if rect.isEmpty():
        raise ExportError("nothing to export: the design is empty")
    return rect.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN).toAlignedRect()


def _render(scene: FabricScene, painter: QPainter, target: QRectF, source: QRectF) -> None:
    painter.setRenderHints(
        QPainter.RenderHint.Antialiasing
        | QPainter.RenderHint.TextAntialiasing
        | QPainter.RenderHint.SmoothPixmapTransform
    )
    # Target and source always have the same aspect ratio here: nothing is stretched.
    scene.render(painter, target, source, Qt.AspectRatioMode.IgnoreAspectRatio)


def _title(scene: FabricScene, title: str | None) -> str:
    return title if title is not None else (scene.document.topology.name or "Fabric design")


# ------------------------------------------------------------------ the three formats
def svg_bytes(scene: FabricScene, *, title: str | None = None) -> bytes:
    """The diagram as an SVG document (see the module doc); labels are ``<text>``."""
    with _export_state(scene):
        source = export_rect(scene)
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        generator.setResolution(int(SCREEN_DPI))
        generator.setSize(source.size())
        generator.setViewBox(QRect(0, 0, source.width(), source.height()))
        generator.setTitle(_title(scene, title))
        generator.setDescription(f"Network diagram made with Fabric Designer {__version__}")
        painter = QPainter(generator)
        try:
            _render(scene, painter, QRectF(0, 0, source.width(), source.height()), QRectF(source))
        finally:
            painter.end()
        buffer.close()
    return bytes(buffer.data())


def png_size(scene: FabricScene, scale: float = 2.0) -> tuple[int, int]:
    """Pixel size of a PNG export: `export_rect` times ``scale``, rounded up."""
    rect = export_rect(scene)
    return (
        max(1, math.ceil(rect.width() * scale - 1e-9)),
        max(1, math.ceil(rect.height() * scale - 1e-9)),
    )


def png_bytes(scene: FabricScene, *, scale: float = 2.0) -> bytes:
    """The diagram as PNG data at ``scale`` pixels per scene unit (see the module doc).

    Raises
    ------
    ExportError
        ``scale`` is not positive, or the image would exceed `MAX_PNG_SIDE` pixels a side
        or `MAX_PNG_PIXELS` in all.
    """
    if not (math.isfinite(scale) and scale > 0):
        raise ExportError(f"PNG scale must be a positive number, got {scale}")
    with _export_state(scene):
        source = export_rect(scene)
        width, height = png_size(scene, scale)
        if max(width, height) > MAX_PNG_SIDE or width * height > MAX_PNG_PIXELS:
            raise ExportError(
                f"a {width} x {height} px PNG at scale {scale:g} is too large (at most "
                f"{MAX_PNG_SIDE} px a side); use a smaller scale, or SVG or PDF"
            )
        image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
        # Paint at screen resolution so point-sized fonts keep their proportions ...
        dots_per_meter = round(SCREEN_DPI / 0.0254)
        image.setDotsPerMeterX(dots_per_meter)
        image.setDotsPerMeterY(dots_per_meter)
        image.fill(PRINT_THEME.background)
        painter = QPainter(image)
        try:
            # The source grows by the sub-pixel rounding so nothing is stretched.
            grown = QRectF(source.x(), source.y(), width / scale, height / scale)
            _render(scene, painter, QRectF(0, 0, width, height), grown)
        finally:
            painter.end()
    # ... then record the scaled resolution, so every scale prints at the same size.
    dots_per_meter = round(SCREEN_DPI * scale / 0.0254)
    image.setDotsPerMeterX(dots_per_meter)
    image.setDotsPerMeterY(dots_per_meter)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise ExportError("the PNG encoder failed")  # pragma: no cover - Qt always has PNG
    buffer.close()
    return bytes(data)


def pdf_bytes(scene: FabricScene, *, title: str | None = None) -> bytes:
    """The diagram as a one-page vector PDF fitted to the content (see the module doc)."""
    with _export_state(scene):
        source = export_rect(scene)
        points = QSizeF(source.width() * 72 / SCREEN_DPI, source.height() * 72 / SCREEN_DPI)
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        writer = QPdfWriter(buffer)
        writer.setResolution(int(SCREEN_DPI))  # see the module doc
        writer.setTitle(_title(scene, title))
        writer.setCreator(f"Fabric Designer {__version__}")
        page = QPageSize(
            points, QPageSize.Unit.Point, "Diagram", QPageSize.SizeMatchPolicy.ExactMatch
        )
        writer.setPageLayout(
            QPageLayout(page, QPageLayout.Orientation.Portrait, QMarginsF(0, 0, 0, 0))
        )
        painter = QPainter(writer)
        try:
            # One device pixel is one scene unit; the page is whole points, so the source
            # takes the page's exact size (a fraction of a unit more margin at most).
            page = QRectF(0, 0, writer.width(), writer.height())
            _render(scene, painter, page, page.translated(source.topLeft()))
        finally:
            painter.end()
        buffer.close()
    return bytes(buffer.data())


def _write(path: Path, data: bytes) -> None:
    try:
        atomic_write_bytes(path, data)
    except OSError as err:
        raise ExportError(f"{os.fspath(path)}: cannot write: {err.strerror or err}") from err


def render_svg(
    scene: FabricScene, path: str | os.PathLike[str], *, title: str | None = None
) -> None:
    """Write the diagram as SVG to ``path`` atomically; ``title`` defaults to the
    design's name.  Raises `ExportError` when it cannot."""
    path = Path(path)
    _write(path, _named(svg_bytes, path, scene, title=title))


def render_png(scene: FabricScene, path: str | os.PathLike[str], *, scale: float = 2.0) -> None:
    """Write the diagram as PNG (``scale`` pixels per scene unit) to ``path`` atomically.

    Raises `ExportError` for a bad scale, an image too large, or a failed write.
    """
    path = Path(path)
    _write(path, _named(png_bytes, path, scene, scale=scale))


def render_pdf(scene: FabricScene, path: str | os.PathLike[str]) -> None:
    """Write the diagram as a one-page PDF to ``path`` atomically."""
    path = Path(path)
    _write(path, _named(pdf_bytes, path, scene))


def _named(render, path: Path, scene: FabricScene, **options) -> bytes:
    """Run ``render``; its errors gain the file name, as every message here names it."""
    try:
        return render(scene, **options)
    except ExportError as exc:
        raise ExportError(f"{os.fspath(path)}: {exc}") from None


def export_scene(scene: FabricScene, path: str | os.PathLike[str], *, scale: float = 2.0) -> None:
    """Write the diagram in the format the suffix of ``path`` names (.svg, .png, .pdf).

    ``scale`` applies to PNG only.  Raises `ExportError` for any other suffix.

    Example
    -------
    >>> export_scene(window.scene, "fabric.png", scale=1)   # doctest: +SKIP
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        render_svg(scene, path)
    elif suffix == ".png":
        render_png(scene, path, scale=scale)
    elif suffix == ".pdf":
        render_pdf(scene, path)
    else:
        raise ExportError(
            f"{os.fspath(path)}: not a diagram format {suffix or '(none)'!r} "
            "(use .svg, .png or .pdf)"
        )


def export_topology(topology, path: str | os.PathLike[str], *, scale: float = 2.0) -> None:
    """Export a design without a window (the CLI's ``export``): build a scene for it,
    write ``path`` with `export_scene`.

    Needs a ``QApplication``; one is created when none exists.  Headless callers set
    ``QT_QPA_PLATFORM=offscreen`` before Qt is first imported.
    """
    global _APP
    if QApplication.instance() is None:
        # Kept for the life of the process: destroying it before the scene would crash Qt.
        _APP = QApplication(["fabric-designer"])
    document = Document(topology)
    scene = FabricScene(document, theme=PRINT_THEME)
    export_scene(scene, path, scale=scale)


# ------------------------------------------------------------------ File > Export
_FILTERS = (
    ("SVG image (*.svg)", ".svg"),
    ("PNG image (*.png)", ".png"),
    ("PDF document (*.pdf)", ".pdf"),
    ("GraphML (*.graphml)", ".graphml"),
    ("Node-link JSON (*.json)", ".json"),
    ("Fabric design (*.fabric.json)", ".fabric.json"),
)


def _with_suffix(path: Path, selected_filter: str) -> Path:
    """Add the chosen filter's suffix when the typed name has none we know."""
    name = path.name.lower()
    if any(name.endswith(suffix) for _, suffix in _FILTERS):
        return path
    suffix = dict(_FILTERS).get(selected_filter, ".svg")
    return path.with_name(path.name + suffix)


def _report(window: QWidget, text: str, *, error: bool) -> None:
    status = getattr(window, "statusBar", None)
    if callable(status):
        status().showMessage(text, 6000)
    if error and window.isVisible():
        QMessageBox.warning(window, "Export failed", text)


def export_dialog(window: QWidget, scene: FabricScene, document: Document) -> Path | None:
    """File > Export: ask for a file (and a scale for PNG), write it; the written path,
    or None when cancelled or failed.

    SVG, PNG and PDF are diagrams of the canvas; GraphML, node-link JSON and
    ``.fabric.json`` are the graph itself (`designer.io.graph_export.export`).  A failure
    is one line in the status bar and a message box.
    """
    from designer.io.graph_export import export as export_graph

    base = (
        document.path.name.removesuffix(".fabric.json").removesuffix(".json")
        if document.path
        else (document.topology.name or "design")
    )
    folder = document.path.parent if document.path else Path.cwd()
    chosen, selected_filter = QFileDialog.getSaveFileName(
        window,
        "Export",
        str(folder / f"{base}.svg"),
        ";;".join(f for f, _ in _FILTERS),
        _FILTERS[0][0],
    )
    if not chosen:
        return None
    path = _with_suffix(Path(chosen), selected_filter)
    scale = 2.0
    if path.suffix.lower() == ".png":
        scale, ok = QInputDialog.getDouble(
            window,
            "PNG scale",
            "Pixels per canvas unit (2 = sharp on high-DPI screens):",
            2.0,
            0.5,
            8.0,
            2,
        )
        if not ok:
            return None
    try:
        if path.suffix.lower() in DIAGRAM_SUFFIXES:
            export_scene(scene, path, scale=scale)
        else:
            export_graph(document.topology, path)
    except (DesignError, OSError) as exc:
        _report(window, str(exc), error=True)
        return None
    _report(window, f"Exported {path}", error=False)
    return path

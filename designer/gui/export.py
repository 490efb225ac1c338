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
- PNG: ``scale`` pixels per scene unit, 2 by default (sharp on high-DPI screens).  An
  image holds at most `MAX_PNG_PIXELS` pixels and `MAX_PNG_SIDE` a side (an ARGB image
  of 512 MiB, and the raster limit of QPainter and most viewers); a design too large for
  the default scale gets the largest scale that fits (`max_png_scale`), and an explicit
  scale that does not fit is refused with that figure.  Labels follow the canvas's level
  of detail: they appear from scale 0.5, link badges from 0.6 — below that they would be
  unreadable anyway.  The file records ``96 * scale`` dpi, so every scale prints at the
  same size.
- PDF: one vector page fitted to the diagram (0.75 pt per scene unit), fonts embedded.
  The device resolution is 96 dpi on purpose: QPainter sizes a point-sized font for the
  device's resolution *before* the world transform, so at 1200 dpi with the matching
  12.5x transform the labels would come out 12.5 times too large.  Coordinates are
  floating point in the file, so nothing is lost.  A SuperPOD-wide design makes a page
  wider than the 200 inches Acrobat accepts; poppler, pdf.js and browsers open it.

Each format can carry a legend and a title block, and a PDF can be laid on pages of a
standard size (`designer.gui.export_sheet.Sheet`).  Every file is rendered in memory and
then written atomically: a failed export never
leaves a partial file.  File > Export (`export_dialog`) is in `designer.gui.export_dialog`;
for a big design it runs behind a progress dialog (`designer.gui.export_progress`), which
drives a PNG through `png_steps` (bands of rows, then the encoder on its own thread) so
the window stays live and Cancel works.

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
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path

from PySide6.QtCore import (
    QBuffer,
    QByteArray,
    QIODevice,
    QMarginsF,
    QRect,
    QRectF,
    QSize,
    QSizeF,
    Qt,
)
from PySide6.QtGui import QColor, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QGraphicsItem

from designer import __version__
from designer.gui.canvas.items import BundleItem, GroupItem, LinkItem, NodeItem, node_boxes
from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.style import LIGHT, Theme
from designer.gui.document import Document
from designer.gui.export_sheet import Sheet, band_height, page_layout, paint_band, paint_pages
from designer.io.atomic import atomic_write_bytes
from designer.model.errors import DesignError
from designer.model.safe_text import xml_bytes

__all__ = [
    "DEFAULT_PNG_SCALE",
    "DIAGRAM_SUFFIXES",
    "MARGIN",
    "MAX_PNG_PIXELS",
    "MAX_PNG_SIDE",
    "PRINT_THEME",
    "ExportError",
    "default_png_scale",
    "drain",
    "export_rect",
    "export_scene",
    "export_topology",
    "max_png_scale",
    "pdf_bytes",
    "png_bytes",
    "png_size",
    "png_steps",
    "render_pdf",
    "render_png",
    "render_svg",
    "svg_bytes",
]

MARGIN = 24  # scene units of white space around the design
SCREEN_DPI = 96.0  # one scene unit is one pixel at this resolution
MAX_PNG_SIDE = 32767  # raster painting and most image viewers stop here
MAX_PNG_PIXELS = 1 << 27  # 512 MiB of ARGB32, about 134 megapixels
DEFAULT_PNG_SCALE = 2.0  # pixels per scene unit: sharp on high-DPI screens
DIAGRAM_SUFFIXES = (".svg", ".png", ".pdf")
STRIP_PX = 256  # rows of a PNG painted in the first step (then sized to take STEP_S)
STEP_S = 0.03  # seconds a step of an export aims to take (the window stays live)
ENCODE_PIXELS_PER_S = 10e6  # about what the PNG encoder does here (for the progress)

#: An export in steps: yields the fraction done, returns the file's bytes.
Steps = Generator[float, None, bytes]

#: The light theme on pure white: what every export is drawn in.
PRINT_THEME: Theme = dataclasses.replace(LIGHT, background=QColor("#FFFFFF"))


#: What an export shows; any other top-level item (a plain line for a link being drawn, a
#: drop preview, `FabricScene.overlays`) is editing furniture and is hidden.
_DESIGN_ITEMS = (NodeItem, LinkItem, BundleItem, GroupItem)


def _is_design(item: QGraphicsItem) -> bool:
    # Items that say ``exported`` (the jobs' GPU tints) are part of the picture too.
    return isinstance(item, _DESIGN_ITEMS) or getattr(item, "exported", False)


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
        # Every badge is placed at once: against the nodes' boxes, not the scene's index.
        scene.badge_obstacles = node_boxes(scene)
        yield
    finally:
        scene.badge_obstacles = None
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
def svg_bytes(scene: FabricScene, *, title: str | None = None,
              sheet: Sheet | None = None) -> bytes:
    """The diagram as an SVG document (see the module doc); labels are ``<text>``;
    ``sheet`` adds a legend and title block under it (`export_sheet`)."""
    with _export_state(scene):
        source = export_rect(scene)
        band = math.ceil(band_height(sheet))
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        generator.setResolution(int(SCREEN_DPI))
        generator.setSize(QSize(source.width(), source.height() + band))
        generator.setViewBox(QRect(0, 0, source.width(), source.height() + band))
        generator.setTitle(_title(scene, title))
        generator.setDescription(f"Network diagram made with Fabric Designer {__version__}")
        painter = QPainter(generator)
        try:
            _render(scene, painter, QRectF(0, 0, source.width(), source.height()), QRectF(source))
            if band:
                paint_band(painter, QRectF(0, source.height(), source.width(), band),
                           scene.document.topology, sheet)
        finally:
            painter.end()
        buffer.close()
    # Qt writes names into <title> and <text> as they are; XML 1.0 cannot hold control
    # characters, U+FFFF or lone surrogates (escaped or not), so they become U+FFFD.
    return xml_bytes(bytes(buffer.data()))


def png_size(scene: FabricScene, scale: float = DEFAULT_PNG_SCALE) -> tuple[int, int]:
    """Pixel size of a PNG export: `export_rect` times ``scale``, rounded up."""
    return _scaled(export_rect(scene), scale)


def _scaled(rect: QRect, scale: float) -> tuple[int, int]:
    return (
        max(1, math.ceil(rect.width() * scale - 1e-9)),
        max(1, math.ceil(rect.height() * scale - 1e-9)),
    )


def _fits(width: int, height: int) -> bool:
    return max(width, height) <= MAX_PNG_SIDE and width * height <= MAX_PNG_PIXELS


def _max_scale(rect: QRect) -> float:
    """The largest scale, in steps of 0.01, whose PNG of ``rect`` fits both limits (0
    when not even 0.01 does)."""
    w, h = rect.width(), rect.height()
    bound = min(MAX_PNG_SIDE / w, MAX_PNG_SIDE / h, math.sqrt(MAX_PNG_PIXELS / (w * h)))
    steps = math.floor(bound * 100 + 1e-9)
    while steps > 0 and not _fits(*_scaled(rect, steps / 100)):
        steps -= 1  # the rounding up of each side can cost a step
    return steps / 100


def max_png_scale(scene: FabricScene, sheet: Sheet | None = None) -> float:
    """The largest PNG scale (a multiple of 0.01) at which the diagram, with the band of
    ``sheet`` (legend, title block) under it, fits in `MAX_PNG_PIXELS` pixels and
    `MAX_PNG_SIDE` a side; 0 when none does.

    Raises `ExportError` for an empty design.
    """
    scene.refresh()  # group frames fit the latest edit, as in an export
    return _max_scale(_picture_rect(scene, sheet))


def default_png_scale(scene: FabricScene, sheet: Sheet | None = None) -> float:
    """The scale of a PNG export when none is given: `DEFAULT_PNG_SCALE`, or the largest
    scale that fits when the design (with ``sheet``'s band) is too large for it.

    Raises `ExportError` for an empty design, or one too large for a PNG at any scale.
    """
    scene.refresh()
    return _default_scale(_picture_rect(scene, sheet))


def _picture_rect(scene: FabricScene, sheet: Sheet | None) -> QRect:
    """The scene area a PNG shows, grown by the band under it: the picture's size."""
    return export_rect(scene).adjusted(0, 0, 0, math.ceil(band_height(sheet)))


def _default_scale(rect: QRect) -> float:
    fit = _max_scale(rect)
    if fit <= 0:
        raise ExportError(
            f"the diagram is too large for a PNG at any scale (a PNG export holds at most "
            f"{_megapixels(MAX_PNG_PIXELS)}); export SVG or PDF"
        )
    return min(DEFAULT_PNG_SCALE, fit)


def _megapixels(pixels: float) -> str:
    return f"{pixels / 1e6:.0f} megapixels"


def png_bytes(scene: FabricScene, *, scale: float | None = None,
              sheet: Sheet | None = None) -> bytes:
    """The diagram as PNG data at ``scale`` pixels per scene unit (see the module doc).

    ``None`` is `default_png_scale`: `DEFAULT_PNG_SCALE`, or the largest scale that fits
    when the design is too large for it.

    Raises
    ------
    ExportError
        ``scale`` is not positive, or the image would exceed `MAX_PNG_SIDE` pixels a side
        or `MAX_PNG_PIXELS` in all (the message gives the largest scale that fits).
    """
    return drain(png_steps(scene, scale=scale, sheet=sheet))


def drain(steps: Steps) -> bytes:
    """Run an export's ``*_steps`` generator to its end; the file's bytes."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def png_steps(scene: FabricScene, *, scale: float | None = None,
              sheet: Sheet | None = None) -> Steps:
    """`png_bytes` in steps: yields the fraction painted (0 to 1) after each band of
    `STRIP_PX` rows, so a caller can keep its window live and stop early (closing the
    generator restores the scene); returns the PNG data."""
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise ExportError(f"PNG scale must be a positive number, got {scale}")
    with _export_state(scene):
        source = _picture_rect(scene, sheet)  # the band is part of the picture's size
        band = math.ceil(band_height(sheet))
        if scale is None:
            scale = _default_scale(source)
        fit = _max_scale(source)
        width, height = _scaled(source, scale)
        if not _fits(width, height):
            advice = (
                f"the largest scale that fits this design is {fit:g}, or export SVG or PDF"
                if fit > 0
                else "export SVG or PDF"
            )
            raise ExportError(
                f"a {width} x {height} px PNG ({_megapixels(width * height)}) at scale "
                f"{scale:g} is too large: a PNG export holds at most "
                f"{_megapixels(MAX_PNG_PIXELS)} and {MAX_PNG_SIDE} px a side; {advice}"
            )
        yield 0.0
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
            diagram_h = (source.height() - band) * scale if band else height
            # Bands of rows, each clipped to itself: every pixel is painted once, by the
            # same geometry as in one pass, and the window stays live in between.  The
            # bands are sized to take about `STEP_S` each.
            top, rows = 0, STRIP_PX
            while top < diagram_h:
                rows = max(1, min(rows, math.ceil(diagram_h - top)))
                started = time.perf_counter()
                painter.setClipRect(QRectF(0, top, width, rows))
                _render(scene, painter, QRectF(0, top, width, rows),
                        QRectF(grown.x(), grown.y() + top / scale, grown.width(),
                               rows / scale))
                top += rows
                yield min(top / diagram_h, 1.0) * 0.5
                took = time.perf_counter() - started
                rows = max(16, min(8 * rows, round(rows * STEP_S / max(took, 1e-4))))
            painter.setClipping(False)
            if band:
                painter.scale(scale, scale)
                paint_band(painter, QRectF(0, source.height() - band, source.width(), band),
                           scene.document.topology, sheet)
        finally:
            painter.end()
    # ... then record the scaled resolution, so every scale prints at the same size.
    dots_per_meter = round(SCREEN_DPI * scale / 0.0254)
    image.setDotsPerMeterX(dots_per_meter)
    image.setDotsPerMeterY(dots_per_meter)
    yield 0.5
    # Encoding takes longer than painting (15 s for 130 megapixels): it runs on a thread
    # of its own (a QImage may be read from any thread) while this generator keeps
    # yielding, estimating the fraction done from the pixels encoded per second.
    encoded: list[bytes | None] = [None]

    def encode() -> None:
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if image.save(buffer, "PNG"):
            encoded[0] = bytes(data)
        buffer.close()

    encoder = threading.Thread(target=encode, name="png-encoder", daemon=True)
    started = time.perf_counter()
    encoder.start()
    expected = max(width * height / ENCODE_PIXELS_PER_S, 1e-3)
    while encoder.is_alive():
        encoder.join(STEP_S)
        yield 0.5 + 0.5 * min((time.perf_counter() - started) / expected, 0.99)
    if encoded[0] is None:
        raise ExportError("the PNG encoder failed")  # pragma: no cover - Qt always has PNG
    yield 1.0
    return encoded[0]


def pdf_bytes(scene: FabricScene, *, title: str | None = None,
              sheet: Sheet | None = None) -> bytes:
    """The diagram as a one-page vector PDF fitted to the content (see the module doc);
    with ``sheet``, a legend and title block under it, or pages of a standard size
    (`export_sheet.paint_pages`)."""
    with _export_state(scene):
        source = export_rect(scene)
        band = math.ceil(band_height(sheet))
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        writer = QPdfWriter(buffer)
        writer.setResolution(int(SCREEN_DPI))  # see the module doc
        writer.setTitle(_title(scene, title))
        writer.setCreator(f"Fabric Designer {__version__}")
        if sheet is not None and sheet.page is not None:
            writer.setPageLayout(page_layout(sheet))
            painter = QPainter(writer)
            try:
                paint_pages(writer, painter, lambda p, t, src: _render(scene, p, t, src),
                            QRectF(source), scene.document.topology, sheet)
            finally:
                painter.end()
            buffer.close()
            return bytes(buffer.data())
        source = source.adjusted(0, 0, 0, band)
        points = QSizeF(source.width() * 72 / SCREEN_DPI, source.height() * 72 / SCREEN_DPI)
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
            if band:
                page = page.adjusted(0, 0, 0, -band)
            _render(scene, painter, page, page.translated(source.topLeft()))
            if band:
                paint_band(painter, QRectF(0, page.height(), page.width(), band),
                           scene.document.topology, sheet)
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
    scene: FabricScene, path: str | os.PathLike[str], *, title: str | None = None,
    sheet: Sheet | None = None,
) -> None:
    """Write the diagram as SVG to ``path`` atomically; ``title`` defaults to the
    design's name.  Raises `ExportError` when it cannot."""
    path = Path(path)
    _write(path, _named(svg_bytes, path, scene, title=title, sheet=sheet))


def render_png(
    scene: FabricScene, path: str | os.PathLike[str], *, scale: float | None = None,
    sheet: Sheet | None = None,
) -> float:
    """Write the diagram as PNG (``scale`` pixels per scene unit; None for
    `default_png_scale`) to ``path`` atomically; returns the scale used.

    Raises `ExportError` for a bad scale, an image too large, or a failed write.
    """
    path = Path(path)
    if scale is None:
        scale = _named(default_png_scale, path, scene, sheet=sheet)
    _write(path, _named(png_bytes, path, scene, scale=scale, sheet=sheet))
    return scale


def render_pdf(scene: FabricScene, path: str | os.PathLike[str], *,
               sheet: Sheet | None = None) -> None:
    """Write the diagram as PDF to ``path`` atomically."""
    path = Path(path)
    _write(path, _named(pdf_bytes, path, scene, sheet=sheet))


def _named(render, path: Path, scene: FabricScene, **options) -> bytes:
    """Run ``render``; its errors gain the file name, as every message here names it."""
    try:
        return render(scene, **options)
    except ExportError as exc:
        raise ExportError(f"{os.fspath(path)}: {exc}") from None


def export_scene(
    scene: FabricScene, path: str | os.PathLike[str], *, scale: float | None = None,
    sheet: Sheet | None = None,
) -> float | None:
    """Write the diagram in the format the suffix of ``path`` names (.svg, .png, .pdf);
    returns the PNG scale used (None for SVG and PDF).

    ``scale`` applies to PNG only; None is `default_png_scale`.  Raises `ExportError`
    for any other suffix.

    Example
    -------
    >>> export_scene(window.scene, "fabric.png", scale=1)   # doctest: +SKIP
    1
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        render_svg(scene, path, sheet=sheet)
    elif suffix == ".png":
        return render_png(scene, path, scale=scale, sheet=sheet)
    elif suffix == ".pdf":
        render_pdf(scene, path, sheet=sheet)
    else:
        raise ExportError(
            f"{os.fspath(path)}: not a diagram format {suffix or '(none)'!r} "
            "(use .svg, .png or .pdf)"
        )
    return None


def export_topology(
    topology, path: str | os.PathLike[str], *, scale: float | None = None,
    sheet: Sheet | None = None,
) -> float | None:
    """Export a design without a window (the CLI's ``export``): build a scene for it,
    write ``path`` with `export_scene`; returns the PNG scale used (None for SVG, PDF).

    Needs a ``QApplication``; one is created when none exists.  Headless callers set
    ``QT_QPA_PLATFORM=offscreen`` before Qt is first imported.
    """
    global _APP
    if QApplication.instance() is None:
        # Kept for the life of the process: destroying it before the scene would crash Qt.
        _APP = QApplication(["fabric-designer"])
    document = Document(topology)
    scene = FabricScene(document, theme=PRINT_THEME)
    return export_scene(scene, path, scale=scale, sheet=sheet)


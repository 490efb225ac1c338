"""File > Export: ask for a file (and a scale for a PNG), then write it.

The formats are the registry's (`designer.io.exports.FORMATS`), the same list the CLI
offers: SVG, PNG and PDF are diagrams of the canvas (`designer.gui.export`); the others
(draw.io, GraphML, DOT, NetBox, cabling plan, node-link JSON, ``.fabric.json``) are
written from the design by `designer.io.graph_export.export`.  The file
name proposed is the design's, made portable (`designer.io.file_names`), so the default
never holds a character another desktop refuses.  The PNG scale offered fits the
design: 2 when it can, else the largest scale within the PNG limits, which the question
names.

Example
-------
>>> from designer.gui.export_dialog import export_dialog      # doctest: +SKIP
>>> export_dialog(window, window.scene, window.document)      # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QMessageBox, QWidget

from designer.gui.canvas.scene import FabricScene
from designer.gui.document import Document
from designer.gui.export import (
    DEFAULT_PNG_SCALE,
    DIAGRAM_SUFFIXES,
    MAX_PNG_PIXELS,
    MAX_PNG_SIDE,
    ExportError,
    max_png_scale,
)
from designer.gui.export_progress import ExportProgress, run_export
from designer.gui.export_sheet import Sheet, ask_sheet
from designer.io.exports import FORMATS, format_for
from designer.io.file_names import portable_file_name
from designer.model.errors import DesignError

__all__ = ["ask_export_target", "default_export_name", "export_dialog"]


def _filters() -> tuple[tuple[str, str], ...]:
    """(filter, suffix) of every export format, one entry per distinct name."""
    seen: set[str] = set()
    out = []
    for fmt in FORMATS:
        if fmt.name not in seen:
            seen.add(fmt.name)
            out.append((fmt.filter, fmt.suffix))
    return tuple(out)


_FILTERS = _filters()
MIN_SCALE, MAX_SCALE = 0.5, 8.0  # the scale question's range when the design allows it


def default_export_name(document: Document, suffix: str = ".svg") -> str:
    """The file name an export proposes: the design file's stem, else the design's
    name, made portable (`portable_file_name`), with ``suffix``."""
    if document.path:
        stem = document.path.name.removesuffix(".fabric.json").removesuffix(".json")
    else:
        stem = document.topology.name or ""
    return portable_file_name(stem) + suffix


def _with_suffix(path: Path, selected_filter: str) -> Path:
    """Add the chosen filter's suffix when the typed name has none we know."""
    if format_for(path) is not None:
        return path
    suffix = dict(_FILTERS).get(selected_filter, ".svg")
    return path.with_name(path.name + suffix)


def _report(window: QWidget, text: str, *, error: bool) -> None:
    status = getattr(window, "statusBar", None)
    if callable(status):
        status().showMessage(text, 6000)
    if error and window.isVisible():
        QMessageBox.warning(window, "Export failed", text)


def _ask_png_scale(window: QWidget, scene: FabricScene, sheet: Sheet) -> float | None:
    """The PNG scale, asked within what fits the design and ``sheet``'s band under it;
    None when cancelled.

    Raises `ExportError` when the design is empty or too large for a PNG at any scale.
    """
    fit = max_png_scale(scene, sheet)
    if fit <= 0:
        raise ExportError(
            f"the diagram is too large for a PNG at any scale (at most "
            f"{MAX_PNG_PIXELS / 1e6:.0f} megapixels); export SVG or PDF"
        )
    label = "Pixels per canvas unit (2 = sharp on high-DPI screens):"
    if fit < MAX_SCALE:
        label = (
            f"Pixels per canvas unit (2 = sharp on high-DPI screens).\n"
            f"This design fits up to {fit:g}: a PNG holds at most "
            f"{MAX_PNG_PIXELS / 1e6:.0f} megapixels and {MAX_PNG_SIDE} px a side."
        )
    scale, ok = QInputDialog.getDouble(
        window,
        "PNG scale",
        label,
        min(DEFAULT_PNG_SCALE, fit),
        min(MIN_SCALE, fit),
        min(MAX_SCALE, fit),
        2,
    )
    return scale if ok else None


def canvas_link_results(window: QWidget, document: Document) -> dict | None:
    """The per-link figures the canvas shows (``{link id: {"utilisation", "load_GBps"}}``)
    when it colours links by utilisation and its solve is of the design as it is now;
    else None, and exports colour links by technology as the canvas then does."""
    overlay = getattr(getattr(window, "analysis", None), "overlay", None)
    shown = overlay.shown() if overlay is not None else None
    if shown is None or not overlay.by_utilisation:
        return None
    (util, load, _capacity), current = shown
    if not current:
        return None  # an edit since: its solve (or simulation) is still running
    return {
        lid: {"utilisation": float(u), "load_GBps": float(load[lid])}
        for lid, u in util.items()
    }


def headline(window: QWidget, document: Document) -> str | None:
    """The live solve's headline for a title block (``allreduce of 1 GiB on 1016 GPUs:
    6.50 ms, busbw 330 GB/s``), None when there is none for the design as it is."""
    overlay = getattr(getattr(window, "analysis", None), "overlay", None)
    result = getattr(overlay, "result", None)
    if result is None or not overlay.runner.describes(result.generation):
        return None
    focus = result.focus
    sizes = [int(b) for b in focus.sizes]
    k = sizes.index(result.scenario.bytes) if result.scenario.bytes in sizes else 0
    return (
        f"result: {focus.collective} on {focus.n_ranks} GPUs: "
        f"{focus.time_s[k] * 1e3:.2f} ms, busbw {focus.busbw_GBps[k]:.0f} GB/s "
        f"({focus.algorithm_by_size[k]})"
    )


class _ExportFileDialog(QFileDialog):
    """A save dialog that takes an existing export folder as the answer (see
    `ask_export_target`) instead of opening it."""

    def chosen_folder(self) -> str | None:
        """The typed or selected path when it is an existing folder of a folder format.

        (With a folder's name typed, Qt lists the current folder before it.)
        """
        for name in self.selectedFiles():
            fmt = format_for(Path(name))
            if fmt is not None and fmt.folder and Path(name).is_dir():
                return name
        return None

    def accept(self) -> None:
        if self.chosen_folder() is not None:
            QDialog.accept(self)  # the base dialog's: done, without entering the folder
            return
        super().accept()


def ask_export_target(
    parent: QWidget | None, caption: str, start: str, filters: str, selected: str
) -> tuple[str, str]:
    """The save dialog of File > Export: ``(chosen path, chosen filter)``, or ``("", "")``.

    Like `QFileDialog.getSaveFileName`, except for the formats that write a folder
    (NetBox, ASTRA-sim, SimAI, Chakra): typing the name of such a folder that already
    exists would make the dialog open it, and the user could never choose it.  Such a
    folder is chosen instead; the export then replaces it only if it holds nothing but
    that export's files (`designer.io.exports`).
    """
    dialog = _ExportFileDialog(parent, caption, str(Path(start).parent), filters)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.selectNameFilter(selected)
    dialog.selectFile(Path(start).name)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return "", ""
    chosen = dialog.chosen_folder() or (dialog.selectedFiles() or [""])[0]
    return chosen, dialog.selectedNameFilter()


def _export_in_worker(window: QWidget, path: Path, document: Document, results) -> bool:
    """A model-only export (`designer.io.graph_export`) of a big design behind
    `ExportProgress`; False if the user cancelled."""
    from designer.io.graph_export import export as export_graph

    dialog = ExportProgress(window, path)
    try:
        return dialog.export_file(
            lambda hidden: export_graph(document.topology, hidden, results=results), path)
    finally:
        dialog.hide()  # (close() would be Cancel: see `reject`)
        dialog.deleteLater()


def export_dialog(window: QWidget, scene: FabricScene, document: Document) -> Path | None:
    """File > Export: ask for a file (and a scale for PNG), write it; the written path,
    or None when cancelled or failed.

    A failure is one line in the status bar and a message box.
    """
    from designer.io.graph_export import export as export_graph

    folder = document.path.parent if document.path else Path.cwd()
    chosen, selected_filter = ask_export_target(
        window,
        "Export",
        str(folder / default_export_name(document)),
        ";;".join(f for f, _ in _FILTERS),
        _FILTERS[0][0],
    )
    if not chosen:
        return None
    path = _with_suffix(Path(chosen), selected_filter)
    try:
        if path.suffix.lower() in DIAGRAM_SUFFIXES:
            results = canvas_link_results(window, document)
            sheet = ask_sheet(window, path.suffix.lower(), utilisation=results is not None)
            if sheet is None:
                return None
            sheet = dataclasses.replace(sheet, headline=headline(window, document))
            scale = None
            if path.suffix.lower() == ".png":  # asked within what fits with the band
                scale = _ask_png_scale(window, scene, sheet)
                if scale is None:
                    return None
            if not run_export(window, scene, path, scale=scale, sheet=sheet):
                return None
        else:
            fmt = format_for(path)
            results = canvas_link_results(window, document) if fmt and fmt.results else None
            # Folders are written all or nothing by their writer; what Qt draws must be
            # drawn on this thread: both stay here.
            if fmt is None or fmt.folder or fmt.needs_qt or not ExportProgress.wanted(scene):
                export_graph(document.topology, path, results=results)
            elif not _export_in_worker(window, path, document, results):
                return None
    except (DesignError, OSError) as exc:
        _report(window, str(exc), error=True)
        return None
    _report(window, f"Exported {path}", error=False)
    return path

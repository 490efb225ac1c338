"""File > Export Design Review: the review report (`designer.gui.review.report`) written
as one HTML or PDF file.

The export runs in steps on the GUI thread (the diagram and the panels are Qt
drawings), each started from the event loop so a progress dialog shows the percentage
and can cancel between steps: wait for the review's answers of the design as it is
(they are worked out in the background), draw the diagram with its legend and title
block, draw each panel that has a result, lay out the page, write the file atomically
(a failed export leaves no partial file and an existing file as it was).  A failure
ends in one message naming the file and the reason.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QMarginsF, QObject, QSizeF, QTimer, QUrl, Signal
from PySide6.QtGui import QImage, QPageLayout, QPageSize, QPdfWriter, QTextDocument
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog, QWidget

from designer.gui.review.report import Picture, ReviewParts, report_html
from designer.gui.review.runner import ReviewRunner
from designer.io.atomic import atomic_write_bytes, save_error_message

__all__ = ["FORMATS", "ReviewExporter"]

#: Report formats by file suffix.
FORMATS = {".html": "HTML report (*.html)", ".pdf": "PDF report (*.pdf)"}

#: Longest side of the diagram picture in a PDF report, in pixels.
PDF_DIAGRAM_PX = 2400
#: Width pictures take on a PDF page (px at 96 dpi, A4 minus margins).
PDF_PICTURE_WIDTH = 680
#: How long to wait for the background review before giving up (ms).
REVIEW_WAIT_MS = 120_000


class ReviewExporter(QObject):
    """Exports the design review of one window.

    Signals
    -------
    progress(int, str)
        Percent done and the step.
    finished(str)
        The report was written to that path.
    failed(str)
        The export failed or was cancelled (one line, also shown to the user).
    """

    progress = Signal(int, str)
    finished = Signal(str)
    failed = Signal(str)

    def __init__(self, window, runner: ReviewRunner):
        super().__init__(window)
        self.window = window
        self.runner = runner
        self.interactive = True  # False in tests: no dialogs
        self._dialog: QProgressDialog | None = None
        self._path: Path | None = None
        self._waited = 0
        self._last_folder: Path | None = None

    @property
    def busy(self) -> bool:
        return self._path is not None

    # ------------------------------------------------------------ entry points
    def ask_and_export(self) -> None:
        """Ask for a file (HTML or PDF) and export to it."""
        if self.busy:
            return
        doc = self.window.document
        folder = self._last_folder or (doc.path.parent if doc.path else Path.home())
        stem = (
            doc.path.name.removesuffix(".json").removesuffix(".fabric")
            if doc.path
            else (doc.topology.name or "design")
        )
        name, chosen = QFileDialog.getSaveFileName(
            self.window,
            "Export Design Review",
            str(folder / f"{stem}-review.html"),
            ";;".join(FORMATS.values()),
        )
        if not name:
            return
        path = Path(name)
        if path.suffix.lower() not in FORMATS:
            suffix = ".pdf" if "pdf" in chosen.lower() else ".html"
            path = path.with_name(path.name + suffix)
        self._last_folder = path.parent
        self.export(path)

    def export(self, path: str | os.PathLike[str]) -> None:
        """Write the review to ``path`` (``.html`` or ``.pdf``); `finished` or `failed`
        says how it ended."""
        path = Path(path)
        if self.busy:
            self._fail("an export of the design review is already running")
            return
        if path.suffix.lower() not in FORMATS:
            self._fail(
                f"{path}: a design review is written as .html or .pdf, "
                f"not {path.suffix or 'a file without a suffix'}"
            )
            return
        self._path = path
        self._waited = 0
        if self.interactive:
            dialog = QProgressDialog("Exporting the design review…", "Cancel", 0, 100, self.window)
            dialog.setWindowTitle("Export Design Review")
            dialog.setMinimumDuration(400)
            dialog.setAutoClose(False)
            dialog.setAutoReset(False)
            dialog.canceled.connect(self._on_dialog_canceled)
            self._dialog = dialog
        self._step(2, "Waiting for the review and the results of the design", self._wait_for_review)

    # ------------------------------------------------------------ steps
    def _step(self, percent: int, text: str, then) -> None:
        self.progress.emit(percent, text)
        if self._dialog is not None:
            self._dialog.setLabelText(f"{text}…")
            self._dialog.setValue(percent)
        QTimer.singleShot(0, self, lambda: self._run(then))

    def _run(self, step) -> None:
        if self._path is None:
            return  # cancelled
        try:
            step()
        except Exception as exc:  # any failure ends the export with its reason
            self._fail(
                f"cannot export the design review to {self._path}: {save_error_message(exc)}"
            )

    def _wait_for_review(self) -> None:
        runner = self.runner
        if not runner.current or _solving(self.window):
            if not runner.current and not (runner.busy or runner.pending):
                runner.schedule()
            self._waited += 100
            if self._waited > REVIEW_WAIT_MS:
                raise TimeoutError("the review of the design did not finish in time")
            QTimer.singleShot(100, self, lambda: self._run(self._wait_for_review))
            return
        self._parts = self._start_parts()
        self._step(20, "Drawing the diagram", self._draw_diagram)

    def _start_parts(self) -> ReviewParts:
        doc = self.window.document
        latest = self.runner.latest
        parts = ReviewParts(title=doc.topology.name or "Fabric design")
        where = f"{doc.path}. " if doc.path else "Not saved to a file. "
        parts.subtitle = f"{where}Exported {_dt.datetime.now():%Y-%m-%d %H:%M}."
        for key in ("problems", "bom", "info"):
            value = latest.get(key)
            if isinstance(value, tuple) and value[:1] == ("error",):
                parts.missing[key] = f"Could not work this out: {value[1]}"
                continue
            setattr(parts, {"problems": "findings"}.get(key, key), value)
        return parts

    def _draw_diagram(self) -> None:
        from designer.gui.export import export_rect, png_bytes, svg_bytes
        from designer.gui.export_dialog import canvas_link_results, headline
        from designer.gui.export_sheet import Sheet

        scene = self.window.scene
        doc = self.window.document
        # As File > Export draws it: the legend gives the utilisation scale when the
        # links are coloured by a result, and the title block the scenario's answer.
        sheet = Sheet(
            legend=True,
            title_block=True,
            utilisation=canvas_link_results(self.window, doc) is not None,
            headline=headline(self.window, doc),
        )
        if export_rect(scene).isEmpty():
            self._parts.missing["diagram"] = "The design is empty."
        elif self._pdf:
            rect = export_rect(scene)
            scale = min(2.0, PDF_DIAGRAM_PX / max(rect.width(), rect.height(), 1))
            data = png_bytes(scene, scale=scale, sheet=sheet)
            self._parts.diagram = Picture(
                "The design, with its legend and title block",
                data,
                resource="review:diagram.png",
                width=PDF_PICTURE_WIDTH,
            )
        else:
            self._parts.diagram = Picture(
                "The design, with its legend and title block",
                svg_bytes(scene, sheet=sheet),
                "image/svg+xml",
            )
        self._step(50, "Drawing the panels", self._draw_panels)

    def _draw_panels(self) -> None:
        self._parts.scenario_html = _dock_html(getattr(self.window, "analysis", None), "scenario")
        self._parts.workload_html = _dock_html(getattr(self.window, "workload", None), "dock")
        with tempfile.TemporaryDirectory(prefix="fd-review-") as tmp:
            for i, panel in enumerate(_panels(self.window)):
                try:
                    _header, rows = panel.data_rows()
                except Exception:
                    continue
                if not rows:
                    continue
                blocked = panel.blockSignals(True)  # no "Exported <temp file>" message
                try:
                    data = Path(panel.export_png(Path(tmp) / f"p{i}.png")).read_bytes()
                finally:
                    panel.blockSignals(blocked)
                resource = f"review:panel{i}.png" if self._pdf else ""
                self._parts.panels.append(
                    Picture(
                        panel.windowTitle(),
                        data,
                        resource=resource,
                        width=PDF_PICTURE_WIDTH if self._pdf else None,
                    )
                )
        if not self._parts.panels:
            self._parts.missing["panels"] = "No panel has a result to show yet."
        if not self._parts.scenario_html:
            self._parts.missing["scenario"] = "No scenario result."
        if not self._parts.workload_html:
            self._parts.missing["workloads"] = "No workload in this design."
        self._step(75, "Laying out the report", self._write)

    def _write(self) -> None:
        catalog = self.window.document.topology.catalog
        text = report_html(self._parts, catalog)
        data = _pdf_bytes(text, self._parts) if self._pdf else text.encode("utf-8")
        self.progress.emit(90, "Writing the file")
        atomic_write_bytes(self._path, data)
        path = self._path
        self._end()
        self.progress.emit(100, "Done")
        self.window.show_message(f"Exported the design review to {path}")
        self.finished.emit(str(path))

    @property
    def _pdf(self) -> bool:
        return self._path is not None and self._path.suffix.lower() == ".pdf"

    # ------------------------------------------------------------ endings
    def _on_dialog_canceled(self) -> None:
        if self._path is not None:
            self._fail("export of the design review cancelled", show=False)

    def _end(self) -> None:
        self._path = None
        if self._dialog is not None:
            self._dialog.canceled.disconnect(self._on_dialog_canceled)
            self._dialog.close()
            self._dialog.deleteLater()
            self._dialog = None

    def _fail(self, message: str, show: bool = True) -> None:
        self._end()
        self.window.show_message(message)
        if show and self.interactive:
            QMessageBox.warning(self.window, "Export Design Review", message)
        self.failed.emit(message)


def _solving(window) -> bool:
    """The scenario's solve or the jobs' simulation is still running or asked for, so
    the report would show a result of an older design (or none)."""
    for part in ("analysis", "workload"):
        runner = getattr(getattr(window, part, None), "runner", None)
        if runner is not None and (runner.busy or runner.pending):
            return True
    return False


def _panels(window) -> list[QWidget]:
    out = []
    analysis = getattr(window, "analysis", None)
    if analysis is not None:
        out += list(analysis.panels)
    workload = getattr(window, "workload", None)
    if workload is not None:
        out += [p for p in (workload.timeline, workload.linkstats) if p is not None]
    return out


def _dock_html(parts, name: str) -> str:
    """The rich text a results dock shows (its answer and result labels, its table)."""
    dock = getattr(parts, name, None) if parts is not None else None
    if dock is None:
        return ""
    out = []
    for label in ("answer", "results"):
        widget = getattr(dock, label, None)
        if widget is not None and widget.text():
            out.append(f"<div>{widget.text()}</div>")
    table = getattr(dock, "table", None)
    if table is not None and table.rowCount():
        import html

        head = "".join(
            f"<th>{html.escape(table.horizontalHeaderItem(c).text())}</th>"
            for c in range(table.columnCount())
            if table.horizontalHeaderItem(c) is not None
        )
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(table.item(r, c).text() if table.item(r, c) else '')}</td>"
                for c in range(table.columnCount())
            )
            + "</tr>"
            for r in range(table.rowCount())
        )
        out.append(f"<table><tr>{head}</tr>{rows}</table>")
    return "".join(out)


def _pdf_bytes(text: str, parts: ReviewParts) -> bytes:
    """The report laid out on A4 pages by Qt's rich-text engine."""
    from PySide6.QtCore import QBuffer, QIODevice

    doc = QTextDocument()
    for pic in ([parts.diagram] if parts.diagram else []) + parts.panels:
        if pic.resource:
            image = QImage.fromData(pic.data, "PNG")
            doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(pic.resource), image)
    doc.setHtml(text)
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setResolution(96)
    writer.setTitle(f"Design review: {parts.title}")
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4),
            QPageLayout.Orientation.Portrait,
            QMarginsF(12, 12, 12, 12),
            QPageLayout.Unit.Millimeter,
        )
    )
    doc.setPageSize(QSizeF(writer.width(), writer.height()))
    doc.print_(writer)
    buffer.close()
    return bytes(buffer.data())

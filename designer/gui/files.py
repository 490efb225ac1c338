"""`FileController`: New, Open, Save, Save As and the unsaved-changes prompt.

A bad file gives one clear message and leaves the open design untouched: the document is
only replaced after a file has loaded completely.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from designer.gui.document import Document
from designer.model.errors import DesignError
from designer.model.topology import Topology

FILTER = "Fabric designs (*.fabric.json);;JSON (*.json);;All files (*)"


class FileController(QObject):
    """File operations of one main window."""

    message = Signal(str)
    opened = Signal(object)  # Path

    def __init__(self, window: QMainWindow, document: Document, parent: QObject | None = None):
        super().__init__(parent)
        self.window = window
        self.document = document

    def _error(self, title: str, text: str) -> None:
        self.message.emit(text)
        if self.window.isVisible():
            QMessageBox.warning(self.window, title, text)

    def maybe_save(self) -> bool:
        """Ask about unsaved changes; False means the user cancelled."""
        if not self.document.is_modified:
            return True
        answer = QMessageBox.question(
            self.window, "Unsaved changes",
            f"Save the changes to {self.document.title} first?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def new_design(self, topology: Topology | None = None) -> bool:
        if not self.maybe_save():
            return False
        self.document.replace(topology or Topology(name="untitled"))
        return True

    def open_file(self, path: str | Path | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Open design", "", FILTER)
            if not path:
                return False
        if not self.maybe_save():
            return False
        try:
            self.document.open(Path(path))
        except DesignError as exc:
            self._error("Cannot open design", str(exc))
            return False
        self.message.emit(f"Opened {path}")
        self.opened.emit(Path(path))
        return True

    def save(self) -> bool:
        if self.document.path is None:
            return self.save_as()
        return self._save_to(self.document.path)

    def save_as(self, path: str | Path | None = None) -> bool:
        if path is None:
            start = str(self.document.path or f"{self.document.topology.name}.fabric.json")
            path, _ = QFileDialog.getSaveFileName(self.window, "Save design as", start, FILTER)
            if not path:
                return False
        path = Path(path)
        if not path.name.endswith(".json"):
            path = path.with_name(path.name + ".fabric.json")
        return self._save_to(path)

    # Hooks the main window calls; filled in by the files/recovery work (issue 4).
    def new_from_template(self) -> bool:
        """Ask for a template and its parameters, then open the built design."""
        self.message.emit("New from template is not available yet")
        return False

    def recent_menu(self):
        """The File > Open Recent menu (None until recent files are kept)."""
        return None

    def start_autosave(self) -> None:
        """Begin periodic autosave to the recovery file."""

    def offer_recovery(self) -> bool:
        """After a crash, offer to restore the autosaved design; True if restored."""
        return False

    def export(self) -> None:
        """File > Export: the diagram (SVG/PNG/PDF) or the graph (GraphML/JSON)."""
        self.message.emit("Export is not available yet")

    def _save_to(self, path: Path) -> bool:
        try:
            self.document.save(path)
        except (DesignError, OSError) as exc:
            self._error("Cannot save design", str(exc))
            return False
        self.message.emit(f"Saved {path}")
        return True

"""The Help menu: the user guide (F1), the keyboard shortcuts and About.

The guide is ``docs/user-guide.md``: copied into the package as ``designer/docs`` by the
wheel and the bundle, read from the top of a checkout otherwise; it opens in the
desktop's viewer for Markdown, or in a window of the app where there is none.  The
shortcuts dialog lists the keys the window's actions answer to (read from the QActions,
so it cannot drift from them).
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import PySide6
from PySide6.QtCore import QObject, Qt, QUrl, Signal, qVersion
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

import designer
from designer.gui.actions import ACTIONS
from designer.logs import log_dir

LICENCE = "Apache-2.0"
GUIDE_NAME = "user-guide.md"


def user_guide_path() -> Path | None:
    """The user guide on this machine: the packaged copy, else the checkout's, else None."""
    package = Path(designer.__file__).resolve().parent
    for folder in (package / "docs", package.parent / "docs"):
        if (folder / GUIDE_NAME).is_file():
            return folder / GUIDE_NAME
    return None


def open_url(url: QUrl) -> bool:
    """Hand ``url`` to the desktop (a seam: tests replace it rather than start a viewer)."""
    return QDesktopServices.openUrl(url)


def shortcut_rows(actions: dict[str, QAction]) -> list[tuple[str, str, str]]:
    """``(command, keys, what it does)`` for each of ``actions`` that has keys now, in
    the order of `ACTIONS`; keys as the platform writes them (``Ctrl+Y``, ``⌘Y``)."""
    native = QKeySequence.SequenceFormat.NativeText
    rows = []
    for name in ACTIONS:
        action = actions.get(name)
        if action is None:
            continue
        keys = [k.toString(native) for k in action.shortcuts() if not k.isEmpty()]
        if keys:
            text = action.text().replace("&", "").rstrip("…").rstrip(".")
            rows.append((text, ", ".join(keys), action.statusTip()))
    return rows


class ShortcutsDialog(QDialog):
    """Every keyboard shortcut of the window, in a table."""

    def __init__(self, actions: dict[str, QAction], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("shortcuts_dialog")
        self.setWindowTitle("Keyboard Shortcuts")
        rows = shortcut_rows(actions)
        self.table = QTableWidget(len(rows), 3, self)
        self.table.setHorizontalHeaderLabels(["Command", "Keys", "What it does"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(
            QLabel("Canvas gestures (drag, wheel, Space to pan) are in the user guide (F1).", self)
        )
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(640, 560)


class GuideViewer(QDialog):
    """The user guide rendered from its Markdown, for desktops with no viewer for it."""

    def __init__(self, path: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("guide_viewer")
        self.setWindowTitle("Fabric Designer User Guide")
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(True)
        self.browser.setSource(
            QUrl.fromLocalFile(str(path)), QTextDocument.ResourceType.MarkdownResource
        )
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        layout.addWidget(buttons)
        self.resize(820, 640)


def about_html() -> str:
    """The About box's text: version, licence, the versions underneath, and links."""
    guide = user_guide_path()
    links = [f"<a href='{QUrl.fromLocalFile(str(log_dir())).toString()}'>Log folder</a>"]
    if guide is not None:
        links.insert(0, f"<a href='{QUrl.fromLocalFile(str(guide)).toString()}'>User guide</a>")
    return (
        f"<h3>Fabric Designer {designer.__version__}</h3>"
        "<p>Sketch AI GPU clusters and see how the network behaves while you draw.</p>"
        f"<p>Licence: {LICENCE}</p>"
        f"<p>Qt {qVersion()}, PySide6 {PySide6.__version__}, "
        f"Python {platform.python_version()} on {sys.platform}</p>"
        f"<p>{' · '.join(links)}</p>"
        "<p>Prices and power figures in the catalog are editable assumptions, not "
        "vendor quotes.</p>"
    )


class HelpMenu(QObject):
    """Help > User Guide, Keyboard Shortcuts, About, on ``window``'s menu bar."""

    message = Signal(str)

    def __init__(self, window: QMainWindow, actions: dict[str, QAction]):
        super().__init__(window)
        self.window = window
        self.actions = actions
        self.shortcuts_dialog: ShortcutsDialog | None = None
        self.about_dialog: QMessageBox | None = None
        self.guide_viewer: GuideViewer | None = None
        actions["user_guide"].triggered.connect(self.open_user_guide)
        actions["show_shortcuts"].triggered.connect(self.show_shortcuts)
        actions["about"].triggered.connect(self.show_about)
        actions["about"].setMenuRole(QAction.MenuRole.AboutRole)
        self.menu = window.menuBar().addMenu("&Help")
        self.menu.setObjectName("help_menu")
        for name in ("user_guide", "show_shortcuts", None, "about"):
            self.menu.addSeparator() if name is None else self.menu.addAction(actions[name])

    def open_user_guide(self) -> bool:
        """Open the guide in the desktop's viewer; say where it is when that fails."""
        path = user_guide_path()
        if path is None:
            QMessageBox.information(
                self.window,
                "User Guide",
                "The user guide is not installed with this copy of Fabric Designer. It is "
                f"docs/{GUIDE_NAME} in the project's source. Help > Keyboard Shortcuts "
                "lists every key.",
            )
            return False
        if not open_url(QUrl.fromLocalFile(str(path))):
            # Nothing on this desktop opens Markdown: read it here instead.
            self.show_guide_here(path)
            return False
        self.message.emit(f"Opened the user guide ({path})")
        return True

    def show_guide_here(self, path: Path) -> GuideViewer:
        """The guide in a window of the app (its images and links work there too)."""
        if self.guide_viewer is None:
            self.guide_viewer = GuideViewer(path, self.window)
        self.guide_viewer.show()
        self.guide_viewer.raise_()
        self.message.emit(f"No application opens Markdown here; showing {path}")
        return self.guide_viewer

    def show_shortcuts(self) -> ShortcutsDialog:
        """The shortcuts dialog (one per window, rebuilt so it shows the keys of now)."""
        if self.shortcuts_dialog is not None:
            self.shortcuts_dialog.close()
            self.shortcuts_dialog.deleteLater()
        self.shortcuts_dialog = ShortcutsDialog(self.actions, self.window)
        self.shortcuts_dialog.show()
        return self.shortcuts_dialog

    def show_about(self) -> QMessageBox:
        """The About box (not modal: it waits for nobody)."""
        if self.about_dialog is None:
            box = QMessageBox(self.window)
            box.setObjectName("about_dialog")
            box.setWindowTitle("About Fabric Designer")
            box.setTextFormat(Qt.TextFormat.RichText)
            box.setText(about_html())
            box.setIconPixmap(self.window.windowIcon().pixmap(64, 64))
            box.setStandardButtons(QMessageBox.StandardButton.Close)
            box.setWindowModality(Qt.WindowModality.NonModal)
            label = box.findChild(QLabel, "qt_msgbox_label")
            if label is not None:
                label.setOpenExternalLinks(True)
            self.about_dialog = box
        self.about_dialog.show()
        return self.about_dialog


def install_help(window: QMainWindow) -> HelpMenu:
    """Add the Help menu to ``window`` (a `MainWindow`: its ``actions_by_name``)."""
    help_menu = HelpMenu(window, window.actions_by_name)
    if hasattr(window, "show_message"):
        help_menu.message.connect(window.show_message)
    return help_menu

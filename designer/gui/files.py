"""`FileController`: New, New from Template, Open, Open Recent, Save, Save As, Export,
the unsaved-changes prompt, autosave and crash recovery.

A bad file gives one clear message and leaves the open design untouched: the document is
only replaced after a file has loaded completely.  A failed save (read-only file or folder,
full disk) says why in one line and leaves the design unsaved, the file on disk as it was.
A failing autosave says so in the status bar once, not at every tick.

Two writers, one file: the window holds a lock file beside its design
(`designer.io.file_lock`), so opening a design another running session has open asks
first (Open Read-Only / Open Anyway / Cancel; read-only, Save asks for another name), and
the command line refuses to write over it.  Saving checks that the file is still what
this window opened or last saved (`designer.io.disk_state`); when another window or a
script changed it, the save asks Reload / Save As… / Overwrite / Cancel, with a summary
of what differs (`designer.gui.other_writers`).

Recent files and the autosave interval live in `QSettings`: the application's own
(organisation and name set by `designer.gui.app.application`), or an INI file in
``$FABRIC_DESIGNER_DATA_DIR`` when that variable is set, so tests and portable installs
never touch the user's real settings.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QFileDialog, QMainWindow, QMenu, QMessageBox

from designer.gui import other_writers
from designer.gui.document import Document, disk_state_of
from designer.gui.open_progress import MIN_BYTES as OPEN_PROGRESS_BYTES
from designer.gui.open_progress import MIN_LINKS as OPEN_PROGRESS_LINKS
from designer.gui.open_progress import OpenProgress
from designer.gui.recovery import DATA_DIR_ENV, Autosaver, RecoveryEntry, find_recoveries
from designer.io.atomic import save_error_message
from designer.io.imports import OPEN_FILTERS, is_import, read_design
from designer.model.errors import DesignError
from designer.model.topology import Topology

FILTER = "Fabric designs (*.fabric.json);;JSON (*.json);;All files (*)"
#: File > Open also imports what the exporters wrote (`designer.io.imports`).
OPEN_FILTER = ("Fabric designs (*.fabric.json);;JSON (*.json);;" + OPEN_FILTERS
               + ";;All files (*)")
MAX_RECENT = 10
RECENT_KEY = "recent/files"
AUTOSAVE_KEY = "autosave/interval_s"

log = logging.getLogger(__name__)


def user_settings() -> QSettings:
    """The settings store: an INI file under ``$FABRIC_DESIGNER_DATA_DIR`` if set, else the
    application's native one."""
    folder = os.environ.get(DATA_DIR_ENV)
    if folder:
        return QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
    return QSettings()


class RecentFiles:
    """Most recently opened or saved designs, newest first, at most ``limit``.

    Examples
    --------
    >>> recent = RecentFiles(QSettings("/tmp/r.ini", QSettings.Format.IniFormat))  # doctest: +SKIP
    >>> recent.add("/a.fabric.json"); recent.add("/b.fabric.json")  # doctest: +SKIP
    >>> [p.name for p in recent.paths()]                            # doctest: +SKIP
    ['b.fabric.json', 'a.fabric.json']
    """

    def __init__(self, settings: QSettings, limit: int = MAX_RECENT):
        self.settings = settings
        self.limit = limit

    def paths(self) -> list[Path]:
        raw = self.settings.value(RECENT_KEY, [])
        # An INI file hands back one entry as a plain string, junk as anything at all.
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            return []
        return [Path(p) for p in raw if isinstance(p, str) and p][: self.limit]

    def _store(self, paths: list[Path]) -> None:
        self.settings.setValue(RECENT_KEY, [str(p) for p in paths[: self.limit]])
        self.settings.sync()

    def add(self, path: str | Path) -> None:
        """Put ``path`` first (moving it up if it is already listed)."""
        path = Path(path).absolute()
        self._store([path, *(p for p in self.paths() if p != path)])

    def prune(self) -> list[Path]:
        """Drop files that no longer exist; returns the remaining list."""
        paths = self.paths()
        alive = [p for p in paths if p.is_file()]
        if alive != paths:
            self._store(alive)
        return alive

    def clear(self) -> None:
        self._store([])


def _display_path(path: Path) -> str:
    """A folder as a user reads it: ``~/designs`` rather than ``/home/ann/designs``."""
    folder = str(path.parent)
    home = str(Path.home())
    if folder == home or folder.startswith(home + os.sep):
        folder = "~" + folder[len(home):]
    return folder


def _is_big(path: Path) -> bool:
    """Whether ``path`` is big enough to open through the progress dialog."""
    try:
        return path.stat().st_size >= OPEN_PROGRESS_BYTES
    except OSError:
        return False  # the load says why, in its own words


@contextmanager
def _busy_cursor():
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    try:
        yield
    finally:
        QApplication.restoreOverrideCursor()  # (before any message box)


class FileController(QObject):
    """File operations of one main window.

    Parameters
    ----------
    window : QMainWindow
        Parent of the dialogs; message boxes appear only while it is visible.
    document : Document
        The open design.
    settings : QSettings, optional
        Where recent files and the autosave interval are kept; `user_settings()` by default.
    recovery_folder : Path, optional
        Where autosave copies go; ``recovery_dir()`` by default.
    """

    message = Signal(str)
    opened = Signal(object)  # Path

    def __init__(self, window: QMainWindow, document: Document, parent: QObject | None = None,
                 *, settings: QSettings | None = None, recovery_folder: Path | None = None):
        super().__init__(parent)
        self.window = window
        self.document = document
        self.settings = settings if settings is not None else user_settings()
        self.recent = RecentFiles(self.settings)
        self._recent_menu: QMenu | None = None
        self.autosaver = Autosaver(document, folder=recovery_folder, parent=self)
        self.autosaver.failed.connect(self._on_autosaver_failed)
        self.autosaver.saved.connect(self._on_autosaver_saved)
        self._autosave_problem: str | None = None  # the failure already reported
        self._keep_recovery = False
        self.guard = other_writers.OtherWriters(window, document, parent=self)

    def _error(self, title: str, text: str) -> None:
        self.message.emit(text)
        if self.window.isVisible():
            QMessageBox.warning(self.window, title, text)

    # ------------------------------------------------------------ new / open / save
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

    def new_from_template(self) -> bool:
        """Ask for a template and its parameters, then open the built design."""
        # Imported here: the dialog builds every template's form, which only this needs.
        from designer.gui.template_dialog import TemplateDialog

        if not self.maybe_save():
            return False
        dialog = TemplateDialog(self.window)
        try:
            if dialog.exec() != TemplateDialog.DialogCode.Accepted:
                return False
            topology = dialog.topology()
        finally:
            dialog.deleteLater()
        if topology is None:
            return False
        # (the window fits the view on topology_replaced)
        if topology.link_count() >= OPEN_PROGRESS_LINKS:
            with self._progress_dialog(topology.name) as dialog:
                self._draw(dialog, lambda: self.document.replace(topology))
        else:
            self.document.replace(topology)
        # Unmodified, like File > New: nothing the user made is in it yet (the dialog
        # builds it again in a moment), so closing or opening another design does not
        # ask, and an error report does not claim unsaved changes.
        self.message.emit(f"New design from template: {topology.name}")
        return True

    def open_file(self, path: str | Path | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Open design", "", OPEN_FILTER)
            if not path:
                return False
        if not self.maybe_save():
            return False
        if is_import(path):
            return self._import(Path(path))
        how = self.guard.may_open(Path(path))
        if how == other_writers.CANCEL:
            self.message.emit(f"{Path(path).name} not opened: it is open elsewhere")
            return False
        read_only = how == other_writers.OPEN_READ_ONLY
        # A large design takes seconds to read and draw (~12 s at 16,384 GPUs): say so
        # first, painted now; a big file opens through a dialog with its progress and
        # Cancel (`open_progress`), a small one under a busy cursor.
        self.message.emit(f"Opening {Path(path).name}…")
        self.window.statusBar().repaint()
        try:
            opened = self._open(Path(path), read_only=read_only)
        except DesignError as exc:
            log.info("cannot open %s: %s", path, exc)
            self._error("Cannot open design", str(exc))
            return False
        if not opened:
            log.info("opening %s cancelled", path)
            self.message.emit(f"Opening {Path(path).name} cancelled: the design is as it was")
            return False
        log.info("opened %s: %d nodes", path, len(self.document.topology))
        self.recent.add(path)
        self.message.emit(f"Opened {path} read-only: Save asks for another name" if read_only
                          else f"Opened {path}")
        self.opened.emit(Path(path))
        return True

    def _import(self, path: Path) -> bool:
        """Open a draw.io or GraphML file as a new, unsaved design (Save asks for a
        ``.fabric.json`` name: the file it came from stays as it is)."""
        try:
            with _busy_cursor():
                topology = read_design(path)
                self.document.replace(topology)
        except DesignError as exc:
            log.info("cannot import %s: %s", path, exc)
            self._error("Cannot import design", str(exc))
            return False
        log.info("imported %s: %d nodes", path, len(topology))
        self.message.emit(f"Imported {path}: save it as a design file to keep it")
        return True

    def _open(self, path: Path, read_only: bool = False) -> bool:
        """Open ``path`` (whether it was: False when the user cancelled); raises
        `DesignError` for a file that cannot be opened, with the cursor restored."""
        if not _is_big(path):
            with _busy_cursor():
                self.document.open(path, read_only=read_only)
            return True
        state = disk_state_of(path)  # before reading: see Document.replace
        return self._through_dialog(path, path.name, lambda topology: self.document.replace(
            topology, path, state, read_only=read_only))

    def _through_dialog(self, source: Path, name: str, replace) -> bool:
        """Read ``source`` and call ``replace(topology)`` with the progress dialog
        (`open_progress`); False if the user cancelled while it was read."""
        with self._progress_dialog(name) as dialog:
            topology = dialog.load(source)
            if topology is None:
                return False
            self._draw(dialog, lambda: replace(topology))
            return True

    def _draw(self, dialog: OpenProgress, replace) -> None:
        """Call ``replace()`` with ``dialog`` showing the canvas's drawing progress."""
        dialog.draw(getattr(self.window, "scene", None), replace)

    @contextmanager
    def _progress_dialog(self, name: str):
        """An `OpenProgress` dialog for ``name``, gone on exit."""
        dialog = OpenProgress(self.window, name)
        try:
            yield dialog
        finally:
            dialog.hide()
            dialog.deleteLater()

    def save(self) -> bool:
        if self.document.path is None:
            return self.save_as()
        if self.document.read_only:
            self.message.emit(f"{self.document.path.name} is open read-only here: "
                              "save it under another name")
            return self.save_as()
        return self._save_to(self.document.path)

    def save_as(self, path: str | Path | None = None) -> bool:
        if path is None:
            start = str(self.document.path or f"{self.document.topology.name}.fabric.json")
            if self.document.read_only:  # its own name belongs to another session
                start = start.removesuffix(".fabric.json").removesuffix(".json") + \
                    " copy.fabric.json"
            path, _ = QFileDialog.getSaveFileName(self.window, "Save design as", start, FILTER)
            if not path:
                return False
        path = Path(path)
        if not path.name.endswith(".json"):
            path = path.with_name(path.name + ".fabric.json")
        return self._save_to(path)

    def _save_to(self, path: Path) -> bool:
        instead = self._other_writer(path)
        if instead is not None:
            return instead
        try:
            self.document.save(path)
        except (DesignError, OSError) as exc:
            # One line that says why (disk full, read-only) and that nothing was lost.
            text = save_error_message(exc)
            log.warning("save failed: %s", text)
            self._error("Cannot save design", text)
            return False
        log.info("saved %s: %d nodes", path, len(self.document.topology))
        self.guard.hold(path)  # (opened while another session had it, since closed)
        self.recent.add(path)
        self.message.emit(f"Saved {path}")
        return True

    # ------------------------------------------------------------ other writers
    def _other_writer(self, path: Path) -> bool | None:
        """Before saving to ``path``: None to go on, or what the save returns instead
        when another writer has the file (cancelled, reloaded, or saved elsewhere)."""
        choice = self.guard.before_save(path)
        if choice is None:
            return None
        if choice == other_writers.SAVE_AS:
            return self.save_as()
        if choice == other_writers.RELOAD:
            self._reload(path)
        else:
            self.message.emit(f"Not saved: another program or window has {path.name}")
        return False

    def _reload(self, path: Path) -> None:
        """Open ``path`` again as it is on disk, dropping this window's changes."""
        try:
            self._open(path)
        except DesignError as exc:
            log.info("cannot reload %s: %s", path, exc)
            self._error("Cannot reload design", str(exc))
            return
        log.info("reloaded %s from disk", path)
        self.message.emit(f"Reloaded {path} as it is on disk")

    # ------------------------------------------------------------ recent files
    def recent_menu(self) -> QMenu:
        """The File > Open Recent menu; it lists the files afresh each time it opens."""
        if self._recent_menu is None:
            menu = QMenu("Open &Recent", self.window)
            menu.setObjectName("recent_menu")
            menu.setToolTipsVisible(True)
            menu.aboutToShow.connect(self._on_recent_menu_about_to_show)
            self._recent_menu = menu
            self._on_recent_menu_about_to_show()
        return self._recent_menu

    def _on_recent_menu_about_to_show(self) -> None:
        menu = self._recent_menu
        menu.clear()
        paths = self.recent.prune()
        for i, path in enumerate(paths, start=1):
            # "&1" gives the first ten entries a keyboard mnemonic (1..9, then 0); the
            # folder after the tab sits in the shortcut column, so the folders line up.
            action = QAction(f"&{i % 10}  {path.name}\t{_display_path(path)}", menu)
            action.setToolTip(str(path))
            action.setStatusTip(str(path))
            action.setData(str(path))
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))
            menu.addAction(action)
        if not paths:
            empty = menu.addAction("No recent files")
            empty.setEnabled(False)
        menu.addSeparator()
        clear = menu.addAction("&Clear Recent")
        clear.setEnabled(bool(paths))
        clear.triggered.connect(self._on_clear_recent_triggered)

    def _on_clear_recent_triggered(self) -> None:
        self.recent.clear()
        self.message.emit("Recent files cleared")

    # ------------------------------------------------------------ autosave / recovery
    def start_autosave(self) -> None:
        """Begin periodic autosave to the recovery file (interval from the settings,
        ``autosave/interval_s``, 60 s by default)."""
        try:
            seconds = float(self.settings.value(AUTOSAVE_KEY, self.autosaver.interval_s))
        except (TypeError, ValueError):
            seconds = self.autosaver.interval_s
        self.autosaver.interval_s = seconds
        self.autosaver.start()
        app = QApplication.instance()
        if app is not None:
            # A clean quit (the window already asked about unsaved changes) leaves nothing
            # to recover; only a crash leaves the copy behind.
            app.aboutToQuit.connect(self.discard_recovery)

    def discard_recovery(self) -> None:
        """The session ended cleanly: stop autosaving and remove the recovery copy
        (after `keep_recovery`, only stop); the design's lock file goes too."""
        self.guard.release_lock()
        if self._keep_recovery:
            self.autosaver.stop()
        else:
            self.autosaver.shutdown()

    def keep_recovery(self) -> None:
        """Quitting after an internal error: stop autosaving but leave the recovery copy
        on disk, so the next start offers it."""
        if self._keep_recovery:
            return
        self._keep_recovery = True
        saver = self.autosaver
        saver.stop()
        saver.wait()
        # Nothing may delete the copy from here on: not the undo stack turning clean as it
        # is destroyed at exit, not another design replacing this one.
        self.document.undo_stack.cleanChanged.disconnect(saver._on_stack_clean_changed)
        self.document.topology_replaced.disconnect(saver._on_document_topology_replaced)

    def _on_autosaver_failed(self, text: str) -> None:
        # The timer retries every tick: say it once, not a message per minute.
        if text == self._autosave_problem:
            log.debug("%s (again)", text)
            return
        self._autosave_problem = text
        log.warning("%s", text)
        self.message.emit(text)

    def _on_autosaver_saved(self, path: Path) -> None:
        log.info("autosaved %s", path)
        if self._autosave_problem is not None:
            self._autosave_problem = None
            self.message.emit("Autosave works again")

    def offer_recovery(self) -> bool:
        """After a crash, offer to restore the autosaved design; True if restored.

        The newest copy is offered first; No deletes it and offers the next.
        """
        for entry in find_recoveries(self.autosaver.folder):
            when = entry.saved_at.strftime("%Y-%m-%d %H:%M")
            came_from = f"\nIt was {entry.original}." if entry.original else ""
            answer = QMessageBox.question(
                self.window, "Recover design",
                f"Restore the unsaved design from {when}?\n\n"
                f"Fabric Designer did not close properly while “{entry.title}” had unsaved "
                f"changes.{came_from}\nNo deletes the recovered copy.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.Yes)
            if answer != QMessageBox.StandardButton.Yes:
                entry.remove()
                continue
            return self.restore(entry)
        return False

    def restore(self, entry: RecoveryEntry) -> bool:
        """Load a recovery copy into the document: marked modified, named after the file it
        came from, and kept on disk as this session's copy until the design is saved."""
        if not self.maybe_save():
            return False
        try:
            if _is_big(entry.design):   # a big design: with the progress dialog
                if not self._through_dialog(
                        entry.design, entry.title,
                        lambda topology: self.document.replace(
                            topology, entry.original, entry.original_state)):
                    self.message.emit("Restoring cancelled: the recovered copy is kept")
                    return False
            else:
                topology = entry.load()
                self.document.replace(topology, entry.original, entry.original_state)
        except DesignError as exc:
            aside = entry.set_aside()
            self._error("Cannot restore design", f"{exc} (kept as {aside})")
            return False
        self.autosaver.adopt(entry)
        log.info("restored the recovery copy %s (from %s)", entry.design, entry.original)
        # Not the saved state: the title shows "*" and closing asks to save.
        self.document.undo_stack.resetClean()
        self.message.emit(f"Restored the design autosaved at {entry.saved_at:%H:%M}")
        return True

    # ------------------------------------------------------------ export
    def export(self) -> None:
        """File > Export: the diagram (SVG/PNG/PDF) or the graph (GraphML/JSON)."""
        try:
            from designer.gui.export_dialog import export_dialog
        except ImportError as exc:
            self.message.emit(f"Export is not available: {exc}")
            return
        scene = getattr(self.window, "scene", None)
        try:
            path = export_dialog(self.window, scene, self.document)
        except (DesignError, OSError) as exc:
            text = save_error_message(exc)
            log.warning("export failed: %s", text)
            self._error("Cannot export", text)
            return
        if path is not None:
            log.info("exported %s", path)
            self.message.emit(f"Exported {path}")

"""Another writer of the window's design: `OtherWriters` holds the design's lock file
while it is open and asks before the window opens or saves over what another writer has.

* The file changed on disk since it was opened or saved: Reload / Save As… / Overwrite /
  Cancel, with a summary of what differs.
* Another running session has it open (its lock): Open Read-Only / Open Anyway / Cancel
  on opening, Overwrite / Cancel on saving another design (or a read-only one) over it.

The boxes are built here and run by `show_choice`, the one function tests patch (a real
modal box would wait for a click forever).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox, QWidget

from designer.io.disk_state import changed_on_disk, differences
from designer.io.fabric_json import load
from designer.io.file_lock import FileLock, LockOwner, design_lock_path, lock_owner
from designer.model.errors import DesignError

#: Above this size the file on disk is not read to compare it (a second or more).
COMPARE_MAX_BYTES = 8 * 1024 * 1024

RELOAD, SAVE_AS, OVERWRITE, CANCEL = "reload", "save_as", "overwrite", "cancel"
OPEN, OPEN_READ_ONLY = "open", "open_read_only"

log = logging.getLogger(__name__)
_ROLE = QMessageBox.ButtonRole


def show_choice(box: QMessageBox) -> str:
    """Run ``box`` modally; the chosen button's name (`RELOAD`, `OVERWRITE`…), `CANCEL`
    when it was closed.  Tests patch this."""
    box.exec()
    clicked = box.clickedButton()
    return clicked.objectName() if clicked is not None and clicked.objectName() else CANCEL


def _ask(
    parent: QWidget | None,
    title: str,
    text: str,
    details: str,
    buttons: list[tuple[str, str, QMessageBox.ButtonRole]],
    default: str,
) -> str:
    """A warning box with ``buttons`` (name, label, role), shown modally (`show_choice`)
    and disposed of; the chosen button's name."""
    box = QMessageBox(
        QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.NoButton, parent
    )
    box.setInformativeText(details)
    for name, label, role in buttons:
        button = box.addButton(label, role)
        button.setObjectName(name)
        if name == default:
            box.setDefaultButton(button)
        if role == _ROLE.RejectRole:
            box.setEscapeButton(button)
    try:
        return show_choice(box)
    finally:
        box.deleteLater()


def compare_summary(mine, path: Path) -> str:
    """What the file on disk holds that the window does not, in a few lines (or why it
    was not compared: too large, unreadable)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"The file cannot be read: {exc.strerror or exc}."
    if size > COMPARE_MAX_BYTES:
        return "The file is too large to compare here; Reload shows it."
    try:
        theirs = load(path)
    except DesignError as exc:
        return f"The file on disk is not a design this version can read: {exc}"
    lines = differences(mine, theirs).lines()
    if not lines:
        return "Its design is the same as this window's (only the file's text differs)."
    return "Compared with this window, the file on disk has:\n  " + "\n  ".join(lines)


def ask_changed_on_disk(parent: QWidget | None, path: Path, summary: str) -> str:
    """The file changed since this window opened or saved it: `RELOAD`, `SAVE_AS`,
    `OVERWRITE` or `CANCEL`."""
    text = (
        f"“{path.name}” was changed on disk by another program or window since you "
        "opened or last saved it.\n\nSaving now would overwrite those changes."
    )
    details = (
        f"{summary}\n\nReload opens the file as it is on disk (your unsaved changes "
        "here are lost); Save As keeps both."
    )
    choice = _ask(
        parent,
        "File changed on disk",
        text,
        details,
        [
            (RELOAD, "&Reload", _ROLE.DestructiveRole),
            (SAVE_AS, "Save &As…", _ROLE.AcceptRole),
            (OVERWRITE, "&Overwrite", _ROLE.DestructiveRole),
            (CANCEL, "Cancel", _ROLE.RejectRole),
        ],
        default=SAVE_AS,
    )
    log.info("%s changed on disk; the user chose %s", path, choice)
    return choice


def ask_open_locked(parent: QWidget | None, path: Path, owner: LockOwner) -> str:
    """Another session has ``path`` open: `OPEN_READ_ONLY`, `OPEN` (anyway) or `CANCEL`."""
    text = f"“{path.name}” is already open in {owner.describe()}."
    details = (
        "Read-only, this window saves only under another name. Opened for editing in both, "
        "whichever window saves second overwrites the other's changes (it warns first)."
        "\n\n"
        "If that program is no longer running (another computer, a crash there), "
        f"its lock file {design_lock_path(path)} is left over: open anyway."
    )
    choice = _ask(
        parent,
        "Design open elsewhere",
        text,
        details,
        [
            (OPEN_READ_ONLY, "Open &Read-Only", _ROLE.AcceptRole),
            (OPEN, "&Open Anyway", _ROLE.DestructiveRole),
            (CANCEL, "Cancel", _ROLE.RejectRole),
        ],
        default=OPEN_READ_ONLY,
    )
    log.info("%s is locked by %s; the user chose %s", path, owner.describe(), choice)
    return choice


def ask_save_over_open(parent: QWidget | None, path: Path, owner: LockOwner) -> str:
    """Save As onto a file another session has open: `OVERWRITE` or `CANCEL`."""
    text = f"“{path.name}” is open in {owner.describe()}."
    details = (
        "Saving over it replaces the file under that window; it will warn before "
        "it saves its own version."
    )
    return _ask(
        parent,
        "Design open elsewhere",
        text,
        details,
        [
            (OVERWRITE, "&Overwrite", _ROLE.DestructiveRole),
            (CANCEL, "Cancel", _ROLE.RejectRole),
        ],
        default=CANCEL,
    )


class OtherWriters(QObject):
    """The lock on a document's file, and the questions before opening or saving.

    Parameters
    ----------
    window : QWidget
        Parent of the questions.
    document : Document
        The design; its `path_changed` moves the lock, its ``disk_state`` tells whether
        the file changed on disk.
    """

    def __init__(self, window: QWidget, document, parent: QObject | None = None):
        super().__init__(parent)
        self.window = window
        self.document = document
        self.lock: FileLock | None = None  # on the design's file, while held
        document.path_changed.connect(self._on_document_path_changed)

    def holds_lock_on(self, path: Path) -> bool:
        return self.lock is not None and self.lock.path == design_lock_path(path)

    def may_open(self, path: Path) -> str:
        """How to open ``path``: `OPEN`, `OPEN_READ_ONLY` or `CANCEL` (asks when another
        session has it open)."""
        if self.holds_lock_on(path):
            return OPEN  # this window's own file, opened again
        owner = lock_owner(design_lock_path(path))
        if owner is None:
            return OPEN
        choice = ask_open_locked(self.window, path, owner)
        return choice if choice in (OPEN, OPEN_READ_ONLY) else CANCEL

    def before_save(self, path: Path) -> str | None:
        """Before saving to ``path``: None to go on, else the user's other choice
        (`SAVE_AS`, `RELOAD` or `CANCEL`).

        Another file, or this design's file opened read-only: asks when another session
        has it open.  This design's file: asks when it changed on disk since it was read
        or written here.
        """
        document = self.document
        ours = path == document.path
        if (not ours or document.read_only) and not self.holds_lock_on(path):
            owner = lock_owner(design_lock_path(path))
            if owner is not None:
                choice = ask_save_over_open(self.window, path, owner)
                return None if choice == OVERWRITE else choice
        if not ours or not changed_on_disk(path, document.disk_state):
            return None
        summary = compare_summary(document.topology, path)
        choice = ask_changed_on_disk(self.window, path, summary)
        return None if choice == OVERWRITE else choice

    def release_lock(self) -> None:
        """Give up the lock on the design's file (the window closes)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def hold(self, path: Path | None) -> None:
        """Hold the lock on ``path`` (the design's file now), giving up the old file's.

        Not taken while another live session holds it (the user opened anyway): the
        check on disk before each save still protects both; it is taken at the first
        save after that session is gone.
        """
        if path is not None and self.holds_lock_on(path):
            return
        self.release_lock()
        if path is None:
            return
        lock = FileLock(design_lock_path(path))
        try:
            if lock.acquire():
                self.lock = lock
            else:
                log.info("%s is open in %s too", path, lock.holder.describe())
        except OSError as exc:  # a read-only folder: no lock, and saving there fails anyway
            log.info("no lock on %s: %s", path, exc.strerror or exc)

    def _on_document_path_changed(self, path: Path | None) -> None:
        # The lock follows the design's file: taken on open and Save As.
        self.hold(path)

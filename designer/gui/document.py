"""`Document`: the design being edited — its `Topology`, undo stack and file.

Every user edit is a model `Command` pushed here.  The command is done first, outside
Qt, so a refused edit raises `DesignError` to the caller (who shows it in the status bar)
and never reaches the undo stack; a done command is wrapped in a ``QUndoCommand`` whose
first ``redo`` is skipped.  The window's dirty flag follows the stack's clean state, and
saving marks the stack clean without clearing it (history survives saving).

The document also remembers its file as it opened or last saved it (`disk_state`, a
`designer.io.disk_state.DiskState`), so that a save can notice another writer first.
"""

from __future__ import annotations

import atexit
import gc
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from designer.collector import collector_paused
from designer.io.disk_state import DiskState
from designer.io.fabric_json import load, save
from designer.model.commands import Command, RenameDesign
from designer.model.topology import Topology


def settle_heap() -> None:
    """Collect the old design, then exempt the live heap from later collections.

    A 16,384-GPU design is over a million tracked Python objects (graph dicts, model
    values, scene items); a full collection, which any burst of allocations can
    trigger, then holds the GUI thread for ~0.5 s in the middle of an edit or a
    recolour.  `gc.freeze` moves what exists now to a generation the collector never
    scans; `gc.unfreeze` first, so the design being replaced is collected, not kept.
    """
    global _unfreeze_at_exit
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    if not _unfreeze_at_exit:
        # Frozen objects are never collected; at exit, let the collector free them while
        # the QApplication still exists (freed during interpreter teardown, after Qt is
        # gone, Qt objects crash the process).
        atexit.register(_release_heap)
        _unfreeze_at_exit = True


_unfreeze_at_exit = False


def freeze_survivors() -> None:
    """Move what the collector tracks now to the frozen generation (no collection).

    For after a design's first analysis: the views and the solver keep big tables for
    as long as the design is open (100,000-entry dicts and lists on a 16k-GPU design),
    made after `settle_heap`; each pass of the collector walks every item of them,
    ~50 ms a pass.  No collection first: on a 16k-GPU design that is itself a stall of
    ~100 ms.  Garbage frozen with the rest (at most what one result left in reference
    cycles) is reclaimed when the next design is opened (`settle_heap` unfreezes and
    collects) or at exit.
    """
    gc.freeze()


def _release_heap() -> None:
    gc.unfreeze()
    gc.collect()


def disk_state_of(path: Path) -> DiskState | None:
    """``path``'s fingerprint, or None when it cannot be read (the load says why)."""
    try:
        return DiskState.of(path)
    except OSError:
        return None


class _QtCommand(QUndoCommand):
    """A model command on the Qt undo stack (already done when pushed)."""

    def __init__(self, document: Document, command: Command):
        super().__init__(command.text)
        self.document = document
        self.command = command
        self._skip_first_redo = True

    def redo(self) -> None:
        if self._skip_first_redo:
            self._skip_first_redo = False
            return
        self.command.do(self.document.topology)

    def undo(self) -> None:
        self.command.undo(self.document.topology)


class Document(QObject):
    """The open design.

    Signals
    -------
    about_to_replace(Topology)
        A different design is about to be opened; the argument, still `topology`, is the
        one going away.  Views drop what refers to it (the selection above all) here,
        while its ids still mean something.
    topology_replaced(Topology)
        A different design is now open (New, Open, restore); views rebuild.
    path_changed(object)
        The file name changed (Save As, Open); ``None`` for an unsaved design.
    name_changed(str)
        The design's name changed: renamed, or the rename undone or redone.
    """

    about_to_replace = Signal(object)
    topology_replaced = Signal(object)
    path_changed = Signal(object)
    name_changed = Signal(str)

    def __init__(self, topology: Topology | None = None, path: Path | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.topology = topology if topology is not None else Topology()
        self.path = path
        #: The file as this document read or wrote it last (None: not known, no check).
        self.disk_state: DiskState | None = None
        #: Opened read-only (another session has the file open): Save asks for a new name.
        self.read_only = False
        self.undo_stack = QUndoStack(self)
        self._replacing = False
        self._name = self.topology.name  # as last announced by name_changed
        self.undo_stack.indexChanged.connect(self._on_undo_stack_index_changed)

    # ------------------------------------------------------------ editing
    def push(self, command: Command) -> None:
        """Do ``command`` and record it for undo; raises `DesignError` if refused."""
        command.do(self.topology)
        self.undo_stack.push(_QtCommand(self, command))

    def rename(self, name: str) -> bool:
        """Rename the design, undoably; False (nothing done) for a blank or the same name."""
        name = name.strip()
        if not name or name == self.topology.name:
            return False
        self.push(RenameDesign(name))
        return True

    def _on_undo_stack_index_changed(self, _index: int) -> None:
        # Any step of the history may rename the design (a rename, or its undo or redo).
        if self.topology.name != self._name:
            self._name = self.topology.name
            self.name_changed.emit(self._name)

    # ------------------------------------------------------------ files
    @property
    def is_modified(self) -> bool:
        return not self.undo_stack.isClean()

    @property
    def title(self) -> str:
        return self.path.name if self.path else self.topology.name

    @property
    def replacing(self) -> bool:
        """Whether a design is being replaced right now (between `about_to_replace` and
        the end of `topology_replaced`): views must not read their items then."""
        return self._replacing

    def replace(self, topology: Topology, path: Path | None = None,
                disk_state: DiskState | None = None, *, read_only: bool = False) -> None:
        """Open a different design (clears the history: it belonged to the old one).

        ``disk_state`` is the fingerprint of ``path`` taken *before* it was read (a file
        changed while it was read then looks changed at the next save, never the reverse).
        ``read_only``: see `read_only`.

        `about_to_replace` goes out first, while the old design is still `topology`;
        then the history is cleared, the new design takes its place and
        `topology_replaced` lets the views rebuild.
        """
        self._replacing = True
        try:
            self.about_to_replace.emit(self.topology)
            self.undo_stack.clear()
            self.topology = topology
            self.path = path
            self.disk_state = disk_state
            self.read_only = read_only
            self._name = topology.name
            # The views rebuild now, an item per node and link: no collections midway,
            # one (settle_heap) once they are built (`designer.collector`).
            with collector_paused():
                self.topology_replaced.emit(topology)
                self.path_changed.emit(path)
                self.name_changed.emit(topology.name)
        finally:
            self._replacing = False
        settle_heap()

    def open(self, path: Path, *, read_only: bool = False) -> None:
        """Load ``path``; on a bad file raises `FileFormatError` and changes nothing."""
        state = disk_state_of(path)
        topology = load(Path(path))
        self.replace(topology, Path(path), state, read_only=read_only)

    def save(self, path: Path | None = None) -> Path:
        """Save atomically to ``path`` (or the current file); the history is kept."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no file name: use save(path)")
        save(self.topology, target)
        # (Taken after the write: another writer in between would go unnoticed once.)
        self.disk_state = disk_state_of(target)
        self.read_only = False  # (the user chose to write this file)
        self.undo_stack.setClean()
        if target != self.path:
            self.path = target
            self.path_changed.emit(target)
        return target

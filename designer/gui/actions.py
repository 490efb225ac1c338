"""Every menu/toolbar action and its keyboard shortcuts, declared in one place.

`ACTIONS` maps an action name to (text, keys, tip); `make_actions` creates the QActions
and the main window connects them to the controllers that do the work, so the keys are
listed once and the user guide's table is generated from this module.

The keys are spelled out rather than taken from Qt's standard key lists
(``QKeySequence.keyBindings``): those differ by platform plugin, and on X11 they bind
Delete to ``Ctrl+D`` too (taking Duplicate's key, so neither fires) and Redo to
``Ctrl+Shift+Z`` only.  Written here, every platform gets the same keys, the ones the
guide shows; on macOS Qt reads ``Ctrl`` as the Command key.
"""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

ACTIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "new": ("&New", ("Ctrl+N",), "Start an empty design"),
    "new_template": ("New from &Template…", ("Ctrl+Shift+N",), "Start from a reference design"),
    "open": ("&Open…", ("Ctrl+O",), "Open a .fabric.json design"),
    "save": ("&Save", ("Ctrl+S",), "Save the design"),
    "save_as": ("Save &As…", ("Ctrl+Shift+S",), "Save the design under a new name"),
    "export": ("&Export…", ("Ctrl+E",), "Export the diagram, graph, NetBox files or cabling plan"),
    "quit": ("&Quit", ("Ctrl+Q",), "Quit Fabric Designer"),
    "undo": ("&Undo", ("Ctrl+Z",), "Undo the last edit"),
    "redo": ("&Redo", ("Ctrl+Y", "Ctrl+Shift+Z"), "Redo the last undone edit"),
    "cut": ("Cu&t", ("Ctrl+X", "Shift+Del"), "Cut the selection"),
    "copy": ("&Copy", ("Ctrl+C", "Ctrl+Ins"), "Copy the selection with its internal links"),
    "paste": ("&Paste", ("Ctrl+V", "Shift+Ins"), "Paste; the pasted items become the selection"),
    "duplicate": ("D&uplicate", ("Ctrl+D",), "Duplicate the selection"),
    "delete": ("&Delete", ("Del",), "Delete the selection"),
    "select_all": ("Select &All", ("Ctrl+A",), "Select every node and link"),
    "find": ("&Find…", ("Ctrl+F",), "Find a node by name and centre it"),
    "link_tool": ("&Link Tool", ("L",), "Drag from node to node to connect them"),
    "align_left": ("Align &Left", (), "Align the selection's left edges"),
    "align_hcenter": ("Align Centres &Horizontally", (), "Align on a vertical line"),
    "align_top": ("Align &Top", (), "Align the selection's top edges"),
    "align_vcenter": ("Align Centres &Vertically", (), "Align on a horizontal line"),
    "distribute_h": ("Distribute Hori&zontally", (), "Even horizontal spacing"),
    "distribute_v": ("Distribute V&ertically", (), "Even vertical spacing"),
    "auto_layout": ("Auto &Layout", ("Ctrl+Shift+L",), "Lay out in tiers, top to bottom"),
    "group": ("&Group…", ("Ctrl+G",), "Put the selected nodes in a new group (rack, pod…)"),
    "ungroup": ("&Ungroup", ("Ctrl+Shift+G",), "Dissolve the selected nodes' group"),
    "zoom_in": ("Zoom &In", ("Ctrl++", "Ctrl+="), "Zoom in"),
    "zoom_out": ("Zoom &Out", ("Ctrl+-",), "Zoom out"),
    "zoom_fit": ("&Fit", ("Ctrl+0",), "Fit the whole design in the window"),
    "toggle_grid": ("Show &Grid", ("Ctrl+'",), "Show or hide the grid"),
    "colour_util": ("Colour Links by &Utilisation", ("U",),
                    "Colour links by solver utilisation, or by technology"),
    "user_guide": ("&User Guide", ("F1",), "Open the user guide"),
    "show_shortcuts": ("&Keyboard Shortcuts", (), "List every keyboard shortcut"),
    "about": ("&About Fabric Designer", (), "Version, licence and links"),
    "design_properties": ("Design &Properties…", (), "Name the design"),
}

#: Actions that toggle a state, and whether they start on.
CHECKABLE = {"link_tool": False, "toggle_grid": True, "colour_util": True}


def key_sequences(name: str) -> list[QKeySequence]:
    """The keys of action ``name``, the first being the one menus show."""
    return [QKeySequence(k) for k in ACTIONS[name][1]]


def make_actions(parent: QWidget, names=None) -> dict[str, QAction]:
    """QActions for `ACTIONS` (or only ``names``), parented to ``parent`` (shortcuts
    window-wide)."""
    out = {}
    for name, (text, keys, tip) in ACTIONS.items():
        if names is not None and name not in names:
            continue
        action = QAction(text, parent)
        action.setObjectName(f"action_{name}")
        action.setShortcuts(key_sequences(name))
        action.setStatusTip(tip)
        action.setToolTip(f"{tip} ({action.shortcut().toString()})" if keys else tip)
        if name in CHECKABLE:
            action.setCheckable(True)
            action.setChecked(CHECKABLE[name])
        out[name] = action
    return out


def shortcut_table() -> list[tuple[str, str, str]]:
    """``(command, keys, what it does)`` for every action that has keys, in the order of
    `ACTIONS`, keys in Qt's portable text (``Ctrl+Shift+Z``).

    >>> dict((c, k) for c, k, _ in shortcut_table())["Redo"]
    'Ctrl+Y, Ctrl+Shift+Z'
    """
    rows = []
    for name, (text, keys, tip) in ACTIONS.items():
        if keys:
            label = text.replace("&", "").rstrip("…").rstrip(".")
            portable = QKeySequence.SequenceFormat.PortableText
            rows.append((label, ", ".join(k.toString(portable) for k in key_sequences(name)),
                         tip))
    return rows

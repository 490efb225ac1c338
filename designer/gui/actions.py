"""Every menu/toolbar action and its shortcut, declared in one place.

`ACTIONS` maps an action name to (text, shortcut, tip).  `make_actions` creates the
QActions; the main window connects them to the controllers that do the work, so
shortcuts are listed once and the docs can be generated from this table.
"""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

S = QKeySequence.StandardKey

ACTIONS: dict[str, tuple[str, object, str]] = {
    "new": ("&New", S.New, "Start an empty design"),
    "new_template": ("New from &Template…", "Ctrl+Shift+N", "Start from a reference design"),
    "open": ("&Open…", S.Open, "Open a .fabric.json design"),
    "save": ("&Save", S.Save, "Save the design"),
    "save_as": ("Save &As…", S.SaveAs, "Save the design under a new name"),
    "export": ("&Export…", "Ctrl+E", "Export the diagram (SVG, PNG, PDF) or the graph"),
    "quit": ("&Quit", "Ctrl+Q", "Quit Fabric Designer"),
    "undo": ("&Undo", S.Undo, "Undo the last edit"),
    "redo": ("&Redo", S.Redo, "Redo the last undone edit"),
    "cut": ("Cu&t", S.Cut, "Cut the selection"),
    "copy": ("&Copy", S.Copy, "Copy the selection with its internal links"),
    "paste": ("&Paste", S.Paste, "Paste; the pasted items become the selection"),
    "duplicate": ("D&uplicate", "Ctrl+D", "Duplicate the selection"),
    "delete": ("&Delete", S.Delete, "Delete the selection"),
    "select_all": ("Select &All", S.SelectAll, "Select every node and link"),
    "find": ("&Find…", S.Find, "Find a node by name and centre it"),
    "link_tool": ("&Link Tool", "L", "Drag from node to node to connect them"),
    "align_left": ("Align &Left", None, "Align the selection's left edges"),
    "align_hcenter": ("Align Centres &Horizontally", None, "Align on a vertical line"),
    "align_top": ("Align &Top", None, "Align the selection's top edges"),
    "align_vcenter": ("Align Centres &Vertically", None, "Align on a horizontal line"),
    "distribute_h": ("Distribute Hori&zontally", None, "Even horizontal spacing"),
    "distribute_v": ("Distribute V&ertically", None, "Even vertical spacing"),
    "auto_layout": ("Auto &Layout", "Ctrl+Shift+L", "Lay out in tiers, top to bottom"),
    "group": ("&Group…", "Ctrl+G", "Put the selected nodes in a new group (rack, pod…)"),
    "ungroup": ("&Ungroup", "Ctrl+Shift+G", "Dissolve the selected nodes' group"),
    "zoom_in": ("Zoom &In", S.ZoomIn, "Zoom in"),
    "zoom_out": ("Zoom &Out", S.ZoomOut, "Zoom out"),
    "zoom_fit": ("&Fit", "Ctrl+0", "Fit the whole design in the window"),
    "toggle_grid": ("Show &Grid", "Ctrl+'", "Show or hide the grid"),
    "colour_util": ("Colour Links by &Utilisation", "U",
                    "Colour links by solver utilisation, or by technology"),
}


#: Second bindings users expect besides the platform's own.
EXTRA_SHORTCUTS: dict[str, list[QKeySequence]] = {
    "zoom_in": [QKeySequence("Ctrl+=")],
    "redo": [QKeySequence("Ctrl+Shift+Z")],
}


def make_actions(parent: QWidget, names=None) -> dict[str, QAction]:
    """QActions for `ACTIONS` (or only ``names``), parented to ``parent`` (shortcuts
    window-wide)."""
    out = {}
    for name, (text, shortcut, tip) in ACTIONS.items():
        if names is not None and name not in names:
            continue
        action = QAction(text, parent)
        action.setObjectName(f"action_{name}")
        if isinstance(shortcut, QKeySequence.StandardKey):
            # Every platform binding (Redo is Ctrl+Y *and* Ctrl+Shift+Z on Linux), each
            # once: a key bound twice to one action is "ambiguous" and triggers nothing.
            keys = QKeySequence.keyBindings(shortcut) + EXTRA_SHORTCUTS.get(name, [])
            action.setShortcuts([k for i, k in enumerate(keys) if k not in keys[:i]])
        elif shortcut is not None:
            action.setShortcuts([QKeySequence(shortcut), *EXTRA_SHORTCUTS.get(name, [])])
        action.setStatusTip(tip)
        action.setToolTip(f"{tip} ({action.shortcut().toString()})" if shortcut else tip)
        out[name] = action
    if "link_tool" in out:
        out["link_tool"].setCheckable(True)
    for name in ("toggle_grid", "colour_util"):
        if name in out:
            out[name].setCheckable(True)
            out[name].setChecked(True)
    return out


def shortcut_table() -> list[tuple[str, str]]:
    """(action, shortcut) pairs for the user guide."""
    rows = []
    for text, shortcut, _tip in ACTIONS.values():
        if shortcut is not None:
            seqs = (QKeySequence.keyBindings(shortcut)
                    if isinstance(shortcut, QKeySequence.StandardKey) else [QKeySequence(shortcut)])
            keys = ", ".join(dict.fromkeys(k.toString() for k in seqs if not k.isEmpty()))
            rows.append((text.replace("&", "").rstrip("…"), keys))
    return rows

"""The user guide's keyboard-shortcut table, generated from ``designer/gui/actions.py``:
``python tools/shortcuts.py`` rewrites the table in ``docs/user-guide.md`` (between the
``<!-- shortcuts:begin -->`` and ``<!-- shortcuts:end -->`` markers).

The keys are read from the QActions that `designer.gui.actions.make_actions` builds, so
the table lists exactly what the window binds.  Those keys are written out in
``designer/gui/actions.py``, not taken from Qt's per-platform standard lists, so the
table is the same on every platform (``tests/gui/test_shortcuts.py`` checks it against a
window running on X11).  ``tests/test_docs.py`` fails when the guide's table and this
function disagree.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "user-guide.md"
BEGIN, END = "<!-- shortcuts:begin -->", "<!-- shortcuts:end -->"
REGENERATE = "python tools/shortcuts.py"


def _application():
    """A QApplication: QActions and key sequences need one."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() or QApplication(["fabric-designer"])


def shortcut_rows() -> list[tuple[str, str, str]]:
    """``(command, keys, what it does)`` for every action that has a shortcut, in the
    order of ``ACTIONS``.

    Examples
    --------
    >>> rows = {name: keys for name, keys, _tip in shortcut_rows()}  # doctest: +SKIP
    >>> rows["Link Tool"]                                           # doctest: +SKIP
    'L'
    """
    _application()
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QWidget

    from designer.gui.actions import ACTIONS, make_actions

    owner = QWidget()
    try:
        actions = make_actions(owner)
        rows = []
        for name, (text, _shortcut, tip) in ACTIONS.items():
            keys = []
            for seq in actions[name].shortcuts():
                if not seq.isEmpty():
                    keys.append(seq.toString(QKeySequence.SequenceFormat.PortableText))
            if keys:
                label = text.replace("&", "").rstrip("…").rstrip(".")
                rows.append((label, ", ".join(dict.fromkeys(keys)), tip))
        return rows
    finally:
        owner.deleteLater()


def _code(keys: str) -> str:
    return ", ".join(f"`{k}`" for k in keys.split(", "))


def markdown_table() -> str:
    """The shortcut table as markdown (the text between the guide's markers)."""
    lines = ["| command | keys | what it does |", "|---|---|---|"]
    lines += [f"| {name} | {_code(keys)} | {tip} |" for name, keys, tip in shortcut_rows()]
    return "\n".join(lines)


def table_in(text: str) -> str | None:
    """The table between the markers of ``text`` (None when the markers are missing)."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def update(path: Path = GUIDE) -> bool:
    """Rewrite the table in ``path``; True when it changed."""
    text = path.read_text(encoding="utf-8")
    old = table_in(text)
    if old is None:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers")
    new = markdown_table()
    if old == new:
        return False
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(f"{head}{BEGIN}\n{new}\n{END}{tail}", encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else GUIDE
    print(f"{'updated' if update(path) else 'unchanged'}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

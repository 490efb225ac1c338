"""Plot titles broken into lines that fit over their plot.

`fit_title` is pure (it takes the width of a line of title as a function), so the
breaking rules are testable without a window; `title_width` measures a line as the
panels draw it.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QGuiApplication, QTextDocument

__all__ = ["fit_title", "title_width"]


def fit_title(html: str, width: float, measure) -> str:
    """``html`` with lines broken so that each stays within ``width`` as
    ``measure(html)`` gives it (existing ``<br>`` breaks are kept): after its ``", "``
    first, then, in a piece still too wide, after its ``": "``, then at its spaces (never
    inside a tag).  A word wider than ``width`` keeps a line of its own."""
    lines: list[str] = []
    for line in html.split("<br>"):
        lines.extend(_wrap(line, width, measure, (", ", ": ", " ")))
    return "<br>".join(lines)


def _wrap(text: str, width: float, measure, seps: tuple[str, ...]) -> list[str]:
    """Lines of ``text`` within ``width``, broken after ``seps[0]`` where it does, and
    pieces still too wide by the separators after it."""
    if not seps or measure(text) <= width:
        return [text]
    sep, rest = seps[0], seps[1:]
    parts = _split_outside_tags(text, sep)
    head = sep.rstrip()  # kept at the end of a line broken there ("," or ":")
    lines: list[str] = []
    current = None
    for i, part in enumerate(parts):
        piece = part + (head if i < len(parts) - 1 else "")
        if current is not None and measure(f"{current} {piece}") <= width:
            current = f"{current} {piece}"
            continue
        if current is not None:
            lines.append(current)
        wrapped = _wrap(piece, width, measure, rest)
        lines.extend(wrapped[:-1])
        current = wrapped[-1]
    lines.append(current if current is not None else "")
    return lines


def _split_outside_tags(text: str, sep: str) -> list[str]:
    """``text.split(sep)``, except where ``sep`` falls inside an HTML tag."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def title_width(html: str) -> float:
    """Width in pixels of a line of title, in the plot title's 10 pt font."""
    doc = QTextDocument()
    font = QFont(QGuiApplication.font())
    font.setPointSizeF(10.0)
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setHtml(html)
    return doc.idealWidth()

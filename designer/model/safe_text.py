"""Text from a design file on its way out: into XML, into a CSV cell, onto a terminal.

A design file may come from anyone, and its names are free text.  Three places would
otherwise pass that text on as something else:

* XML 1.0 (SVG, GraphML) cannot hold most control characters, U+FFFE/U+FFFF or lone
  surrogates at all, escaped or not: one such character makes the whole file
  unparseable.  `xml_text` replaces each with U+FFFD (the replacement character).
* A spreadsheet opening a CSV runs a cell beginning with ``=``, ``+``, ``-``, ``@``, a tab
  or a carriage return as a formula.  `csv_cell` prefixes such a cell with ``'`` (numbers,
  ``-3.5`` included, stay numbers).
* A terminal obeys escape sequences: a name holding ``ESC ] 0 ;`` sets the window title,
  ``ESC [ 2 J`` clears the screen, a carriage return overwrites the line before it.
  `terminal_text` writes every control character (C0, DEL, C1) and every lone surrogate
  as a visible escape (``\\x1b``, ``\\ud800``).

Examples
--------
>>> xml_text("GPU\\x01 0\\uffff")
'GPU\\ufffd 0\\ufffd'
>>> csv_cell("=HYPERLINK(1)"), csv_cell("-3.5"), csv_cell(7)
("'=HYPERLINK(1)", '-3.5', 7)
>>> print(terminal_text("evil\\x1b[2J\\ud800 name"))
evil\\x1b[2J\\ud800 name
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["csv_cell", "csv_row", "csv_writer", "terminal_text", "xml_bytes", "xml_text"]

#: Everything XML 1.0 forbids (its ``Char`` production), as a character class.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: Character references, which may name a forbidden character too (``&#1;``).
_CHAR_REF = re.compile(rb"&#(?:x([0-9A-Fa-f]{1,8})|([0-9]{1,10}));")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def _allowed_ref(match: re.Match[bytes]) -> bytes:
    hexa, dec = match.groups()
    code = int(hexa, 16) if hexa is not None else int(dec)
    if code <= 0x10FFFF and not _NOT_XML.match(chr(code)):
        return match.group(0)
    return "\ufffd".encode()


def xml_bytes(data: bytes) -> bytes:
    """A UTF-8 XML document (as a writer such as Qt's SVG generator made it) with the
    characters and character references XML 1.0 forbids replaced by U+FFFD; bytes that
    are not UTF-8 become U+FFFD too.  Markup is left as it is."""
    text = data.decode("utf-8", errors="replace")
    return _CHAR_REF.sub(_allowed_ref, xml_text(text).encode("utf-8"))


#: A cell a spreadsheet would take for a formula (or run as one after a tab or CR).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)")


def csv_cell(value: Any) -> Any:
    """``value`` safe for a CSV cell: a string a spreadsheet would run as a formula gets
    a leading ``'``; numbers, and strings that are plain numbers, are left alone."""
    formula = isinstance(value, str) and value.startswith(_FORMULA_START)
    return "'" + value if formula and not _NUMBER.fullmatch(value) else value


def csv_row(row: Iterable[Any]) -> list[Any]:
    """`csv_cell` of every cell of ``row``: what every CSV writer writes."""
    return [csv_cell(cell) for cell in row]


class _SafeWriter:
    def __init__(self, writer: Any):
        self._writer = writer

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow(csv_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream: Any, **kwargs: Any) -> Any:
    """``csv.writer(stream, **kwargs)`` whose rows go through `csv_row`: the writer for
    every CSV file or output the application makes.

    >>> import io
    >>> out = io.StringIO()
    >>> _ = csv_writer(out, lineterminator="\\n").writerow(["=1+2", -1.5, "-1.5"])
    >>> out.getvalue()
    "'=1+2,-1.5,-1.5\\n"
    """
    return _SafeWriter(csv.writer(stream, **kwargs))


#: C0 controls but tab and newline, DEL, C1 controls and lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    if match.group(0) == "\r":
        return "\\r"
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_text(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character (C0, DEL, C1) and lone surrogate written as
    a visible escape, so that printing it cannot drive the terminal.

    ``newlines`` keeps newline and tab as they are (for a whole report); with False they
    are escaped too (for one name inside a line, which a newline would fake-split).
    """
    out = _UNPRINTABLE.sub(_escape, text)
    if not newlines:
        out = out.replace("\t", "\\t").replace("\n", "\\n")
    return out

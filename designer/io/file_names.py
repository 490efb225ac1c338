"""File names that work on every desktop: what a save or export dialog proposes.

A design's name is free text ("DGX SuperPOD H100: 4 SU, 1,016 GPUs"); a file name made
from it must open on Windows, macOS and Linux alike.  Windows refuses ``< > : " / \\ | ? *``
and control characters, names ending in a dot or a space, and the device names (CON,
NUL, COM1, ...) even with a suffix; macOS Finder shows a colon as a slash; every system
limits a name to 255 bytes.

Example
-------
>>> portable_file_name("DGX SuperPOD H100: 4 SU, 1,016 GPUs")
'DGX SuperPOD H100 - 4 SU, 1,016 GPUs'
>>> portable_file_name("a/b?c"), portable_file_name("con"), portable_file_name(" ")
('a-b-c', 'con_', 'design')
"""

from __future__ import annotations

import re

__all__ = ["portable_file_name"]

_INVALID = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')
_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}
MAX_STEM = 120  # characters: room for a suffix and a folder within common path limits


def portable_file_name(text: str, fallback: str = "design") -> str:
    """``text`` as a file stem valid on Windows, macOS and Linux (no suffix added).

    A run of invalid characters becomes ``" - "`` where it stood between words with a
    space after it (``"a: b"``), else ``"-"``; whitespace is collapsed, leading and
    trailing dots and spaces go, a device name gains ``_``, and the stem is cut to
    `MAX_STEM` characters.  An empty result is ``fallback``.
    """

    def replace(match: re.Match[str]) -> str:
        after = match.string[match.end() : match.end() + 1]
        return " - " if after.isspace() else "-"

    stem = _INVALID.sub(replace, text)
    stem = re.sub(r"\s+", " ", stem).strip(" .")
    stem = re.sub(r"(?: - )+", " - ", stem)[:MAX_STEM].strip(" .-")
    if stem.split(".", 1)[0].lower() in _RESERVED:
        stem += "_"
    return stem or fallback

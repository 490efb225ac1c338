"""Designs read from other tools' files: draw.io and GraphML made by the exporters
(and the same files after draw.io or yEd saved them).

`read_design` is the one door: the native ``.fabric.json`` (and any ``.json``) through
`designer.io.fabric_json.load`, the others through their importer, chosen by suffix.
An imported design has no file of its own yet: saving it writes a ``.fabric.json``.

Example
-------
>>> is_import("rack.drawio"), is_import("rack.fabric.json")
(True, False)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["IMPORTERS", "OPEN_FILTERS", "is_import", "read_design"]


def _drawio(path: Any):
    from designer.io.imports.drawio import read_drawio

    return read_drawio(path)


def _graphml(path: Any):
    from designer.io.imports.graphml import read_graphml

    return read_graphml(path)


#: suffix -> (file-dialog name, reader)
IMPORTERS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    ".drawio": ("draw.io diagram", _drawio),
    ".graphml": ("GraphML (ours or yEd's)", _graphml),
}
#: File > Open filters for the importable formats.
OPEN_FILTERS = ";;".join(f"{name} (*{suffix})" for suffix, (name, _) in IMPORTERS.items())


def is_import(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a file to import rather than a native design."""
    return Path(path).suffix.lower() in IMPORTERS


def read_design(path: str | os.PathLike[str], **load_options: Any):
    """The design in ``path``, native or imported (by suffix).

    Raises
    ------
    FileFormatError
        The file cannot be read or is not a design: one line naming it.
    """
    suffix = Path(path).suffix.lower()
    if suffix in IMPORTERS:
        return IMPORTERS[suffix][1](path)
    from designer.io.fabric_json import load

    return load(Path(path), **load_options)

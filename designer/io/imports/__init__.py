"""Designs read from other tools' files: draw.io and GraphML made by the exporters
(and the same files after draw.io or yEd saved them), and NetBox devices + cables CSVs.

`read_design` is the one door: the native ``.fabric.json`` (and any ``.json``) through
`designer.io.fabric_json.load`, the others through their importer, chosen by the end of
the name (`importer_for`); a folder holding ``devices.csv`` and ``cables.csv`` (a
``.netbox`` export) is a NetBox import.
An imported design has no file of its own yet: saving it writes a ``.fabric.json``.

Example
-------
>>> is_import("rack.drawio"), is_import("rack.fabric.json"), is_import("dc-devices.csv")
(True, False, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["IMPORTERS", "OPEN_FILTERS", "importer_for", "is_import", "read_design"]


def _drawio(path: Any):
    from designer.io.imports.drawio import read_drawio

    return read_drawio(path)


def _graphml(path: Any):
    from designer.io.imports.graphml import read_graphml

    return read_graphml(path)


def _netbox(path: Any):
    from designer.io.imports.netbox import read_netbox

    return read_netbox(path)


#: name ending -> (file-dialog name, reader)
IMPORTERS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    ".drawio": ("draw.io diagram", _drawio),
    ".graphml": ("GraphML (ours or yEd's)", _graphml),
    "devices.csv": ("NetBox devices CSV, cables CSV beside it", _netbox),
}
#: File > Open filters for the importable formats.
OPEN_FILTERS = ";;".join(f"{name} (*{suffix})" for suffix, (name, _) in IMPORTERS.items())


def importer_for(path: str | os.PathLike[str]) -> Callable[[Any], Any] | None:
    """The reader for ``path`` by the end of its name, a NetBox export folder's, or
    None (a native design)."""
    p = Path(path)
    name = p.name.lower()
    for ending, (_, reader) in IMPORTERS.items():
        if name.endswith(ending):
            return reader
    if p.is_dir() and (p / "devices.csv").is_file() and (p / "cables.csv").is_file():
        return _netbox
    return None


def is_import(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a file to import rather than a native design."""
    return importer_for(path) is not None


def read_design(path: str | os.PathLike[str], **load_options: Any):
    """The design in ``path``, native or imported (by suffix).

    Raises
    ------
    FileFormatError
        The file cannot be read or is not a design: one line naming it.
    """
    reader = importer_for(path)
    if reader is not None:
        return reader(path)
    from designer.io.fabric_json import load

    return load(Path(path), **load_options)

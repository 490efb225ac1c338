"""Every export format in one list: file suffix -> writer.

The CLI (``fabric-designer export``) and File > Export both read `FORMATS`, so a format
added here is offered in both.  Diagram pictures (SVG, PNG, PDF) need Qt and are
written by `designer.gui.export`; they are listed here too (``needs_qt``) so the two
front ends name the same formats, and this package still imports no Qt.

A format whose output is a folder (NetBox) is written all or nothing
(`common.write_folder`); every other one through `designer.io.atomic`, so a failed
export never leaves a half-written file.

Example
-------
>>> format_for("plan.cabling.csv").name
'Cabling plan (CSV)'
>>> format_for("fabric.ufm.dot").suffix
'.ufm.dot'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from designer.io.exports.common import ExportFormatError
from designer.model.topology import Topology

__all__ = ["FORMATS", "ExportFormat", "ExportFormatError", "export", "format_for", "suffixes"]


def _graphml(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.exports.graphml import write_graphml

    write_graphml(topology, path, results=options.get("results"))


def _drawio(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.exports.drawio import write_drawio

    results = options.get("results")
    util = {k: v["utilisation"] for k, v in results.items()} if results else None
    write_drawio(topology, path, utilisation=util)


def _dot(style: str) -> Callable[..., None]:
    def write(topology: Topology, path: Any, **options: Any) -> None:
        from designer.io.exports.dot import write_dot

        write_dot(topology, path, style=style)

    return write


def _netbox(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.exports.netbox import write_netbox

    write_netbox(topology, path)


def _cabling(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.exports.cabling import write_cabling

    write_cabling(topology, path)


def _simulator(name: str) -> Callable[..., None]:
    def write(topology: Topology, path: Any, **options: Any) -> None:
        from designer.io.exports import simulators

        getattr(simulators, f"write_{name}")(topology, path)

    return write


def _chakra(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.exports.chakra import write_chakra

    write_chakra(topology, path)


def _node_link(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.exports.node_link import export_node_link_json

    export_node_link_json(topology, path)


def _fabric(topology: Topology, path: Any, **options: Any) -> None:
    from designer.io.fabric_json import save

    save(topology, path)


@dataclass(frozen=True)
class ExportFormat:
    """One export format.

    ``suffix`` is matched against the end of the file name, case-insensitively, longest
    first (``.ufm.dot`` before ``.dot``, ``.fabric.json`` before ``.json``); ``folder``
    formats write a folder; ``needs_qt`` ones are drawn by the GUI layer (``write`` is
    None here); ``results`` ones can carry a solve's per-link figures.
    """

    suffix: str
    name: str
    write: Callable[..., None] | None
    folder: bool = False
    needs_qt: bool = False
    results: bool = False

    @property
    def filter(self) -> str:
        """The file-dialog filter, ``"Name (*.suffix)"``."""
        return f"{self.name} (*{self.suffix.rstrip('/')})"


FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat(".svg", "SVG image", None, needs_qt=True),
    ExportFormat(".png", "PNG image", None, needs_qt=True),
    ExportFormat(".pdf", "PDF document", None, needs_qt=True),
    ExportFormat(".drawio", "draw.io diagram", _drawio, results=True),
    ExportFormat(".graphml", "GraphML (yEd, Gephi, networkx)", _graphml, results=True),
    ExportFormat(".dot", "Graphviz DOT, NVIDIA Air style", _dot("air")),
    ExportFormat(".air.dot", "Graphviz DOT, NVIDIA Air style", _dot("air")),
    ExportFormat(".ufm.dot", "Graphviz DOT, UFM cable-validation style", _dot("ufm")),
    ExportFormat(".netbox", "NetBox import folder", _netbox, folder=True),
    ExportFormat(".cabling.csv", "Cabling plan (CSV)", _cabling),
    ExportFormat(
        ".astra-sim", "ASTRA-sim analytical inputs (folder)", _simulator("astra_sim"), folder=True
    ),
    ExportFormat(".simai", "SimAI topology (folder)", _simulator("simai"), folder=True),
    ExportFormat(".chakra", "Chakra traces of the design's jobs (folder)", _chakra, folder=True),
    ExportFormat(".ns3.txt", "ns-3 topology (ASTRA-sim, SimAI backends)", _simulator("ns3")),
    ExportFormat(".fabric.json", "Fabric design", _fabric),
    ExportFormat(".json", "Node-link JSON", _node_link),
)


def suffixes() -> list[str]:
    """Every suffix, in `FORMATS` order (for messages)."""
    return [f.suffix for f in FORMATS]


def format_for(path: str | os.PathLike[str]) -> ExportFormat | None:
    """The format ``path``'s name asks for (longest matching suffix), or None."""
    name = Path(path).name.lower().rstrip("/")
    matches = [f for f in FORMATS if name.endswith(f.suffix) and len(name) > len(f.suffix)]
    return max(matches, key=lambda f: len(f.suffix)) if matches else None


def export(topology: Topology, path: str | os.PathLike[str], **options: Any) -> ExportFormat:
    """Write ``topology`` to ``path`` in the format its name asks for; the format.

    Raises
    ------
    ExportFormatError
        Unknown suffix, or a picture format (drawn by the GUI layer).
    OSError
        The file or folder cannot be written (`designer.io.atomic.AtomicWriteError`).
    """
    fmt = format_for(path)
    if fmt is None:
        raise ExportFormatError(
            f"{os.fspath(path)}: unknown export format (use {', '.join(suffixes())})"
        )
    if fmt.write is None:
        raise ExportFormatError(f"{os.fspath(path)}: {fmt.name} is drawn by the GUI layer")
    fmt.write(topology, path, **options)
    return fmt

"""Exports for other graph tools: GraphML (yEd, Gephi, networkx) and node-link JSON.

GraphML is written by `designer.io.exports.graphml` (yFiles graphics, groups as nested
graphs, and read back by `designer.io.imports.graphml`); node-link JSON here.  Nodes
and links are written in natural id order so two exports of one design are identical.
Every node carries ``kind, model, name, label, x, y, group, plane, failed``; every edge
is keyed by its link id and carries ``tech, count, plane, failed, gbps_per_direction``
(the bundle's rate: ``count`` x the technology's per-direction Gb/s).  `export` writes
any format of the registry (`designer.io.exports.FORMATS`) that needs no Qt.

Example
-------
>>> import pathlib, tempfile, networkx as nx
>>> from designer.model.topology import Topology, Node, Link
>>> t = Topology()
>>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
>>> _ = t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "NVSwitch 0"))
>>> _ = t.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
>>> path = pathlib.Path(tempfile.mkdtemp()) / "design.graphml"
>>> export(t, path)
>>> g = nx.read_graphml(path, force_multigraph=True)
>>> g.edges["g0", "s0", "l0"]["gbps_per_direction"]
1000.0
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from designer.io.atomic import atomic_write_bytes
from designer.io.exports.node_link import (  # noqa: F401 - re-exported
    export_graph,
    export_node_link_json,
    node_link_data,
)
from designer.io.fabric_json import FileFormatError
from designer.model.errors import DesignError
from designer.model.topology import Topology

__all__ = ["export", "export_graph", "export_graphml", "export_node_link_json"]


def _write(path: str | os.PathLike[str], write: Any, data: Any) -> None:
    try:
        write(path, data)
    except OSError as err:
        raise FileFormatError(f"{os.fspath(path)}: cannot save: {err.strerror or err}") from err


def export_graphml(
    topology: Topology,
    path: str | os.PathLike[str],
    *,
    results: Any = None,
) -> None:
    """Write the design as yFiles GraphML (`designer.io.exports.graphml`: readable by
    ``networkx.read_graphml``, yEd, Gephi), with a solve's per-link ``results`` if given.

    Raises
    ------
    FileFormatError
        The file cannot be written (naming the path and the reason).
    """
    from designer.io.exports.graphml import graphml_bytes

    _write(path, atomic_write_bytes, graphml_bytes(topology, results=results))


def export(topology: Topology, path: str | os.PathLike[str], **options: Any) -> None:
    """Write the design in the format its file name asks for (`designer.io.exports`):
    ``*.fabric.json`` native, ``*.graphml`` GraphML, ``*.drawio``, ``*.dot``,
    ``*.netbox`` (a folder), ``*.cabling.csv``, any other ``*.json`` node-link JSON.

    Raises
    ------
    FileFormatError
        Unknown suffix (or a picture format, which the GUI layer draws), or the file
        cannot be written.
    """
    from designer.io.exports import format_for

    fmt = format_for(path)
    if fmt is None or fmt.write is None:
        suffix = Path(path).suffix or "(none)"
        raise FileFormatError(
            f"{os.fspath(path)}: unknown export format {suffix!r} "
            "(use .fabric.json, .graphml, .drawio, .dot, .ufm.dot, .netbox, "
            ".cabling.csv or .json)"
        )
    try:
        fmt.write(topology, path, **options)
    except FileFormatError:
        raise
    except DesignError as err:
        raise FileFormatError(str(err)) from err
    except OSError as err:
        raise FileFormatError(f"{os.fspath(path)}: cannot save: {err.strerror or err}") from err

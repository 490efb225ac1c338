"""networkx node-link JSON of a design (``.json``), and the plain networkx copy of the
design that GraphML's and JSON's attributes come from.

Every node carries ``kind, model, name, label, x, y, group, plane, failed``; every edge
is keyed by its link id and carries ``tech, count, plane, failed, gbps_per_direction``.
Nodes and links in natural id order, so two exports of one design are identical.
"""

from __future__ import annotations

import json
import os
from typing import Any

import networkx as nx

from designer.io.atomic import atomic_write_bytes
from designer.io.fabric_json import FileFormatError, natural_key
from designer.model.topology import Topology

__all__ = ["export_graph", "export_node_link_json", "node_link_data"]


def export_graph(topology: Topology, *, none: Any = None) -> nx.MultiGraph:
    """A plain networkx copy of the design with export attributes (see module doc).

    Parameters
    ----------
    topology : Topology
        The design.
    none : object
        What to write for a missing value (a node outside any group): GraphML has no
        null, so its export passes ``""``.
    """
    graph = nx.MultiGraph(name=topology.name)
    for node in sorted(topology.nodes(), key=lambda n: natural_key(n.id)):
        graph.add_node(
            node.id,
            kind=node.kind,
            model=node.model,
            name=node.name,
            label=node.name,  # yEd and Gephi look for a "label"
            x=float(node.x),
            y=float(node.y),
            group=none if node.group is None else node.group,
            plane=node.plane,
            failed=node.failed,
        )
    for link in sorted(topology.links(), key=lambda lk: natural_key(lk.id)):
        tech = topology.catalog.tech(link.tech)
        graph.add_edge(
            link.a,
            link.b,
            key=link.id,
            tech=link.tech,
            count=link.count,
            plane=link.plane,
            failed=link.failed,
            gbps_per_direction=float(link.count * tech.gbps),
        )
    return graph


def _write(path: str | os.PathLike[str], data: bytes) -> None:
    try:
        atomic_write_bytes(path, data)
    except OSError as err:
        raise FileFormatError(f"{os.fspath(path)}: cannot save: {err.strerror or err}") from err


def node_link_data(graph: nx.Graph) -> dict[str, Any]:
    """``networkx.node_link_data`` with edges under ``"links"`` on every networkx version."""
    try:
        # networkx >= 3.4 warns unless the edges key is named; older ones lack the option
        # and always say "links".
        return nx.node_link_data(graph, edges="links")
    except TypeError:  # pragma: no cover - networkx < 3.4
        return nx.node_link_data(graph)


def export_node_link_json(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Write the design as networkx node-link JSON (``nx.node_link_graph`` reads it back
    with ``edges="links"``).

    Raises
    ------
    FileFormatError
        The file cannot be written (naming the path and the reason).
    """
    data = node_link_data(export_graph(topology))
    text = json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
    # A lone surrogate can only sit inside a JSON string, where backslashreplace writes
    # the valid JSON escape for it.
    _write(path, text.encode("utf-8", errors="backslashreplace"))

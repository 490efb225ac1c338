"""Graphviz DOT of the cabled fabric, for NVIDIA Air and the UFM Cable Validation Tool.

Both read a cabling plan as an undirected DOT graph with port names on the edges
(field notes 2026, 1.3 g; the same lineage as Cumulus PTM's ``topology.dot``)::

    graph "fabric" {
      "leaf-1" [function="leaf"]
      "leaf-1":"swp1" -- "server-1":"eth1"
    }

* Air style (``.dot``, ``.air.dot``): every device gets ``function=`` (``leaf``,
  ``spine``, ``super-spine``, ``server``).
* UFM style (``.ufm.dot``): switches get ``role=`` (``leaf``, ``spine``,
  ``super_spine``); adapters and servers carry no role.

Only cables are edges (`designer.io.exports.cables`: PCIe and NVLink inside a server
are board traces), one edge per cable with its port at each end, so a bundle of 18
shows as 18 edges.  Node ids are the devices' names, qualified by their groups where
two share one (``Node 5/GPU 0``, `common.unique_names`).  Every string is quoted with
``"`` and ``\\`` escaped, and control characters (a newline, NUL) written as ``\\xNN``,
so a name can never end a statement.
"""

from __future__ import annotations

import os

from designer.io.atomic import atomic_write_bytes
from designer.io.exports.cables import cables
from designer.io.exports.common import one_line, sorted_nodes, unique_names
from designer.model.topology import Topology

__all__ = ["dot_bytes", "write_dot"]

AIR_FUNCTION = {"leaf": "leaf", "switch": "leaf", "spine": "spine", "core": "super-spine"}
UFM_ROLE = {"leaf": "leaf", "switch": "leaf", "spine": "spine", "core": "super_spine"}


def quoted(text: str) -> str:
    """``text`` as a DOT double-quoted string."""
    return '"' + one_line(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_bytes(topology: Topology, *, style: str = "air") -> bytes:
    """The cabled fabric as DOT in ``style`` ``"air"`` or ``"ufm"`` (see module doc)."""
    if style not in ("air", "ufm"):
        raise ValueError(f"unknown DOT style {style!r} (air or ufm)")
    plan = cables(topology)
    cabled = {c.a for c in plan} | {c.b for c in plan}
    names = unique_names(topology)
    lines = [f"graph {quoted(topology.name)} {{"]
    for node in sorted_nodes(topology):
        if node.id not in cabled:
            continue
        attrs = [f"model={quoted(node.model)}"]
        if style == "air":
            attrs.insert(0, f"function={quoted(AIR_FUNCTION.get(node.kind, 'server'))}")
        elif node.kind in UFM_ROLE:
            attrs.insert(0, f"role={quoted(UFM_ROLE[node.kind])}")
        lines.append(f"  {quoted(names[node.id])} [{' '.join(attrs)}]")
    for c in plan:
        lines.append(
            f"  {quoted(names[c.a])}:{quoted(c.a_port)} -- {quoted(names[c.b])}:{quoted(c.b_port)}"
        )
    lines.append("}")
    return ("\n".join(lines) + "\n").encode("utf-8", errors="replace")


def write_dot(topology: Topology, path: str | os.PathLike[str], *, style: str = "air") -> None:
    """Write `dot_bytes` to ``path`` atomically."""
    atomic_write_bytes(path, dot_bytes(topology, style=style))

"""Physical cables of a design: port names at both ends, cable type, length, optics.

Shared by the cabling plan, the NetBox cables CSV and the Graphviz DOT exports, so the
three name the same ports.

Rules (stated here and in docs/cli.md; every figure an assumption a user can check):

* **What is a cable.**  A link bundle of ``count`` links is ``count`` cables.  PCIe
  and NVLink inside one server or tray (both ends in the same ``node``/``tray`` group)
  are board traces, not cables; NVLink between trays (an NVL72's spine) is a cable.
* **Ports.**  Each device's ports are numbered per prefix from 1, in the structural order
  of its links (`sorted_links`: by the far end's group, kind and name), so a leaf's
  port 1 goes to the first server.  Prefixes: ``swp`` on an Ethernet switch, ``p`` on an
  InfiniBand switch, ``ib`` on an InfiniBand adapter, ``eth`` on an Ethernet adapter or
  host, ``nvl`` for NVLink, ``pcie`` for PCIe.
* **Length.**  1 canvas unit = 1 cm of floor (`METRES_PER_UNIT`): the Manhattan
  distance between the two ends' racks (their outermost ``rack`` group, else the
  enclosing ``node``/``tray`` group, else the device itself) plus `SLACK_M` for the
  vertical runs and service loops, or `IN_RACK_M` when both ends share a rack (or a
  server), rounded up to a stock length (`STOCK_LENGTHS_M`).
* **Cable type by length and rate** (`REACH_M`): passive copper (DAC) within its reach,
  active copper (AEC) within its, then active optical (AOC) up to 30 m, then a pair of
  transceivers with multimode fibre (up to 50 m at 400G and above, 100 m below) or
  single-mode fibre beyond.  NVLink cables are copper at any length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from designer.io.exports.common import sorted_links, sorted_nodes
from designer.model.elements import Node
from designer.model.topology import Topology

__all__ = ["Cable", "cables", "port_prefix"]

METRES_PER_UNIT = 0.01
SLACK_M = 3.0
IN_RACK_M = 2.0
IN_SERVER_M = 0.5
STOCK_LENGTHS_M = (
    0.5,
    1,
    1.5,
    2,
    2.5,
    3,
    4,
    5,
    7,
    10,
    15,
    20,
    30,
    50,
    70,
    100,
    150,
    200,
    300,
    500,
    1000,
    2000,
)
#: Per-lane-rate reach (DAC, AEC) in metres by link rate (Gb/s, at least): assumptions
#: after common vendor datasheets (400G/800G passive copper 2-3 m, active 5-7 m).
REACH_M: tuple[tuple[float, float, float], ...] = (
    (800, 2.0, 5.0),
    (400, 2.5, 5.0),
    (200, 3.0, 7.0),
    (0, 5.0, 10.0),
)
AOC_MAX_M = 30.0
SERVER_KINDS = ("node", "tray")


@dataclass(frozen=True, slots=True)
class Cable:
    """One physical cable (one link of a bundle)."""

    cable_id: str
    link_id: str
    index: int  # 1..count within the bundle
    a: str
    a_port: str
    b: str
    b_port: str
    tech: str
    gbps: float
    plane: str
    failed: bool
    a_rack: str
    b_rack: str
    length_m: float
    cable_type: str  # DAC, AEC, AOC, MMF, SMF, board
    optics: int  # transceivers needed (0 or 2)


def port_prefix(topology: Topology, node: Node, family: str) -> str:
    """The interface name prefix of ``node``'s ports of link family ``family``."""
    if family == "nvlink":
        return "nvl"
    if family == "pcie":
        return "pcie"
    switch = node.kind in ("leaf", "spine", "core", "switch")
    if family == "infiniband":
        return "p" if switch else "ib"
    return "swp" if switch else "eth"


def _enclosing(topology: Topology, group: str | None, kinds: tuple[str, ...]) -> str | None:
    """The outermost ancestor of ``group`` (itself included) whose kind is in ``kinds``."""
    found = None
    seen: set[str] = set()
    while group is not None and group not in seen and topology.has_group(group):
        seen.add(group)
        g = topology.group(group)
        if g.kind in kinds:
            found = g.id
        group = g.parent
    return found


def _stock(length: float) -> float:
    for stock in STOCK_LENGTHS_M:
        if length <= stock + 1e-9:
            return float(stock)
    return float(math.ceil(length))


def _cable_type(family: str, gbps: float, length: float) -> tuple[str, int]:
    if family == "nvlink":
        return "DAC", 0
    dac, aec = next((d, a) for rate, d, a in REACH_M if gbps >= rate)
    if length <= dac:
        return "DAC", 0
    if length <= aec:
        return "AEC", 0
    if length <= AOC_MAX_M:
        return "AOC", 0
    return ("MMF" if length <= (50 if gbps >= 400 else 100) else "SMF"), 2


def cables(topology: Topology) -> list[Cable]:
    """Every cable of the design, in structural order (see module doc)."""
    nodes = sorted_nodes(topology)
    order = {n.id: i for i, n in enumerate(nodes)}
    by_id = {n.id: n for n in nodes}
    centre: dict[str, tuple[float, float]] = {}
    racks: dict[str, str] = {}
    members: dict[str, list[Node]] = {}
    for n in nodes:
        rack = (
            _enclosing(topology, n.group, ("rack",))
            or _enclosing(topology, n.group, SERVER_KINDS)
            or n.id
        )
        racks[n.id] = rack
        members.setdefault(rack, []).append(n)
    for rack, inside in members.items():
        centre[rack] = (
            sum(n.x for n in inside) / len(inside),
            sum(n.y for n in inside) / len(inside),
        )
    servers = {n.id: _enclosing(topology, n.group, SERVER_KINDS) for n in nodes}
    next_port: dict[tuple[str, str], int] = {}
    out: list[Cable] = []
    for link in sorted_links(topology, order):
        tech = topology.catalog.tech(link.tech)
        same_server = servers[link.a] is not None and servers[link.a] == servers[link.b]
        if tech.family == "pcie" or (tech.family == "nvlink" and same_server):
            continue
        a, b = by_id[link.a], by_id[link.b]
        if order[a.id] > order[b.id]:
            a, b = b, a
        ra, rb = racks[a.id], racks[b.id]
        if same_server:
            length = IN_SERVER_M
        elif ra == rb:
            length = IN_RACK_M
        else:
            (xa, ya), (xb, yb) = centre[ra], centre[rb]
            length = (abs(xa - xb) + abs(ya - yb)) * METRES_PER_UNIT + SLACK_M
        length = _stock(length)
        kind, optics = _cable_type(tech.family, tech.gbps, length)
        for i in range(1, link.count + 1):
            ports = []
            for end in (a, b):
                prefix = port_prefix(topology, end, tech.family)
                n = next_port.get((end.id, prefix), 0) + 1
                next_port[(end.id, prefix)] = n
                ports.append(f"{prefix}{n}")
            out.append(
                Cable(
                    cable_id=f"{link.id}/{i}" if link.count > 1 else link.id,
                    link_id=link.id,
                    index=i,
                    a=a.id,
                    a_port=ports[0],
                    b=b.id,
                    b_port=ports[1],
                    tech=link.tech,
                    gbps=tech.gbps,
                    plane=link.plane,
                    failed=link.failed,
                    a_rack=ra,
                    b_rack=rb,
                    length_m=length,
                    cable_type=kind,
                    optics=optics,
                )
            )
    return out


def ports_used(all_cables: list[Cable]) -> Mapping[str, dict[str, int]]:
    """Node id -> {prefix: highest port number used}."""
    used: dict[str, dict[str, int]] = {}
    for c in all_cables:
        for node, port in ((c.a, c.a_port), (c.b, c.b_port)):
            prefix = port.rstrip("0123456789")
            n = int(port[len(prefix) :])
            slot = used.setdefault(node, {})
            slot[prefix] = max(slot.get(prefix, 0), n)
    return used

"""Cabling plan (``.cabling.csv``): one row per cable with both ends, type, length and
optics, for the people who install the fabric.

Columns: ``cable, link, plane, tech, rate_gbps, a_device, a_port, a_rack, b_device,
b_port, b_rack, cable_type, length_m, transceivers, status``.  Devices and racks are
shown by name, qualified by their groups where two share one (ids in ``link``).  The
rules for ports, lengths and types are those of `designer.io.exports.cables`.  Every
cell goes through the house CSV writer, so a name beginning with = + - @ cannot run as
a spreadsheet formula.

The number of cables of each technology equals the BOM's link count for it
(``fabric-designer bom``), board traces (PCIe, NVLink inside a server) excepted.
"""

from __future__ import annotations

import os
from collections import Counter

from designer.io.atomic import atomic_write_bytes
from designer.io.exports.cables import cables
from designer.io.exports.common import csv_bytes, unique_names
from designer.model.topology import Topology

__all__ = ["COLUMNS", "cable_counts", "cabling_bytes", "write_cabling"]

COLUMNS = (
    "cable",
    "link",
    "plane",
    "tech",
    "rate_gbps",
    "a_device",
    "a_port",
    "a_rack",
    "b_device",
    "b_port",
    "b_rack",
    "cable_type",
    "length_m",
    "transceivers",
    "status",
)


def _name(topology: Topology, ident: str, devices: dict[str, str]) -> str:
    if ident in devices:
        return devices[ident]
    if topology.has_group(ident):
        return topology.group(ident).name
    return ident


def cabling_bytes(topology: Topology) -> bytes:
    """The cabling plan as CSV bytes (see module doc)."""
    rows: list[list] = [list(COLUMNS)]
    devices = unique_names(topology)
    for c in cables(topology):
        rows.append(
            [
                c.cable_id,
                c.link_id,
                c.plane,
                c.tech,
                f"{c.gbps:g}",
                devices[c.a],
                c.a_port,
                _name(topology, c.a_rack, devices),
                devices[c.b],
                c.b_port,
                _name(topology, c.b_rack, devices),
                c.cable_type,
                f"{c.length_m:g}",
                c.optics,
                "failed" if c.failed else "planned",
            ]
        )
    return csv_bytes(rows)


def cable_counts(topology: Topology) -> Counter:
    """Cables per link technology."""
    return Counter(c.tech for c in cables(topology))


def write_cabling(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Write `cabling_bytes` to ``path`` atomically."""
    atomic_write_bytes(path, cabling_bytes(topology))

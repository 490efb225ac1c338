"""NetBox bulk import (``OUT.netbox/``): device types, sites, racks, devices, cables.

Files, in the order NetBox needs them (each import refers to what the earlier ones made):

1. ``manufacturers.csv`` (Organization > Manufacturers > Import): ``name, slug``.
2. ``device-types/<Manufacturer>/<model>.yaml``: one devicetype-library YAML per model
   (netbox-community/devicetype-library conventions: ``manufacturer, model, slug,
   u_height, is_full_depth, interfaces: [{name, type}]``), imported under Device Types >
   Import; its interfaces are created on every device of the type.
3. ``device-roles.csv``: ``name, slug, color`` (one role per node kind).
4. ``sites.csv``: ``name, slug, status`` (one site per ``cluster`` group, else one for
   the design).
5. ``racks.csv``: ``site, name, status`` (one rack per ``rack`` group).
6. ``devices.csv``: ``name, role, manufacturer, device_type, status, site, rack,
   cf_coordinates`` (``coordinates`` is the netbox-topology-views custom field, ``"X;Y"``
   canvas position; create it before the import, or drop the column).
7. ``cables.csv``: ``side_a_device, side_a_type, side_a_name, side_b_device,
   side_b_type, side_b_name, type, status, label, length, length_unit, description``
   (``label`` is the link id, with ``/<n>`` for the n-th cable of a bundle;
   ``description`` the link technology, the catalog's key).

Not for NetBox: ``board-links.csv`` (``side_a_device, side_b_device, tech, count,
plane, status, label``) holds the PCIe and in-server NVLink connections, which are board
traces rather than cables, so that `designer.io.imports.netbox` rebuilds the whole design
from the folder.

The required columns follow NetBox's import forms (``netbox/dcim/forms/bulk_import.py``:
``DeviceImportForm``, ``CableImportForm``...).  Device names must be unique per site in
NetBox: a name two devices share is qualified by their groups (``Node 5/GPU 0``),
and one still shared (with a site or rack name too) gets `` (2)``, `` (3)``.  Every CSV
cell goes through the house writer (no formula injection); YAML strings are written as
JSON strings, which YAML reads as double-quoted scalars.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from designer.io.exports.cables import cables, port_prefix, ports_used
from designer.io.exports.common import (
    csv_bytes,
    sorted_groups,
    sorted_links,
    sorted_nodes,
    unique_names,
    write_folder,
)
from designer.model.topology import Topology

__all__ = ["netbox_files", "write_netbox"]

#: NetBox CableTypeChoices for our cable types.
CABLE_TYPES = {
    "DAC": "dac-passive",
    "AEC": "dac-active",
    "AOC": "aoc",
    "MMF": "mmf-om4",
    "SMF": "smf-os2",
}
ROLE_COLORS = {
    "gpu": "76b900",
    "nvswitch": "e69f00",
    "nvlink-switch-tray": "e69f00",
    "leaf": "0072b2",
    "spine": "56b4e9",
    "core": "cc79a7",
    "switch": "0072b2",
    "nic": "009e73",
    "host": "7f7f7f",
    "storage": "d55e00",
}
#: Rack units by device category (0: a component inside a server, not rack-mounted).
U_HEIGHT = {"switch": 1, "host": 2, "storage": 2, "nvlink-switch-tray": 1, "system": 10}


def slug(text: str) -> str:
    """A NetBox slug: lower-case letters, digits, dashes and underscores."""
    s = re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-")
    return s or "x"


def _iface_type(family: str, gbps: float) -> str:
    """NetBox InterfaceTypeChoices value for a port of ``family`` at ``gbps``."""
    if family == "infiniband":
        return {
            100: "infiniband-edr",
            200: "infiniband-hdr",
            400: "infiniband-ndr",
            800: "infiniband-xdr",
        }.get(int(gbps), "other")
    if family == "ethernet":
        if gbps <= 1:
            return "1000base-t"
        return {
            100: "100gbase-x-qsfp28",
            200: "200gbase-x-qsfp56",
            400: "400gbase-x-osfp",
            800: "800gbase-x-osfp",
        }.get(int(gbps), "other")
    return "other"


def _yaml(data: Mapping) -> str:
    lines = []
    for key, value in data.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            for item in value:
                parts = ", ".join(f"{k}: {json.dumps(v)}" for k, v in item.items())
                lines.append(f"  - {{{parts}}}")
        else:
            lines.append(f"{key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def netbox_files(topology: Topology) -> dict[str, bytes]:
    """File name -> content of the NetBox import folder (see module doc)."""
    catalog = topology.catalog
    plan = cables(topology)
    used = ports_used(plan)
    nodes = sorted_nodes(topology)
    groups = sorted_groups(topology)
    files: dict[str, bytes] = {}

    # Device types: the catalog's ports, and at least as many as any device uses.
    models = sorted({n.model for n in nodes})
    manufacturers = sorted({catalog.device(m).vendor for m in models})
    files["manufacturers.csv"] = csv_bytes(
        [["name", "slug"]] + [[v, slug(v)] for v in manufacturers]
    )
    for model in models:
        device = catalog.device(model)
        counts: dict[str, tuple[int, str]] = {}
        probe = next(n for n in nodes if n.model == model)
        for group in device.ports:
            prefix = port_prefix(topology, probe, group.family)
            have, _ = counts.get(prefix, (0, ""))
            counts[prefix] = (have + group.count, _iface_type(group.family, group.gbps))
        for n in nodes:
            if n.model == model:
                for prefix, top in used.get(n.id, {}).items():
                    have, kind = counts.get(prefix, (0, "other"))
                    counts[prefix] = (max(have, top), kind)
        interfaces = [
            {"name": f"{prefix}{i}", "type": kind}
            for prefix, (count, kind) in sorted(counts.items())
            for i in range(1, count + 1)
        ]
        doc = {
            "manufacturer": device.vendor,
            "model": model,
            "slug": slug(model),
            "part_number": model,
            "u_height": U_HEIGHT.get(device.category, 0),
            "is_full_depth": device.category in ("switch", "host", "storage", "system"),
            "comments": device.name,
            "interfaces": interfaces,
        }
        files[f"device-types/{slug(device.vendor)}/{slug(model)}.yaml"] = _yaml(doc).encode()

    kinds = sorted({n.kind for n in nodes})
    files["device-roles.csv"] = csv_bytes(
        [["name", "slug", "color"]] + [[k, slug(k), ROLE_COLORS.get(k, "9e9e9e")] for k in kinds]
    )

    def ancestor(group: str | None, kind: str) -> str | None:
        seen: set[str] = set()
        while group is not None and group not in seen and topology.has_group(group):
            seen.add(group)
            g = topology.group(group)
            if g.kind == kind:
                return g.id
            group = g.parent
        return None

    unique: dict[str, str] = {}
    taken: set[str] = set()

    def unique_name(ident: str, name: str) -> str:
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name} ({n})"
        taken.add(candidate)
        unique[ident] = candidate
        return candidate

    design_site = topology.name or "fabric"
    sites = [g for g in groups if g.kind == "cluster"]
    for g in sites:
        unique_name(g.id, g.name)
    if not sites or any(ancestor(n.group, "cluster") is None for n in nodes):
        unique_name("", design_site)
    files["sites.csv"] = csv_bytes(
        [["name", "slug", "status"]]
        + [
            [unique[k], slug(unique[k]), "planned"]
            for k in ([g.id for g in sites] + [""])
            if k in unique
        ]
    )
    racks = [g for g in groups if g.kind == "rack"]
    for g in racks:
        unique_name(g.id, g.name)
    files["racks.csv"] = csv_bytes(
        [["site", "name", "status"]]
        + [[unique[ancestor(g.parent, "cluster") or ""], unique[g.id], "planned"] for g in racks]
    )

    devices = unique_names(topology)
    rows = [
        ["name", "role", "manufacturer", "device_type", "status", "site", "rack", "cf_coordinates"]
    ]
    for n in nodes:
        device = catalog.device(n.model)
        rack = ancestor(n.group, "rack")
        rows.append(
            [
                unique_name(n.id, devices[n.id]),
                n.kind,
                device.vendor,
                n.model,
                "offline" if n.failed else "planned",
                unique[ancestor(n.group, "cluster") or ""],
                unique[rack] if rack else "",
                f"{n.x:g};{n.y:g}",
            ]
        )
    files["devices.csv"] = csv_bytes(rows)

    rows = [
        [
            "side_a_device",
            "side_a_type",
            "side_a_name",
            "side_b_device",
            "side_b_type",
            "side_b_name",
            "type",
            "status",
            "label",
            "length",
            "length_unit",
            "description",
        ]
    ]
    for c in plan:
        rows.append(
            [
                unique[c.a],
                "dcim.interface",
                c.a_port,
                unique[c.b],
                "dcim.interface",
                c.b_port,
                CABLE_TYPES.get(c.cable_type, ""),
                "decommissioning" if c.failed else "planned",
                c.cable_id,
                f"{c.length_m:g}",
                "m",
                c.tech,
            ]
        )
    files["cables.csv"] = csv_bytes(rows)
    cabled = {c.link_id for c in plan}
    files["board-links.csv"] = csv_bytes(
        [["side_a_device", "side_b_device", "tech", "count", "plane", "status", "label"]]
        + [
            [
                unique[lk.a],
                unique[lk.b],
                lk.tech,
                lk.count,
                lk.plane,
                "decommissioning" if lk.failed else "planned",
                lk.id,
            ]
            for lk in sorted_links(topology)
            if lk.id not in cabled
        ]
    )
    files["README.txt"] = (
        b"NetBox import, in this order: manufacturers.csv; device-types/*/*.yaml "
        b"(Device Types > Import); device-roles.csv; sites.csv; racks.csv; devices.csv "
        b"(create the custom field 'coordinates' for netbox-topology-views first, or drop "
        b"the cf_coordinates column); cables.csv.  board-links.csv is not for NetBox: the "
        b"PCIe and in-server NVLink connections, which are board traces, not cables, kept "
        b"so that Fabric Designer re-imports the whole design from this folder.\n"
    )
    return files


def write_netbox(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Write the `netbox_files` as the folder ``path``, all or nothing."""
    write_folder(path, netbox_files(topology))

"""Topologies for packet- and trace-level simulators: ASTRA-sim (analytical network YAML
and system JSON), SimAI and the ns-3 backends of ASTRA-sim and SimAI.

Formats (field notes 2026, 1.3 a, b, d, e; upstream: astra-sim ``examples/network/
analytical/*.yml`` and ``examples/system/native_collectives/*.json``; SimAI
``astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py``; astra-sim ns-3 backend
topology files)::

    # network.yaml: one entry per dimension; GB/s per NPU; ns
    topology: [ Switch, Switch ]
    npus_count: [ 8, 16 ]
    bandwidth: [ 450.0, 50.0 ]
    latency: [ 600.0, 2000.0 ]

    # SimAI topology.txt
    <nodes> <gpus_per_server> <nvswitches> <switches> <links> <gpu_type>
    <nvswitch ids...> <switch ids...>
    <src> <dst> <rate>Gbps <latency>ms <error_rate>

    # ns-3 topology (ASTRA-sim / SimAI ns-3 backends)
    <nodes> <switches> <links>
    <switch ids...>
    <src> <dst> <rate>Gbps <latency>ms <error_rate>

How the design is flattened (and what that loses, written into each file):

* GPUs are numbered 0.. in structural order (`sorted_nodes`); each NVLink domain (GPUs
  joined by NVLink, through NVSwitches or directly) becomes one NVSwitch node, joined
  to each of its GPUs by one link of the GPU's total NVLink rate; NICs disappear: a
  GPU is joined to the switch its NIC cables to, at the NIC link's rate; switches keep
  their links (one line per physical link).
* ASTRA-sim's analytical model knows dimensions, not graphs: dimension 0 is the NVLink
  domain (GPUs per domain, per-GPU NVLink GB/s); dimension 1 the domains under one
  leaf (rail), dimension 2 the leaf groups under the spines when there are several;
  per-dimension bandwidth is the per-GPU injection rate at that level after
  oversubscription, times the technology's efficiency; latency the links' and
  switches' on the way.  Rails, taper between tiers, failed parts and planes other
  than compute are lost.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass

from designer.io.atomic import atomic_write_bytes
from designer.io.exports.common import ExportFormatError, one_line, sorted_nodes, write_folder
from designer.io.exports.simai_busbw import BusbwTable, busbw_table, busbw_yaml
from designer.model.topology import Topology

__all__ = [
    "Flat",
    "astra_sim_files",
    "flatten",
    "ns3_text",
    "simai_files",
    "write_astra_sim",
    "write_ns3",
    "write_simai",
]

SWITCH_KINDS = ("leaf", "spine", "core", "switch")
LOST = (
    "rail identity of links",
    "taper between tiers beyond one ratio per dimension",
    "failed nodes and links",
    "planes other than compute",
    "per-link heterogeneity",
)


@dataclass
class Flat:
    """The design as simulators see it (see module doc)."""

    gpus: list[str]  # node ids, index = simulator id
    domains: list[list[int]]  # GPU indices per NVLink domain
    switches: list[str]  # switch node ids, simulator id = len(gpus) + len(domains) + i
    links: list[tuple[int, int, float, float]]  # (src, dst, Gb/s, latency ns) per link
    gpu_model: str
    nvlink_gbps: list[float]  # per GPU
    nic_gbps: list[float]  # per GPU (0 without scale-out)
    gpu_leaf: list[int | None]  # switch index of each GPU's NIC


def flatten(topology: Topology) -> Flat:
    """Flatten the compute plane (see module doc); raises `ExportFormatError` without
    GPUs."""
    cat = topology.catalog
    nodes = [n for n in sorted_nodes(topology) if n.plane == "compute" and not n.failed]
    gpus = [n.id for n in nodes if n.kind == "gpu"]
    if not gpus:
        raise ExportFormatError("the design has no GPUs to simulate")
    gpu_index = {g: i for i, g in enumerate(gpus)}
    switches = [n.id for n in nodes if n.kind in SWITCH_KINDS]
    sw_index = {s: i for i, s in enumerate(switches)}
    kind = {n.id: n.kind for n in nodes}
    live = [lk for lk in topology.links() if not lk.failed and lk.a in kind and lk.b in kind]
    # NVLink domains: components of GPUs and NVSwitches over NVLink.
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    nvlink = defaultdict(float)
    for lk in live:
        tech = cat.tech(lk.tech)
        if tech.family == "nvlink":
            parent[find(lk.a)] = find(lk.b)
            for end in (lk.a, lk.b):
                if end in gpu_index:
                    nvlink[end] += lk.count * tech.gbps * tech.efficiency
    groups: dict[str, list[int]] = {}
    for g in gpus:
        groups.setdefault(find(g), []).append(gpu_index[g])
    domains = sorted(groups.values())
    # NICs: GPU -> NIC (PCIe or on-package), NIC -> switch (the cable).
    nic_of: dict[str, list[str]] = defaultdict(list)
    uplinks: dict[str, list] = defaultdict(list)
    for lk in live:
        tech = cat.tech(lk.tech)
        for a, b in ((lk.a, lk.b), (lk.b, lk.a)):
            if a in gpu_index and kind.get(b) == "nic":
                nic_of[a].append(b)
            if kind.get(a) == "nic" and b in sw_index and tech.family != "pcie":
                uplinks[a].append((b, lk.count, tech))
    nic_users = Counter(n for g in gpus for n in nic_of[g])
    base = len(gpus) + len(domains)
    links: list[tuple[int, int, float, float]] = []
    nic_gbps, gpu_leaf = [], []
    for g in gpus:
        rate, leaf, lat = 0.0, None, 0.0
        for nic in sorted(nic_of[g]):
            for sw, count, tech in uplinks[nic]:
                share = count * tech.gbps * tech.efficiency / nic_users[nic]
                rate += share
                leaf, lat = sw_index[sw], tech.latency_ns
        nic_gbps.append(rate)
        gpu_leaf.append(leaf)
        if leaf is not None:
            links.append((gpu_index[g], base + leaf, rate, lat))
    for d, members in enumerate(domains):
        for i in members:
            if nvlink[gpus[i]] > 0:
                tech_lat = 600.0
                links.append((i, len(gpus) + d, nvlink[gpus[i]], tech_lat))
    for lk in sorted(live, key=lambda x: (sw_index.get(x.a, -1), sw_index.get(x.b, -1), x.id)):
        if lk.a in sw_index and lk.b in sw_index:
            tech = cat.tech(lk.tech)
            a, b = sorted((sw_index[lk.a], sw_index[lk.b]))
            links.extend([(base + a, base + b, tech.gbps, tech.latency_ns)] * lk.count)
    models = Counter(topology.node(g).model for g in gpus)
    return Flat(
        gpus,
        domains,
        switches,
        sorted(links),
        models.most_common(1)[0][0],
        [nvlink[g] for g in gpus],
        nic_gbps,
        gpu_leaf,
    )


def _lines(flat: Flat) -> list[str]:
    return [f"{s} {d} {gbps:g}Gbps {lat / 1e6:g}ms 0" for s, d, gbps, lat in flat.links]


def _comment(prefix: str, topology: Topology) -> list[str]:
    return [
        f"{prefix} from Fabric Designer: {one_line(topology.name)}",
        f"{prefix} flattening loses: {', '.join(LOST)}",
    ]


def ns3_text(topology: Topology) -> str:
    """The ns-3 topology text (see module doc).  The first line is the header the
    backends read; the comment lines come after the links."""
    flat = flatten(topology)
    n_sw = len(flat.domains) + len(flat.switches)
    first = len(flat.gpus)
    lines = [
        f"{first + n_sw} {n_sw} {len(flat.links)}",
        " ".join(str(first + i) for i in range(n_sw)),
        *_lines(flat),
    ]
    return "\n".join(lines) + "\n"


def simai_files(topology: Topology) -> dict[str, bytes]:
    """``topology.txt`` in SimAI's format, ``busbw.yaml`` for SimAI-Analytical from our
    solver (`simai_busbw`) and a README of the mapping."""
    flat = flatten(topology)
    sizes = {len(d) for d in flat.domains}
    per_server = max(sizes)
    n_nv, n_sw = len(flat.domains), len(flat.switches)
    first = len(flat.gpus)
    total = first + n_nv + n_sw
    header = f"{total} {per_server} {n_nv} {n_sw} {len(flat.links)} {flat.gpu_model}"
    ids = " ".join(str(first + i) for i in range(n_nv + n_sw))
    text = "\n".join([header, ids, *_lines(flat)]) + "\n"
    table = busbw_table(topology, [[flat.gpus[i] for i in d] for d in flat.domains])
    readme = (
        "\n".join(
            [
                *_comment("#", topology),
                f"# GPUs 0-{first - 1}, NVSwitch per NVLink domain {first}-"
                f"{first + n_nv - 1}, switches {first + n_nv}-{first + n_nv + n_sw - 1}",
                "# (NVLink domains of unequal size: " + ("yes" if len(sizes) > 1 else "no") + ")",
                *_busbw_readme(table),
            ]
        )
        + "\n"
    )
    return {
        "topology.txt": text.encode(),
        "busbw.yaml": busbw_yaml(topology, table).encode(),
        "README.txt": readme.encode(),
    }


def _busbw_readme(table: BusbwTable) -> list[str]:
    lines = [
        f"# busbw.yaml: GB/s from `fabric-designer solve --collective C --algorithm auto "
        f"--bytes {table.size} --ranks IDS` (PP: --collective sendrecv), groups:"
    ]
    lines += [f"#   {g}: {','.join(ids) or '(none)'}" for g, ids in table.groups.items()]
    lines += [f"#   null: {why}" for why in table.missing]
    return lines


def _dimensions(topology: Topology, flat: Flat) -> list[tuple[str, int, float, float]]:
    sizes = {len(d) for d in flat.domains}
    if len(sizes) != 1:
        raise ExportFormatError(
            f"ASTRA-sim needs NVLink domains of one size; this design has {sorted(sizes)}"
        )
    per = sizes.pop()
    nvl = min(flat.nvlink_gbps) / 8 if min(flat.nvlink_gbps) > 0 else 0.0
    dims = [("Switch" if per > 2 else "Ring", per, round(nvl, 3), 600.0)]
    if len(flat.domains) == 1:
        return dims
    if any(leaf is None for leaf in flat.gpu_leaf):
        raise ExportFormatError("ASTRA-sim: some GPUs have no scale-out NIC to a switch")
    domain_of = {g: d for d, members in enumerate(flat.domains) for g in members}
    under = defaultdict(set)
    for g, leaf in enumerate(flat.gpu_leaf):
        under[leaf].add(domain_of[g])
    n1 = max(len(v) for v in under.values())
    nic = min(flat.nic_gbps) / 8
    cat = topology.catalog
    leaf_ids = {flat.switches[leaf] for leaf in under}
    down = up = 0.0
    for lk in topology.links():
        tech = cat.tech(lk.tech)
        ends = {lk.a, lk.b}
        if ends & leaf_ids and not lk.failed:
            other = (ends - leaf_ids) or ends
            rate = lk.count * tech.gbps
            if any(topology.node(o).kind in ("spine", "core") for o in other):
                up += rate
            else:
                down += rate
    taper = max(1.0, down / up) if up else 1.0
    dims.append(("Switch", n1, round(nic, 3), 2000.0))
    if n1 < len(flat.domains):
        if len(flat.domains) % n1:
            raise ExportFormatError(
                f"ASTRA-sim: {len(flat.domains)} NVLink domains do not split evenly into "
                f"leaf groups of {n1}"
            )
        dims.append(("Switch", len(flat.domains) // n1, round(nic / taper, 3), 4000.0))
    # A level of one NPU (a GPU without NVLink peers) is no dimension.
    return [d for d in dims if d[1] > 1] or dims[:1]


def astra_sim_files(topology: Topology) -> dict[str, bytes]:
    """``network.yaml``, ``system.json``, ``remote_memory.json`` and a README."""
    flat = flatten(topology)
    dims = _dimensions(topology, flat)

    def row(values) -> str:
        return "[ " + ", ".join(str(v) for v in values) + " ]"

    network = (
        "\n".join(
            [
                *_comment("#", topology),
                "# one dimension per level: NVLink domain, GPUs under one leaf, leaf groups "
                "under the spines (levels of one NPU left out)",
                f"topology: {row(d[0] for d in dims)}",
                f"npus_count: {row(d[1] for d in dims)}",
                f"bandwidth: {row(float(d[2]) for d in dims)}  # GB/s per NPU",
                f"latency: {row(float(d[3]) for d in dims)}  # ns",
            ]
        )
        + "\n"
    )
    n = len(dims)
    system = {
        "scheduling-policy": "LIFO",
        "endpoint-delay": 10,
        "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 4,
        "all-reduce-implementation": ["ring"] * n,
        "all-gather-implementation": ["ring"] * n,
        "reduce-scatter-implementation": ["ring"] * n,
        "all-to-all-implementation": ["direct"] * n,
        "collective-optimization": "localBWAware",
        "local-mem-bw": 1600,
        "boost-mode": 0,
    }
    return {
        "network.yaml": network.encode(),
        "system.json": (json.dumps(system, indent=2) + "\n").encode(),
        "remote_memory.json": b'{\n  "memory-type": "NO_MEMORY_EXPANSION"\n}\n',
        "README.txt": (
            b"ASTRA-sim analytical backend inputs: --network-configuration="
            b"network.yaml --system-configuration=system.json "
            b"--remote-memory-configuration=remote_memory.json\n"
        ),
    }


def write_astra_sim(topology: Topology, path: str | os.PathLike[str]) -> None:
    write_folder(path, astra_sim_files(topology))


def write_simai(topology: Topology, path: str | os.PathLike[str]) -> None:
    write_folder(path, simai_files(topology))


def write_ns3(topology: Topology, path: str | os.PathLike[str]) -> None:
    atomic_write_bytes(path, ns3_text(topology).encode())

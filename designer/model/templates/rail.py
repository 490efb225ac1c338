"""Rail-optimised clusters: a generic one (`build_rail_cluster`) and the NVIDIA DGX
SuperPOD reference design (`build_superpod`).

Rail optimisation: NIC ``i`` of every server cables to a leaf of rail ``i``, so GPU ``i``
of one server reaches GPU ``i`` of another in one switch hop; spines (and cores, for big
designs) join the rails.  Tiers are sized by `clos_plan.plan_clos`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from designer.model.errors import DesignError
from designer.model.templates.clos_plan import plan_clos, wire_clos
from designer.model.templates.hgx import HOST_MODEL, Server, server_block
from designer.model.templates.lookup import fabric_choice, port_capacity, tech_between
from designer.model.templates.parts import Parts, pad
from designer.model.templates.planes import PlaneOptions, add_planes
from designer.model.templates.rail_fabric import (
    cores_join_pods,
    largest,
    plan_rails,
    wire_rails,
)
from designer.model.topology import Topology

#: DGX-class servers per rack (~10 kW each; the SuperPOD reference racks hold 4).
RACK_SERVERS = 4


@dataclass(frozen=True)
class SuperpodReference:
    """One GPU's DGX SuperPOD reference architecture (compute fabric).

    ``even_spines``: two-tier fabrics take as many spines as split every leaf's uplinks
    evenly (`even_spines`), as the B300 XDR reference does.

    ``reserved_slots`` node slots of the whole fabric go to the UFM management
    appliance, which takes ``appliance_links`` leaf ports (of rails 0, 1, ...) in the
    last SU.
    """

    nodes_per_su: int
    gpus_per_node: int
    fabric: str
    nic_gbps: int
    leaf_downlinks: int
    leaf_uplinks: int
    reserved_slots: int
    appliance_links: int
    source: str
    even_spines: bool = False


_H100_RA = SuperpodReference(
    nodes_per_su=32,
    gpus_per_node=8,
    fabric="infiniband",
    nic_gbps=400,
    leaf_downlinks=32,
    leaf_uplinks=32,
    reserved_slots=1,
    appliance_links=4,
    source="NVIDIA DGX SuperPOD H100 reference architecture: SU = 32 node slots, 8 leaf + "
    "4 spine QM9700 per SU; 4 SU = 127 nodes / 1,016 GPUs, 1,020 node-leaf cables "
    "(127 x 8 + 4 from the UFM appliance in the 128th slot)",
)

#: Reference designs by GPU.  H200 assumption: DGX H200 is the DGX H100 chassis and
#: network, so its SuperPOD follows the H100 reference.
SUPERPOD_REFERENCE: dict[str, SuperpodReference] = {
    "H100": _H100_RA,
    "H200": _H100_RA,
    "B200": SuperpodReference(
        nodes_per_su=32,
        gpus_per_node=8,
        fabric="infiniband",
        nic_gbps=400,
        leaf_downlinks=32,
        leaf_uplinks=32,
        reserved_slots=0,
        appliance_links=0,
        source="NVIDIA DGX SuperPOD B200 reference architecture: 4 SU = 1,024 GPUs (32 leaf "
        "/ 16 spine), 16 SU = 4,096 (128 / 128 / 64 core), 64 SU = 16,384 "
        "(512 / 512 / 256)",
    ),
    "B300": SuperpodReference(
        nodes_per_su=72,
        gpus_per_node=8,
        fabric="infiniband",
        nic_gbps=800,
        leaf_downlinks=72,
        leaf_uplinks=72,
        reserved_slots=0,
        appliance_links=0,
        source="NVIDIA DGX SuperPOD with DGX B300 systems (XDR) reference architecture, "
        "table 3: SU = 72 DGX B300 (576 GPUs), Quantum-X800 leaves and spines; 1 SU = 8 leaf "
        "/ 4 spine, 2 SU = 16 / 8, 4 SU = 32 / 18, 8 SU = 64 / 36, 18 SU = 144 / 72",
        even_spines=True,
    ),
}


def even_spines(uplinks: int, needed: int) -> int:
    """The spine count a reference design uses: the fewest spines, at least ``needed``,
    that every leaf's ``uplinks`` split over evenly (NVIDIA's B300 XDR SuperPOD puts 18
    spines, not 16, over 32 leaves of 72 uplinks: 4 links to each).

    >>> [even_spines(72, n) for n in (4, 8, 16, 32, 72)]
    [4, 8, 18, 36, 72]
    """
    return next(d for d in range(max(1, needed), uplinks + 1) if uplinks % d == 0)


def _racks(parts: Parts, servers: list[Server]) -> list[tuple[str, str | None, list[str]]]:
    """Management domains: one per rack, holding its servers' hosts."""
    out: dict[str, list[str]] = {}
    for srv in servers:
        rack = parts.groups[srv.group].parent
        if rack is not None and srv.host is not None:
            out.setdefault(rack, []).append(srv.host)
    return [(rack, rack, hosts) for rack, hosts in out.items()]


def build_rail_cluster(
    nodes: int = 4,
    gpu: str = "H100",
    gpus_per_node: int = 8,
    nics_per_node: int = 0,
    nic_gbps: int = 400,
    fabric: str = "infiniband",
    leaf_radix: int = 64,
    oversubscription: float = 1.0,
    core: str = "auto",
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
    planes: int = 1,
    *,
    spines: int | None = None,
    name: str | None = None,
) -> Topology:
    """HGX servers on rail-optimised leaves, spines sized for the leaves' uplinks.

    An AMD Instinct GPU (MI300X, MI325X, MI355X) makes full-mesh nodes (xGMI, no
    NVSwitch); ``planes`` = 2 or 4 splits each NIC over that many separate fabrics
    (`rail_fabric`).

    Each leaf uses ``leaf_radix`` ports (at most the switch has): ``radix * r / (1 + r)``
    down to servers for an oversubscription ``r``, the rest up; a rail gets as many leaves
    as its servers need.  A core tier comes when one spine cannot reach every leaf
    (``core=auto``), always (``yes``) or never (``no``).  ``spines`` fixes the spine count
    (the built-in example uses 2).

    >>> t = build_rail_cluster(nodes=4)
    >>> [sum(1 for _ in t.nodes(kind)) for kind in ("gpu", "leaf", "spine", "core")]
    [32, 8, 1, 0]
    """
    checks = (
        ("nodes", nodes, 1),
        ("gpus_per_node", gpus_per_node, 1),
        ("nics_per_node", nics_per_node, 0),
        ("leaf_radix", leaf_radix, 2),
    )
    for pname, value, low in checks:
        if value < low:
            raise DesignError(f"rail-cluster: {pname} must be >= {low}, got {value}")
    if gpus_per_node > 8:
        raise DesignError(
            f"rail-cluster: gpus_per_node must be 1..8 (an HGX board), got {gpus_per_node}"
        )
    if not oversubscription > 0:
        raise DesignError(f"rail-cluster: oversubscription must be > 0, got {oversubscription}")
    parts = Parts()
    rails = nics_per_node or gpus_per_node
    # Plan the tiers before building anything, so that a fabric three tiers cannot join
    # is refused at once (checking a size costs arithmetic only).
    plan = plan_rails(
        parts,
        "rail-cluster",
        servers=nodes,
        rails=rails,
        fabric=fabric,
        nic_gbps=nic_gbps,
        leaf_radix=leaf_radix,
        oversubscription=oversubscription,
        core=core,
        planes=planes,
        spines=spines,
    )
    servers: list[Server] = []
    for s in range(nodes):
        rack = f"rack{pad(s // RACK_SERVERS + 1, math.ceil(nodes / RACK_SERVERS))}"
        if s % RACK_SERVERS == 0:
            parts.group(rack, "rack", f"Rack {s // RACK_SERVERS + 1}")
        servers.append(
            server_block(
                parts,
                f"n{pad(s + 1, nodes)}",
                f"Node {s + 1}",
                gpu=gpu,
                gpus=gpus_per_node,
                nic=plan.nic.nic,
                nics=rails,
                parent=rack,
            )
        )
    wire_rails(parts, plan, servers, rails)
    add_planes(parts, servers, PlaneOptions(storage, frontend, management), _racks(parts, servers))
    planes_note = f" x {planes} planes" if planes > 1 else ""
    title = name or (
        f"Rail cluster: {nodes} x {gpus_per_node} {gpu}, {fabric} {nic_gbps}G{planes_note}"
    )
    return parts.build(title)


def build_superpod(
    gpu: str = "H100",
    sus: int = 4,
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
) -> Topology:
    """A DGX SuperPOD compute fabric of ``sus`` scalable units (`SUPERPOD_REFERENCE`).

    An SU is 32 DGX nodes in 8 racks with one leaf per rail (8 leaves); leaves have 32
    ports down and 32 up.  Up to 8 SUs (64 leaves) hang under spines of 64 ports
    (spines = leaves / 2); beyond, pods of 4 SUs get their own 32 spines and cores join
    the pods (spines = leaves, cores = leaves / 2).

    >>> t = build_superpod("B200", sus=1)
    >>> [sum(1 for _ in t.nodes(kind)) for kind in ("gpu", "leaf", "spine")]
    [256, 8, 4]
    """
    if gpu not in SUPERPOD_REFERENCE:
        raise DesignError(
            f"superpod: no reference architecture for {gpu!r}; choose one of "
            f"{', '.join(SUPERPOD_REFERENCE)}"
        )
    if sus < 1:
        raise DesignError(f"superpod: sus must be >= 1, got {sus}")
    ref = SUPERPOD_REFERENCE[gpu]
    parts = Parts()
    cat = parts.catalog
    f = fabric_choice(cat, ref.fabric, ref.nic_gbps)
    radix = port_capacity(cat, f.switch, f.tech)
    if ref.leaf_downlinks + ref.leaf_uplinks > radix:
        raise DesignError(
            f"superpod: {f.switch} has {radix} ports, the reference leaf uses "
            f"{ref.leaf_downlinks + ref.leaf_uplinks}"
        )
    rails = ref.gpus_per_node
    plan = plan_clos([ref.leaf_uplinks] * (sus * rails), radix)
    if plan.tiers == 2 and ref.even_spines:
        spread_evenly = even_spines(ref.leaf_uplinks, sum(plan.pod_spines))
        plan = plan_clos([ref.leaf_uplinks] * (sus * rails), radix, spines=spread_evenly)
    if not cores_join_pods(plan):
        most = largest(sus, lambda n: cores_join_pods(plan_clos([ref.leaf_uplinks] * (n * rails),
                                                                 radix)))
        raise DesignError(
            f"superpod: sus={sus} is too many: three tiers of {radix}-port {f.switch} "
            f"switches join at most {most} SUs"
        )
    slots = sus * ref.nodes_per_su
    n_nodes = slots - ref.reserved_slots
    servers: list[Server] = []
    leaves: list[str] = []
    domains = []
    for su in range(1, sus + 1):
        sgid = parts.group(f"su{su}", "su", f"SU {su}")
        mine: list[Server] = []
        for j in range(ref.nodes_per_su):
            slot = (su - 1) * ref.nodes_per_su + j
            if slot >= n_nodes:
                break
            if j % RACK_SERVERS == 0:
                parts.group(
                    f"su{su}-rack{j // RACK_SERVERS + 1}",
                    "rack",
                    f"Rack {j // RACK_SERVERS + 1} SU {su}",
                    sgid,
                )
            srv = server_block(
                parts,
                f"n{pad(slot + 1, slots)}",
                f"Node {slot + 1}",
                gpu=gpu,
                gpus=ref.gpus_per_node,
                nic=f.nic,
                nics=rails,
                parent=f"su{su}-rack{j // RACK_SERVERS + 1}",
            )
            mine.append(srv)
        su_leaves = []
        for rail in range(rails):
            leaf = parts.node(
                f"su{su}-leaf-r{rail}", "leaf", f.switch, f"Leaf rail {rail} SU {su}", group=sgid
            )
            for srv in mine:
                parts.link(srv.nics[rail], leaf, f.tech)
            su_leaves.append(leaf)
        extra = []
        if su == sus and ref.reserved_slots:
            extra = [_appliance(parts, sgid, su_leaves, ref.appliance_links, f.nic, f.tech)]
        servers += mine
        leaves += su_leaves
        domains.append((f"su{su}", sgid, [*(s.host for s in mine), *extra, *su_leaves]))
    wire_clos(parts, plan, leaves, model=f.switch, tech=f.tech)
    add_planes(parts, servers, PlaneOptions(storage, frontend, management), domains)
    gpus = len(servers) * ref.gpus_per_node
    return parts.build(f"DGX SuperPOD {gpu}: {sus} SU, {gpus:,} GPUs")


def _appliance(
    parts: Parts, su_group: str, leaves: list[str], links: int, nic: str, tech: str
) -> str:
    """The UFM appliance in the reserved node slot: a host with ``links`` fabric NICs."""
    gid = parts.group("ufm", "node", "UFM appliance", su_group)
    host = parts.node("ufm-host", "host", HOST_MODEL, "UFM appliance", group=gid)
    pcie = tech_between(parts.catalog, HOST_MODEL, nic, "pcie")
    for j in range(min(links, len(leaves))):
        nid = parts.node(f"ufm-nic{j}", "nic", nic, f"UFM NIC {j}", group=gid)
        parts.link(host, nid, pcie)
        parts.link(nid, leaves[j], tech)
    return host

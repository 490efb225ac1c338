"""Optional networks beside the compute fabric: storage, front-end and management.

* **storage**: a BlueField-3 per server (PCIe to the host) and NVMe storage servers on
  their own leaf/spine switches (RoCE 400G), plane ``storage``;
* **front-end**: a second BlueField-3 per server on its own Ethernet leaves/spines, plane
  ``frontend`` (users, login nodes, in-band management);
* **management**: out-of-band 1G.  One SN2201 per rack or SU (more when its 48 ports run
  out) cabled to every host and to the management port of every switch that has one,
  plus an aggregation switch when there is more than one.  Zero trust: these switches
  and links carry nothing else, and a compute switch gives only its own 1G port.

Each plane's switches are sized like the compute fabric (`clos_plan.plan_clos`), non-blocking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from designer.model.errors import DesignError
from designer.model.templates.clos_plan import plan_clos, wire_clos
from designer.model.templates.hgx import HOST_MODEL, Server
from designer.model.templates.lookup import (
    mgmt_capable,
    port_capacity,
    switch_for,
    tech_between,
)
from designer.model.templates.parts import Parts, spread


@dataclass(frozen=True)
class PlaneSpec:
    """One data plane beside the compute fabric: the NIC each server gets for it, the
    link technology, and how its ids and names start."""

    plane: str
    nic: str
    tech: str
    label: str
    prefix: str
    nic_suffix: str


STORAGE = PlaneSpec("storage", "BlueField-3", "roce-400", "Storage", "st-", "stnic")
FRONTEND = PlaneSpec("frontend", "BlueField-3", "eth-400", "Front-end", "fe-", "fenic")
STORAGE_MODEL = "Storage-NVMe"
#: Assumption: one NVMe storage server per 16 compute servers (at least one).
SERVERS_PER_STORAGE = 16
MGMT_SWITCH = "SN2201"
MGMT_TECH = "eth-1g"
MGMT_UPLINK_TECH = "eth-100"


@dataclass(frozen=True)
class PlaneOptions:
    """Which optional planes a template adds."""

    storage: bool = False
    frontend: bool = False
    management: bool = False

    @property
    def any(self) -> bool:
        return self.storage or self.frontend or self.management


Domain = tuple[str, str | None, Sequence[str]]  # (label, group id, node ids)


def add_planes(
    parts: Parts, servers: Sequence[Server], opts: PlaneOptions, domains: Sequence[Domain] = ()
) -> None:
    """Add the planes ``opts`` asks for.  ``domains`` groups devices for management
    (a rack's or SU's hosts and leaves); every other device with a management port goes
    to the network-rack switches ``mgmt-net-N``."""
    if opts.storage:
        count = max(1, math.ceil(len(servers) / SERVERS_PER_STORAGE))
        rack = parts.group("storage", "rack", "Storage")
        stores = [
            parts.node(
                f"stor-{i}", "storage", STORAGE_MODEL, f"Storage {i}", group=rack, plane="storage"
            )
            for i in range(count)
        ]
        add_data_plane(parts, STORAGE, servers, stores)
    if opts.frontend:
        add_data_plane(parts, FRONTEND, servers, ())
    if opts.management:
        add_management(parts, domains)


def add_data_plane(
    parts: Parts, spec: PlaneSpec, servers: Sequence[Server], endpoints: Sequence[str]
) -> None:
    """A NIC per server and non-blocking leaves (spines when needed) for ``spec``'s
    plane; each of ``endpoints`` (storage servers) uses all its ports for it."""
    cat = parts.catalog
    switch = switch_for(cat, spec.tech)
    down = port_capacity(cat, switch, spec.tech) // 2
    tech = cat.tech(spec.tech)
    ports: list[str] = []
    for eid in endpoints:
        group = cat.device(parts.nodes[eid].model).port_group_for(tech)
        ports += [eid] * (group.count if group is not None else 1)
    nics = []
    for srv in servers:
        if srv.host is None:
            raise DesignError(f"server {srv.group} has no host for the {spec.plane} plane")
        nic = parts.node(
            f"{srv.group}-{spec.nic_suffix}",
            "nic",
            spec.nic,
            f"{spec.label} NIC",
            group=srv.group,
            plane=spec.plane,
        )
        parts.link(srv.host, nic, tech_between(cat, HOST_MODEL, spec.nic, "pcie"), plane=spec.plane)
        nics.append(nic)
    n_leaves = max(1, math.ceil((len(ports) + len(nics)) / down))
    load = [0] * n_leaves
    pairs: dict[tuple[str, int], int] = {}
    # Endpoints' ports round-robin (each storage server on as many leaves as it can),
    # then the servers' NICs fill the leaves in order.
    for k, eid in enumerate(ports):
        pairs[(eid, k % n_leaves)] = pairs.get((eid, k % n_leaves), 0) + 1
        load[k % n_leaves] += 1
    li = 0
    for nic in nics:
        while load[li] >= down:
            li += 1
        pairs[(nic, li)] = 1
        load[li] += 1
    leaves = [
        parts.node(
            f"{spec.prefix}leaf-{i}", "leaf", switch, f"{spec.label} leaf {i}", plane=spec.plane
        )
        for i in range(n_leaves)
    ]
    for (end, i), count in pairs.items():
        parts.link(end, leaves[i], spec.tech, count, spec.plane)
    cap = port_capacity(cat, switch, spec.tech)
    plan = plan_clos(load, cap, max_up=[cap - n for n in load])
    wire_clos(
        parts,
        plan,
        leaves,
        model=switch,
        tech=spec.tech,
        plane=spec.plane,
        prefix=spec.prefix,
        label=spec.label,
    )


def _aggregator(parts: Parts, edges: int) -> str:
    """The management aggregation switch: the smallest Ethernet switch whose 100G ports
    take one uplink from every edge switch (the largest if none does)."""
    cat = parts.catalog
    sizes = sorted(
        (port_capacity(cat, d.key, MGMT_UPLINK_TECH), d.key) for d in cat.models_for_kind("spine")
    )
    sizes = [s for s in sizes if s[0] > 0]
    if not sizes:
        raise DesignError(f"no switch in the catalog takes {MGMT_UPLINK_TECH} links")
    for cap, key in sizes:
        if cap >= edges:
            return key
    return sizes[-1][1]


def add_management(parts: Parts, domains: Sequence[Domain] = ()) -> None:
    """Out-of-band management switches ``mgmt-<domain>-N`` for every device with a 1G
    management port, and aggregation ``mgmt-agg-N`` above them when there are several."""
    cat = parts.catalog
    eligible = [
        nid
        for nid, n in parts.nodes.items()
        if n.plane != "management" and mgmt_capable(cat, n.model, MGMT_TECH)
    ]
    ok = set(eligible)
    taken: set[str] = set()
    plan: list[tuple[str, str | None, list[str]]] = []
    for label, gid, ids in domains:
        mine = [i for i in ids if i in ok and i not in taken]
        taken.update(mine)
        plan.append((label, gid, mine))
    rest = [i for i in eligible if i not in taken]
    if rest:
        plan.append(("net", None, rest))
    per_switch = port_capacity(cat, MGMT_SWITCH, MGMT_TECH)
    edges: list[str] = []
    for label, gid, ids in plan:
        for c in range(math.ceil(len(ids) / per_switch)):
            sw = parts.node(
                f"mgmt-{label}-{c}",
                "leaf",
                MGMT_SWITCH,
                f"Mgmt {label} {c}",
                group=gid,
                plane="management",
            )
            for nid in ids[c * per_switch : (c + 1) * per_switch]:
                parts.link(nid, sw, MGMT_TECH, plane="management")
            edges.append(sw)
    if len(edges) < 2:
        return
    model = _aggregator(parts, len(edges))
    cap = port_capacity(cat, model, MGMT_UPLINK_TECH)
    up_ports = port_capacity(cat, MGMT_SWITCH, MGMT_UPLINK_TECH)
    n_agg = max(1, math.ceil(len(edges) / cap))
    per_edge = min(up_ports, n_agg)
    n_agg = max(n_agg, math.ceil(len(edges) * per_edge / cap))
    aggs = [
        parts.node(f"mgmt-agg-{a}", "spine", model, f"Mgmt aggregation {a}", plane="management")
        for a in range(n_agg)
    ]
    for a, b, count in spread([(e, per_edge) for e in edges], aggs):
        parts.link(a, b, MGMT_UPLINK_TECH, count, plane="management")

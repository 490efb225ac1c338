"""The fat-tree and leaf-spine templates: one-GPU hosts under leaves, with the tiers
above them sized and wired by `clos_plan`.
"""

from __future__ import annotations

from designer.model.errors import DesignError
from designer.model.templates.hgx import ALL_GPUS, Server, server_block
from designer.model.templates.lookup import fabric_choice, port_capacity
from designer.model.templates.parts import Parts, pad
from designer.model.templates.planes import PlaneOptions, add_planes
from designer.model.topology import Topology


def endpoint(
    parts: Parts, index: int, total: int, *, gpu: str, nic: str, parent: str | None
) -> Server:
    """A one-GPU host (GPU --PCIe-- NIC, plus its CPU host), group ``n{index}``."""
    return server_block(
        parts,
        f"n{pad(index, total)}",
        f"Node {index}",
        gpu=gpu,
        gpus=1,
        nic=nic,
        nics=1,
        parent=parent,
    )


def build_fat_tree(
    k: int = 4,
    gpu: str = "H100",
    fabric: str = "infiniband",
    nic_gbps: int = 400,
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
) -> Topology:
    """A k-ary fat-tree: ``k`` pods of ``k/2`` leaves and ``k/2`` aggregation switches,
    ``(k/2)^2`` cores and ``k^3/4`` one-GPU endpoints (full bisection).

    >>> t = build_fat_tree(4)
    >>> [sum(1 for _ in t.nodes(kind)) for kind in ("gpu", "leaf", "spine", "core")]
    [16, 8, 8, 4]
    """
    if k < 2 or k % 2:
        raise DesignError(f"fat-tree: k must be an even number >= 2, got {k}")
    parts = Parts()
    f = fabric_choice(parts.catalog, fabric, nic_gbps)
    cap = port_capacity(parts.catalog, f.switch, f.tech)
    if k > cap:
        raise DesignError(
            f"fat-tree: k={k} needs {k}-port switches; {f.switch} has {cap} {f.tech} ports"
        )
    h = k // 2
    total = k * h * h
    servers: list[Server] = []
    domains = []
    aggs: list[list[str]] = []
    for p in range(k):
        pod = parts.group(f"pod{p + 1}", "pod", f"Pod {p + 1}")
        leaves = [
            parts.node(f"p{p + 1}-leaf-{e}", "leaf", f.switch, f"Leaf {e} pod {p + 1}", group=pod)
            for e in range(h)
        ]
        mine = []
        for leaf in leaves:
            for _ in range(h):
                srv = endpoint(parts, len(servers) + 1, total, gpu=gpu, nic=f.nic, parent=pod)
                parts.link(srv.nics[0], leaf, f.tech)
                servers.append(srv)
                mine.append(srv.host)
        spines = [
            parts.node(
                f"p{p + 1}-spine-{a}", "spine", f.switch, f"Aggregation {a} pod {p + 1}", group=pod
            )
            for a in range(h)
        ]
        for leaf in leaves:
            for s in spines:
                parts.link(leaf, s, f.tech)
        aggs.append(spines)
        domains.append((f"pod{p + 1}", pod, [*mine, *leaves, *spines]))
    cores = [parts.node(f"core-{c}", "core", f.switch, f"Core {c}") for c in range(h * h)]
    for spines in aggs:
        for a, s in enumerate(spines):
            for c in cores[a * h : (a + 1) * h]:
                parts.link(s, c, f.tech)
    add_planes(parts, servers, PlaneOptions(storage, frontend, management), domains)
    return parts.build(f"Fat-tree k={k}: {total} x {gpu}, {fabric} {nic_gbps}G")


def build_leaf_spine(
    leaves: int = 4,
    spines: int = 2,
    hosts_per_leaf: int = 4,
    uplinks: int = 1,
    gpu: str = "H100",
    fabric: str = "infiniband",
    nic_gbps: int = 400,
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
) -> Topology:
    """Two-tier leaf-spine: every leaf (a rack's top-of-rack switch with its one-GPU hosts)
    has ``uplinks`` links to every spine."""
    for pname, value, low in (
        ("leaves", leaves, 1),
        ("spines", spines, 1),
        ("hosts_per_leaf", hosts_per_leaf, 1),
        ("uplinks", uplinks, 1),
    ):
        if value < low:
            raise DesignError(f"leaf-spine: {pname} must be >= {low}, got {value}")
    parts = Parts()
    f = fabric_choice(parts.catalog, fabric, nic_gbps)
    cap = port_capacity(parts.catalog, f.switch, f.tech)
    if hosts_per_leaf + spines * uplinks > cap:
        raise DesignError(
            f"leaf-spine: a leaf needs {hosts_per_leaf + spines * uplinks} ports "
            f"(hosts_per_leaf + spines x uplinks); {f.switch} has {cap}"
        )
    if leaves * uplinks > cap:
        raise DesignError(
            f"leaf-spine: a spine needs {leaves * uplinks} ports "
            f"(leaves x uplinks); {f.switch} has {cap}"
        )
    total = leaves * hosts_per_leaf
    servers: list[Server] = []
    domains = []
    leaf_ids = []
    for i in range(leaves):
        rack = parts.group(f"rack{pad(i + 1, leaves)}", "rack", f"Rack {i + 1}")
        leaf = parts.node(f"leaf-{i}", "leaf", f.switch, f"Leaf {i}", group=rack)
        hosts = []
        for _ in range(hosts_per_leaf):
            srv = endpoint(parts, len(servers) + 1, total, gpu=gpu, nic=f.nic, parent=rack)
            parts.link(srv.nics[0], leaf, f.tech)
            servers.append(srv)
            hosts.append(srv.host)
        leaf_ids.append(leaf)
        domains.append((rack, rack, [*hosts, leaf]))
    spine_ids = [parts.node(f"spine-{j}", "spine", f.switch, f"Spine {j}") for j in range(spines)]
    for leaf in leaf_ids:
        for s in spine_ids:
            parts.link(leaf, s, f.tech, uplinks)
    add_planes(parts, servers, PlaneOptions(storage, frontend, management), domains)
    return parts.build(f"Leaf-spine {leaves}x{spines}: {total} x {gpu}, {fabric} {nic_gbps}G")


__all__ = ["ALL_GPUS", "build_fat_tree", "build_leaf_spine", "endpoint"]

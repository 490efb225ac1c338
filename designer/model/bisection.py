"""Bisection bandwidth: the worst of a set of balanced cuts of the GPUs, by max flow.

The bisection an architect means is any-to-any: the smallest bandwidth across any cut
of the GPUs into two equal halves.  Finding the smallest is NP-hard in general, so this
module evaluates the balanced cuts that follow the structure fabrics are built from, and
reports the worst of them, and which it was.  Each cut's figure is exact (the max flow
from one half to the other over the working links, `networkx.maximum_flow_value`), so
the result is the bisection of a real cut: an upper bound on the true minimum, and equal
to it wherever the worst cut is one of the candidates (every fat tree, leaf-spine,
rail-optimised and SuperPOD template's is: the tests check the hand-computed figures).

The candidates (`CUTS`), each splitting the GPUs as evenly as its granularity allows:

``servers``
    Whole servers in id order, the first half of the GPUs against the rest.
``servers-by-leaf``
    Whole servers ordered by the first edge switch their NICs are cabled to (servers of
    one leaf group, one SU, stay together), then halved.
``servers-by-group``
    Whole servers ordered by the part of the fabric their edge switches fall in once the
    top switch tier is taken away (pods of a three-tier fabric, SUs of a two-tier one).
``gpus-by-leaf``
    GPUs ordered by their edge switch (pod by pod): the first half of the leaves' GPUs
    against the rest (a rail cut on a rail-optimised fabric: rails 0-3 against 4-7).
``servers-halved``
    Every server split in two, its GPUs in id order (a rail cut in every SU at once on a
    rail-optimised fabric, where GPU i is on rail i).
``servers-kl``
    Whole servers on the sides of a Kernighan-Lin bisection of the fabric graph (each
    server one node, links weighted by count), for cuts that neither names nor tiers
    reveal; run on graphs of up to `KL_MAX_NODES` nodes.

A *server* is what PCIe and on-board NVSwitches join: GPUs with their host, NICs and
NVSwitch chips (NVLink switch trays and GPU-to-GPU NVLink do not make a server; an NVL72
rack's servers are its superchips).  Where a cut splits a server, the server's own NVLink
and host PCIe links do not count across the cut: bisection is a figure of the fabric,
and a server cut in two is not two servers joined by their NVLinks.  A GPU keeps its own
PCIe link to its NIC.  The per-GPU figure is the bandwidth over the smaller half's GPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

import networkx as nx

from designer.model.naming import natural_key

#: Candidate cuts, in the order they are tried (the first of equals is reported).
CUTS: dict[str, str] = {
    "servers": "whole servers in id order",
    "servers-by-leaf": "whole servers grouped by edge switch",
    "servers-by-group": "whole servers grouped by fabric pod (top tier removed)",
    "gpus-by-leaf": "GPUs grouped by edge switch (rail cut on rail-optimised fabrics)",
    "servers-halved": "every server split in two (rail cut in every server)",
    "servers-kl": "whole servers, Kernighan-Lin bisection of the fabric graph",
}

#: Largest fabric graph (servers contracted, plus switches) the Kernighan-Lin candidate
#: is run on (a 1,024-GPU SuperPOD has 176 nodes; KL and its max flow take ~0.3 s there,
#: ~1 s at 4,096 GPUs); beyond it the structural cuts stand alone.
KL_MAX_NODES = 300

#: Switch tiers, bottom up (the top one present is removed for ``servers-by-group``).
TIERS: dict[str, int] = {"leaf": 1, "switch": 1, "spine": 2, "core": 3}

_SOURCE = ("bisection", "source")
_SINK = ("bisection", "sink")


class DesignView(Protocol):
    """What `worst_bisection` reads of a design (`report._Design` provides it)."""

    nodes: dict[str, dict]

    def live_edges(self, plane: str | None = None) -> Iterable[tuple[str, str, dict]]: ...

    def bundle_GBps(self, data: dict) -> float: ...

    def family(self, data: dict) -> str: ...


def worst_bisection(
    design: DesignView,
    flow_func: Callable | None = None,
    reduce: bool = True,
    plane: str = "compute",
) -> dict[str, Any]:
    """The worst balanced cut of the working GPUs among `CUTS` and its bandwidth.

    The GPUs are the working ones with a working link of ``plane`` (a GPU that is not
    on the network is no endpoint of it).

    Returns
    -------
    dict
        ``GBps`` and ``per_gpu_GBps`` (None with fewer than two GPUs) of the worst cut,
        ``cut`` (its key in `CUTS`), ``method`` (its description), ``a`` and ``b``
        (each ``count``, ``first``, ``last`` GPU id in natural order) and ``candidates``
        (every distinct cut tried: ``cut``, ``GBps``, ``per_gpu_GBps``).
    """
    nodes = design.nodes
    # Natural sort keys, made once per node: ids are compared many times below.
    nk = {n: natural_key(n) for n in nodes}.__getitem__
    edges = list(design.live_edges(plane))
    # The GPUs on this network: working, with a working link of the plane.
    linked = {n for a, b, _ in edges for n in (a, b)}
    gpus = sorted(
        (
            n
            for n, d in nodes.items()
            if d["kind"] == "gpu" and n in linked and d["plane"] != "management"
        ),
        key=nk,
    )
    servers = _servers(design, gpus, edges, nk)
    leaf_of = _edge_switches(nodes, gpus, edges, nk)
    best: dict[str, Any] | None = None
    candidates = []
    seen: set[frozenset] = set()
    for key, side_a in _cuts(nodes, gpus, servers, leaf_of, edges, nk):
        a_set = frozenset(side_a)
        if not a_set or len(a_set) == len(gpus) or a_set in seen:
            continue
        seen.add(a_set)
        side_b = [g for g in gpus if g not in a_set]
        value = _cut_flow(design, edges, servers, a_set, flow_func, reduce)
        per_gpu = round(value / min(len(a_set), len(side_b)), 6)
        candidates.append({"cut": key, "GBps": value, "per_gpu_GBps": per_gpu})
        if best is None or per_gpu < best["per_gpu_GBps"] - 1e-9:
            best = {
                "GBps": value,
                "per_gpu_GBps": per_gpu,
                "cut": key,
                "method": CUTS[key],
                "a": _half_summary(sorted(a_set, key=nk)),
                "b": _half_summary(side_b),
            }
    if best is None:
        best = {
            "GBps": None,
            "per_gpu_GBps": None,
            "cut": None,
            "method": "fewer than two working GPUs",
            "a": _half_summary(gpus[: len(gpus) // 2]),
            "b": _half_summary(gpus[len(gpus) // 2 :]),
        }
    best["candidates"] = candidates
    return best


def _half_summary(ids: list[str]) -> dict[str, Any]:
    return {"count": len(ids), "first": ids[0] if ids else None, "last": ids[-1] if ids else None}


# --------------------------------------------------------------------------- structure


def _server_link(design: DesignView, a: str, b: str, d: dict) -> bool:
    """Whether a link joins parts of one server: PCIe, or NVLink to an NVSwitch chip."""
    family = design.family(d)
    if family == "pcie":
        return True
    kinds = (design.nodes[a]["kind"], design.nodes[b]["kind"])
    return family == "nvlink" and "nvswitch" in kinds


def _servers(design: DesignView, gpus: list[str], edges: list, nk: Callable) -> dict[str, int]:
    """Server number of every GPU and of the nodes its server joins (numbered in the
    natural order of each server's first GPU)."""
    g = nx.Graph()
    g.add_nodes_from(gpus)
    g.add_edges_from((a, b) for a, b, d in edges if _server_link(design, a, b, d))
    gpu_set = set(gpus)
    parts = []
    for part in nx.connected_components(g):
        members = part & gpu_set
        if members:
            parts.append((min(members, key=nk), part))
    parts.sort(key=lambda p: nk(p[0]))
    return {n: i for i, (_, part) in enumerate(parts) for n in part}


def _edge_switches(nodes: dict, gpus: list[str], edges: list, nk: Callable) -> dict[str, str]:
    """Each GPU's edge switch: the first, in natural order, of the switches its own NICs
    (on a PCIe link of the GPU) are cabled to; GPUs without one are left out."""
    nic_switch: dict[str, str] = {}
    gpu_nics: dict[str, list[str]] = {}
    gpu_set = set(gpus)
    for a, b, _ in edges:
        for x, y in ((a, b), (b, a)):
            kind_x, kind_y = nodes[x]["kind"], nodes[y]["kind"]
            if kind_x == "nic" and kind_y in TIERS:
                old = nic_switch.get(x)
                if old is None or nk(y) < nk(old):
                    nic_switch[x] = y
            elif x in gpu_set and kind_y == "nic":
                gpu_nics.setdefault(x, []).append(y)
    out = {}
    for gpu, nics in gpu_nics.items():
        found = [nic_switch[n] for n in nics if n in nic_switch]
        if found:
            out[gpu] = min(found, key=nk)
    return out


def _pods(nodes: dict, edges: list, nk: Callable) -> dict[str, int]:
    """Pod number of each switch: its part of the switch fabric once the top tier present
    is taken away (a switch of the top tier is its own pod)."""
    switches = {n for n, d in nodes.items() if d["kind"] in TIERS}
    if not switches:
        return {}
    top = max(TIERS[nodes[n]["kind"]] for n in switches)
    g = nx.Graph()
    g.add_nodes_from(switches)
    g.add_edges_from(
        (a, b)
        for a, b, _ in edges
        if a in switches
        and b in switches
        and TIERS[nodes[a]["kind"]] < top
        and TIERS[nodes[b]["kind"]] < top
    )
    parts = sorted(
        (sorted(p, key=nk) for p in nx.connected_components(g)),
        key=lambda p: nk(p[0]),
    )
    return {n: i for i, part in enumerate(parts) for n in part}


def _cuts(
    nodes: dict,
    gpus: list[str],
    servers: dict[str, int],
    leaf_of: dict[str, str],
    edges: list,
    nk: Callable,
) -> Iterable[tuple[str, list[str]]]:
    """``(key, GPUs of half A)`` of each candidate of `CUTS`."""
    members: dict[int, list[str]] = {}
    for gpu in gpus:  # natural order within each server
        members.setdefault(servers[gpu], []).append(gpu)
    order = sorted(members)
    far = (1, ())  # GPUs without an edge switch sort after the rest

    def server_leaf(s: int) -> tuple:
        leaves = [leaf_of[g] for g in members[s] if g in leaf_of]
        return (0, nk(min(leaves, key=nk))) if leaves else far

    yield "servers", _whole(order, members, len(gpus))
    by_leaf = sorted(order, key=lambda s: (server_leaf(s), s))
    yield "servers-by-leaf", _whole(by_leaf, members, len(gpus))
    pods = _pods(nodes, edges, nk)

    def server_pod(s: int) -> tuple:
        found = [pods[leaf_of[g]] for g in members[s] if g in leaf_of and leaf_of[g] in pods]
        return (0, min(found)) if found else (1, 0)

    yield (
        "servers-by-group",
        _whole(sorted(order, key=lambda s: (server_pod(s), server_leaf(s), s)), members, len(gpus)),
    )
    rank = {g: i for i, g in enumerate(gpus)}

    def gpu_leaf(g: str) -> tuple:
        if g not in leaf_of:
            return far
        return (0, pods.get(leaf_of[g], -1), nk(leaf_of[g]))

    by_edge = sorted(gpus, key=lambda g: (gpu_leaf(g), rank[g]))
    yield "gpus-by-leaf", by_edge[: len(gpus) // 2]
    yield "servers-halved", [g for s in order for g in members[s][: len(members[s]) // 2]]
    kl = _kl_order(servers, edges, order, members)
    if kl is not None:
        yield "servers-kl", _whole(kl, members, len(gpus))


def _kl_order(
    servers: dict[str, int], edges: list, order: list[int], members: dict[int, list[str]]
) -> list[int] | None:
    """Servers in the order of a Kernighan-Lin bisection of the fabric graph: each server
    contracted to one node, links weighted by their count, switches and other nodes as
    they are; the servers of one side first (then halved whole by `_whole`).  It finds
    cuts no naming or tier reveals (spines split into two groups joined by a thin link).
    None when the graph is too large (`KL_MAX_NODES`) or has no links between servers.
    """
    g = nx.Graph()
    g.add_nodes_from(("server", s) for s in order)
    for a, b, d in edges:
        u = ("server", servers[a]) if a in servers else a
        w = ("server", servers[b]) if b in servers else b
        if u != w:
            weight = g.get_edge_data(u, w, {"weight": 0})["weight"] + d["count"]
            g.add_edge(u, w, weight=weight)
    if g.number_of_nodes() > KL_MAX_NODES or len(order) < 2:
        return None
    # A fixed seed and the servers' fixed order: the same design gives the same cut.
    side_a, _ = nx.algorithms.community.kernighan_lin_bisection(g, weight="weight", seed=0)
    first = [s for s in order if ("server", s) in side_a]
    return first + [s for s in order if ("server", s) not in side_a]


def _whole(order: list[int], members: dict[int, list[str]], n: int) -> list[str]:
    """Half A of whole servers taken in ``order``: the prefix whose GPU count is nearest
    ``n / 2`` (the first such prefix)."""
    best, best_k, total = n, 0, 0
    for k, s in enumerate(order, start=1):
        total += len(members[s])
        gap = abs(2 * total - n)
        if gap < best:
            best, best_k = gap, k
    return [g for s in order[:best_k] for g in members[s]]


# --------------------------------------------------------------------------- max flow


def _cut_flow(
    design: DesignView,
    edges: list,
    servers: dict[str, int],
    side_a: frozenset,
    flow_func: Callable | None,
    reduce: bool,
) -> float:
    """Max flow from the GPUs of ``side_a`` to the other GPUs of ``servers``."""
    nodes = design.nodes
    side = {g: (_SOURCE if g in side_a else _SINK) for g, d in _gpu_items(nodes, servers)}
    split: set[int] = set()
    seen: dict[int, Hashable] = {}
    for g, terminal in side.items():
        s = servers[g]
        if seen.setdefault(s, terminal) != terminal:
            split.add(s)
    adj: dict[Hashable, dict[Hashable, float]] = {_SOURCE: {}, _SINK: {}}
    for a, b, d in edges:
        inside_split = split and servers.get(a) in split and servers.get(a) == servers.get(b)
        if inside_split and _server_link(design, a, b, d) and not _own_nic_link(nodes, a, b):
            continue  # a split server's NVLink and host PCIe: not the fabric
        u, w = side.get(a, a), side.get(b, b)
        if u == w:
            continue  # inside one half: never crosses the cut
        cap = design.bundle_GBps(d)
        nu = adj.setdefault(u, {})
        nw = adj.setdefault(w, {})
        nu[w] = nu.get(w, 0.0) + cap
        nw[u] = nw.get(u, 0.0) + cap
    if reduce:
        reduce_network(adj, {_SOURCE, _SINK})
    net = nx.DiGraph()
    net.add_edges_from(
        (u, w, {"capacity": cap}) for u, nbrs in adj.items() for w, cap in nbrs.items()
    )
    if _SOURCE in net and _SINK in net:
        value = nx.maximum_flow_value(net, _SOURCE, _SINK, flow_func=flow_func)
    else:
        value = 0.0
    return round(float(value), 6)


def _gpu_items(nodes: dict, servers: dict[str, int]) -> Iterable[tuple[str, dict]]:
    """The working GPUs that belong to a server (every one `worst_bisection` counts)."""
    return ((n, nodes[n]) for n in servers if nodes[n]["kind"] == "gpu")


def _own_nic_link(nodes: dict, a: str, b: str) -> bool:
    """A GPU's own PCIe link to a NIC: its way to the fabric, kept in a split server."""
    return {nodes[a]["kind"], nodes[b]["kind"]} == {"gpu", "nic"}


def reduce_network(adj: dict[Hashable, dict[Hashable, float]], terminals: set) -> None:
    """Shrink a symmetric capacity network in place without changing its s-t max flow.

    Each step is exact for undirected max flow between the terminals:

    - a non-terminal with no neighbour, or only one (a dead end), carries no s-t flow
      (whatever enters must leave the way it came): drop it;
    - a non-terminal with exactly two neighbours u and w (a NIC between its GPU and its
      leaf) passes at most min(c_uv, c_vw) each way, and any such amount: replace it by
      an edge u-w of that capacity (series reduction);
    - parallel edges add up (done as edges are merged into ``adj``).

    With the two GPU halves already merged into the terminals, every NVSwitch and host
    whose GPUs sit in one half is left with no edge, and every NIC is a series element,
    so a SuperPOD shrinks to its switch fabric (about 30x fewer nodes).
    """
    queue = [v for v in adj if v not in terminals]
    while queue:
        v = queue.pop()
        nbrs = adj.get(v)
        if nbrs is None or v in terminals or len(nbrs) > 2:
            continue
        del adj[v]
        for u in nbrs:
            del adj[u][v]
        if len(nbrs) == 2:
            (u, cu), (w, cw) = nbrs.items()
            cap = min(cu, cw)
            adj[u][w] = adj[u].get(w, 0.0) + cap
            adj[w][u] = adj[w].get(u, 0.0) + cap
        queue.extend(u for u in nbrs if u not in terminals)

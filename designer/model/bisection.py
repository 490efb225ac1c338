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

from collections.abc import Callable, Iterable
from typing import Any

import networkx as nx
import numpy as np

from designer.model.cut_flow import SINK, SOURCE, max_flow
from designer.model.design_arrays import DesignArrays, components
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


class _Fabric:
    """The working links of one plane and the structure the cuts follow, as arrays."""

    def __init__(self, design: DesignArrays, plane: str):
        self.design = design
        self.ids = design.ids
        kind = self.kind = design.kind
        n = self.n = len(design)
        live = self.live = design.live(plane)
        self.a, self.b = design.a[live], design.b[live]
        self.cap, self.count = design.gbps[live], design.count[live]
        family = design.family[live]
        a, b = self.a, self.b
        # The GPUs on this network: working, with a working link of the plane.
        linked = np.zeros(n, dtype=bool)
        linked[a] = linked[b] = True
        rows = np.flatnonzero((kind == "gpu") & linked & ~design.node_mgmt)
        if not design.gpus_in_order:
            keys = [natural_key(self.ids[i]) for i in rows.tolist()]
            rows = rows[sorted(range(len(rows)), key=keys.__getitem__)]
        self.gpu_rows = rows
        self.gpus = [self.ids[i] for i in rows.tolist()]
        # Server links: PCIe, and NVLink to an NVSwitch chip.
        is_nvs = kind == "nvswitch"
        self.server_link = (family == "pcie") | ((family == "nvlink") & (is_nvs[a] | is_nvs[b]))
        self.server_of = self._servers()
        self.is_tier = design.is_kind(*TIERS)
        self.switch_rank = self._switch_ranks()

    def _servers(self) -> np.ndarray:
        """Server number of every GPU and of the nodes its server joins (numbered in the
        natural order of each server's first GPU), -1 for other nodes."""
        sl = self.server_link
        su, sv = self.a[sl], self.b[sl]
        labels = components(self.n, su, sv)
        in_graph = np.zeros(self.n, dtype=bool)
        in_graph[self.gpu_rows] = in_graph[su] = in_graph[sv] = True
        gpu_labels = labels[self.gpu_rows]
        _, first = np.unique(gpu_labels, return_index=True)
        number = np.full(self.n, -1, dtype=np.int64)
        ordered = gpu_labels[np.sort(first)]
        number[ordered] = np.arange(len(ordered))
        return np.where(in_graph, number[labels], -1)

    def _switch_ranks(self) -> np.ndarray:
        """Each switch's place in the natural order of the switches' ids (others: a
        number past every switch)."""
        rows = np.flatnonzero(self.is_tier)
        order = sorted(rows.tolist(), key=lambda i: natural_key(self.ids[i]))
        rank = np.full(self.n, len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        self.switch_order = np.array(order, dtype=np.int64)
        return rank

    def edge_switches(self) -> np.ndarray:
        """Each GPU's edge switch, as its place in the switches' natural order: the
        first of the switches its own NICs (on a link of the GPU) are cabled to; GPUs
        without one get ``len(switch_order)``."""
        kind, rank, far = self.kind, self.switch_rank, len(self.switch_order)
        nic_best = np.full(self.n, far, dtype=np.int64)
        is_nic = kind == "nic"
        is_gpu = np.zeros(self.n, dtype=bool)
        is_gpu[self.gpu_rows] = True
        best = np.full(self.n, far, dtype=np.int64)
        for x, y in ((self.a, self.b), (self.b, self.a)):
            up = is_nic[x] & self.is_tier[y]
            np.minimum.at(nic_best, x[up], rank[y[up]])
        for x, y in ((self.a, self.b), (self.b, self.a)):
            down = is_gpu[x] & is_nic[y]
            np.minimum.at(best, x[down], nic_best[y[down]])
        return best[self.gpu_rows]

    def pods(self) -> np.ndarray:
        """Pod number of each switch, in the switches' natural order: its part of the
        switch fabric once the top tier present is taken away (a switch of the top tier
        is its own pod)."""
        rows = self.switch_order
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        tier = np.zeros(self.n, dtype=np.int64)
        for name, t in TIERS.items():
            tier[self.kind == name] = t
        top = int(tier[rows].max())
        low = self.is_tier & (tier < top)
        inside = low[self.a] & low[self.b]
        labels = components(self.n, self.a[inside], self.b[inside])
        # Parts are numbered in the natural order of their first switches (rows are in
        # that order).
        first_of: dict[int, int] = {}
        pods = [first_of.setdefault(label, len(first_of)) for label in labels[rows].tolist()]
        return np.array(pods, dtype=np.int64)


def worst_bisection(
    design: DesignArrays,
    flow_func: Callable | None = None,
    reduce: bool = True,
    plane: str = "compute",
    cut_done: Callable[[int], Any] | None = None,
) -> dict[str, Any]:
    """The worst balanced cut of the working GPUs among `CUTS` and its bandwidth.

    The GPUs are the working ones with a working link of ``plane`` (a GPU that is not
    on the network is no endpoint of it).  ``cut_done(k)``, if given, is called as the
    k-th candidate is done (for a progress display).

    Returns
    -------
    dict
        ``GBps`` and ``per_gpu_GBps`` (None with fewer than two GPUs) of the worst cut,
        ``cut`` (its key in `CUTS`), ``method`` (its description), ``a`` and ``b``
        (each ``count``, ``first``, ``last`` GPU id in natural order) and ``candidates``
        (every distinct cut tried: ``cut``, ``GBps``, ``per_gpu_GBps``).
    """
    fabric = _Fabric(design, plane)
    gpus = fabric.gpus
    best: dict[str, Any] | None = None
    candidates = []
    seen: set[bytes] = set()
    for k, (key, in_a) in enumerate(_cuts(fabric), start=1):
        if cut_done is not None:
            cut_done(k)
        n_a = int(in_a.sum())
        if not n_a or n_a == len(gpus) or in_a.tobytes() in seen:
            continue
        seen.add(in_a.tobytes())
        value = _cut_flow(fabric, in_a, flow_func, reduce)
        per_gpu = round(value / min(n_a, len(gpus) - n_a), 6)
        candidates.append({"cut": key, "GBps": value, "per_gpu_GBps": per_gpu})
        if best is None or per_gpu < best["per_gpu_GBps"] - 1e-9:
            best = {
                "GBps": value,
                "per_gpu_GBps": per_gpu,
                "cut": key,
                "method": CUTS[key],
                "a": _half_summary(gpus, np.flatnonzero(in_a)),
                "b": _half_summary(gpus, np.flatnonzero(~in_a)),
            }
    if best is None:
        half = np.arange(len(gpus))
        best = {
            "GBps": None,
            "per_gpu_GBps": None,
            "cut": None,
            "method": "fewer than two working GPUs",
            "a": _half_summary(gpus, half[: len(gpus) // 2]),
            "b": _half_summary(gpus, half[len(gpus) // 2 :]),
        }
    best["candidates"] = candidates
    return best


def _half_summary(gpus: list[str], at: np.ndarray) -> dict[str, Any]:
    """Count, first and last GPU (``gpus`` in natural order, ``at`` ascending)."""
    if not len(at):
        return {"count": 0, "first": None, "last": None}
    return {"count": len(at), "first": gpus[at[0]], "last": gpus[at[-1]]}


# --------------------------------------------------------------------------- cuts


def _cuts(fabric: _Fabric) -> Iterable[tuple[str, np.ndarray]]:
    """``(key, mask of half A over the GPUs)`` of each candidate of `CUTS`."""
    n = len(fabric.gpus)
    server = fabric.server_of[fabric.gpu_rows]  # per GPU, servers numbered in order
    n_servers = int(server.max()) + 1 if n else 0
    order = np.arange(n_servers)
    size = np.bincount(server, minlength=n_servers)
    leaf = fabric.edge_switches()  # per GPU; far = no edge switch (sorts last)
    far = len(fabric.switch_order)
    server_leaf = np.full(n_servers, far, dtype=np.int64)
    np.minimum.at(server_leaf, server, leaf)
    pods = np.append(fabric.pods(), n_servers + far + 1)  # (no edge switch: past all)
    gpu_pod = pods[leaf]
    server_pod = np.full(n_servers, pods[-1], dtype=np.int64)
    np.minimum.at(server_pod, server, gpu_pod)

    def whole(by: np.ndarray) -> np.ndarray:
        return _whole(by, size, server, n)

    yield "servers", whole(order)
    yield "servers-by-leaf", whole(np.lexsort((order, server_leaf)))
    yield "servers-by-group", whole(np.lexsort((order, server_leaf, server_pod)))
    position = np.arange(n)
    by_edge = np.lexsort((position, leaf, gpu_pod))
    in_a = np.zeros(n, dtype=bool)
    in_a[by_edge[: n // 2]] = True
    yield "gpus-by-leaf", in_a
    # Each GPU's place within its server (GPUs and servers are in natural order).
    start = np.concatenate([[0], np.cumsum(size)[:-1]]) if n_servers else size
    by_server = np.argsort(server, kind="stable")
    within = np.empty(n, dtype=np.int64)
    within[by_server] = np.arange(n) - start[server[by_server]]
    yield "servers-halved", within < size[server] // 2
    kl = _kl_order(fabric, order.tolist())
    if kl is not None:
        yield "servers-kl", whole(np.array(kl, dtype=np.int64))


def _kl_order(fabric: _Fabric, order: list[int]) -> list[int] | None:
    """Servers in the order of a Kernighan-Lin bisection of the fabric graph: each server
    contracted to one node, links weighted by their count, switches and other nodes as
    they are; the servers of one side first (then halved whole by `_whole`).  It finds
    cuts no naming or tier reveals (spines split into two groups joined by a thin link).
    None when the graph is too large (`KL_MAX_NODES`) or has no links between servers.
    """
    server_of = fabric.server_of
    a, b = fabric.a, fabric.b
    others = np.union1d(a[server_of[a] < 0], b[server_of[b] < 0])
    if len(order) + len(others) > KL_MAX_NODES or len(order) < 2:
        return None
    ids, live, row_of = fabric.ids, fabric.live, fabric.design.link_row
    count = fabric.design.count
    g = nx.Graph()
    g.add_nodes_from(("server", s) for s in order)
    # In the graph's order of links, as Kernighan-Lin's result depends on it.
    node_row = {n: i for i, n in enumerate(ids)}
    for x_id, y_id, key in fabric.design.topology.graph.edges(keys=True):
        k = row_of[key]
        if not live[k]:
            continue
        x, y = node_row[x_id], node_row[y_id]
        u = ("server", int(server_of[x])) if server_of[x] >= 0 else x_id
        w = ("server", int(server_of[y])) if server_of[y] >= 0 else y_id
        if u != w:
            weight = g.get_edge_data(u, w, {"weight": 0})["weight"] + int(count[k])
            g.add_edge(u, w, weight=weight)
    # A fixed seed and the servers' fixed order: the same design gives the same cut.
    side_a, _ = nx.algorithms.community.kernighan_lin_bisection(g, weight="weight", seed=0)
    first = [s for s in order if ("server", s) in side_a]
    return first + [s for s in order if ("server", s) not in side_a]


def _whole(by: np.ndarray, size: np.ndarray, server: np.ndarray, n: int) -> np.ndarray:
    """Mask over the GPUs (``server``: each one's server) of half A made of whole
    servers taken in the order ``by``: the prefix whose GPU count is nearest ``n / 2``
    (the first such prefix)."""
    gap = np.abs(2 * np.cumsum(size[by]) - n)
    take = 0
    if len(gap) and gap.min() < n:
        take = int(np.argmin(gap)) + 1
    chosen = np.zeros(len(size), dtype=bool)
    chosen[by[:take]] = True
    return chosen[server]


# --------------------------------------------------------------------------- max flow


def _cut_flow(fabric: _Fabric, in_a: np.ndarray, flow_func: Callable | None, reduce: bool) -> float:
    """Max flow from the GPUs of half A (``in_a``, a mask over the fabric's GPUs) to the
    others (`designer.model.cut_flow.max_flow`, each half merged into one terminal)."""
    n, rows = fabric.n, fabric.gpu_rows
    server_of, kind = fabric.server_of, fabric.kind
    # Servers with GPUs on both sides.
    servers = server_of[rows]
    n_servers = int(servers.max()) + 1 if len(servers) else 0
    on_a = np.bincount(servers, weights=in_a, minlength=n_servers)
    on_b = np.bincount(servers, weights=~in_a, minlength=n_servers)
    split = np.zeros(n_servers + 1, dtype=bool)  # (index -1: no server)
    split[:n_servers] = (on_a > 0) & (on_b > 0)
    a, b = fabric.a, fabric.b
    sa, sb = server_of[a], server_of[b]
    # A GPU's own PCIe link to a NIC: its way to the fabric, kept in a split server.
    own_nic = ((kind[a] == "gpu") & (kind[b] == "nic")) | ((kind[a] == "nic") & (kind[b] == "gpu"))
    inside_split = split[sa] & (sa == sb) & fabric.server_link & ~own_nic
    label = np.arange(n, dtype=np.int64) + 2
    label[rows] = np.where(in_a, SOURCE, SINK)
    keep = ~inside_split
    value = max_flow(n + 2, label[a[keep]], label[b[keep]], fabric.cap[keep], flow_func, reduce)
    return round(value, 6)

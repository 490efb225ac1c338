"""Groups inside one NVLink domain, solved once per kind of domain.

A tensor-parallel job has a group in every server; solving each alone routes each
(tens of milliseconds for the auto choice).  Two NVLink domains built alike (the same
NVLink links between the same local GPU positions and switches, with the same
capacities) route a group of the same local positions alike, so a group's collective
alone is solved in the first such domain and *translated* to the others: its flows move
to the matching arcs, its times stay.  A collective whose flows leave the domain's NVLink
arcs (a PCIe server, say) is not translated: each such group is solved on its own.

The match is exact: a domain's NVLink arcs are listed in a canonical order (GPUs by their
local position, the domain's switches by structural position), and two domains match
when those lists carry the same ends and capacities (and the same in-switch reduction).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import take_snapshot
>>> snap = take_snapshot(build_template("rail-cluster", nodes=2))
>>> maps = DomainMaps(snap)
>>> int(maps.kind[0]) == int(maps.kind[1])
True
>>> arcs = maps.arcs[0][:3]
>>> [snap.arc_name(int(a)).split(" ")[0] for a in maps.translate(arcs, 0, 1)][0]
'n02-gpu0:n02-nvs0'
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from designer.solver import NVLINK

__all__ = ["DomainMaps", "ServerMaps", "moved"]


class DomainMaps:
    """Each NVLink domain's arcs in canonical order, and which domains are alike.

    Attributes
    ----------
    kind : ndarray of int
        Per domain, a number shared by the domains built alike.
    arcs : list of ndarray
        Per domain, its NVLink arcs in canonical order.
    """

    def __init__(self, snap):
        self.snap = snap
        n_dom = int(snap.n_domains)
        node_domain = np.asarray(snap.node_domain)
        is_gpu = np.zeros(snap.n_nodes, dtype=bool)
        is_gpu[snap.gpus] = True
        # Canonical number of a node in its domain: a GPU's local position, then the
        # other nodes of the domain (its switches) by structural position.
        canon = np.full(snap.n_nodes, -1, dtype=np.int64)
        canon[snap.gpus] = snap.gpu_local
        base = int(snap.gpu_local.max(initial=0)) + 1
        others = np.flatnonzero((node_domain >= 0) & ~is_gpu)
        order = others[np.lexsort((snap.node_pos[others], node_domain[others]))]
        dom_o = node_domain[order]
        first = np.searchsorted(dom_o, dom_o)
        canon[order] = base + np.arange(len(order)) - first
        #: Per node, its number in its domain (GPUs by local position, then switches).
        self.canon = canon
        nv = np.flatnonzero(np.asarray(snap.arc_family) == NVLINK)
        src, dst = snap.arc_src[nv], snap.arc_dst[nv]
        inside = (node_domain[src] >= 0) & (node_domain[src] == node_domain[dst])
        nv, src, dst = nv[inside], src[inside], dst[inside]
        dom = node_domain[src]
        pick = np.lexsort((nv, canon[dst], canon[src], dom))
        nv, dom = nv[pick], dom[pick]
        cuts = np.searchsorted(dom, np.arange(n_dom + 1))
        self.arcs = [nv[cuts[d] : cuts[d + 1]] for d in range(n_dom)]
        self.position = np.full(snap.n_arcs, -1, dtype=np.int64)
        self.domain_of = np.full(snap.n_arcs, -1, dtype=np.int64)
        for d, arcs in enumerate(self.arcs):
            self.position[arcs] = np.arange(len(arcs))
            self.domain_of[arcs] = d
        kinds: dict[bytes, int] = {}
        self.kind = np.empty(n_dom, dtype=np.int64)
        for d, arcs in enumerate(self.arcs):
            key = b"|".join(
                (
                    canon[snap.arc_src[arcs]].tobytes(),
                    canon[snap.arc_dst[arcs]].tobytes(),
                    np.asarray(snap.arc_cap[arcs], float).tobytes(),
                    np.float64(snap.domain_nvls_eff[d]).tobytes(),
                    bytes([bool(snap.domain_nvls[d])]),
                )
            )
            self.kind[d] = kinds.setdefault(key, len(kinds))

    def inside(self, arcs: np.ndarray, domain: int) -> bool:
        """Whether every one of ``arcs`` is an NVLink arc of ``domain``."""
        return bool(np.all(self.domain_of[arcs] == domain))

    def translate(self, arcs: np.ndarray, source: int, target: int) -> np.ndarray:
        """``arcs`` of domain ``source`` as the matching arcs of the alike ``target``."""
        return self.arcs[target][self.position[arcs]]


def moved(lone, maps: DomainMaps, source: int, target: int):
    """``lone`` (a `LoneCollective` inside domain ``source``) in the alike ``target``;
    it depends on what ``lone`` depended on and on every NVLink arc of ``target``."""
    phases = tuple(
        replace(
            p,
            pair_arc=maps.translate(p.pair_arc, source, target),
            arcs=maps.translate(p.arcs, source, target),
        )
        for p in lone.phases
    )
    # Only ever indexed (`memo`): a concatenation, repeats and all, serves.
    touched = None if lone.touched is None else np.concatenate([lone.touched, maps.arcs[target]])
    return replace(lone, phases=phases, touched=touched)


class ServerMaps:
    """Servers that are interchangeable in the whole fabric, each one's arcs in a
    canonical order, for groups that span servers.

    A *server* is an NVLink domain with the nodes only it reaches: its NICs and host
    (outside every domain, not switches, every neighbour a node of that domain or a
    switch).  Two servers are *twins* when, node for node in a canonical order, they
    have the same attributes (device model, order of structural position inside the
    server, NIC assignment, in-switch reduction)
    and the same arcs: the same ends outside the server (the very same leaf switches),
    capacities, families, latencies, jitter and link state.  Swapping twins then maps the
    fabric onto itself, arc for arc; a rail-optimised SU's servers are twins.

    A group of GPUs in some servers, solved alone, holds for the group at the same local
    positions in twins of those servers (`ServerMaps.moved`) when the routing depends on
    the structure only (adaptive: not ECMP's hash or static routes, which read indices)
    and the two groups list their servers in the same relative order (ring layouts
    follow the servers' order).  A server with an arc to another server, or with two
    of its own nodes alike, has no twin.

    Attributes
    ----------
    server : ndarray of int
        Per node, its server (its NVLink domain), -1 for the fabric's own nodes.
    twin_class : ndarray of int
        Per server, a number shared by twins; -1: no twin.
    """

    def __init__(self, snap, maps: DomainMaps):
        n_dom, n_nodes = int(snap.n_domains), int(snap.n_nodes)
        node_domain = np.asarray(snap.node_domain, dtype=np.int64)
        switch = np.asarray(snap.node_switch, dtype=bool)
        src = np.asarray(snap.arc_src, dtype=np.int64)
        dst = np.asarray(snap.arc_dst, dtype=np.int64)
        # A node outside the domains is private to a domain when its only non-switch
        # neighbours are that domain's nodes.
        outside = (node_domain[src] < 0) & ~switch[src] & ~switch[dst]
        val = np.where(node_domain[dst] >= 0, node_domain[dst], -2)[outside]
        lo = np.full(n_nodes, np.iinfo(np.int64).max)
        hi = np.full(n_nodes, -3, dtype=np.int64)
        np.minimum.at(lo, src[outside], val)
        np.maximum.at(hi, src[outside], val)
        private = (node_domain < 0) & ~switch & (lo == hi) & (lo >= 0)
        server = node_domain.copy()
        server[private] = lo[private]
        self.server = server
        eligible = np.ones(n_dom, dtype=bool)
        # Canonical numbers: the domain's own (`DomainMaps.canon`), then the private
        # nodes by the domain nodes they touch and their structural position.
        canon = maps.canon.copy()
        base = np.zeros(n_dom, dtype=np.int64)
        np.maximum.at(base, node_domain[node_domain >= 0], canon[node_domain >= 0] + 1)
        to_dom = outside & private[src] & (node_domain[dst] >= 0)
        touch_lo = np.full(n_nodes, np.iinfo(np.int64).max)
        touch_hi = np.full(n_nodes, -1, dtype=np.int64)
        touch_n = np.zeros(n_nodes, dtype=np.int64)
        np.minimum.at(touch_lo, src[to_dom], canon[dst[to_dom]])
        np.maximum.at(touch_hi, src[to_dom], canon[dst[to_dom]])
        np.add.at(touch_n, src[to_dom], 1)
        pv = np.flatnonzero(private)
        keys = (snap.node_pos[pv], touch_n[pv], touch_hi[pv], touch_lo[pv], server[pv])
        pv = pv[np.lexsort(keys)]
        sv = server[pv]
        first = np.searchsorted(sv, sv)
        canon[pv] = base[sv] + np.arange(len(pv)) - first
        same = np.ones(len(pv), dtype=bool)
        for col in (sv, touch_lo[pv], touch_hi[pv], touch_n[pv], snap.node_pos[pv]):
            same[1:] &= col[1:] == col[:-1]
        same[0] = False
        eligible[sv[same]] = False  # two private nodes alike: no canonical order
        # Every arc touching a server, described by its ends (canonical inside, the node
        # itself outside) and everything the solver reads of it.
        s_src, s_dst = server[src], server[dst]
        eligible[s_src[(s_src >= 0) & (s_dst >= 0) & (s_src != s_dst)]] = False
        touching = np.flatnonzero((s_src >= 0) | (s_dst >= 0))
        own = np.where(s_src[touching] >= 0, s_src[touching], s_dst[touching])
        end_a = np.where(s_src[touching] == own, canon[src[touching]], -1 - src[touching])
        end_b = np.where(s_dst[touching] == own, canon[dst[touching]], -1 - dst[touching])
        link = touching // 2
        cols = [
            end_a,
            end_b,
            np.asarray(snap.arc_cap, dtype=float)[touching],
            np.asarray(snap.arc_family, dtype=np.int64)[touching],
            np.asarray(snap.arc_delays.latency, dtype=float)[touching],
            np.asarray(snap.arc_delays.jitter, dtype=float)[touching],
            np.asarray(snap.link_line, dtype=float)[link],
            np.asarray(snap.link_live, dtype=np.int64)[link],
            np.asarray(snap.link_compute, dtype=np.int64)[link],
        ]
        order = np.lexsort((touching, *reversed(cols), own))
        touching, own = touching[order], own[order]
        rows = np.stack([np.asarray(c, dtype=float)[order] for c in cols], axis=1)
        cuts = np.searchsorted(own, np.arange(n_dom + 1))
        self.arcs = [touching[cuts[d]:cuts[d + 1]] for d in range(n_dom)]
        self._flat, self._cuts = touching, cuts
        self.position = np.full(snap.n_arcs, -1, dtype=np.int64)
        self.server_of_arc = np.full(snap.n_arcs, -1, dtype=np.int64)
        self.position[touching] = np.arange(len(touching)) - cuts[own]
        self.server_of_arc[touching] = own
        # The nodes' own facts, in canonical order.
        nodes = np.flatnonzero(server >= 0)
        nodes = nodes[np.lexsort((canon[nodes], server[nodes]))]
        gpu_of = np.full(n_nodes, -1, dtype=np.int64)
        gpu_of[snap.gpus] = np.arange(len(snap.gpus))

        def canon_of(node_ids: np.ndarray, owner: np.ndarray) -> np.ndarray:
            ok = node_ids >= 0
            inside = ok & (server[np.where(ok, node_ids, 0)] == owner)
            return np.where(inside, canon[np.where(ok, node_ids, 0)], -2 - node_ids)

        g = gpu_of[nodes]
        is_gpu = g >= 0
        nic = np.where(is_gpu, np.asarray(snap.gpu_nic, dtype=np.int64)[np.maximum(g, 0)], -1)
        via = np.where(is_gpu, np.asarray(snap.gpu_nic_via, dtype=np.int64)[np.maximum(g, 0)],
                       -1)
        # Structural positions are global (server by server): their order inside the
        # server is what routing's tie-breaks read among a server's nodes.
        by_pos = nodes[np.lexsort((snap.node_pos[nodes], server[nodes]))]
        pos_rank = np.empty(n_nodes, dtype=np.int64)
        pos_rank[by_pos] = np.arange(len(by_pos)) - np.searchsorted(server[by_pos],
                                                                   server[by_pos])
        # The device model (the time model reads a GPU's generation, not only its links).
        model = np.unique(np.asarray(snap.node_model)[nodes].astype(str), return_inverse=True)[1]
        node_rows = np.stack(
            [
                canon[nodes],
                model.reshape(-1),
                pos_rank[nodes],
                switch[nodes],
                np.asarray(snap.node_sharp, dtype=bool)[nodes],
                np.asarray(snap.arc_delays.node_latency, dtype=float)[nodes],
                canon_of(nic, server[nodes]),
                canon_of(via, server[nodes]),
            ],
            axis=1,
        ).astype(float)
        node_cuts = np.searchsorted(server[nodes], np.arange(n_dom + 1))
        classes: dict[bytes, int] = {}
        self.twin_class = np.full(n_dom, -1, dtype=np.int64)
        for d in range(n_dom):
            if not eligible[d]:
                continue
            key = b"|".join(
                (
                    rows[cuts[d]:cuts[d + 1]].tobytes(),
                    node_rows[node_cuts[d]:node_cuts[d + 1]].tobytes(),
                    np.int64(maps.kind[d]).tobytes(),
                )
            )
            self.twin_class[d] = classes.setdefault(key, len(classes))

    def moved(self, lone, source: list[int], target: list[int]):
        """``lone``, solved for a group in servers ``source`` (per rank), for the group
        at the same local positions in ``target`` (each a twin of its ``source``), or
        None when one of its arcs touches a server outside ``source``."""
        where = np.full(len(self.twin_class), -1, dtype=np.int64)
        where[source] = target

        def translate(arcs: np.ndarray) -> np.ndarray | None:
            s = self.server_of_arc[arcs]
            inside = s >= 0
            if not inside.any():
                return arcs
            to = where[s[inside]]
            if (to < 0).any():
                return None
            out = np.array(arcs, copy=True)
            out[inside] = self._flat[self._cuts[to] + self.position[arcs[inside]]]
            return out

        phases = []
        for p in lone.phases:
            pair_arc, arcs = translate(p.pair_arc), translate(p.arcs)
            if pair_arc is None or arcs is None:
                return None
            phases.append(replace(p, pair_arc=pair_arc, arcs=arcs))
        touched = None
        if lone.touched is not None:
            touched = translate(np.asarray(lone.touched))
            if touched is None:
                return None
        return replace(lone, phases=tuple(phases), touched=touched)

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

__all__ = ["DomainMaps", "moved"]


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

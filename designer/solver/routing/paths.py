"""Single-path fabric routes, ECMP and static (`Router.fabric_paths`, and the batched
`Router.fabric_walks` and `Router.class_walks`): one path per flow between two edge
switches, picked hop by hop among the equal-cost next hops by a seeded hash of the
flow's key (ECMP) or by the digits of its destination (static, ``d mod k``).  The
batched walks run over the fabric groups' next-hop tables (`fabric._FabricGroups.walks`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from designer.solver.arrays.ragged import RouteBatch, _ptr, distinct, mix64
from designer.solver.errors import SolverError

if TYPE_CHECKING:
    from designer.solver.routing.fabric import _FabricGroups
    from designer.solver.routing.subgraph import _Subgraph
    from designer.solver.snapshot.build import Snapshot


class FabricRoutes(Protocol):
    """What the single-path walks read of a router (`router.Router` is one): the
    fabric's subgraph, its switches, the hash seed, hop counts and next-hop tables."""

    snap: Snapshot
    net: _Subgraph
    is_switch: np.ndarray
    seed: int

    def fabric_hops(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> np.ndarray: ...

    def fabric_groups(self) -> _FabricGroups: ...

__all__ = ["class_walks", "fabric_paths", "fabric_walks"]


def fabric_paths(router: FabricRoutes, leaf_a: int, leaf_b: int, keys: np.ndarray,
                 dest_ids: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """One path per flow (``ecmp`` hashes ``keys``; ``static`` uses ``dest_ids``).

    Returns ``(flow_index, arc)`` pairs, every weight being 1.
    """
    m = len(keys)
    if leaf_a == leaf_b or m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    dist = router.net.dist_to(leaf_b, through=router.is_switch)
    if dist[leaf_a] < 0:
        raise SolverError(f"no fabric path from {router.snap.node_ids[leaf_a]} to "
                          f"{router.snap.node_ids[leaf_b]}")
    cur = np.full(m, leaf_a)
    flows, arcs = [], []
    idx = np.arange(m)
    # Static (d-mod-k): each tier uses the next digit of the destination in the
    # radix of its fan-out, so destinations spread over every core, not k of them.
    q = np.asarray(dest_ids, dtype=np.int64).copy()
    for hop in range(int(dist[leaf_a])):
        step = np.empty(m, dtype=np.int64)
        for node in distinct(cur).tolist():
            sel = cur == node
            out = router.net.next_arcs(node, dist, router.is_switch)
            if mode == "ecmp":
                pick = mix64(keys[sel], router.seed * 1_000_003 + hop) % np.uint64(out.size)
            else:  # static: destination-based, the same for every source
                pick = q[sel] % out.size
                q[sel] //= out.size
            step[sel] = out[pick.astype(np.int64)]
        flows.append(idx)
        arcs.append(step)
        cur = router.snap.arc_dst[step]
    return np.concatenate(flows), np.concatenate(arcs)


def fabric_walks(router: FabricRoutes, leaf_a: np.ndarray, leaf_b: np.ndarray, keys: np.ndarray,
                 dest_ids: np.ndarray, mode: str, *,
                 hops: np.ndarray | None = None) -> RouteBatch:
    """`fabric_paths` of single flows ``(leaf_a[i], leaf_b[i], keys[i], dest_ids[i])``,
    as one table of paths (weights 1; ``hops``: switch-to-switch hops, which the
    caller may pass when it has them)."""
    leaf_a, leaf_b = np.asarray(leaf_a, np.int64), np.asarray(leaf_b, np.int64)
    _, first, cls = np.unique(leaf_a * router.snap.n_nodes + leaf_b,
                              return_index=True, return_inverse=True)
    return class_walks(router, leaf_a[first], leaf_b[first], cls.reshape(-1), keys,
                       dest_ids, mode, hops=None if hops is None else hops[first])


def class_walks(router: FabricRoutes, leaf_a: np.ndarray, leaf_b: np.ndarray, cls: np.ndarray,
                keys: np.ndarray, dest_ids: np.ndarray, mode: str, *,
                hops: np.ndarray | None = None) -> RouteBatch:
    """`fabric_walks` of flows given by class: flow ``i`` goes from ``leaf_a[c]`` to
    ``leaf_b[c]`` for ``c = cls[i]`` (``hops[c]``: the class's switch-to-switch hops,
    which the caller may pass when it has them)."""
    leaf_a, leaf_b = np.asarray(leaf_a, np.int64), np.asarray(leaf_b, np.int64)
    cls, keys, dest_ids = np.asarray(cls), np.asarray(keys), np.asarray(dest_ids)
    if hops is None:
        hops = router.fabric_hops(leaf_a, leaf_b)
    hops = np.asarray(hops, np.int64)
    if np.any(hops < 0):
        i = int(np.flatnonzero(hops[cls] < 0)[0])
        c = int(cls[i])
        fabric_paths(router, int(leaf_a[c]), int(leaf_b[c]), keys[i:i + 1],
                     dest_ids[i:i + 1], mode)  # raises naming the pair
    flow_hops = hops[cls]
    ptr = _ptr(flow_hops)
    # Millions of arcs: int32 ids while they fit.
    arcs = np.empty(int(ptr[-1]), dtype=np.int32 if router.snap.n_arcs < 2**31 else np.int64)
    groups = router.fabric_groups()
    fast = groups.covers(leaf_a, leaf_b)
    if fast.all():
        groups.walks(leaf_a, leaf_b, hops, cls, keys, dest_ids, ptr[:-1], arcs, mode,
                     router.seed)
    else:
        keep = np.flatnonzero(fast)
        renum = np.full(len(fast), -1, dtype=np.int64)
        renum[keep] = np.arange(len(keep))
        sel = np.flatnonzero(fast[cls])
        groups.walks(leaf_a[keep], leaf_b[keep], hops[keep], renum[cls[sel]], keys[sel],
                     dest_ids[sel], ptr[sel], arcs, mode, router.seed)
        # Elsewhere walk class by class with `fabric_paths` (all flows of a class at once).
        for c in np.flatnonzero(~fast & (hops > 0)).tolist():
            rows = np.flatnonzero(cls == c)
            _, path = fabric_paths(router, int(leaf_a[c]), int(leaf_b[c]), keys[rows],
                                   dest_ids[rows], mode)
            arcs[ptr[rows] + np.arange(hops[c])[:, None]] = path.reshape(-1, len(rows))
    # Weights all 1: a read-only view, no memory.
    return RouteBatch(ptr, arcs, np.broadcast_to(np.float64(1.0), arcs.shape), flow_hops)

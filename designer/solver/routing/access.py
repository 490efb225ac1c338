"""Each rank's way to the fabric (`Router.rank_links`): its rail NIC, the PCIe (or PXN,
or host) route to it and back, and the NIC's cable to its edge switch (`RankLinks`);
and the access legs built from them (`access_legs`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from designer.solver.arrays.ragged import (
    RouteBatch,
    _concat,
    _scatter,
    _single,
    ragged_arange,
    unique_inverse,
)

if TYPE_CHECKING:
    from designer.solver.snapshot.build import Snapshot


class AccessRoutes(Protocol):
    """What the access legs read of a router (`router.Router` is one): the routes to a
    rank's NIC and the NICs' cables, no more."""

    snap: Snapshot

    def edge_arcs(self) -> np.ndarray: ...

    def pcie_symmetric(self) -> bool: ...

    def pcie_arcs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...

    def nvlink_routes(self, a: np.ndarray, b: np.ndarray) -> RouteBatch: ...


@dataclass(frozen=True, eq=False)
class RankLinks:
    """What each rank (index into ``snap.gpus``) crosses to leave its NVLink domain.

    ``-1`` marks a missing NIC or arc; ``ok`` is True where every piece exists.
    ``access_up`` / ``access_down`` hold each rank's weighted route to and from its NIC
    (one PCIe arc, or PXN / host relays; ``hops`` unused).  ``leaf`` is the far end of
    the NIC's cable (an edge switch, or the NIC of a server cabled back to back), and
    ``leaf_code`` numbers the distinct leaves of all ranks 0..L-1 (``leaves``).
    """

    gpu: np.ndarray
    nic: np.ndarray
    access_up: RouteBatch    # GPU -> NIC
    up: np.ndarray           # NIC -> edge switch
    access_down: RouteBatch  # NIC -> GPU
    leaf: np.ndarray
    ok: np.ndarray
    leaves: np.ndarray
    leaf_code: np.ndarray


def access_legs(rl: RankLinks, n_arcs: int) -> RouteBatch:
    """Route ``x`` is rank ``x``'s way out to the fabric (its way to its NIC, then the
    NIC's cable), route ``n + x`` its way in; empty for a rank without a NIC (``n_arcs``:
    the snapshot's, which sets the arc ids' type)."""
    up_t, down_t = rl.access_up, rl.access_down
    n = len(rl.ok)
    ids = np.int32 if n_arcs < 2**31 else np.int64   # as the route tables'
    one_each = np.arange(n + 1)
    if (n and rl.ok.all() and np.array_equal(up_t.ptr, one_each)
            and np.array_equal(down_t.ptr, one_each)):
        # Every rank on a NIC of its own PCIe link (the usual case): two arcs a route,
        # laid side by side.
        arcs = np.empty((2, n, 2), ids)
        weights = np.empty((2, n, 2))
        arcs[0, :, 0], arcs[0, :, 1] = up_t.arcs, rl.up
        arcs[1, :, 0], arcs[1, :, 1] = rl.up ^ 1, down_t.arcs
        weights[0, :, 0], weights[1, :, 1] = up_t.weights, down_t.weights
        weights[0, :, 1] = weights[1, :, 0] = 1.0
        return RouteBatch(np.arange(0, 4 * n + 1, 2, dtype=np.int64), arcs.reshape(-1),
                          weights.reshape(-1), np.zeros(2 * n, np.int64))
    ok = rl.ok.astype(np.int64)
    # Out: the access arcs, then the cable; in: the cable reversed, then the access arcs;
    # gathered from one pool.
    up = np.where(rl.ok, rl.up, 0).astype(np.int64)
    pool = np.concatenate([up_t.arcs, up, up ^ 1, down_t.arcs]).astype(ids)
    pool_w = np.concatenate([up_t.weights, np.ones(n), np.ones(n), down_t.weights])
    base = np.cumsum([0, len(up_t.arcs), n, n])
    rank = np.arange(n)
    heads = np.concatenate([np.stack([up_t.ptr[:-1], base[1] + rank], axis=1),
                            np.stack([base[2] + rank, base[3] + down_t.ptr[:-1]], axis=1)])
    one = np.ones(n, np.int64)
    sizes = np.concatenate([np.stack([up_t.lengths, one], axis=1),
                            np.stack([one, down_t.lengths], axis=1)])
    sizes = sizes * np.concatenate([ok, ok])[:, None]
    pick = ragged_arange(heads.reshape(-1), sizes.reshape(-1))
    lengths = sizes[:, 0] + sizes[:, 1]   # (a sum over an axis of two: 10x slower)
    ptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return RouteBatch(ptr, pool[pick], pool_w[pick], np.zeros(len(lengths), np.int64))


def make_rank_links(router: AccessRoutes) -> RankLinks:
    """`Router.rank_links`, computed."""
    s = router.snap
    gpu = s.gpus.astype(np.int64)
    nic = s.gpu_nic.astype(np.int64)
    via = s.gpu_nic_via.astype(np.int64)
    has = nic >= 0
    up = np.full(len(gpu), -1, dtype=np.int64)
    up[has] = router.edge_arcs()[nic[has]]
    direct = has & (via < 0)
    pxn = np.zeros(len(gpu), dtype=bool)
    relayed = np.flatnonzero(has & (via >= 0))
    pxn[relayed] = [s.node_kind[v] == "gpu" for v in via[relayed].tolist()]
    host = has & (via >= 0) & ~pxn
    # Pieces of the way up: [GPU -> relay] then [relay (or GPU) -> NIC].
    near = np.where(direct, gpu, via)              # the end of the NIC's PCIe link
    last_up = _pcie_arcs(router, near, nic, has, direct)
    host_up = _pcie_arcs(router, gpu, via, host)
    if router.pcie_symmetric():
        # The first arc b -> a (lowest id) is the reverse of the first a -> b: both are
        # of the lowest-numbered link between them (arcs 2k and 2k + 1 of link k).
        first_down = np.where(last_up >= 0, last_up ^ 1, -1)
        host_down = np.where(host_up >= 0, host_up ^ 1, -1)
    else:
        first_down = _pcie_arcs(router, nic, near, has)
        host_down = _pcie_arcs(router, via, gpu, host)
    sel = np.flatnonzero(pxn)
    nv_up = nv_down = _single(np.full(len(gpu), -1))      # no PXN: empty routes
    if sel.size:
        nv_up = _scatter(router.nvlink_routes(gpu[sel], via[sel]), sel, len(gpu))
        nv_down = _scatter(router.nvlink_routes(via[sel], gpu[sel]), sel, len(gpu))
    access_up = _concat(
        [_scatter(_single(host_up[host]), np.flatnonzero(host), len(gpu)), nv_up,
         _single(last_up)])
    access_down = _concat(
        [_single(first_down), nv_down,
         _scatter(_single(host_down[host]), np.flatnonzero(host), len(gpu))])
    leaf = np.where(up >= 0, s.arc_dst[np.maximum(up, 0)] if s.n_arcs else -1, -1)
    ok = (has & (up >= 0) & (last_up >= 0) & (first_down >= 0)
          & ~(host & ((host_up < 0) | (host_down < 0))))
    # (Shifted by one: a rank without a NIC has leaf -1.)
    leaves, code = unique_inverse(leaf + 1, s.n_nodes + 1)
    leaves -= 1
    return RankLinks(gpu, nic, access_up, up, access_down, leaf.astype(np.int64),
                     ok, leaves, code.reshape(-1).astype(np.int32))


def _pcie_arcs(router: AccessRoutes, a: np.ndarray, b: np.ndarray, where: np.ndarray,
               own: np.ndarray | None = None) -> np.ndarray:
    """`Router.pcie_arcs` of ``(a[i], b[i])`` where ``where[i]``, else -1; ranks marked
    in ``own`` go from their GPU to their own NIC, whose arc the snapshot gives when it
    has them (``Snapshot.gpu_nic_arc``): the PCIe subgraph is then made only for the
    others, if any."""
    out = np.full(len(a), -1, dtype=np.int64)
    given = router.snap.gpu_nic_arc
    ask = where
    if own is not None and given is not None:
        out[own] = given[own]
        ask = where & ~own
    sel = np.flatnonzero(ask)
    if sel.size:
        out[sel] = router.pcie_arcs(a[sel], b[sel])
    return out

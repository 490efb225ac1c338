"""Each rank's way to the fabric (`Router.rank_links`): its rail NIC, the PCIe (or PXN,
or host) route to it and back, and the NIC's cable to its edge switch.  Split from
`routing`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from designer.solver.route_arrays import (
    RankLinks,
    _concat,
    _scatter,
    _single,
    unique_inverse,
)

if TYPE_CHECKING:
    from designer.solver.routing import Router


def make_rank_links(router: Router) -> RankLinks:
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


def _pcie_arcs(router: Router, a: np.ndarray, b: np.ndarray, where: np.ndarray,
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

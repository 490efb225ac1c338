"""Direct collectives on a switchless full mesh (AMD xGMI nodes: RCCL's ``direct``).

Inside an MI300X-class node every GPU has its own scale-up link to each of the other
``n - 1`` GPUs and no switch.  A ring crosses one of those links per GPU; the direct
algorithm has every rank exchange its ``1/n`` shard with every peer at once, so all
``n - 1`` links of each GPU carry data (docs/model.md, "Collectives on full meshes"):
all-reduce is a reduce-scatter then an all-gather of one-hop flows,
``t = 2 (S/n) / B + 2 alpha`` and ``busbw = (n - 1) B``.
"""

from __future__ import annotations

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.flows.phases import FlowBuilder, Plan
from designer.solver.flows.ring_layout import grouped
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import NVLINK

#: Bytes each pair flow carries per byte of message (times ``1/n``) and the steps.
_DIRECT = {"allreduce": (2.0, 2), "reducescatter": (1.0, 1), "allgather": (1.0, 1)}


def full_mesh(router: Router, ranks: np.ndarray) -> bool:
    """True when every ordered pair of ``ranks`` has a live scale-up link of its own.

    Only such a mesh lets the direct exchange go one hop per pair; through a switch the
    same flows would share the GPU's switch ports and gain nothing over a ring.
    """
    snap = router.snap
    nodes = snap.gpus[np.asarray(ranks)]
    if len(np.unique(snap.gpu_domain[np.asarray(ranks)])) != 1:
        return False
    live = (snap.arc_family == NVLINK) & (snap.arc_cap > 0)
    pos = np.full(len(snap.node_switch), -1, np.int64)
    pos[nodes] = np.arange(len(nodes))
    a, b = pos[snap.arc_src[live]], pos[snap.arc_dst[live]]
    ok = (a >= 0) & (b >= 0) & (a != b)
    n = len(nodes)
    return len(np.unique(a[ok] * n + b[ok])) == n * (n - 1)


def plan_direct(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """Every rank sends ``1/n`` of its buffer to every peer over its own mesh link.

    Raises `SolverError` where it does not apply (ranks not on one switchless full mesh,
    or a rooted collective), so ``auto`` skips it there.
    """
    if collective not in _DIRECT:
        raise SolverError(f"direct does not run {collective}")
    if not full_mesh(router, ranks):
        raise SolverError("direct needs the ranks on one full mesh of scale-up links")
    srt = grouped(router.snap, ranks)[0]
    n = len(srt)
    i = np.repeat(np.arange(n), n - 1)
    j = np.tile(np.arange(n - 1), n)
    j += j >= i
    factor, steps = _DIRECT[collective]
    fb = FlowBuilder(router)
    txt = [str(x) for x in srt.tolist()]
    flows = fb.new_flows(
        np.full(len(i), factor / n),
        [f"{txt[x]}->{txt[y]}" for x, y in zip(i.tolist(), j.tolist(), strict=True)],
    )
    fb.transfers(flows, srt[i], srt[j], i.astype(np.int64) * n + j)
    phase = fb.phase(f"direct {collective}", steps)
    return Plan(collective, "direct", ranks, 1, (phase,), True)

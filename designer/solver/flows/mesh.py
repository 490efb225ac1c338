"""Direct collectives on a switchless full mesh (AMD xGMI nodes: RCCL's ``direct``).

Inside an MI300X-class node every GPU has its own scale-up link to each of the other
``n - 1`` GPUs and no switch.  A ring crosses one of those links per GPU; the direct
algorithm has every rank exchange its ``1/n`` shard with every peer at once, so all
``n - 1`` links of each GPU carry data (docs/model.md, "Collectives on full meshes"):
all-reduce is a reduce-scatter then an all-gather of one-hop flows,
``t = 2 (S/n) / B + 2 alpha`` and ``busbw = (n - 1) B``.

The ring algorithm on such a mesh runs several rings at once, each on link directions
no other ring uses (`directed_rings`): ``n - 1`` directed Hamiltonian cycles that cover
every link both ways once, a share of the bytes each: ``busbw = (n - 1) B``, as direct's.
"""

from __future__ import annotations

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.flows.phases import FlowBuilder, Plan
from designer.solver.flows.ring_layout import grouped
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import NVLINK

#: Bytes each ring carries per byte of message, of ``n`` ranks, all rings together.
_RING = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
}
MESH_RING_COLLECTIVES = tuple(_RING)

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


def hamiltonian_cycles(n: int) -> np.ndarray:
    """Walecki's ``(n - 1) // 2`` edge-disjoint Hamiltonian cycles of the complete graph
    ``K_n``, one row of positions each.

    ``n`` odd: a hub and, for each ``i < (n - 1)/2``, the zigzag path ``i, i+1, i-1, i+2,
    ...`` round the other ``n - 1`` positions; together they use every edge once.  ``n``
    even: those of ``K_{n-1}``, with position ``n - 1`` put into each cycle in place of
    one edge, the edges taken out disjoint (so, with the one edge of ``n - 1`` left, the
    unused edges are a perfect matching).

    >>> hamiltonian_cycles(5).tolist()
    [[4, 0, 1, 3, 2], [4, 1, 2, 0, 3]]
    """
    if n < 3:
        return np.zeros((0, n), dtype=np.int64)
    odd = n if n % 2 else n - 1
    m = odd - 1  # positions round the hub
    zig = np.zeros(m, dtype=np.int64)
    zig[1::2] = np.arange(1, m // 2 + 1)
    zig[2::2] = -np.arange(1, (m - 1) // 2 + 1)
    cycles = [[odd - 1, *((zig + i) % m).tolist()] for i in range(m // 2)]
    if n == odd:
        return np.array(cycles, dtype=np.int64)
    # Take out one edge per cycle, pairwise disjoint (first fit, backtracking).
    picks: list[int] = []

    def pick(c: int, used: frozenset[int]) -> bool:
        if c == len(cycles):
            return True
        cyc = cycles[c]
        for k in range(len(cyc)):
            a, b = cyc[k], cyc[(k + 1) % len(cyc)]
            if a not in used and b not in used:
                picks.append(k)
                if pick(c + 1, used | {a, b}):
                    return True
                picks.pop()
        return False

    pick(0, frozenset())
    return np.array(
        [[*c[: k + 1], n - 1, *c[k + 1 :]] for c, k in zip(cycles, picks, strict=True)],
        dtype=np.int64,
    )


#: Largest mesh whose directed decomposition is searched for (`directed_rings`).
MAX_SEARCHED_MESH = 16


def _directed_search(n: int) -> list[list[int]] | None:
    """``n - 1`` arc-disjoint directed Hamiltonian cycles of the complete symmetric
    digraph on ``n`` vertices, by depth-first search (first found, vertices ascending:
    deterministic), or None when there are none."""
    used = np.eye(n, dtype=bool)
    cycles: list[list[int]] = []

    def tours(path: list[int], seen: list[bool]):
        if len(path) == n:
            if not used[path[-1], 0]:
                yield list(path)
            return
        for v in range(1, n):
            if not seen[v] and not used[path[-1], v]:
                seen[v] = True
                path.append(v)
                yield from tours(path, seen)
                path.pop()
                seen[v] = False

    def place(k: int) -> bool:
        if k == n - 1:
            return True
        for cyc in tours([0], [True] + [False] * (n - 1)):
            a, b = np.array(cyc), np.roll(cyc, -1)
            used[a, b] = True
            cycles.append(cyc)
            if place(k + 1):
                return True
            cycles.pop()
            used[a, b] = False
        return False

    return cycles if place(0) else None


def directed_rings(n: int) -> np.ndarray:
    """Rings (rows of positions) on a full mesh of ``n``, pairwise sharing no link
    direction, as many as the mesh allows.

    ``n`` odd: Walecki's cycles (`hamiltonian_cycles`) each both ways, ``n - 1`` rings
    covering every direction.  ``n`` even: the complete symmetric digraph splits into
    ``n - 1`` directed Hamiltonian cycles for every ``n`` but 4 and 6 (Tillson, "A
    Hamiltonian decomposition of K*_2m, 2m >= 8", J. Combin. Theory B 29, 1980), found by
    `_directed_search` up to `MAX_SEARCHED_MESH`; for 4, 6 and larger meshes, Walecki's
    cycles both ways (``n - 2`` rings, a perfect matching idle).

    >>> directed_rings(8).shape
    (7, 8)
    """
    if n == 2:
        return np.arange(2)[None, :]
    if n % 2 == 0 and n not in (4, 6) and n <= MAX_SEARCHED_MESH:
        found = _directed_search(n)
        if found is not None:
            return np.array(found, dtype=np.int64)
    cyc = hamiltonian_cycles(n)
    return np.concatenate([cyc, cyc[:, ::-1]])


def plan_mesh_rings(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """Ring all-reduce, reduce-scatter or all-gather on a full mesh: the `directed_rings`
    at once, each ring ``1/R`` of the bytes.

    Raises `SolverError` where the ranks are not one switchless full mesh.
    """
    if collective not in _RING:
        raise SolverError(f"the mesh rings do not run {collective}")
    if not full_mesh(router, ranks):
        raise SolverError("the mesh rings need the ranks on one full mesh of scale-up links")
    srt = grouped(router.snap, ranks)[0]
    n = len(srt)
    rings = directed_rings(n)
    r = len(rings)
    fb = FlowBuilder(router)
    flows = fb.new_flows(np.full(r, _RING[collective](n) / r), [f"ring {k}" for k in range(r)])
    a, b = rings.ravel(), np.roll(rings, -1, axis=1).ravel()
    fb.transfers(np.repeat(flows, n), srt[a], srt[b], a.astype(np.int64) * n + b)
    steps = (2 if collective == "allreduce" else 1) * (n - 1)
    phase = fb.phase(f"{r} rings {collective} over Hamiltonian cycles", steps)
    return Plan(collective, "ring", ranks, 1, (phase,), True)

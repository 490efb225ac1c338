"""Rings per dimension on a torus of directly linked GPUs (TPU, Trainium pods).

A ring through all ``n`` chips of a torus crosses one link per chip and takes
``2 (n - 1)`` steps.  The standard torus all-reduce is dimension-ordered (the *bucket*
algorithm of Chan et al. 2007): reduce-scatter along the first dimension's rings, then
along the second's on the ``1/k_1`` shard left, and so on, then all-gather back in reverse
order; each line of chips runs its ring both ways round the wrap-around links, half the
data each way.  So every reduce-scatter stage ``i`` moves
``(k_i - 1)/k_i x S / (2 k_1 ... k_{i-1})`` bytes per link direction and takes
``k_i - 1`` steps (docs/model.md, "Collectives on full meshes, tori and UALink pods").

The dimensions are found from the cabling alone (`torus_lines`), never from names: the
links among the ranks are split into the factors of a Cartesian product of cycles.
"""

from __future__ import annotations

import numpy as np

from designer.solver.arrays.ragged import ragged_arange
from designer.solver.errors import SolverError
from designer.solver.flows.phases import FlowBuilder, Phase, Plan
from designer.solver.flows.ring_layout import grouped
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import NVLINK, Snapshot

#: The collectives the per-dimension rings run.
TORUS_COLLECTIVES = ("allreduce", "reducescatter", "allgather")


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], i: int, j: int) -> None:
    a, b = _find(parent, i), _find(parent, j)
    if a != b:
        parent[max(a, b)] = min(a, b)


def _factors(eu: np.ndarray, ev: np.ndarray, n: int) -> list[np.ndarray]:
    """The edge classes of the graph's Cartesian factorisation, as products of cycles
    have it: opposite sides of a chordless square are in one factor, and two edges at a
    vertex that lie on no common chordless square are too (Imrich's relation).  A 4-cycle
    factor comes out as two single-edge factors (``C4 = K2 x K2``)."""
    adj = [dict() for _ in range(n)]
    for e, (u, v) in enumerate(zip(eu.tolist(), ev.tolist(), strict=True)):
        adj[u][v] = e
        adj[v][u] = e
    parent = list(range(len(eu)))
    squared: set[tuple[int, int]] = set()
    for e, (u, v) in enumerate(zip(eu.tolist(), ev.tolist(), strict=True)):
        for w, ew in adj[u].items():
            if w == v or w in adj[v]:
                continue
            for x, ex in adj[v].items():
                if x in (u, w) or x in adj[u] or x not in adj[w]:
                    continue
                _union(parent, e, adj[w][x])  # u-v and w-x: opposite sides
                squared.update(((min(e, ew), max(e, ew)), (min(e, ex), max(e, ex))))
    for here in adj:
        inc = sorted(here.values())
        for i, e in enumerate(inc):
            for f in inc[i + 1 :]:
                if (e, f) not in squared:
                    _union(parent, e, f)
    root = np.array([_find(parent, e) for e in range(len(eu))], dtype=np.int64)
    return [np.flatnonzero(root == r) for r in np.unique(root)]


def _lines(eu: np.ndarray, ev: np.ndarray, n: int) -> np.ndarray | None:
    """The cycles (or pairs) the edges ``eu[i] - ev[i]`` make when every vertex has the
    same degree 1 or 2 in them: one row per cycle, walked from its smallest vertex
    towards its smaller neighbour; None when they are not such."""
    deg = np.bincount(np.r_[eu, ev], minlength=n)
    if deg.min() != deg.max() or int(deg[0]) not in (1, 2):
        return None
    nbr: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(eu.tolist(), ev.tolist(), strict=True):
        nbr[u].append(v)
        nbr[v].append(u)
    seen = np.zeros(n, dtype=bool)
    rows = []
    for start in range(n):
        if seen[start]:
            continue
        row, prev, here = [start], -1, start
        seen[start] = True
        while True:
            nxt = [x for x in sorted(nbr[here]) if x != prev and not seen[x]]
            if not nxt:
                break
            prev, here = here, nxt[0]
            seen[here] = True
            row.append(here)
        rows.append(row)
    if len({len(r) for r in rows}) != 1:
        return None
    return np.array(rows, dtype=np.int64)


def torus_lines(snap: Snapshot, ranks: np.ndarray) -> list[np.ndarray] | None:
    """The lines of each dimension when ``ranks`` are exactly a torus of direct links.

    Returns one ``[n / k, k]`` array of ranks (GPU indices, ring order along each row)
    per dimension of size ``k >= 2``, largest dimension first, or None where the ranks'
    scale-up links do not form a product of cycles among themselves alone (a switch, a
    link leaving the ranks, a full mesh).

    >>> from designer.model.templates import build_template
    >>> from designer.solver.snapshot.build import take_snapshot
    >>> snap = take_snapshot(build_template("torus3d", x=4, y=3, z=2, gpu="TPU-v5p"))
    >>> [d.shape for d in torus_lines(snap, np.arange(snap.n_gpus))]
    [(6, 4), (8, 3), (12, 2)]
    """
    srt = grouped(snap, ranks)[0]
    n = len(srt)
    if n < 2 or len(np.unique(snap.gpu_domain[srt])) != 1:
        return None
    pos = np.full(snap.n_nodes, -1, dtype=np.int64)
    pos[snap.gpus[srt]] = np.arange(n)
    live = (snap.arc_family == NVLINK) & (snap.arc_cap > 0)
    a, b = pos[snap.arc_src[live]], pos[snap.arc_dst[live]]
    mine = (a >= 0) | (b >= 0)
    if not np.all((a >= 0) & (b >= 0) | ~mine):
        return None  # a switch or a GPU outside the ranks on the scale-up links
    ok = (a >= 0) & (b >= 0) & (a != b)
    key, inv = np.unique(
        np.minimum(a[ok], b[ok]) * n + np.maximum(a[ok], b[ok]), return_inverse=True
    )
    cap = np.bincount(inv, weights=np.where(a[ok] < b[ok], snap.arc_cap[live][ok], 0.0))
    eu, ev = key // n, key % n
    dims, pairs = [], []
    for cls in _factors(eu, ev, n):
        rows = _lines(eu[cls], ev[cls], n)
        if rows is None:
            return None
        if rows.shape[1] == 2:  # K2: pair two into a C4
            pairs.append((float(cap[cls].min()), int(cls[0]), cls))
        else:
            dims.append((rows, float(cap[cls].min()), int(cls[0])))
    pairs.sort(key=lambda p: p[:2])
    for i in range(0, len(pairs), 2):
        cls = np.concatenate([p[2] for p in pairs[i : i + 2]])
        rows = _lines(eu[cls], ev[cls], n)
        if rows is None:
            return None
        dims.append((rows, pairs[i][0], pairs[i][1]))
    if int(np.prod([d[0].shape[1] for d in dims])) != n:
        return None
    dims.sort(key=lambda d: (-d[0].shape[1], -d[1], d[2]))
    return [srt[d[0]] for d in dims]


def _neighbour_hops(fb: FlowBuilder, flows: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Flow ``flows[i]`` crosses the direct links from rank ``a[i]`` to its neighbour
    ``b[i]``, split in proportion to their capacity: the one shortest path, found by a
    lookup rather than the router's search (minutes on an 8,960-chip pod)."""
    snap = fb.snap
    live = np.flatnonzero((snap.arc_family == NVLINK) & (snap.arc_cap > 0))
    key = snap.arc_src[live].astype(np.int64) * snap.n_nodes + snap.arc_dst[live]
    order = np.argsort(key, kind="stable")
    key, live = key[order], live[order]
    want = snap.gpus[a].astype(np.int64) * snap.n_nodes + snap.gpus[b]
    lo, hi = np.searchsorted(key, want), np.searchsorted(key, want, side="right")
    arcs = live[ragged_arange(lo, hi - lo)]
    owner = np.repeat(np.asarray(flows, dtype=np.int64), hi - lo)
    cap = snap.arc_cap[arcs]
    total = np.repeat(np.add.reduceat(cap, np.r_[0, np.cumsum(hi - lo)[:-1]]), hi - lo)
    fb.add(owner, arcs, cap / total, nvlink_only=True)
    fb.nv_fixed = 1


def _dimension_phase(router: Router, lines: np.ndarray, volume: float, name: str) -> Phase:
    """One dimension's rings, all lines at once, both ways round (``k = 2``: one
    exchange), each moving ``(k - 1)/k x volume`` per message byte."""
    m, k = lines.shape
    fb = FlowBuilder(router)
    share = (k - 1) / k * volume
    if k == 2:
        flows = fb.new_flows(np.full(m, share), [f"{name} pair {i}" for i in range(m)])
        src, dst, fl = (
            np.r_[lines[:, 0], lines[:, 1]],
            np.r_[lines[:, 1], lines[:, 0]],
            np.r_[flows, flows],
        )
    else:
        flows = fb.new_flows(
            np.full(2 * m, share / 2),
            [f"{name} line {i} {w}" for i in range(m) for w in ("+", "-")],
        )
        nxt = np.roll(lines, -1, axis=1)
        src = np.r_[lines.ravel(), nxt.ravel()]
        dst = np.r_[nxt.ravel(), lines.ravel()]
        fl = np.r_[np.repeat(flows[0::2], k), np.repeat(flows[1::2], k)]
    _neighbour_hops(fb, fl, src, dst)
    return fb.phase(name, k - 1)


def plan_torus_ring(
    router: Router, ranks: np.ndarray, collective: str, dims: list[np.ndarray] | None = None
) -> Plan:
    """Dimension-ordered bidirectional rings on a torus (module docstring).

    All-reduce: a reduce-scatter phase per dimension, largest first, then the
    all-gathers in reverse; reduce-scatter and all-gather alone run their half.  Raises
    `SolverError` where the ranks are not a whole torus of direct links.  ``dims``:
    `torus_lines` of the ranks, if the caller has them.
    """
    if collective not in TORUS_COLLECTIVES:
        raise SolverError(f"the torus rings do not run {collective}")
    dims = dims or torus_lines(router.snap, ranks)
    if not dims:
        raise SolverError("the ranks are not a torus of direct scale-up links")
    volume = np.cumprod([1.0] + [1.0 / d.shape[1] for d in dims[:-1]])
    names = "xyzuvw"
    rs = [
        (d, v, f"reduce-scatter along {names[i % 6]} ({d.shape[1]})")
        for i, (d, v) in enumerate(zip(dims, volume, strict=True))
    ]
    ag = [(d, v, name.replace("reduce-scatter", "all-gather")) for d, v, name in rs[::-1]]
    stages = {"allreduce": rs + ag, "reducescatter": rs, "allgather": ag}[collective]
    phases = tuple(_dimension_phase(router, d, float(v), name) for d, v, name in stages)
    return Plan(
        collective, "ring", ranks, 1, phases, False, step_counts=(sum(p.steps for p in phases), 0)
    )

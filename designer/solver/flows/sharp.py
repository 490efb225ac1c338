"""SHARP (in-network reduction on the fabric's switches): aggregation trees and the phase.

NCCL's CollNet hands each GPU's shard to SHARP, which reduces it up a tree of switches
to a root and multicasts the result back down the same tree, chunk by chunk, so the two
directions run as one pipeline.  The model builds that tree over the design's real,
live switches:

* **Members.**  The ranks that reduce one shard together are one column of the
  hierarchical table (the ``c``-th GPU of every NVLink domain); their *edge switches*
  (where their NICs are cabled) are the tree's leaves.
* **Switches.**  Only compute-fabric switches whose device model has ``sharp = true``
  take part, joined by live compute-fabric links.  A member that lacks SHARP, or no
  path of SHARP switches joining the members, means there is no tree: `SolverError`.
* **Root.**  The switch that every member reaches with the fewest levels (the least
  eccentricity over the members: the lowest common tier of an up-down fabric, a spine
  on a two-tier SuperPOD, a core on a three-tier one), then the least total distance;
  where several tie (the spines of a full Clos), column ``c`` takes the ``c``-th of
  them in structural order (`Snapshot.node_pos`), so the trees of the rails spread
  over the spines as the SHARP aggregation manager spreads them, whatever the names.
* **Edges.**  Each member climbs to the root one level at a time; a switch picks its
  parent among its neighbours one level closer, the ``c``-th in structural order.  The
  union of these climbs is the tree (one parent per switch).

Each tree edge carries the shard's partial reduction upwards (``1/g`` of the message
per byte, ``g`` GPUs per domain) and the result downwards, split over the parallel links
between its two switches by capacity; the GPUs' own ways to and from their edge switch
carry the same.  The phase's hop count grows by two switch hops per tree level, so the
time model charges each level a switch's latency on the way up and on the way down.

Not modelled: the switches' SHARP resources (aggregation nodes, outstanding operations,
trees per job), the reduction's own rate inside a switch, and SHARP's fall-back when a
job asks for more trees than the fabric has.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.flows.phases import FlowBuilder, Phase
from designer.solver.routing.router import Router

__all__ = ["SharpTree", "sharp_phase", "sharp_trees"]

#: Names of the two pipelined stages, as the timeline shows them.
STAGE_UP = "SHARP all-reduce: reduce up the tree"
STAGE_DOWN = "SHARP all-reduce: broadcast down the tree"


@dataclass(frozen=True)
class SharpTree:
    """One column's aggregation tree: node indices of its ``root``, its edges
    ``child[i] -> parent[i]`` and its ``levels`` (the deepest member's distance to the
    root; 0 when every member shares one edge switch)."""

    root: int
    child: np.ndarray
    parent: np.ndarray
    levels: int


class _SharpGraph:
    """The live compute-fabric links between switches that do SHARP, as a CSR over the
    SHARP switches alone (*local* ids: ``nodes[i]`` is local ``i``'s node index, ``local``
    the reverse, -1 for other nodes), each switch's arcs in the structural order of their
    far ends."""

    def __init__(self, router: Router):
        snap = router.snap
        sharp = snap.node_switch.copy()
        if snap.node_sharp is not None:
            sharp &= snap.node_sharp
        elif not snap.net_sharp:
            sharp[:] = False
        self.sharp = sharp
        # NVLink switches reduce inside their domain (NVLS), never in the fabric's tree:
        # left out of the searches (8,188 of the 9,468 switches of a 16k SuperPOD).
        self.nodes = np.flatnonzero(sharp & (router.node_domains() < 0))
        self.local = np.full(snap.n_nodes, -1, dtype=np.int64)
        self.local[self.nodes] = np.arange(len(self.nodes))
        self.pos = snap.node_pos[self.nodes]  # structural position of each local id
        arcs = np.asarray(router.net.arcs, dtype=np.int64)
        arcs = arcs[sharp[snap.arc_src[arcs]] & sharp[snap.arc_dst[arcs]]]
        src, dst = self.local[snap.arc_src[arcs]], self.local[snap.arc_dst[arcs]]
        order = np.lexsort((arcs, self.pos[dst], src))
        self.arcs, self.src, self.dst = arcs[order], src[order], dst[order]
        self.n = len(self.nodes)
        self.ptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.src, minlength=self.n), out=self.ptr[1:])
        # For the batched searches: arcs grouped by their far end.
        by_dst = np.argsort(self.dst, kind="stable")
        self._in_src = self.src[by_dst]
        d = self.dst[by_dst]
        heads = np.flatnonzero(np.r_[True, d[1:] != d[:-1]]) if d.size else np.zeros(0, np.int64)
        self._heads, self._targets = heads, d[heads]

    def distances(self, sources: np.ndarray) -> np.ndarray:
        """Hop distance from each of ``sources`` (local ids) to every SHARP switch (-1:
        unreachable), one row per source.

        Breadth-first searches from every source at once, the searches' fronts packed
        as bits (64 sources per word): each level gathers the words of the arcs' near
        ends and ORs them per far end, 64 searches per operation.
        """
        sources = np.asarray(sources, dtype=np.int64)
        n_src = len(sources)
        out = np.full((n_src, self.n), -1, dtype=np.int32)
        if not n_src:
            return out
        out[np.arange(n_src), sources] = 0
        words = -(-n_src // 64)
        column = np.arange(n_src)
        seen = np.zeros((self.n, words), dtype="<u8")
        np.bitwise_or.at(
            seen,
            (sources, column // 64),
            np.left_shift(np.uint64(1), (column % 64).astype(np.uint64)),
        )
        front = seen.copy()
        level = 0
        while self._heads.size:
            level += 1
            reach = np.bitwise_or.reduceat(front[self._in_src], self._heads, axis=0)
            new = reach & ~seen[self._targets]
            hit = np.flatnonzero(new.any(axis=1))
            if not hit.size:
                break
            new = new[hit]
            seen[self._targets[hit]] |= new
            front[:] = 0
            front[self._targets[hit]] = new
            bits = np.unpackbits(new.view(np.uint8), axis=1, bitorder="little")[:, :n_src]
            row, src = np.nonzero(bits)
            out[src, self._targets[hit][row]] = level
        return out

    def out(self, v: int) -> tuple[np.ndarray, np.ndarray]:
        """The arcs out of local ``v`` and their far ends (local), in structural order."""
        a, b = self.ptr[v], self.ptr[v + 1]
        return self.arcs[a:b], self.dst[a:b]


def sharp_trees(
    router: Router, leaf: np.ndarray, graph: _SharpGraph | None = None
) -> list[SharpTree]:
    """The aggregation tree of every column of ``leaf`` (the edge switches of the ranks
    that reduce one shard together, one row per NVLink domain): see the module
    docstring.  Raises `SolverError` where a column has no SHARP-capable tree."""
    snap = router.snap
    graph = graph or _SharpGraph(router)
    leaf = np.asarray(leaf, dtype=np.int64)
    members = np.unique(leaf)
    bad = members[~graph.sharp[members]]
    if bad.size:
        sw = int(bad[np.argmin(snap.node_pos[bad])])
        if not snap.node_switch[sw]:
            raise SolverError(
                f"collnet: a rank's NIC is cabled to {snap.node_ids[sw]}, not to a switch: "
                "SHARP reduces in the fabric's switches"
            )
        raise SolverError(
            f"collnet: edge switch {snap.node_ids[sw]} ({snap.node_model[sw]}) "
            "does no in-network reduction (SHARP)"
        )
    dist = graph.distances(graph.local[members])
    trees = []
    for c in range(leaf.shape[1]):
        col = np.unique(leaf[:, c])
        if len(col) == 1:
            trees.append(SharpTree(int(col[0]), np.zeros(0, np.int64), np.zeros(0, np.int64), 0))
            continue
        d = dist[np.searchsorted(members, col)]
        ok = (d >= 0).all(axis=0)
        if not ok.any():
            _raise_no_path(router, graph, col, d)
        trees.append(_tree(graph, graph.local[col], d, ok, c))
    return trees


def _tree(graph: _SharpGraph, col: np.ndarray, d: np.ndarray, ok: np.ndarray, c: int) -> SharpTree:
    """Column ``c``'s tree over members ``col`` (local ids; ``d``: their distances,
    ``ok``: the switches every member reaches), in node indices."""
    pos = graph.pos
    cand = np.flatnonzero(ok)
    ecc = d[:, cand].max(axis=0)
    cand = cand[ecc == ecc.min()]
    total = d[:, cand].sum(axis=0)
    cand = cand[total == total.min()]
    cand = cand[np.argsort(pos[cand], kind="stable")]
    root = int(cand[c % len(cand)])
    to_root = graph.distances(np.array([root]))[0]
    levels = int(to_root[col].max())
    parent_of: dict[int, int] = {}
    level_nodes = set(col.tolist())
    for lvl in range(levels, 0, -1):
        # Members at this level join the switches climbing from below.
        here = sorted((v for v in level_nodes if to_root[v] == lvl), key=lambda v: pos[v])
        for v in here:
            _, nxt = graph.out(v)
            up = nxt[to_root[nxt] == lvl - 1]
            parent_of[v] = int(up[c % len(up)])
        level_nodes = {v for v in level_nodes if to_root[v] < lvl} | {parent_of[v] for v in here}
    child = np.array(sorted(parent_of, key=lambda v: pos[v]), dtype=np.int64)
    parent = np.array([parent_of[v] for v in child.tolist()], dtype=np.int64)
    return SharpTree(int(graph.nodes[root]), graph.nodes[child], graph.nodes[parent], levels)


def _raise_no_path(router: Router, graph: _SharpGraph, col: np.ndarray, d: np.ndarray):
    """Raise `SolverError` naming two members (node indices ``col``, distances ``d``)
    that no SHARP path joins: the first in structural order and the first it cannot
    reach, and why (no switch path at all, or only through switches without SHARP)."""
    snap = router.snap
    order = np.argsort(snap.node_pos[col], kind="stable")
    a = int(col[order[0]])
    reach = d[order[0], graph.local[col]]
    b = int(col[order[np.flatnonzero(reach[order] < 0)[0]]])
    ids = snap.node_ids
    if router.fabric_hops(np.array([a]), np.array([b]))[0] < 0:
        raise SolverError(
            f"collnet: no fabric path from {ids[a]} to {ids[b]}: SHARP needs a "
            "live switch path between the edge switches of the ranks it reduces"
        )
    on_fabric = np.zeros(snap.n_nodes, dtype=bool)
    on_fabric[snap.arc_src[router.net.arcs]] = True
    lacking = np.flatnonzero(snap.node_switch & ~graph.sharp & on_fabric)
    models = sorted({str(snap.node_model[v]) for v in lacking.tolist()})
    raise SolverError(
        f"collnet: no SHARP-capable path from {ids[a]} to {ids[b]}: every live "
        f"switch path between them crosses a switch without in-network "
        f"reduction ({', '.join(models)})"
    )


def sharp_phase(router: Router, ranks: np.ndarray, g: int) -> Phase:
    """SHARP over ``ranks`` (in hierarchical-table order, ``g`` per domain): each GPU
    sends its 1/g shard to its edge switch and gets the result back (through its NIC,
    however it reaches it: `RankLinks.access_up`), and every column's aggregation tree
    (`sharp_trees`) carries the shard up to its root and the result back down."""
    snap, r = router.snap, router
    ranks = np.asarray(ranks, dtype=np.int64)
    rl = r.rank_links()
    bad = np.flatnonzero(~rl.ok[ranks])
    if bad.size:
        r.check_rank(int(ranks[bad[0]]))  # raises naming the GPU and what it lacks
    graph = _SharpGraph(r)
    trees = sharp_trees(r, rl.leaf[ranks].reshape(-1, g), graph)
    fb = FlowBuilder(r)
    names = [snap.node_ids[i] for i in rl.gpu[ranks].tolist()]
    flows = fb.new_flows(
        np.full(2 * len(ranks), 1.0 / g),
        [f"sharp {d} {nid}" for nid in names for d in ("up", "down")],
    )
    # Per GPU: flow "up" crosses its way to the NIC and the NIC's cable (its access leg
    # out); flow "down" the cable back and its way from the NIC (its leg in).
    fb.add_legs(flows[0::2], ranks)
    fb.add_legs(flows[1::2], len(rl.gpu) + ranks)
    # The trees' pairs are given as they are (`FlowBuilder.add`; an empty piece where no
    # column has a tree edge), so that `reuse` plans this phase afresh after any edit:
    # a tree depends on the switches' models and on every failure, which a patch of the
    # GPUs' legs would not look at.
    fb.add(int(flows[0]), np.zeros(0, np.int64), np.zeros(0))
    for c, tree in enumerate(trees):
        if not len(tree.child):
            continue
        up = fb.new_flow(1.0 / g, f"sharp tree {c} up to {snap.node_ids[tree.root]}")
        down = fb.new_flow(1.0 / g, f"sharp tree {c} down from {snap.node_ids[tree.root]}")
        for flow, a_end, b_end in ((up, tree.child, tree.parent), (down, tree.parent, tree.child)):
            arcs, weights = _edge_arcs(graph, snap.arc_cap, a_end, b_end)
            fb.add(flow, arcs, weights)
    levels = max((t.levels for t in trees), default=0)
    # NIC cable in and out, plus a switch hop per tree level each way.
    fb.net_fixed = 2 + 2 * levels
    phase = fb.phase("SHARP in-network all-reduce", 2)
    return replace(phase, stages=((STAGE_UP, 1 + levels), (STAGE_DOWN, 1 + levels)))


def _edge_arcs(
    graph: _SharpGraph, cap: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The arcs from ``a[i]`` to ``b[i]`` for every ``i`` (parallel links split by
    capacity), with their weights."""
    arcs, weights = [], []
    for x, y in zip(graph.local[a].tolist(), graph.local[b].tolist(), strict=True):
        out, far = graph.out(x)
        hit = out[far == y]
        share = cap[hit]
        arcs.append(hit)
        weights.append(share / share.sum() if share.sum() > 0 else np.full(len(hit), 1 / len(hit)))
    return np.concatenate(arcs), np.concatenate(weights)

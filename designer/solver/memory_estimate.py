"""How much memory a solve will take, told before it starts, and the refusal of one that
would not fit.

An all-to-all routes every ordered pair of ranks: 16.8 million flows on 4,096 GPUs,
each with its own path under ECMP or static routing, which took 5.0 GB at the peak of
the max-min rates (2.0 GB adaptive); a ring or tree all-reduce on the same GPUs took
tens of MB.  A solve that does not fit sends the machine into swap or gets the process
killed, so the command line and the window estimate it first, from counts that cost
milliseconds (ranks, pairs, NVLink domains, the fabric's depth between the ranks' edge
switches, a sample of NVLink sprays), and refuse it above the limit of
`designer.solver.machine_memory` (the memory available, or the user's).

The model (`estimate_bytes`) is fitted to the peak memory a solve added to the process
(from the snapshot to the result; the resident set and tracemalloc agree), measured on
rail-optimised clusters with 2 and 3 switch tiers, DGX SuperPODs, k-ary fat-trees,
3D tori and an NVL72 rack of 72 to 4,096 GPUs under each routing mode:

==================================  ==============  ===============================
all-to-all, bytes per pair          measured        estimated
==================================  ==============  ===============================
ECMP or static, 2 switch tiers      235-305         340 (4 fabric arcs a path)
ECMP or static, 3 switch tiers      225-310         400 (6 fabric arcs)
adaptive                            115-165         170-200
inside an NVLink domain             2.3-22 k        from sampled sprays (below)
==================================  ==============  ===============================

Whole solves of 100 MB and more came out 1.1-1.8 times the measured peak, of 40-100 MB
1.3-2.1 times, smaller ones up to 3 times (the fixed part dominates them).
``tests/solver/test_memory_estimate.py`` keeps real solves between 1 and 2 times, so
the model cannot drift silently.
Adaptive routing keeps one DAG per pair of edge switches instead of a path per flow,
which is why it is the first suggestion.  Other collectives route a few flows per rank
(rings, trees, chains): 1-1.5 kB per rank for one algorithm, 7.5-13 kB for all-reduce's
five candidates (131,072 GPUs: 0.13 and 1.0 GB).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver.snapshot.build import take_snapshot
>>> snap = take_snapshot(build_template("rail-cluster", nodes=4))
>>> est = estimate_solve(snap, "alltoall")
>>> est.n_ranks, est.pairs, est.fabric_arcs
(32, 992, 4)
>>> est.bytes < 64 << 20
True
>>> tight = MemoryLimit(1 << 20, "a limit of {}")
>>> check_solve_memory(snap, "alltoall", limit=tight)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
designer.solver.memory_estimate.SolveTooLarge: all-to-all on 32 GPUs ... would need about ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.machine_memory import MemoryLimit, format_bytes, memory_limit
from designer.solver.snapshot.build import DEAD, NVLINK, PCIE, Snapshot
from designer.solver.tuning import current

__all__ = [
    "MemoryEstimate",
    "SolveTooLarge",
    "check_solve_memory",
    "estimate_bytes",
    "estimate_solve",
]

#: What a solve takes besides its flows (router tables, per-arc loads and rates of each
#: phase), fixed and per directed arc of the design.
FIXED_BYTES = 8 << 20
BYTES_PER_ARC = 32
#: An all-to-all pair (one flow): its own path under ECMP and static routing, a share
#: of its edge switches' DAG under adaptive routing; and per fabric arc of its path.
PAIR_BYTES = {"ecmp": 220, "static": 220, "adaptive": 110}
PAIR_ARC_BYTES = {"ecmp": 30, "static": 30, "adaptive": 15}
#: An all-to-all pair inside one NVLink domain: its spray over every shortest NVLink
#: path is walked level by level, each (pair, node) of a level listing all the node's
#: NVLink arcs (an NVL72 switch tray has 72: 111 MB for the 5,112 pairs of one rack),
#: and kept as the arcs of its DAG (a 3D torus's sprays: 40-80 B per arc, 1.5 GB for
#: 512 GPUs).  Per arc listed at the widest level, and per arc of the DAG.
NV_LISTED_BYTES = 32
NV_DAG_ARC_BYTES = 75
#: Pairs of one NVLink domain sampled to measure its sprays (up to this many sources,
#: each to as many targets).
NV_SAMPLE = 16
NV_SAMPLE_WORK = 20_000_000  # pairs x NVLink arcs, at most (or 4 x 4 pairs)
#: Every other collective, per rank and candidate plan: its flows (rings, trees, chains,
#: NVLS and SHARP legs).  A forced ring took 1-1.5 kB per rank (4,096 and 131,072
#: GPUs); all-reduce's ``auto`` routes and keeps five candidates (ring, tree, NVLS,
#: hierarchical, CollNet: `collectives.candidate_plans`), 7.5-13 kB per rank.
RANK_PLAN_BYTES = 1536
AUTO_RANK_BYTES = {"allreduce": 12_800}


@dataclass(frozen=True)
class MemoryEstimate:
    """A solve's estimated peak memory and the counts it is made of.

    ``pairs`` counts the rank pairs an all-to-all routes (0 for other collectives), of
    which ``nv_pairs`` are inside an NVLink domain, each costing ``nv_pair_bytes``
    (`_nvlink_pair_bytes`); ``fabric_arcs`` is the switched arcs on the longest path
    between two ranks' NICs (the NICs' cables included; 0 when no rank has a NIC on a
    switch).
    """

    collective: str
    routing: str
    n_ranks: int
    pairs: int
    fabric_arcs: int
    n_arcs: int
    auto: bool
    bytes: int
    nv_pairs: int = 0
    nv_pair_bytes: int = 0
    classes: int = 0
    """Under adaptive routing, the flows standing for the pairs across domains when
    the all-to-all is solved by classes (`flows.alltoall`; about one per pair of edge
    switches); 0 when it is solved per pair."""

    def with_routing(self, routing: str) -> MemoryEstimate:
        """The same solve under another routing mode."""
        return replace(
            self,
            routing=routing,
            bytes=estimate_bytes(
                self.collective,
                routing,
                self.n_ranks,
                self.pairs,
                self.fabric_arcs,
                self.n_arcs,
                self.auto,
                self.nv_pairs,
                self.nv_pair_bytes,
                self.classes,
            ),
        )

    def most_ranks_within(self, limit: int) -> int:
        """The most ranks whose solve (of the same kind, on this design) fits in
        ``limit`` bytes; 0 when not even two do."""
        lo, hi = 1, self.n_ranks
        while lo < hi:  # the estimate grows with the ranks
            mid = (lo + hi + 1) // 2
            if self._with_ranks(mid).bytes <= limit:
                lo = mid
            else:
                hi = mid - 1
        return lo if lo >= 2 and self._with_ranks(lo).bytes <= limit else 0

    def _with_ranks(self, n: int) -> MemoryEstimate:
        # As many NVLink-domain mates per rank (the first ranks fill whole domains).
        pairs = n * (n - 1) if self.pairs else 0
        nv_pairs = min(self.nv_pairs * n // max(self.n_ranks, 1), pairs)
        return replace(
            self,
            n_ranks=n,
            pairs=pairs,
            nv_pairs=nv_pairs,
            bytes=estimate_bytes(
                self.collective,
                self.routing,
                n,
                pairs,
                self.fabric_arcs,
                self.n_arcs,
                self.auto,
                nv_pairs,
                self.nv_pair_bytes,
                self.classes,
            ),
        )


class SolveTooLarge(SolverError):
    """A solve whose estimated memory is above the limit; ``str()`` is one line naming
    the estimate, the limit and what would fit."""

    def __init__(self, message: str, estimate: MemoryEstimate, limit: int):
        super().__init__(message)
        self.estimate = estimate
        self.limit = limit


def estimate_bytes(
    collective: str,
    routing: str,
    n_ranks: int,
    pairs: int,
    fabric_arcs: int,
    n_arcs: int,
    auto: bool = True,
    nv_pairs: int = 0,
    nv_pair_bytes: int = 0,
    classes: int = 0,
) -> int:
    """The fitted model of a solve's peak memory, in bytes (see the module docstring).

    >>> round(estimate_bytes("alltoall", "ecmp", 4096, 4096 * 4095, 6, 73_632) / 2**30, 1)
    6.3
    """
    fixed = FIXED_BYTES + BYTES_PER_ARC * n_arcs
    if collective == "alltoall":
        per_pair = PAIR_BYTES[routing] + PAIR_ARC_BYTES[routing] * fabric_arcs
        cross = pairs - nv_pairs
        if routing == "adaptive" and classes:
            # A class takes up to five shared routes (two legs, first hops, middle,
            # last hops) where a pair takes three: counted as two pairs.
            cross = min(cross, 2 * classes)
        return int(fixed + per_pair * cross + (PAIR_BYTES[routing] + nv_pair_bytes) * nv_pairs)
    per_rank = AUTO_RANK_BYTES.get(collective, RANK_PLAN_BYTES) if auto else RANK_PLAN_BYTES
    return int(fixed + per_rank * n_ranks)


def estimate_solve(
    snap: Snapshot, collective: str, ranks: Sequence[int] | None = None, algorithm: str = "auto"
) -> MemoryEstimate:
    """Estimate the memory of ``solve_collective(snap, collective, ranks=ranks,
    algorithm=algorithm)`` without routing anything: a few passes over the snapshot's
    arcs (milliseconds on a 131,072-GPU design)."""
    rank_arr = (
        np.arange(snap.n_gpus) if ranks is None else np.asarray(ranks, dtype=np.int64).reshape(-1)
    )
    n = len(rank_arr)
    pairs = n * (n - 1) if collective == "alltoall" else 0
    auto = algorithm == "auto"
    arcs = _fabric_arcs(snap, rank_arr) if pairs else 0
    nv_pairs, nv_bytes = _nvlink_pairs(snap, rank_arr) if pairs else (0, 0)
    classes = _classes(snap, rank_arr) if pairs else 0
    return MemoryEstimate(
        collective,
        snap.routing,
        n,
        pairs,
        arcs,
        snap.n_arcs,
        auto,
        estimate_bytes(
            collective,
            snap.routing,
            n,
            pairs,
            arcs,
            snap.n_arcs,
            auto,
            nv_pairs,
            nv_bytes,
            classes,
        ),
        nv_pairs,
        nv_bytes,
        classes,
    )


def _classes(snap: Snapshot, ranks: np.ndarray) -> int:
    """About how many class flows an all-to-all of ``ranks`` takes under adaptive routing
    (`flows.alltoall`): one per pair of the NICs' cabled ends, where every rank has a
    NIC of its own on its own PCIe link (what the classes need); else 0."""
    nics = snap.gpu_nic[ranks]
    if (
        not current().alltoall_classes
        or (nics < 0).any()
        or (snap.gpu_nic_via[ranks] >= 0).any()
        or len(np.unique(nics)) != len(nics)
    ):
        return 0
    family = snap.arc_family
    cable = (family != NVLINK) & (family != PCIE) & np.isin(snap.arc_src, nics)
    ends = len(np.unique(snap.arc_dst[cable]))
    return ends * ends


def _fabric_arcs(snap: Snapshot, ranks: np.ndarray) -> int:
    """Arcs on the longest switched path between two ranks' NICs: the two NICs' cables
    and the switch-to-switch hops between their edge switches (0 when no rank has a
    NIC on a switch).

    Breadth-first from the edge switches of three ranks spread over the structural
    order (the first, middle and last), so the answer does not depend on names; in a
    Clos every edge switch sees the same depth.
    """
    family = snap.arc_family
    live = (family != NVLINK) & (family != PCIE) & (family != DEAD)
    live &= np.repeat(snap.compute_links(), 2)
    src, dst = snap.arc_src[live], snap.arc_dst[live]
    switch = snap.node_switch
    nics = snap.gpu_nic[ranks]
    nics = nics[nics >= 0]
    if nics.size == 0:
        return 0
    # Each NIC's edge switch: the lowest-numbered switch its cables reach.
    up = ~switch[src] & switch[dst]
    edge = np.full(snap.n_nodes, snap.n_nodes, dtype=np.int64)
    np.minimum.at(edge, src[up], dst[up])
    leaves = edge[nics]
    leaves = leaves[leaves < snap.n_nodes]
    if leaves.size == 0:
        return 0
    order = np.argsort(snap.node_pos[snap.gpus[ranks]], kind="stable")
    firsts = edge[snap.gpu_nic[ranks[order]]]
    firsts = firsts[(snap.gpu_nic[ranks[order]] >= 0)]
    firsts = firsts[firsts < snap.n_nodes]
    sources = np.unique(firsts[[0, len(firsts) // 2, -1]])
    between = switch[src] & switch[dst]
    s_src, s_dst = src[between], dst[between]
    deepest = 0
    for source in sources.tolist():
        dist = np.full(snap.n_nodes, -1, dtype=np.int64)
        dist[source] = 0
        frontier = np.zeros(snap.n_nodes, dtype=bool)
        frontier[source] = True
        level = 0
        while frontier.any():
            level += 1
            step = frontier[s_src] & (dist[s_dst] < 0)
            reached = np.unique(s_dst[step])
            dist[reached] = level
            frontier = np.zeros(snap.n_nodes, dtype=bool)
            frontier[reached] = True
        deepest = max(deepest, int(dist[leaves].max()))
    return deepest + 2


def _nvlink_pairs(snap: Snapshot, ranks: np.ndarray) -> tuple[int, int]:
    """The rank pairs inside one NVLink domain, and what each costs
    (`NV_LISTED_BYTES`, `NV_DAG_ARC_BYTES`), measured on up to ``NV_SAMPLE`` squared
    pairs of the domain holding the most ranks (the first such in structural order).

    Every such pair is counted, although domains built alike share their sprays
    (`routing.nvlink`): an upper bound, which matters only for large domains.
    """
    dom = snap.gpu_domain[ranks]
    per_domain = np.bincount(dom)
    nv_pairs = int((per_domain * (per_domain - 1)).sum())
    if nv_pairs == 0:
        return 0, 0
    order = np.argsort(snap.node_pos[snap.gpus[ranks]], kind="stable")
    ordered = ranks[order]
    biggest = dom[order][np.argmax(per_domain[dom[order]])]
    members = snap.gpus[ordered[dom[order] == biggest]]
    # Pairs drawn with a fixed seed: evenly spaced ones fall on the symmetries of a
    # torus (and measured its sprays 30 % off with 16 pairs).
    rng = np.random.default_rng(0)
    nv = snap.arc_family == NVLINK
    # Fewer pairs in a huge domain (a 131,072-GPU torus): each costs passes over its arcs.
    budget = int(np.sqrt(NV_SAMPLE_WORK / max(np.count_nonzero(nv), 1)))
    k = min(NV_SAMPLE, max(4, budget), len(members))
    sources = members[np.sort(rng.choice(len(members), k, replace=False))]
    targets = members[np.sort(rng.choice(len(members), k, replace=False))]
    src, dst = snap.arc_src[nv], snap.arc_dst[nv]
    order_src = np.argsort(src, kind="stable")
    src, dst = src[order_src], dst[order_src]
    ptr = np.searchsorted(src, np.arange(snap.n_nodes + 1))
    out_degree = np.diff(ptr)
    dist = {int(x): _bfs(ptr, dst, int(x)) for x in np.concatenate([sources, targets])}
    costs = []
    for a in sources.tolist():
        for b in targets.tolist():
            da, db = dist[a], dist[b]
            hops = da[b]
            if a == b or hops < 0:
                continue
            on_dag = (da >= 0) & (db >= 0) & (da + db == hops)
            dag_arcs = np.count_nonzero(on_dag[src] & on_dag[dst] & (da[dst] == da[src] + 1))
            walked = on_dag & (da < hops)
            listed = np.bincount(da[walked], weights=out_degree[walked], minlength=1).max()
            costs.append(NV_LISTED_BYTES * listed + NV_DAG_ARC_BYTES * dag_arcs)
    return nv_pairs, int(np.mean(costs)) if costs else 0


def _bfs(ptr: np.ndarray, dst: np.ndarray, source: int) -> np.ndarray:
    """Hops from ``source`` to every node over the arcs ``dst`` listed per node by
    ``ptr`` (CSR); -1 where it does not reach."""
    dist = np.full(len(ptr) - 1, -1, dtype=np.int64)
    dist[source] = 0
    frontier = np.array([source])
    level = 0
    while frontier.size:
        level += 1
        lengths = ptr[frontier + 1] - ptr[frontier]
        starts = np.repeat(ptr[frontier] - np.cumsum(lengths) + lengths, lengths)
        nxt = dst[starts + np.arange(int(lengths.sum()))]
        nxt = np.unique(nxt[dist[nxt] < 0])
        dist[nxt] = level
        frontier = nxt
    return dist


_NAMES = {
    "alltoall": "all-to-all",
    "allreduce": "all-reduce",
    "allgather": "all-gather",
    "reducescatter": "reduce-scatter",
    "sendrecv": "send/recv",
}
_ROUTING = {"ecmp": "ECMP", "static": "static", "adaptive": "adaptive"}


def check_solve_memory(
    snap: Snapshot,
    collective: str,
    ranks: Sequence[int] | None = None,
    algorithm: str = "auto",
    *,
    limit: MemoryLimit | None = None,
    hints: tuple[str, str] = ("adaptive routing", "at most {:,} ranks"),
) -> MemoryEstimate:
    """The solve's `MemoryEstimate`, or `SolveTooLarge` when it is above ``limit``
    (default `memory_limit`: the environment's setting or the memory available).

    The message names the estimate and the limit and suggests what would fit, in the
    words of ``hints`` (the command line names its options): adaptive routing when the
    solve is not adaptive already, and the most ranks that fit.
    """
    limit = memory_limit() if limit is None else limit
    est = estimate_solve(snap, collective, ranks, algorithm)
    if limit.bytes is None or est.bytes <= limit.bytes:
        return est
    ideas = []
    if est.routing != "adaptive":
        adaptive = est.with_routing("adaptive")
        fits = "" if adaptive.bytes <= limit.bytes else ", still too much"
        ideas.append(f"{hints[0]} (about {format_bytes(adaptive.bytes)}{fits})")
    most = est.most_ranks_within(limit.bytes)
    if most >= 2:
        ideas.append(hints[1].format(most))
    advice = f"; try {' or '.join(ideas)}" if ideas else ""
    raise SolveTooLarge(
        f"{_NAMES.get(collective, collective)} on {est.n_ranks:,} GPUs with "
        f"{_ROUTING.get(est.routing, est.routing)} routing would need about "
        f"{format_bytes(est.bytes)} of memory, more than {limit.text()}{advice}",
        est,
        limit.bytes,
    )

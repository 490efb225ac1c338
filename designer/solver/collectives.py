"""Collectives as phases of flows: what each algorithm sends over which arcs.

A *flow* is one pipelined stream: a ring channel, a tree, one all-to-all pair.  Every arc
it crosses carries the stream at the same rate, so a ring channel is ONE flow whose
incidence covers all its ring edges, and exact max-min fairness over flows then gives
each channel's rate directly.  ``flow_bytes`` is what each flow must carry per byte of
message (the nccl-tests "size"), so a phase's bandwidth time is
``max(flow_bytes / rate)`` for a message of one byte.

Algorithms (NCCL's names): ``ring`` (rail-aware ring order, one channel per rail),
``tree`` (double binary tree across NVLink domains, chains inside), ``nvls`` (in-switch
reduction inside one NVLink domain), ``hierarchical`` (intra-domain reduce-scatter,
per-rail inter-domain ring, intra-domain all-gather), ``collnet`` (IB SHARP: in-network
reduction at the edge switch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.routing import Router
from designer.solver.snapshot import NVLINK, Snapshot

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
               "sendrecv")
ALGORITHMS = ("ring", "tree", "nvls", "hierarchical", "collnet")


@dataclass(frozen=True, eq=False)
class Phase:
    """Flows that run concurrently, with the bytes each carries per message byte."""

    name: str
    pair_flow: np.ndarray
    pair_arc: np.ndarray
    pair_weight: np.ndarray
    flow_bytes: np.ndarray
    flow_label: tuple[str, ...]
    steps: int
    nvlink_hops: int
    net_hops: int

    @property
    def n_flows(self) -> int:
        return len(self.flow_bytes)


@dataclass(frozen=True, eq=False)
class Plan:
    """An algorithm's phases; ``pipelined`` phases overlap, others run one after another."""

    collective: str
    algorithm: str
    ranks: np.ndarray
    n_nodes: int
    phases: tuple[Phase, ...]
    pipelined: bool = False
    notes: tuple[str, ...] = field(default=())


class _FlowBuilder:
    """Accumulates (flow, arc, weight) pairs for one phase."""

    def __init__(self, router: Router):
        self.router = router
        self.snap = router.snap
        self.flows: list[np.ndarray] = []
        self.arcs: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.bytes: list[float] = []
        self.labels: list[str] = []
        self.net_hops = 0
        self.nv_hops = 0

    def new_flow(self, nbytes: float, label: str) -> int:
        self.bytes.append(nbytes)
        self.labels.append(label)
        return len(self.bytes) - 1

    def add(self, flow: int, arcs: np.ndarray, weights: np.ndarray) -> None:
        self.flows.append(np.full(len(arcs), flow, dtype=np.int64))
        self.arcs.append(np.asarray(arcs, dtype=np.int64))
        self.weights.append(np.asarray(weights, dtype=float))

    def transfer(self, flow: int, a: int, b: int, key: int) -> None:
        """Route rank ``a`` -> rank ``b`` into ``flow`` (NVLink in a domain, else NICs)."""
        s, r = self.snap, self.router
        ga, gb = int(s.gpus[a]), int(s.gpus[b])
        if s.gpu_domain[a] == s.gpu_domain[b]:
            arcs, w = r.nvlink_route(ga, gb)
            self.add(flow, arcs, w)
            # Hops as NCCL counts them: through one NVSwitch plane (2 arcs) is one hop.
            self.nv_hops = max(self.nv_hops, int(r.nvlink.dist_to(gb)[ga]) - 1, 1)
            return
        na, nb = int(s.gpu_nic[a]), int(s.gpu_nic[b])
        for g, n in ((ga, na), (gb, nb)):
            if n < 0:
                raise SolverError(f"GPU {s.node_ids[g]} has no NIC on the compute fabric, so "
                                  "it cannot reach GPUs outside its NVLink domain")
        up, down = r.edge_arc(na), r.edge_arc(nb) ^ 1
        la, lb = int(s.arc_dst[up]), int(s.arc_src[down])
        local = np.array([r.pcie_arc(ga, na), up, down, r.pcie_arc(nb, gb)])
        self.add(flow, local, np.ones(4))
        if s.routing == "adaptive":
            arcs, w = r.fabric_dag(la, lb)
            self.add(flow, arcs, w)
        else:
            _, arcs = r.fabric_paths(la, lb, np.array([key]), np.array([b]), s.routing)
            self.add(flow, arcs, np.ones(len(arcs)))
        hops = 2 + (0 if la == lb else int(r.net.dist_to(lb, r.is_switch)[la]))
        self.net_hops = max(self.net_hops, hops)

    def phase(self, name: str, steps: int) -> Phase:
        def cat(xs, dt):
            return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)

        return Phase(name, cat(self.flows, np.int64), cat(self.arcs, np.int64),
                     cat(self.weights, float), np.asarray(self.bytes, dtype=float),
                     tuple(self.labels), steps, self.nv_hops, self.net_hops)


# ----------------------------------------------------------------- rank layout
def _by_domain(snap: Snapshot, ranks: np.ndarray) -> list[np.ndarray]:
    """Ranks grouped by NVLink domain (domains in order), each sorted by local index."""
    dom = snap.gpu_domain[ranks]
    return [ranks[dom == d][np.argsort(snap.gpu_local[ranks[dom == d]], kind="stable")]
            for d in np.unique(dom)]


def ring_order(snap: Snapshot, ranks: np.ndarray, channel: int) -> np.ndarray:
    """Rail-aware ring order of ``ranks`` for ``channel``.

    Inside a domain the ring is rotated to start at local position ``channel``; domains
    alternate direction, so the hop from one domain to the next joins GPUs of the same
    rail (domain j ends on the rail where domain j+1 starts): inter-node traffic stays
    on one leaf per rail, as in NCCL's rail-aligned rings.
    """
    parts = []
    for j, local in enumerate(_by_domain(snap, ranks)):
        seq = np.roll(local, -(channel % len(local)))
        parts.append(seq if j % 2 == 0 else seq[::-1])
    return np.concatenate(parts)


def _channels(groups: list[np.ndarray]) -> int:
    # One channel per rail when crossing domains (every NIC busy); inside one domain the
    # channel count does not change max-min totals, so use the GPU count too.
    return max(1, min(len(g) for g in groups))


# ----------------------------------------------------------------- algorithms
_RING_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
                "reducescatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0,
                "reduce": lambda n: 1.0}
_RING_STEPS = {"allreduce": lambda n: 2 * (n - 1), "allgather": lambda n: n - 1,
               "reducescatter": lambda n: n - 1, "broadcast": lambda n: n - 1,
               "reduce": lambda n: n - 1}


def _ring_phase(router: Router, ranks: np.ndarray, collective: str, name: str,
                scale: float = 1.0, channels: int | None = None) -> Phase:
    snap, n = router.snap, len(ranks)
    groups = _by_domain(snap, ranks)
    c_count = channels or _channels(groups)
    fb = _FlowBuilder(router)
    chain = collective in ("broadcast", "reduce")  # pipelined chain: no wrap-around edge
    for c in range(c_count):
        order = ring_order(snap, ranks, c)
        flow = fb.new_flow(_RING_FACTOR[collective](n) * scale / c_count, f"{name} ch{c}")
        last = n - 1 if chain else n
        for i in range(last):
            fb.transfer(flow, int(order[i]), int(order[(i + 1) % n]), key=c * n + i)
    return fb.phase(name, _RING_STEPS[collective](n))


def plan_ring(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    phase = _ring_phase(router, ranks, collective, f"ring {collective}")
    return Plan(collective, "ring", ranks, len(_by_domain(router.snap, ranks)), (phase,), True)


def btree(n: int, mirror: bool) -> list[int]:
    """Parent of each of ``n`` positions in NCCL-style double binary trees (-1 = root).

    Tree 0 is the in-order binary tree given by each position's lowest set bit; tree 1
    is its mirror (``n`` even) or its shift by one (``n`` odd), so a node that is
    interior in one tree is a leaf in the other and every node sends about ``2S``
    across both trees.
    """
    parent = [-1] * n
    for r in range(1, n):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        parent[r] = up if up < n else r ^ bit
    if not mirror:
        return parent
    m = [n - 1 - r for r in range(n)] if n % 2 == 0 else [(r + 1) % n for r in range(n)]
    out = [-1] * n
    for r in range(n):
        if parent[r] >= 0:
            out[m[r]] = m[parent[r]]
    return out


def plan_tree(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """Double binary tree over domains (a pair of trees per rail channel), chains inside;
    a single chain when all ranks share one domain."""
    if collective != "allreduce":
        raise SolverError("tree is an all-reduce algorithm")
    snap = router.snap
    groups = _by_domain(snap, ranks)
    nodes = len(groups)
    c_count = _channels(groups)
    fb = _FlowBuilder(router)
    if nodes == 1:
        # Inside one domain NCCL's tree is a chain: up (reduce) and down (broadcast), so
        # each GPU sends about 2S per direction.
        for c in range(c_count):
            flow = fb.new_flow(1.0 / c_count, f"chain ch{c}")
            # Not rotated per channel: the middle GPUs of a chain send 2S each way and
            # the ends less, which is what caps NCCL's chain at B (n-1)/n.
            local = groups[0]
            for i in range(len(local) - 1):
                fb.transfer(flow, int(local[i + 1]), int(local[i]), key=0)
                fb.transfer(flow, int(local[i]), int(local[i + 1]), key=0)
        phase = fb.phase("chain all-reduce", 2 * (len(ranks) - 1))
        return Plan(collective, "tree", ranks, 1, (phase,), True)
    for c in range(c_count):
        heads = [g[c % len(g)] for g in groups]
        for t in range(2):  # the two complementary trees each carry half the data
            flow = fb.new_flow(0.5 / c_count, f"tree{t} ch{c}")
            for j, pj in enumerate(btree(nodes, mirror=t == 1)):
                local = np.roll(groups[j], -(c % len(groups[j])))
                for i in range(len(local) - 1):  # chain up and down inside the domain
                    fb.transfer(flow, int(local[i + 1]), int(local[i]), key=0)
                    fb.transfer(flow, int(local[i]), int(local[i + 1]), key=0)
                if pj >= 0:
                    key = (c * 2 + t) * nodes + j
                    fb.transfer(flow, int(heads[j]), int(heads[pj]), key=key)
                    fb.transfer(flow, int(heads[pj]), int(heads[j]), key=key + 7919)
    depth = int(np.ceil(np.log2(nodes + 1)))
    phase = fb.phase("double binary tree all-reduce", 2 * depth)
    return Plan(collective, "tree", ranks, nodes, (phase,), True)


def plan_nvls(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """In-switch reduction: each GPU sends its data into the NVSwitches once and receives
    the reduced result once, sprayed over all its NVLinks."""
    snap = router.snap
    if collective != "allreduce":
        raise SolverError("nvls is an all-reduce algorithm")
    groups = _by_domain(snap, ranks)
    if len(groups) != 1:
        raise SolverError("nvls runs inside one NVLink domain (use hierarchical across domains)")
    if not snap.domain_nvls[snap.gpu_domain[ranks[0]]]:
        raise SolverError("this NVLink domain's switches or GPUs cannot reduce in-switch (NVLS)")
    fb = _FlowBuilder(router)
    nv = snap.arc_family == NVLINK
    for r in ranks.tolist():
        g = int(snap.gpus[r])
        ends = (("send", snap.arc_src), ("recv", snap.arc_dst))
        for direction, end in ends:
            sel = nv & (end == g)
            arcs = np.flatnonzero(sel)
            # S to the switch plus the reduced shard back for multicast (S/n), and the
            # mirror image downstream: S (1 + 1/n) each way.
            flow = fb.new_flow(1.0 + 1.0 / len(ranks), f"nvls {direction} {snap.node_ids[g]}")
            fb.add(flow, arcs, snap.arc_cap[arcs] / snap.arc_cap[arcs].sum())
    fb.nv_hops = 2
    phase = fb.phase("NVLS in-switch all-reduce", 2)
    return Plan(collective, "nvls", ranks, 1, (phase,), True)


def plan_hierarchical(router: Router, ranks: np.ndarray, collective: str,
                      inter: str = "ring") -> Plan:
    """Reduce-scatter inside each domain, all-reduce of a 1/g shard per rail across domains
    (``ring`` or ``collnet`` in-network reduction), all-gather inside each domain."""
    if collective != "allreduce":
        raise SolverError("hierarchical is an all-reduce algorithm")
    snap = router.snap
    groups = _by_domain(snap, ranks)
    if len(groups) < 2:
        raise SolverError("hierarchical needs ranks in more than one NVLink domain")
    g = min(len(x) for x in groups)
    if any(len(x) != g for x in groups):
        raise SolverError("hierarchical needs the same number of ranks in every domain")
    if g < 2:
        raise SolverError("hierarchical needs at least 2 ranks per domain (use ring)")
    rs = _merge([_ring_phase(router, x, "reducescatter", "intra reduce-scatter")
                 for x in groups], "intra-domain reduce-scatter")
    if inter == "collnet":
        if not snap.net_sharp:
            raise SolverError("collnet needs in-network reduction (SHARP) on every fabric switch")
        fb = _FlowBuilder(router)
        r = router
        for x in groups:
            for rank in x.tolist():
                gpu, nic = int(snap.gpus[rank]), int(snap.gpu_nic[rank])
                if nic < 0:
                    raise SolverError(f"GPU {snap.node_ids[gpu]} has no NIC on the fabric")
                up = np.array([r.pcie_arc(gpu, nic), r.edge_arc(nic)])
                for label, arcs in (("up", up), ("down", up[::-1] ^ 1)):
                    f = fb.new_flow(1.0 / g, f"sharp {label} {snap.node_ids[gpu]}")
                    fb.add(f, arcs, np.ones(2))
        fb.net_hops = 2
        mid = fb.phase("SHARP in-network all-reduce", 2)
    else:
        rails = [np.array([x[i] for x in groups]) for i in range(g)]
        mid = _merge([_ring_phase(router, rail, "allreduce", f"rail {i} ring", scale=1.0 / g,
                                  channels=1) for i, rail in enumerate(rails)],
                     "inter-domain all-reduce per rail")
    ag = _merge([_ring_phase(router, x, "allgather", "intra all-gather") for x in groups],
                "intra-domain all-gather")
    return Plan(collective, "collnet" if inter == "collnet" else "hierarchical", ranks,
                len(groups), (rs, mid, ag), False)


def _merge(phases: list[Phase], name: str) -> Phase:
    """Run several phases' flows together (e.g. every domain's ring at once)."""
    offset, flows = 0, []
    for p in phases:
        flows.append(p.pair_flow + offset)
        offset += p.n_flows
    return Phase(name, np.concatenate(flows), np.concatenate([p.pair_arc for p in phases]),
                 np.concatenate([p.pair_weight for p in phases]),
                 np.concatenate([p.flow_bytes for p in phases]),
                 tuple(lbl for p in phases for lbl in p.flow_label),
                 max(p.steps for p in phases), max(p.nvlink_hops for p in phases),
                 max(p.net_hops for p in phases))


def plan_alltoall(router: Router, ranks: np.ndarray, collective: str = "alltoall") -> Plan:
    """Every rank sends 1/n of its buffer to every other rank, all at once."""
    n = len(ranks)
    fb = _FlowBuilder(router)
    for i, a in enumerate(ranks.tolist()):
        for j, b in enumerate(ranks.tolist()):
            if i != j:
                f = fb.new_flow(1.0 / n, f"{a}->{b}")
                fb.transfer(f, a, b, key=i * n + j)
    phase = fb.phase("all-to-all", n - 1)
    return Plan("alltoall", "direct", ranks, len(_by_domain(router.snap, ranks)), (phase,), True)


def plan_sendrecv(router: Router, ranks: np.ndarray, collective: str = "sendrecv") -> Plan:
    """Each rank sends its whole buffer to the next rank (nccl-tests sendrecv)."""
    n = len(ranks)
    fb = _FlowBuilder(router)
    for i in range(n if n > 2 else 1):
        f = fb.new_flow(1.0, f"{ranks[i]}->{ranks[(i + 1) % n]}")
        fb.transfer(f, int(ranks[i]), int(ranks[(i + 1) % n]), key=i)
    phase = fb.phase("send/recv", 1)
    return Plan("sendrecv", "direct", ranks, len(_by_domain(router.snap, ranks)), (phase,), True)


def candidate_plans(router: Router, ranks: np.ndarray, collective: str,
                    algorithm: str = "auto") -> list[Plan]:
    """Plans to consider: the forced algorithm, or every one that applies (``auto``)."""
    if collective not in COLLECTIVES:
        raise SolverError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")
    if len(ranks) < 2:
        raise SolverError("a collective needs at least 2 ranks")
    if collective == "alltoall":
        return [plan_alltoall(router, ranks)]
    if collective == "sendrecv":
        return [plan_sendrecv(router, ranks)]
    builders = {
        "ring": plan_ring, "tree": plan_tree, "nvls": plan_nvls,
        "hierarchical": plan_hierarchical,
        "collnet": lambda r, k, c: plan_hierarchical(r, k, c, inter="collnet"),
    }
    if algorithm != "auto":
        if algorithm not in builders:
            raise SolverError(f"unknown algorithm {algorithm!r}; one of auto, "
                              f"{', '.join(ALGORITHMS)}")
        return [builders[algorithm](router, ranks, collective)]
    plans = []
    for name in ALGORITHMS:
        if name == "nvls" and len(ranks) <= 4:
            continue  # NCCL's tuner enables NVLS only above 4 GPUs (force it to see it)
        try:
            plans.append(builders[name](router, ranks, collective))
        except SolverError:
            continue  # not applicable here (e.g. nvls across domains)
    if not plans:
        raise SolverError(f"no algorithm can run {collective} on these ranks")
    return plans

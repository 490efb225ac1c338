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
reduction up an aggregation tree of the fabric's switches, `flows.sharp`).

Plans are built with array code through `phases.FlowBuilder`, which routes whole
batches of transfers at once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from designer.model.scenario import ALGORITHMS as SCENARIO_ALGORITHMS
from designer.model.scenario import COLLECTIVES
from designer.solver.errors import SolverError
from designer.solver.flows.alltoall import plan_alltoall
from designer.solver.flows.mesh import (
    MESH_RING_COLLECTIVES,
    full_mesh,
    plan_direct,
    plan_mesh_rings,
)
from designer.solver.flows.phases import FlowBuilder, Phase, Plan
from designer.solver.flows.ring_layout import (
    by_domain,
    grouped,
    ring_layout,
    ring_order,
    ring_orders,
)
from designer.solver.flows.sharp import sharp_phase
from designer.solver.flows.torus import TORUS_COLLECTIVES, plan_torus_ring, torus_lines
from designer.solver.routing.router import (
    Router,
    ragged_arange,
)
from designer.solver.snapshot.build import NVLINK

# The scenario's enumerations are the one source; ``auto`` is no plan of its own.
ALGORITHMS = tuple(a for a in SCENARIO_ALGORITHMS if a != "auto")
#: What ``auto`` weighs, as NCCL's tuner does: NCCL's own algorithms only (ring, tree,
#: NVLS, NVLS-tree, CollNet, PAT) and RCCL's direct exchange on a switchless full mesh, each
#: where it applies.  ``hierarchical`` is the flow
#: solver's reduce-inside-the-node scheme, not an NCCL algorithm: it runs when forced.
AUTO_ALGORITHMS = ("ring", "tree", "nvls", "nvlstree", "collnet", "pat", "direct")
__all__ = ["ALGORITHMS", "AUTO_ALGORITHMS", "COLLECTIVES", "PLANNERS", "Phase", "Plan",
           "candidate_plans", "ring_order"]


# ----------------------------------------------------------------- algorithms
_RING_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
                "reducescatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0,
                "reduce": lambda n: 1.0}
_RING_STEPS = {"allreduce": lambda n: 2 * (n - 1), "allgather": lambda n: n - 1,
               "reducescatter": lambda n: n - 1, "broadcast": lambda n: n - 1,
               "reduce": lambda n: n - 1}


def _ring_transfers(fb: FlowBuilder, flows: np.ndarray, orders: np.ndarray, chain: bool,
                    channel: np.ndarray) -> None:
    """Ring ``f`` follows ``orders[f]``: transfer ``i`` goes ``orders[f, i] -> orders[f,
    i + 1]`` (wrapping unless ``chain``) with ECMP key ``channel[f] * n + i``."""
    n = orders.shape[1]
    m = n - 1 if chain else n
    # Ids as `FlowBuilder.transfers` keeps them, and each array made once: at 131,072
    # GPUs every whole-ring copy is 1M entries of fresh memory.
    idx = np.int32 if max(fb.n_flows, fb.snap.n_gpus) < 2**31 else np.int64
    orders = orders.astype(idx, copy=False)
    if chain:
        a, b = orders[:, :-1], orders[:, 1:]
    else:
        a, b = orders, np.roll(orders, -1, axis=1)
    keys = None
    if fb.snap.routing == "ecmp":   # read under ECMP alone
        keys = channel[:, None] * n + np.arange(m)
    fb.transfers(np.repeat(flows.astype(idx, copy=False), m), a, b, keys)


def _ring_phase(router: Router, ranks: np.ndarray, collective: str, name: str,
                scale: float = 1.0, channels: int | None = None) -> Phase:
    snap, n = router.snap, len(ranks)
    layout = ring_layout(snap, ranks)
    c_count = channels or max(1, len(layout.heads))
    fb = FlowBuilder(router)
    chain = collective in ("broadcast", "reduce")  # pipelined chain: no wrap-around edge
    flows = fb.new_flows(np.full(c_count, _RING_FACTOR[collective](n) * scale / c_count),
                         [f"{name} ch{c}" for c in range(c_count)])
    orders = ring_orders(layout, range(c_count))
    if chain:
        # Every channel's chain starts at the root (the first rank in structural order,
        # not the smallest GPU id): rotating the ring per channel would give each
        # channel a different root, i.e. more sources of data than a broadcast has.
        root = layout.srt[0]
        start = np.argmax(orders == root, axis=1)
        orders = np.stack([np.roll(o, -s) for o, s in zip(orders, start, strict=True)])
    _ring_transfers(fb, flows, orders, chain, np.arange(c_count))
    return fb.phase(name, _RING_STEPS[collective](n))


def plan_ring(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    if collective in TORUS_COLLECTIVES and (dims := torus_lines(router.snap, ranks)):
        return plan_torus_ring(router, ranks, collective, dims)  # rings per dimension
    if collective in MESH_RING_COLLECTIVES and full_mesh(router, ranks):
        return plan_mesh_rings(router, ranks, collective)  # disjoint Hamiltonian rings
    phase = _ring_phase(router, ranks, collective, f"ring {collective}")
    return Plan(collective, "ring", ranks, len(grouped(router.snap, ranks)[1]), (phase,), True)


def btree(n: int, mirror: bool) -> list[int]:
    """Parent of each of ``n`` positions in NCCL-style double binary trees (-1 = root).

    Tree 0 is the in-order binary tree given by each position's lowest set bit; tree 1
    is its mirror (``n`` even) or its shift by one (``n`` odd), so a node that is
    interior in one tree is a leaf in the other and every node sends about ``2S``
    across both trees.
    """
    parent = np.full(n, -1, dtype=np.int64)
    r = np.arange(1, n, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    parent[1:] = np.where(up < n, up, r ^ bit)
    if not mirror:
        return parent.tolist()
    pos = np.arange(n, dtype=np.int64)
    m = n - 1 - pos if n % 2 == 0 else (pos + 1) % n
    out = np.full(n, -1, dtype=np.int64)
    has = parent >= 0
    out[m[has]] = m[parent[has]]
    return out.tolist()


def _chains(grouped: tuple[np.ndarray, np.ndarray, np.ndarray], c: int,
            extra: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Transfers of channel ``c``'s chains, group by group: each group rotated by ``c``,
    then up (``local[i + 1] -> local[i]``) and down (``local[i] -> local[i + 1]``) for each
    link of the chain, followed by ``extra[j]`` free slots after group ``j``.

    Returns ``(src, dst, slot_start)``: the transfers with the free slots still unset
    (-1), and where each group's free slots start.
    """
    srt, starts, sizes = grouped
    links = sizes - 1
    block = 2 * links + extra
    ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(block, out=ptr[1:])
    src, dst = np.full(ptr[-1], -1, dtype=np.int64), np.full(ptr[-1], -1, dtype=np.int64)
    i = ragged_arange(np.zeros(len(sizes), np.int64), links)
    grp = np.repeat(np.arange(len(sizes)), links)
    size = sizes[grp]
    lo = srt[starts[grp] + (i + c) % size]
    hi = srt[starts[grp] + (i + 1 + c) % size]
    at = ptr[grp] + 2 * i
    src[at], dst[at] = hi, lo
    src[at + 1], dst[at + 1] = lo, hi
    return src, dst, ptr[:-1] + 2 * links


def plan_tree(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """Double binary tree over domains (a pair of trees per rail channel), chains inside;
    a single chain when all ranks share one domain."""
    if collective != "allreduce":
        raise SolverError("tree is an all-reduce algorithm")
    snap = router.snap
    by_dom = grouped(snap, ranks)
    srt, starts, sizes = by_dom
    nodes = len(starts)
    c_count = max(1, int(sizes.min()))
    fb = FlowBuilder(router)
    if nodes == 1:
        # Inside one domain NCCL's tree is a chain: up (reduce) and down (broadcast), so
        # each GPU sends about 2S per direction.
        flows = fb.new_flows(np.full(c_count, 1.0 / c_count),
                             [f"chain ch{c}" for c in range(c_count)])
        # Not rotated per channel: the middle GPUs of a chain send 2S each way and
        # the ends less, which is what caps NCCL's chain at B (n-1)/n.
        src, dst, _ = _chains(by_dom, 0, np.zeros(1, np.int64))
        for c in range(c_count):
            fb.transfers(np.full(len(src), flows[c]), src, dst, np.zeros(len(src), np.int64))
        phase = fb.phase("chain all-reduce", 2 * (len(ranks) - 1))
        return Plan(collective, "tree", ranks, 1, (phase,), True)
    parents = [np.array(btree(nodes, mirror=t == 1), dtype=np.int64) for t in range(2)]
    j = np.arange(nodes, dtype=np.int64)
    for c in range(c_count):
        heads = srt[starts + c % sizes]
        for t in range(2):  # the two complementary trees each carry half the data
            flow = fb.new_flow(0.5 / c_count, f"tree{t} ch{c}")
            pj = parents[t]
            has = pj >= 0
            src, dst, slot = _chains(by_dom, c, np.where(has, 2, 0))
            keys = np.zeros(len(src), dtype=np.int64)
            # Chains up and down inside each domain, then the domain's tree edge both ways.
            key = (c * 2 + t) * nodes + j[has]
            at = slot[has]
            src[at], dst[at], keys[at] = heads[has], heads[pj[has]], key
            src[at + 1], dst[at + 1], keys[at + 1] = heads[pj[has]], heads[has], key + 7919
            fb.transfers(np.full(len(src), flow), src, dst, keys)
    depth = int(np.ceil(np.log2(nodes + 1)))
    phase = fb.phase("double binary tree all-reduce", 2 * depth)
    return Plan(collective, "tree", ranks, nodes, (phase,), True)


def _in_switch_flows(fb: FlowBuilder, ranks: np.ndarray, n: int) -> None:
    """Two flows per rank (in ``ranks``' order) into and out of the NVLink switches, each
    spread over the GPU's NVLink arcs in proportion to their capacity.

    Each carries ``S (1 + 1/n)``: the buffer to the switch plus the reduced shard back
    for multicast, and the mirror image downstream.  The GPUs' arcs are found by one
    pass over the NVLink arcs, not one scan of every arc per GPU (quadratic on a
    16,384-GPU design).
    """
    snap = fb.snap
    gpus = snap.gpus[ranks]
    flows = fb.new_flows(np.full(2 * len(gpus), 1.0 + 1.0 / n),
                         [f"nvls {d} {snap.node_ids[g]}" for g in gpus.tolist()
                          for d in ("send", "recv")])
    position = np.full(snap.n_nodes, -1, dtype=np.int64)
    position[gpus] = np.arange(len(gpus))
    nv = np.flatnonzero(snap.arc_family == NVLINK)
    flow_parts, arc_parts = [], []
    for k, end in enumerate((snap.arc_src, snap.arc_dst)):  # send: out of the GPU
        owner = position[end[nv]]
        mine = owner >= 0
        flow_parts.append(flows[2 * owner[mine] + k].astype(np.int64))
        arc_parts.append(nv[mine])
    f, arcs = np.concatenate(flow_parts), np.concatenate(arc_parts)
    order = np.lexsort((arcs, f))   # flow by flow, arcs ascending
    f, arcs = f[order], arcs[order]
    cap = snap.arc_cap[arcs]
    total = np.bincount(f - int(flows[0]), weights=cap, minlength=len(flows))
    fb.add(f, arcs, cap / total[f - int(flows[0])], nvlink_only=True)


def plan_nvls(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """In-switch reduction: each GPU sends its data into the NVSwitches once and receives
    the reduced result once, sprayed over all its NVLinks."""
    snap = router.snap
    if collective != "allreduce":
        raise SolverError("nvls is an all-reduce algorithm")
    groups = by_domain(snap, ranks)
    if len(groups) != 1:
        raise SolverError("nvls runs inside one NVLink domain (use hierarchical across domains)")
    if not snap.domain_nvls[snap.gpu_domain[ranks[0]]]:
        raise SolverError("this NVLink domain's switches or GPUs cannot reduce in-switch (NVLS)")
    fb = FlowBuilder(router)
    _in_switch_flows(fb, ranks, len(ranks))
    fb.nv_fixed = 2
    phase = fb.phase("NVLS in-switch all-reduce", 2)
    return Plan(collective, "nvls", ranks, 1, (phase,), True)


def plan_nvlstree(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """NCCL's NVLS-tree all-reduce across NVLink domains: each domain reduces in its
    NVLink switches (every GPU sends its buffer in and takes the result back, as `nvls`)
    while the domains' heads run a double binary tree over the network, one pair of
    trees per rail, pipelined with the in-switch stage.  NCCL runs it only across nodes
    and only where every domain's switches reduce."""
    snap = router.snap
    if collective != "allreduce":
        raise SolverError("nvlstree is an all-reduce algorithm")
    srt, starts, sizes = grouped(snap, ranks)
    nodes = len(starts)
    if nodes < 2:
        raise SolverError("nvlstree runs across NVLink domains (use nvls inside one)")
    if int(sizes.min()) < 2:
        raise SolverError("nvlstree needs at least 2 ranks in every NVLink domain")
    doms = snap.gpu_domain[srt[starts]]
    if not np.all(snap.domain_nvls[doms]):
        raise SolverError("an NVLink domain's switches or GPUs cannot reduce in-switch (NVLS)")
    fb = FlowBuilder(router)
    n_local = int(sizes.min())
    _in_switch_flows(fb, srt, n_local)
    fb.nv_fixed = 2
    intra = fb.phase("NVLS in-switch reduce and multicast", 2)
    # The heads: channel c's head is the c-th GPU of every domain (its rail); each
    # carries 1/c_count of the reduced buffer over a pair of complementary trees.
    c_count = n_local
    parents = [np.array(btree(nodes, mirror=t == 1), dtype=np.int64) for t in range(2)]
    j = np.arange(nodes, dtype=np.int64)
    fb = FlowBuilder(router)
    for c in range(c_count):
        heads = srt[starts + c]
        for t in range(2):
            flow = fb.new_flow(0.5 / c_count, f"nvlstree{t} ch{c}")
            pj = parents[t]
            has = pj >= 0
            key = (c * 2 + t) * nodes + j[has]
            a, b = heads[has], heads[pj[has]]
            fb.transfers(np.full(2 * int(has.sum()), flow), np.r_[a, b], np.r_[b, a],
                         np.r_[key, key + 7919])
    depth = int(np.ceil(np.log2(nodes + 1)))
    inter = fb.phase("double binary tree across domains", 2 * depth)
    return Plan(collective, "nvlstree", ranks, nodes, (intra, inter), True)


def plan_pat(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """NCCL's PAT (parallel aggregated trees) all-gather or reduce-scatter, which NCCL
    runs with one GPU per node: each rank still sends and receives ``(n-1)/n`` of the
    buffer, as on a ring, but in ``log2 n`` latency steps."""
    if collective not in ("allgather", "reducescatter"):
        raise SolverError("pat is an all-gather / reduce-scatter algorithm")
    sizes = grouped(router.snap, ranks)[2]
    if len(sizes) < 2 or int(sizes.max()) != 1:
        raise SolverError("NCCL runs PAT with one GPU per node only")
    phase = _ring_phase(router, ranks, collective, f"pat {collective}")
    return Plan(collective, "pat", ranks, len(sizes), (phase,), True)


def _domain_rings(router: Router, table: np.ndarray, collective: str, label: str,
                  name: str) -> Phase:
    """Every domain's ring at once (row ``d`` of ``table``: domain ``d``'s ranks in local
    order), one channel per GPU: `_merge` of `_ring_phase` per domain."""
    d, g = table.shape
    fb = FlowBuilder(router)
    flows = fb.new_flows(np.full(d * g, _RING_FACTOR[collective](g) * 1.0 / g),
                         [f"{label} ch{c}" for _ in range(d) for c in range(g)])
    # Channel c of a domain's ring starts at local position c (one group: no reversal).
    col = (np.arange(g)[:, None] + np.arange(g)[None, :]) % g      # [c, k] -> position
    orders = table[:, col].reshape(d * g, g)
    _ring_transfers(fb, flows, orders, collective in ("broadcast", "reduce"),
                    np.tile(np.arange(g), d))
    return fb.phase(name, _RING_STEPS[collective](g))


def plan_hierarchical(router: Router, ranks: np.ndarray, collective: str,
                      inter: str = "ring") -> Plan:
    """Reduce-scatter inside each domain, all-reduce of a 1/g shard per rail across domains
    (``ring`` or ``collnet`` in-network reduction), all-gather inside each domain."""
    if collective != "allreduce":
        raise SolverError("hierarchical is an all-reduce algorithm")
    snap = router.snap
    srt, starts, sizes = grouped(snap, ranks)
    if len(starts) < 2:
        raise SolverError("hierarchical needs ranks in more than one NVLink domain")
    g = int(sizes.min())
    if np.any(sizes != g):
        raise SolverError("hierarchical needs the same number of ranks in every domain")
    if g < 2:
        raise SolverError("hierarchical needs at least 2 ranks per domain (use ring)")
    table = srt.reshape(len(starts), g)   # equal groups: row d = domain d in local order
    rs = _domain_rings(router, table, "reducescatter", "intra reduce-scatter",
                       "intra-domain reduce-scatter")
    if inter == "collnet":
        mid = sharp_phase(router, srt, g)
    else:
        # Rail i: the i-th GPU of every domain, domains in order, one channel each.
        n = len(starts)
        fb = FlowBuilder(router)
        flows = fb.new_flows(np.full(g, _RING_FACTOR["allreduce"](n) * (1.0 / g) / 1),
                             [f"rail {i} ring ch0" for i in range(g)])
        _ring_transfers(fb, flows, table.T, False, np.zeros(g, dtype=np.int64))
        mid = fb.phase("inter-domain all-reduce per rail", _RING_STEPS["allreduce"](n))
    ag = _domain_rings(router, table, "allgather", "intra all-gather", "intra-domain all-gather")
    return Plan(collective, "collnet" if inter == "collnet" else "hierarchical", ranks,
                len(starts), (rs, mid, ag), False)


def plan_sendrecv(router: Router, ranks: np.ndarray, collective: str = "sendrecv") -> Plan:
    """Each rank sends its whole buffer to the next rank (nccl-tests sendrecv), ranks
    numbered in structural order (`grouped`: NVLink domains in turn, each in rail
    order, as MPI numbers ranks host after host), not by GPU id."""
    n = len(ranks)
    i = np.arange(n if n > 2 else 1)
    srt = grouped(router.snap, ranks)[0]
    a, b = srt[i], srt[(i + 1) % n]
    fb = FlowBuilder(router)
    flows = fb.new_flows(np.ones(len(i)),
                         [f"{x}->{y}" for x, y in zip(a.tolist(), b.tolist(), strict=True)])
    fb.transfers(flows, a, b, i)
    phase = fb.phase("send/recv", 1)
    return Plan("sendrecv", "direct", ranks, len(grouped(router.snap, ranks)[1]), (phase,),
                True)


PLANNERS = {
    "ring": plan_ring, "tree": plan_tree, "nvls": plan_nvls, "nvlstree": plan_nvlstree,
    "pat": plan_pat, "hierarchical": plan_hierarchical,
    "collnet": lambda r, k, c: plan_hierarchical(r, k, c, inter="collnet"),
    "alltoall": plan_alltoall, "sendrecv": plan_sendrecv, "direct": plan_direct,
}
"""Plan builders by name: ``PLANNERS[name](router, ranks, collective)``."""


def candidate_plans(router: Router, ranks: np.ndarray, collective: str,
                    algorithm: str = "auto", *,
                    build: Callable[[str], Plan] | None = None) -> list[Plan]:
    """Plans to consider: the forced algorithm, or every one that applies (``auto``).

    ``build(name)`` makes the plan of `PLANNERS` ``name`` (default: with ``router``);
    `reuse` passes one that patches the previous snapshot's plan instead.
    """
    if collective not in COLLECTIVES:
        raise SolverError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")
    if len(ranks) < 2:
        raise SolverError("a collective needs at least 2 ranks")
    if build is None:
        def build(name: str) -> Plan:
            return PLANNERS[name](router, ranks, collective)
    if collective in ("alltoall", "sendrecv"):
        return [build(collective)]
    if algorithm != "auto":
        if algorithm not in PLANNERS or algorithm in ("alltoall", "sendrecv"):
            known = dict.fromkeys((*ALGORITHMS, *AUTO_ALGORITHMS))
            raise SolverError(f"unknown algorithm {algorithm!r}; one of auto, "
                              f"{', '.join(known)}")
        return [build(algorithm)]
    plans = []
    first_error: SolverError | None = None
    for name in AUTO_ALGORITHMS:
        if name == "nvls" and len(ranks) <= 4:
            continue  # NCCL's tuner enables NVLS only above 4 GPUs (force it to see it)
        try:
            plans.append(build(name))
        except SolverError as exc:
            first_error = first_error or exc  # ring's reason is the most telling
            continue  # not applicable here (e.g. nvls across domains)
    if not plans:
        reason = f": {first_error}" if first_error else ""
        raise SolverError(f"no algorithm can run {collective} on these ranks{reason}")
    return plans

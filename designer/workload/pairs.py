"""Many point-to-point sends of one task, routed at once and timed by class.

A pipeline-parallel send is one ``sendrecv`` task over hundreds of (sender, receiver)
pairs; solving each pair alone through `solve_collective` routes it on its own (a few
milliseconds each).  Here every pair of the task is routed in one batch (the solver's
`FlowBuilder`, as `solve_collective` routes a ring's transfers), and pairs whose routes
look the same (same NVLink domain or not, the same rate alone, the same multiset of
(link family, capacity, split weight) along the way) share one `solve_collective` of a
representative for their time: what the time model reads of a send (its rate alone,
its hops, whether it leaves the domain) is then the same.  Each pair keeps its own
routes for the shared solve, and depends on them alone (`memo`: an edit off its route
leaves its time as it was).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import take_snapshot
>>> snap = take_snapshot(build_template("rail-cluster", nodes=2))
>>> lones = lone_pairs(snap, [(0, 8), (1, 9), (2, 10)], 1 << 20, cache={})
>>> len({lone.time_s for lone in lones}), len({lone.phases[0].arcs[0] for lone in lones})
(1, 3)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from designer.solver.flows.phases import FlowBuilder
from designer.solver.routing.router import Router
from designer.workload.lone import LoneCollective, PhaseFlows, lone_collective

__all__ = ["lone_pairs"]


def lone_pairs(
    snap,
    pairs: Sequence[tuple[int, int]],
    nbytes: float,
    *,
    cache: dict,
    launch: str = "eager",
    counts: dict | None = None,
) -> list[LoneCollective]:
    """``sendrecv`` of ``nbytes`` on each ``(sender, receiver)`` rank pair, alone.

    Parameters
    ----------
    snap : Snapshot
    pairs : sequence of (int, int)
        Rank pairs (indices into ``snap.gpus``).
    nbytes : float
    cache : dict
        `solve_collective`'s cache for ``snap`` (its router is shared).
    launch : {"eager", "graph"}
    counts : dict, optional
        Its ``"solved"`` entry counts the representatives solved.

    Returns
    -------
    list of LoneCollective
        One per pair, in order.
    """
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    if cache.setdefault("snapshot", snap) is not snap:
        raise ValueError("a solve cache serves one snapshot")
    router = cache.get("router")
    if router is None:
        # The router a route memo rebased from the last snapshot's, else a new one.
        memo = cache.get("memo")
        router = cache["router"] = memo.router(snap) if memo is not None else Router(snap)
    fb = FlowBuilder(router)
    flows = fb.new_flows(np.ones(len(a)), [f"{x}->{y}" for x, y in pairs])
    # Key 0 for every pair, as a lone pair's own solve hashes it (ECMP).
    fb.transfers(flows, a, b, np.zeros(len(a), dtype=np.int64))
    flow, arc, weight = (np.asarray(x) for x in fb.phase("send/recv", 1).pairs())
    flow, arc, weight = flow.astype(np.int64), arc.astype(np.int64), weight.astype(float)
    order = np.lexsort((arc, flow))
    flow, arc, weight = flow[order], arc[order], weight[order]
    cuts = np.searchsorted(flow, np.arange(len(a) + 1))
    same = snap.gpu_domain[a] == snap.gpu_domain[b]
    classes: dict[bytes, LoneCollective] = {}
    out = []
    for k in range(len(a)):
        arcs_k, w_k = arc[cuts[k] : cuts[k + 1]], weight[cuts[k] : cuts[k + 1]]
        uniq, inv = np.unique(arcs_k, return_inverse=True)
        per_arc = np.bincount(inv, weights=w_k)
        rate = float(np.min(snap.arc_cap[uniq] / per_arc))
        look = np.lexsort((per_arc, snap.arc_cap[uniq], snap.arc_family[uniq]))
        key = b"|".join(
            (
                bytes([bool(same[k])]),
                np.float64(rate).tobytes(),
                snap.arc_family[uniq][look].astype(np.int64).tobytes(),
                snap.arc_cap[uniq][look].astype(float).tobytes(),
                per_arc[look].tobytes(),
            )
        )
        rep = classes.get(key)
        if rep is None:
            if counts is not None:
                counts["solved"] = counts.get("solved", 0) + 1
            rep = classes[key] = lone_collective(
                snap, "sendrecv", (int(a[k]), int(b[k])), nbytes, cache=cache, launch=launch
            )
        if not rep.phases:
            out.append(rep)
            continue
        lone = rep.phases[0]
        pace = lone.pace_GBps
        mine = PhaseFlows(
            np.zeros(len(arcs_k), dtype=np.int64),
            arcs_k,
            w_k,
            pace,
            lone.seconds,
            uniq,
            per_arc * pace[0],
        )
        out.append(
            LoneCollective(
                rep.collective,
                rep.algorithm,
                rep.protocol,
                rep.time_s,
                rep.fixed_s,
                rep.bandwidth_s,
                (mine,),
                rep.pipelined,
                np.unique(arcs_k),  # its own route decides its time (see the module)
            )
        )
    return out

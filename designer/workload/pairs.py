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
    # Each pair's distinct arcs (runs of one arc within one flow) and its weight on each.
    n = len(a)
    head = np.ones(len(arc), dtype=bool)
    head[1:] = (arc[1:] != arc[:-1]) | (flow[1:] != flow[:-1])
    run = np.cumsum(head) - 1
    per_arc_all = np.bincount(run, weights=weight)
    uniq_all, run_flow = arc[head], flow[head]
    cuts = np.searchsorted(flow, np.arange(n + 1))
    ucuts = np.searchsorted(run_flow, np.arange(n + 1))
    cls = _classes(snap, a, b, uniq_all, per_arc_all, run_flow, ucuts)
    classes: dict[int, LoneCollective] = {}
    out = []
    for k in range(n):
        rep = classes.get(cls[k])
        if rep is None:
            if counts is not None:
                counts["solved"] = counts.get("solved", 0) + 1
            rep = classes[cls[k]] = lone_collective(
                snap, "sendrecv", (int(a[k]), int(b[k])), nbytes, cache=cache, launch=launch
            )
        if not rep.phases:
            out.append(rep)
            continue
        uniq = uniq_all[ucuts[k] : ucuts[k + 1]]
        pace = rep.phases[0].pace_GBps
        mine = PhaseFlows(
            np.zeros(cuts[k + 1] - cuts[k], dtype=np.int64),
            arc[cuts[k] : cuts[k + 1]],
            weight[cuts[k] : cuts[k + 1]],
            pace,
            rep.phases[0].seconds,
            uniq,
            per_arc_all[ucuts[k] : ucuts[k + 1]] * pace[0],
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
                uniq,  # its own route decides its time (see the module)
            )
        )
    return out


def _classes(snap, a, b, uniq, per_arc, run_flow, ucuts) -> np.ndarray:
    """A class number per pair: pairs of one class have the same domain relation, rate
    alone and multiset of (family, capacity, weight) along their routes."""
    n = len(a)
    cap = np.asarray(snap.arc_cap, dtype=float)[uniq]
    fam = np.asarray(snap.arc_family)[uniq].astype(float)
    rate = np.minimum.reduceat(cap / per_arc, ucuts[:-1]) if len(uniq) else np.zeros(0)
    length = np.diff(ucuts)
    if np.any(length == 0):
        raise ValueError("a pipeline send with no route")
    look = np.lexsort((per_arc, cap, fam, run_flow))
    same = (snap.gpu_domain[a] == snap.gpu_domain[b]).astype(float)
    cls = np.empty(n, dtype=np.int64)
    seen = 0
    for size in np.unique(length).tolist():
        rows = np.flatnonzero(length == size)
        at = ucuts[rows][:, None] + np.arange(size)[None, :]
        pick = look[at]  # each row's runs in (family, capacity, weight) order
        table = np.hstack((same[rows, None], rate[rows, None], fam[pick], cap[pick], per_arc[pick]))
        _, inv = np.unique(table, axis=0, return_inverse=True)
        cls[rows] = seen + inv.reshape(-1)
        seen += int(inv.max()) + 1
    return cls

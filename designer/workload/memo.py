"""What one simulation of a design leaves for the next, after a what-if edit.

The GUI simulates again after every edit, and an edit touches a few links.  A
`SimulationMemo` kept per design (and passed to `simulate` as ``memo=``) carries the
collectives solved alone from one snapshot to the next, except those an edit can
change.  Each result knows every arc of every algorithm weighed for it
(`lone.LoneCollective.touched`), and the rules follow how an edit moves routes
(`designer.solver.reuse`):

* a capacity change (both ends alive before and after) changes the splits of the routes
  that cross the arc, and the rates of the flows that do: results touching the arc are
  dropped;
* a failure or a restore re-routes through the switches at the link's ends: results
  touching any arc at those nodes are dropped, and then kept after all (`still`) when
  the route memo patches every plan weighed for them with no row recomputed and none
  of their arcs changed: the plans are the same arrays, and a result is computed from
  its plans and the capacities of their arcs.

Anything else (nodes or links added or removed, another routing setting) starts afresh,
and so does an edit that moves the design's switch-hop latency
(`designer.solver.switch_latency`: a median over every network link, which a failure or
a technology change anywhere can move, and with it every collective across switches).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import take_snapshot
>>> memo = SimulationMemo()
>>> memo.carry(take_snapshot(build_template("hgx")))
{}
"""

from __future__ import annotations

import contextlib

import numpy as np

from designer.solver import SolverError

__all__ = ["PLAN_BYTES", "SimulationMemo"]

#: Bytes of plans the memo keeps (the least recently used go first): four jobs on a
#: 1,024-GPU SuperPOD hold ~56 MB.
PLAN_BYTES = 128 << 20


class SimulationMemo:
    """The lone collectives of the last snapshot simulated, and what was built on them
    (see the module)."""

    def __init__(self) -> None:
        from designer.solver import RouteMemo

        #: The routers of successive snapshots, each rebased from the last, and the
        #: plans of the lone collectives (a what-if failure patches them to tell which
        #: results it leaves as they were: `still`).
        self.routes = RouteMemo(max_plans=1 << 20, max_bytes=PLAN_BYTES)
        self.snap = None
        self.hop = 0.0  # `switch_latency` of `snap`
        self._pending_hop: tuple | None = None  # (snapshot, its hop) from `carry`
        self.settings: tuple = ()
        self.known: dict = {}
        self.joined: dict = {}
        #: (ids of lone results, efficiency) -> those results joined and slowed
        #: (`designer.workload.lone.slowed`), kept like `joined`.
        self.slowed: dict = {}
        self.rates = None
        self.alone: dict[int, tuple] = {}
        #: Per set of jobs run together (their ids): (the jobs, their `events.Run`,
        #: the ids of the lone collectives it used).
        self.runs: dict[tuple[int, ...], tuple] = {}
        #: Per job (its id): (the job, its run's start times, its stages, its
        #: timeline's columns).
        self.told: dict[int, tuple] = {}
        #: The last merged timeline: (the jobs' timeline columns, (the merged
        #: timeline, its columns)), used again while every job's columns are the same.
        self.merged: tuple | None = None
        #: Per job (its id): (the job, the lone collectives it used, the arcs they load,
        #: one of its tasks per (collective, groups, size), which `_job_links` asks again
        #: when some of those collectives were dropped).
        self.links: dict[int, tuple] = {}
        #: The results the last `carry` dropped, by key (alive until `keep`, so that
        #: their ids stay theirs), and the arcs whose capacity or family changed: a
        #: result solved again that comes out the same as the one dropped is that one
        #: again (`revive`), and what was built on it stays.
        self.before: dict = {}
        self.changed: np.ndarray | None = None
        #: Per job validated (its id): (the job, its GPUs).
        self.checked: dict[int, tuple] = {}
        self.last: dict[str, int] = {}
        """What the last `carry` kept and dropped (for tests and benchmarks)."""

    def carry(self, snap, settings: tuple = ()) -> dict:
        """The lone collectives still valid on ``snap`` (a new dict), simulated with the
        same ``settings``.  What was built on the others (`joined`, `alone`, `runs`,
        `links`) is checked against the results in use when asked and cut
        down by `keep`."""
        old, known = self.snap, self.known
        self.before, self.changed = {}, None
        if old is snap and settings == self.settings:
            self.last = {"kept": len(known), "dropped": 0}
            return dict(known)
        hop = _hop(snap)
        self._pending_hop = (snap, hop)  # `keep` takes it for this snapshot
        if (
            old is None
            or settings != self.settings
            or not _same_structure(old, snap)
            or hop != self.hop
        ):
            self.last = {"kept": 0, "dropped": len(known)}
            self.joined, self.rates, self.alone, self.runs = {}, None, {}, {}
            self.slowed = {}
            self.links, self.told, self.merged = {}, {}, None
            return {}
        changed = (old.arc_cap != snap.arc_cap) | (old.arc_family != snap.arc_family)
        moved = changed & (
            (old.arc_family != snap.arc_family) | (old.arc_cap <= 0) | (snap.arc_cap <= 0)
        )
        bad_arc = changed & ~moved
        bad_node = np.zeros(snap.n_nodes, dtype=bool)
        bad_node[snap.arc_src[moved]] = True
        bad_node[snap.arc_dst[moved]] = True
        bad_arc |= bad_node[snap.arc_src] | bad_node[snap.arc_dst]
        kept = {
            k: v for k, v in known.items() if v.touched is not None and not bad_arc[v.touched].any()
        }
        self.last = {"kept": len(kept), "dropped": len(known) - len(kept)}
        self.before = {k: v for k, v in known.items() if k not in kept}
        self.changed = changed
        if self.rates is not None:
            # Its solutions hold for sets of phases whose arcs kept their capacities:
            # phases of kept results (and of revived ones, which cross no changed arc),
            # the only ones it can be asked about again.
            self.rates.capacity = np.asarray(snap.arc_cap, dtype=float)
        return kept

    def revive(self, key, lone):
        """``lone`` (``key``'s result solved again on the new snapshot), or the result
        `carry` dropped for ``key`` when it is the same: every figure and flow equal,
        the same arcs touched, and no arc of its phases changed."""
        old = self.before.get(key)
        if old is None or old.touched is None or lone.touched is None:
            return lone
        if any(self.changed[p.arcs].any() for p in old.phases) or not _same_lone(old, lone):
            return lone
        return old

    def still(self, snap, key: tuple):
        """The result `carry` dropped for ``key`` (``(collective, ranks, size)``) when
        the edit left it as it was (see the module), else None; asks the route memo
        for the group's plans on ``snap``, which a solve then finds ready."""
        old = self.before.get(key)
        if old is None or old.touched is None or self.changed is None:
            return None
        if self.changed[old.touched].any() or any(self.changed[p.arcs].any() for p in old.phases):
            return None
        collective, ranks, _size = key
        try:
            self.routes.plans(snap, np.asarray(ranks, dtype=np.int64), collective)
        except SolverError:
            return None
        return old if self.routes.last.get("unchanged") else None

    def plan(self, snap, key: tuple) -> None:
        """Have the route memo plan ``key``'s group (``(collective, ranks, size)``) on
        ``snap``, for a result made without solving (moved from twin servers): `still`
        then finds its plans after the next edit, as it does for a solved group's."""
        collective, ranks, _size = key
        with contextlib.suppress(SolverError):  # a solve would have said so: nothing kept
            self.routes.plans(snap, np.asarray(ranks, dtype=np.int64), collective)

    def keep(self, snap, settings: tuple, known: dict, joined: dict, rates,
             jobs: tuple, sets: set[tuple[int, ...]], slowed: dict | None = None) -> None:
        """Remember what a simulation of ``snap`` built, and forget what was built on
        results no longer in use, and for jobs (``jobs``) and sets of jobs (``sets``,
        their ids) this simulation no longer has."""
        if snap is not self.snap:
            pending = self._pending_hop
            self.hop = pending[1] if pending is not None and pending[0] is snap else _hop(snap)
        self._pending_hop = None
        self.snap, self.settings = snap, settings
        self.known, self.rates = dict(known), rates
        ids = {id(v) for v in known.values()}  # what was built on these holds
        mine = {id(job) for job in jobs}
        self.joined = {k: v for k, v in joined.items() if ids.issuperset(k)}
        self.slowed = {k: v for k, v in (slowed or {}).items() if ids.issuperset(k[0])}
        self.alone = {
            k: v for k, v in self.alone.items() if k in mine and ids.issuperset(v[2])
        }
        self.runs = {
            k: v
            for k, v in self.runs.items()
            if k in sets and ids.issuperset(v[2])
        }
        self.links = {k: v for k, v in self.links.items() if ids.issuperset(v[1])}
        self.before, self.changed = {}, None


def _hop(snap) -> float:
    from designer.solver import switch_latency

    return switch_latency(snap)


def _same_lone(a, b) -> bool:
    """Whether two results of one collective alone are the same, figure for figure."""
    if (a.collective, a.algorithm, a.protocol, a.time_s, a.fixed_s, a.bandwidth_s,
            a.pipelined, len(a.phases)) != (b.collective, b.algorithm, b.protocol, b.time_s,
                                            b.fixed_s, b.bandwidth_s, b.pipelined,
                                            len(b.phases)):
        return False
    if not np.array_equal(np.unique(a.touched), np.unique(b.touched)):
        return False
    return all(
        p.seconds == q.seconds
        and all(
            np.array_equal(getattr(p, f), getattr(q, f))
            for f in ("pair_flow", "pair_arc", "pair_weight", "pace_GBps", "arcs", "load_GBps")
        )
        for p, q in zip(a.phases, b.phases, strict=True)
    )


def _same_structure(old, snap) -> bool:
    """Whether ``snap`` has ``old``'s nodes, arcs, GPUs and routing (capacities and
    failures aside)."""
    return (
        old.routing == snap.routing
        and old.n_arcs == snap.n_arcs
        and old.n_nodes == snap.n_nodes
        and tuple(old.node_ids) == tuple(snap.node_ids)
        and np.array_equal(old.arc_src, snap.arc_src)
        and np.array_equal(old.arc_dst, snap.arc_dst)
        and np.array_equal(old.gpus, snap.gpus)
    )

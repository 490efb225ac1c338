"""Routes carried from one snapshot of a design to the next: `RouteMemo`.

The GUI solves a new snapshot after every what-if edit, and an edit touches a few links
of a design of a hundred thousand.  A caller that solves snapshot after snapshot of ONE
design keeps a `RouteMemo` and passes it to `pipeline.solve_collective` (``memo=``); on
each new snapshot the memo works out what changed since the one it last saw
(`routing.change.diff_snapshots`), rebases its router, and patches the plans it made
then instead of planning again: every row of every phase's route tables
(`flows.recipe`) is kept as it is (arc ids do not change when links fail or come back:
see `designer.solver.snapshot.build`) unless the change can alter it, and the rows it can
alter are recomputed by the new router.  A patched
plan is assembled by the code that assembles a fresh one, so it is the same plan, array
for array.

What an edit invalidates:

* an adaptive DAG (NVLink spray or fabric route between edge switches) whose arcs'
  capacities changed: the split of a hop uses the capacities of its next arcs, all of
  which are in the route, and a capacity never moves a distance;
* every NVLink route of a domain where an NVLink arc changed in any way (whether the
  phase lists it as pairs or shares it among the flows that cross it);
* after a fail or restore, a fabric route (DAG or ECMP/static walk) that crosses a
  removed arc, towards a switch whose distances changed, or through a switch whose
  choice of next hops towards its target gained or lost an arc;
* ranks' ways to the fabric (access legs) when a changed link ends at their GPU, NIC or
  relay, or an NVLink arc changed and some rank relays over NVLink (PXN).

Anything else falls back to planning from scratch with the (rebased) router: nodes or
links added or removed, the routing setting changed, the ranks' NICs, domains or edge
switches changed, a phase with pairs that have no key (NVLS, back-to-back NICs), or a
recomputation that fails (the fresh plan then raises the genuine error).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver.snapshot.build import take_snapshot
>>> from designer.solver.pipeline import solve_collective
>>> topo = build_template("leaf-spine")
>>> memo = RouteMemo()
>>> a = solve_collective(take_snapshot(topo), sizes=[1 << 30], memo=memo)
>>> lid = next(k for k in take_snapshot(topo).link_ids if "spine" in k)
>>> _ = topo.update_link(lid, count=2)
>>> b = solve_collective(take_snapshot(topo), sizes=[1 << 30], memo=memo)
>>> memo.last["patched"] > 0, memo.last["fresh"]
(True, 0)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, fields, is_dataclass, replace

import numpy as np

from designer.solver.arrays.ragged import RouteBatch, distinct
from designer.solver.errors import SolverError
from designer.solver.flows.collectives import PLANNERS, Plan, candidate_plans
from designer.solver.flows.phases import Phase
from designer.solver.flows.recipe import Piece, SharedPiece, materialize, splice
from designer.solver.routing.change import SnapshotChange, diff_snapshots
from designer.solver.routing.middles import Middles
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import NVLINK, Snapshot

__all__ = ["RouteMemo"]


@dataclass(eq=False)
class _Entry:
    """The plans of one (collective, algorithm, ranks) on one snapshot, and the outcome
    of each planner tried (a plan or its error)."""

    snap: Snapshot
    outcomes: dict
    plans: list
    nbytes: int


_SCALARS = frozenset((str, int, float, bool))


def held_nbytes(obj) -> int:
    """Bytes of the numpy arrays ``obj`` holds through dataclass fields, containers
    and instance attributes (each buffer counted once; a view counts its base), not
    looking into the snapshot or router the plans were made from (shared by all)."""
    seen: set[int] = set()
    buffers: set[int] = set()
    total = 0
    todo = [obj]
    while todo:
        o = todo.pop()
        if o is None or id(o) in seen or isinstance(o, (Snapshot, Router, str, bytes, int,
                                                         float, type)):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            while isinstance(o.base, np.ndarray):
                o = o.base
            if id(o) not in buffers:
                buffers.add(id(o))
                total += o.nbytes
        elif isinstance(o, (list, tuple, set, frozenset)):
            if not set(map(type, o)) <= _SCALARS:  # (a phase's flow labels: skipped whole)
                todo.extend(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
        elif is_dataclass(o):
            todo.extend(getattr(o, f.name) for f in fields(o))
        elif hasattr(o, "__dict__") and not callable(o):
            todo.extend(vars(o).values())
    return total


class RouteMemo:
    """What was routed for the last snapshot of a design, reused for the next one.

    Keep one per design (the GUI: per document topology, dropped when the document's
    topology is replaced) and pass it to every `pipeline.solve_collective` of that
    design's snapshots.  Snapshots of another design, or of this one after nodes or
    links were added or removed, are routed from scratch (and start the memo afresh),
    so a stale memo costs time, never correctness.  Calls are serialised by a lock.

    Parameters
    ----------
    seed : int
        Seed of the ECMP hash (as `Router`).
    max_plans : int
        (collective, algorithm, ranks) plan sets kept, least recently used dropped.
    max_bytes : int
        Bytes of arrays the kept plan sets may hold together (`nbytes`); the least
        recently used go first, the newest is always kept.  An all-to-all's plans on
        1,024 GPUs hold ~90 MB, so the count alone would let a few scenarios hold
        hundreds of megabytes.

    Attributes
    ----------
    last : dict
        What the last `plans` call did: ``patched`` and ``fresh`` plan counts,
        ``failed`` planners (not applicable), ``rows`` recomputed, ``change``:
        "same", "none" (nothing routed changed), "capacity", "live" (links failed or
        restored) or "new" (from scratch), and ``unchanged``: the plans are the
        previous snapshot's, array for array (each patched with nothing computed anew,
        the same planners failing), so a result computed from them alone stands if none
        of their arcs changed capacity.
    """

    def __init__(self, seed: int = 0, max_plans: int = 8, max_bytes: int = 256 << 20):
        self.seed = seed
        self.max_plans = max_plans
        self.max_bytes = max_bytes
        self._lock = threading.RLock()
        self._snap: Snapshot | None = None
        self._router: Router | None = None
        self._prev: tuple[Snapshot, Router, SnapshotChange] | None = None
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self.last: dict = {}

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the kept plans hold (arrays shared by two plan sets
        counted in each)."""
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())

    def clear(self) -> None:
        """Forget everything (the next snapshot is routed from scratch)."""
        with self._lock:
            self._snap = self._router = self._prev = None
            self._entries.clear()

    def router(self, snap: Snapshot) -> Router:
        """The `Router` of ``snap``: rebased from the last snapshot's when both are of
        one design (`Router.rebased`), else new."""
        with self._lock:
            if snap is self._snap:
                return self._router
            change = None if self._snap is None else diff_snapshots(self._snap, snap)
            if change is None:
                router, self._prev = Router(snap, self.seed), None
                self._entries.clear()
            else:
                router = self._router.rebased(change)
                self._prev = (self._snap, self._router, change)
                # Plans of older snapshots can no longer be patched: let them go.
                for key in [k for k, e in self._entries.items() if e.snap is not self._snap]:
                    del self._entries[key]
            self._snap, self._router = snap, router
            return router

    def plans(self, snap: Snapshot, ranks: np.ndarray, collective: str,
              algorithm: str = "auto") -> list[Plan]:
        """`collectives.candidate_plans` for ``snap``, patched from the previous snapshot's
        plans of the same (collective, algorithm, ranks) where they are still valid."""
        with self._lock:
            router = self.router(snap)
            ranks = np.asarray(ranks, dtype=np.int64)
            key = (collective, algorithm, ranks.tobytes())
            entry = self._entries.get(key)
            if entry is not None and entry.snap is snap:
                self._entries.move_to_end(key)
                self.last = {"patched": 0, "fresh": 0, "failed": 0, "rows": 0,
                             "change": "same", "unchanged": False}
                return list(entry.plans)
            patcher = None
            if entry is not None and self._prev is not None and entry.snap is self._prev[0]:
                patcher = _Patcher(self._prev[1], router, self._prev[2])
            stats = {"patched": 0, "fresh": 0, "failed": 0, "rows": 0,
                     "change": "new" if patcher is None else patcher.kind}
            outcomes: dict = {}

            def build(name: str) -> Plan:
                old = None if patcher is None else entry.outcomes.get(name)
                if isinstance(old, Plan) and patcher.can_patch(old):
                    try:
                        plan = patcher.plan(old)
                    except SolverError:
                        plan = None      # planned afresh below, which names the culprit
                    if plan is not None:
                        outcomes[name] = plan
                        stats["patched"] += 1
                        return plan
                try:
                    plan = PLANNERS[name](router, ranks, collective)
                except SolverError as exc:
                    # Its message, kept without the traceback: the frames would hold the
                    # planner's arrays and this memo itself for as long as the entry.
                    outcomes[name] = SolverError(str(exc))
                    stats["failed"] += 1
                    raise
                outcomes[name] = plan
                stats["fresh"] += 1
                return plan

            stats["unchanged"] = False
            try:
                plans = candidate_plans(router, ranks, collective, algorithm, build=build)
            finally:
                stats["rows"] = 0 if patcher is None else patcher.rows
                self.last = stats
            # A patch that changed nothing hands back the very plan (`_Patcher.plan`).
            same = entry is not None and outcomes.keys() == entry.outcomes.keys() and all(
                v is entry.outcomes[k] if isinstance(v, Plan)
                else not isinstance(entry.outcomes[k], Plan)
                for k, v in outcomes.items()
            )
            stats["unchanged"] = same
            nbytes = entry.nbytes if same else held_nbytes(outcomes) if self.max_plans else 0
            self._entries[key] = _Entry(snap, outcomes, plans, nbytes)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_plans or (
                    len(self._entries) > 1 and self.nbytes > self.max_bytes):
                self._entries.popitem(last=False)
            if self._prev is not None and not any(
                    e.snap is self._prev[0] for e in self._entries.values()):
                self._prev = None   # every plan is patched: the old snapshot may go
            return list(plans)


def _marked_entries(rows: RouteBatch, marked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, arc)`` of every entry of ``rows`` whose arc is ``marked``."""
    entry = np.flatnonzero(marked[rows.arcs])
    return np.searchsorted(rows.ptr, entry, side="right") - 1, rows.arcs[entry]


class _Patcher:
    """Patches plans of ``change.old`` (routed by ``old``) into plans of ``change.new``
    (routed by ``new``): see the module docstring for what is recomputed."""

    def __init__(self, old: Router, new: Router, change: SnapshotChange):
        self.old, self.new, self.change = old, new, change
        self.kind = ("none" if change.empty else "live" if change.live else "capacity")
        self.rows = 0
        s = change.new
        # Per arc whether a route crossing it must be recomputed: its link died, or
        # (a DAG's split) its capacity changed.
        self.gone_arc = np.zeros(s.n_arcs, dtype=bool)
        self.gone_arc[change.removed] = True
        self.bad_arc = self.gone_arc.copy()
        self.bad_arc[change.reweighed] = True
        self.nv_changed = change.touches(NVLINK)
        self._classes_same: bool | None = None
        self._dirty_dom: np.ndarray | None = None
        self._fabric: tuple | None = None

    # ---------------------------------------------------------------- whole plans
    def can_patch(self, plan: Plan) -> bool:
        if not self.change.same_ranks:
            return False
        recipes = [ph.recipe for ph in plan.phases]
        if any(r is None or not r.patchable for r in recipes):
            return False
        if self.nv_changed and any(r.has_raw for r in recipes):
            return False  # its raw pieces read NVLink arcs
        needs_ranks = any(any(s.nv is None for s in r.shared)
                          or any(p.kind != "nv" for p in r.pieces) for r in recipes)
        return not needs_ranks or self._same_classes()

    def _same_classes(self) -> bool:
        """Whether every rank has the same NIC, NIC cable and edge switch as before, so
        that transfers fall in the same classes of edge switches."""
        if self._classes_same is None:
            a, b = self.old.rank_links(), self.new.rank_links()
            up = np.maximum(a.up, 0)
            self._classes_same = b is a or bool(
                np.array_equal(a.nic, b.nic) and np.array_equal(a.leaf, b.leaf)
                and np.array_equal(a.ok, b.ok) and np.array_equal(a.leaves, b.leaves)
                and np.array_equal(a.leaf_code, b.leaf_code)
                and np.array_equal(np.where(a.up >= 0, up, -1), b.up))
        return self._classes_same

    def plan(self, plan: Plan) -> Plan:
        """``plan`` patched; the very object when no phase changed."""
        phases = tuple(self.phase(ph) for ph in plan.phases)
        if all(a is b for a, b in zip(phases, plan.phases, strict=True)):
            return plan
        return replace(plan, phases=phases)

    def phase(self, ph: Phase) -> Phase:
        """``ph`` patched; the very object when none of its pieces changed."""
        rec = ph.recipe
        pieces = tuple(self.piece(p) for p in rec.pieces)
        shared = tuple(self.shared(s) for s in rec.shared)
        same_pairs = all(a is b for a, b in zip(pieces, rec.pieces, strict=True))
        if same_pairs and all(a is b for a, b in zip(shared, rec.shared, strict=True)):
            return ph
        # Rows of the same lengths taken by the same flows: the same flow of each pair.
        same_flows = all(a.flows is b.flows and a.rows.ptr is b.rows.ptr
                         for a, b in zip(pieces, rec.pieces, strict=True))
        return materialize(replace(rec, pieces=pieces, shared=shared), ph.name,
                           ph.flow_bytes, ph.flow_label, ph.steps, ph.n_flows,
                           self.change.new.n_arcs, Phase,
                           pairs=(ph.pair_flow, ph.pair_arc, ph.pair_weight)
                           if same_pairs else None,
                           pair_flow=ph.pair_flow if same_flows else None)

    # ---------------------------------------------------------------- pieces
    def piece(self, p: Piece) -> Piece:
        if p.kind == "raw":  # NVLink arcs alone, unchanged (`can_patch`)
            return p
        if p.kind == "legs":
            legs = self.new.access_legs()
            if legs is self.old._legs_started():
                return p  # the ranks' ways to the fabric kept (`Router.rebased`)
            return replace(p, rows=legs.take(p.keys[0]))
        rows = p.rows
        if p.kind == "nv":
            rows = self._nv_patched(rows, *p.keys)
        else:  # walk
            la, lb, cls, wkeys, dest, mode = p.keys
            dirty = np.zeros(len(rows.hops), dtype=bool)
            if self.change.live:
                dirty = self._rows_crossing(rows, self.gone_arc)
                dirty |= self._fabric_dirty(rows, la[cls], lb[cls])
            if dirty.any():
                at = np.flatnonzero(dirty)
                uniq, sub = np.unique(cls[at], return_inverse=True)
                new = self.new.class_walks(la[uniq], lb[uniq], sub.reshape(-1), wkeys[at],
                                           dest[at], mode)
                rows = self._splice(rows, at, new)
        return p if rows is p.rows else replace(p, rows=rows)

    def shared(self, s: SharedPiece) -> SharedPiece:
        if s.nv is not None:   # NVLink sprays, as the ``nv`` pieces
            nv = self._nv_patched(s.nv, *s.ends)
            return s if nv is s.nv else s.with_nv(nv)
        legs = self.new.access_legs() if s.n_legs else None
        old_legs = self.old._legs_started() if s.n_legs else None
        fab, mid = s.fab, None
        if fab is not None:
            dirty = self._rows_crossing(fab, self.bad_arc)
            if s.mid is not None:   # a class whose middle crosses one
                of = s.mid.of
                hit = np.append(self._rows_crossing(s.mid.table, self.bad_arc), False)
                dirty |= hit[of]    # (-1: the False at the end)
            if self.change.live:   # the class rows with their middles
                own = fab.done() if fab.arcs is None else fab
                dirty |= self._fabric_dirty(own, s.la, s.lb, s.mid)
            dirty &= s.la != s.lb
            if dirty.any():
                at = np.flatnonzero(dirty)
                new = self.new.fabric_dags(s.la[at], s.lb[at], split=s.mid is not None)
                if s.mid is not None:  # new own rows; the middles canonical again
                    mid = s.mid.spliced(at, new.middles)
                    new = new.own
                self.rows += len(at)
                if legs is old_legs:  # the legs stay: splice the table once
                    return s.spliced(at, new, mid)
                fab = splice(fab, at, new)
        if fab is s.fab and legs is old_legs:
            return s
        return s.with_tables(legs, fab, old_legs, mid)

    @staticmethod
    def _rows_crossing(rows: RouteBatch, arc_mask: np.ndarray) -> np.ndarray:
        """Rows with an arc marked in ``arc_mask``."""
        out = np.zeros(len(rows.hops), dtype=bool)
        hit = np.flatnonzero(arc_mask[rows.arcs])
        if hit.size:
            out[np.searchsorted(rows.ptr, hit, side="right") - 1] = True
        return out

    def _splice(self, rows: RouteBatch, at: np.ndarray, new: RouteBatch) -> RouteBatch:
        self.rows += len(at)
        return splice(rows, at, new)

    # ---------------------------------------------------------------- NVLink
    def _nv_patched(self, rows: RouteBatch, a: np.ndarray, b: np.ndarray) -> RouteBatch:
        """NVLink sprays ``rows`` (row ``i`` from node ``a[i]`` to ``b[i]``) with the rows
        the change can alter recomputed: in a domain whose NVLink changed, or crossing
        a removed arc; the very table when none."""
        dirty = self._nv_dirty(a)
        if self.change.live:
            dirty |= self._rows_crossing(rows, self.gone_arc)
        if not dirty.any():
            return rows
        at = np.flatnonzero(dirty)
        return self._splice(rows, at, self.new.nvlink_routes(a[at], b[at]))

    def _nv_dirty(self, a: np.ndarray) -> np.ndarray:
        """Rows (NVLink sprays from nodes ``a``) in a domain where an NVLink arc changed."""
        if not self.nv_changed:
            return np.zeros(len(a), dtype=bool)
        if self._dirty_dom is None:
            ch, o, n = self.change, self.change.old, self.change.new
            dom0, dom1 = self.old.node_domains(), self.new.node_domains()
            removed = ch.removed[o.arc_family[ch.removed] == NVLINK]
            now = np.concatenate([ch.added, ch.reweighed])
            now = now[n.arc_family[now] == NVLINK]
            doms = np.concatenate([dom0[o.arc_src[removed]], dom0[o.arc_dst[removed]],
                                   dom1[n.arc_src[now]], dom1[n.arc_dst[now]]])
            self._dirty_dom = np.zeros(n.n_domains + 1, dtype=bool)
            self._dirty_dom[doms[doms >= 0]] = True
            self._dom1 = dom1
        d = self._dom1[a]
        return np.where(d >= 0, self._dirty_dom[d], True)

    # ---------------------------------------------------------------- fabric
    def _fabric_dirty(self, rows: RouteBatch, la: np.ndarray, lb: np.ndarray,
                      mid: Middles | None = None) -> np.ndarray:
        """After a fail or restore: rows (routes from switch ``la[i]`` to ``lb[i]``) that
        pass a switch whose next hops towards the target may differ: the switch or one
        of its neighbours is at another distance from the target, or a changed arc
        x -> y out of it leads one step closer (``d(y) = d(x) - 1``).  With ``mid``,
        ``rows`` are the classes' own rows and each also crosses its middle (read
        from the middles' table, not written out per class)."""
        differ = la != lb
        fab0, fab1 = self.old.fabric_groups(), self.new.fabric_groups()
        if not np.array_equal(fab0.switches, fab1.switches):
            return differ
        sw = self.new.is_switch
        dirty = differ & ~(sw[la] & sw[lb])       # not between switches: route again
        sel = np.flatnonzero(differ & ~dirty)
        if not sel.size:
            return dirty
        s = self.change.new
        x, y = self._switch_arcs_changed(fab1)
        # Switches near a distance change, per target whose distances changed.
        targets, t_of = np.unique(lb[sel], return_inverse=True)
        g0, g1 = fab0.groups_of(targets), fab1.groups_of(targets)
        # Compared per pair of groups (few): rows kept across the edit are the same array.
        pair, pair_of = np.unique(g0 * (int(g1.max()) + 1) + g1, return_inverse=True)
        first = np.zeros(len(pair), dtype=np.int64)
        first[pair_of.reshape(-1)[::-1]] = np.arange(len(targets))[::-1]
        changed = np.array([not (fab0.row(g0[i]) is fab1.row(g1[i]) or np.array_equal(
            fab0.row(g0[i]), fab1.row(g1[i]))) for i in first.tolist()], dtype=bool)
        moved_t = np.flatnonzero(changed[pair_of.reshape(-1)])
        near = np.zeros((len(moved_t), len(fab1.switches)), dtype=bool)
        if moved_t.size:
            moved = fab0.table()[g0[moved_t]] != fab1.table()[g1[moved_t]]
            near |= moved
            ix, iy = fab1.index[x], fab1.index[y]
            u = np.concatenate([fab1.s_src, ix, iy])
            v = np.concatenate([fab1.s_dst, iy, ix])
            t_at, arc_at = np.nonzero(moved[:, v])
            near[t_at, u[arc_at]] = True
        # Only route entries leaving a switch that is near a change or has a changed arc
        # need a closer look.
        watch = np.union1d(x, fab1.switches[near.any(axis=0)])
        pos, _ = self.new.net.neighbours(watch)
        marked = np.zeros(s.n_arcs, dtype=bool)
        marked[self.new.net.arcs[pos]] = True
        row, arc = _marked_entries(rows, marked)
        if mid is not None:
            mrow, marc = _marked_entries(mid.table, marked)
            # Each marked middle entry, once for every class crossing that middle.
            crossing = np.flatnonzero(mid.of >= 0)
            by = crossing[np.argsort(mid.of[crossing], kind="stable")]
            lo = np.searchsorted(mid.of[by], mrow)
            hi = np.searchsorted(mid.of[by], mrow, side="right")
            k = hi - lo
            take = np.repeat(lo - np.cumsum(k) + k, k) + np.arange(int(k.sum()))
            row = np.concatenate([row, by[take]])
            arc = np.concatenate([arc, np.repeat(marc, k)])
        keep = differ[row] & ~dirty[row]
        row, arc = row[keep], arc[keep]
        pairs = distinct(row * s.n_nodes + s.arc_src[arc])
        row, node = pairs // s.n_nodes, pairs % s.n_nodes
        if moved_t.size and row.size:
            slot = np.full(len(targets), -1, dtype=np.int64)
            slot[moved_t] = np.arange(len(moved_t))
            t_row = np.full(len(la), -1, dtype=np.int64)
            t_row[sel] = slot[t_of.reshape(-1)]
            at = t_row[row]
            hit = at >= 0
            hit[hit] = near[at[hit], fab1.index[node[hit]]]
            dirty[row[hit]] = True
        if not x.size or not row.size:
            return dirty
        # Changed arcs out of a switch a route passes, leading one step closer.
        order = np.argsort(x, kind="stable")
        xs, ys = x[order], y[order]
        lo, hi = np.searchsorted(xs, node), np.searchsorted(xs, node, side="right")
        k = hi - lo
        row, node = np.repeat(row, k), np.repeat(node, k)
        nxt = ys[np.repeat(lo, k) + (np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k))]
        grp = fab1.groups_of(lb[row])
        dx, dy = fab1.node_dist(grp, node), fab1.node_dist(grp, nxt)
        closer = (nxt == lb[row]) | ((dy >= 1) & (dy == dx - 1))
        dirty[row[closer]] = True
        return dirty

    def _switch_arcs_changed(self, fab) -> tuple[np.ndarray, np.ndarray]:
        if self._fabric is None:
            ch, o, n = self.change, self.change.old, self.change.new
            x = np.concatenate([o.arc_src[ch.removed], n.arc_src[ch.added]]).astype(np.int64)
            y = np.concatenate([o.arc_dst[ch.removed], n.arc_dst[ch.added]]).astype(np.int64)
            keep = (fab.index[x] >= 0) & (fab.index[y] >= 0)
            self._fabric = (x[keep], y[keep])
        return self._fabric

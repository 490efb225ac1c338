"""Fabric route tables reused across many flows: groups of edge switches that share their
switch neighbours (one breadth-first search per group), and batched walks over them.
Used by `router.Router` (NVLink domains are in `routing.nvlink`)."""

from __future__ import annotations

import copy
import itertools
from typing import TYPE_CHECKING

import numpy as np

from designer.solver.arrays.keyed_rows import KeyedRows
from designer.solver.arrays.ragged import (
    RouteBatch,
    _stack,
    distinct,
    mix64,
    ragged_arange,
    run_heads,
    split_by_capacity,
    stable_argsort,
    unique_inverse,
)
from designer.solver.errors import SolverError
from designer.solver.routing.subgraph import bitwise_bfs, sorted_ptr
from designer.solver.routing.walks import walk_shared
from designer.solver.tuning import current

if TYPE_CHECKING:
    from designer.solver.routing.middles import SplitDags
    from designer.solver.routing.subgraph import _Subgraph
    from designer.solver.snapshot.build import Snapshot


def _reweighed(table: RouteBatch, arcs: np.ndarray, cap: np.ndarray) -> RouteBatch:
    """``table`` (rows of next-hop arcs split by capacity) with the splits of the rows
    that cross one of ``arcs`` recomputed from ``cap``."""
    mask = np.zeros(len(cap), dtype=bool)
    mask[arcs] = True
    bad = np.flatnonzero(mask[table.arcs])
    if not bad.size:
        return table
    rows = distinct(np.searchsorted(table.ptr, bad, side="right") - 1)
    lengths = table.lengths[rows]
    pos = ragged_arange(table.ptr[rows], lengths)
    weights = table.weights.copy()
    weights[pos] = split_by_capacity(table.arcs[pos], lengths, cap).weights
    return RouteBatch(table.ptr, table.arcs, weights, table.hops)


# ----------------------------------------------------------------- fabric groups
class _FabricGroups:
    """Distances to target switches, one breadth-first search (over switches only) per
    group of targets with the same switch neighbours, and batched DAG walks on them.

    Only switches forward traffic (a dual-homed NIC is never a transit hop, as in
    `Router.fabric_dag`), so walks over switch-to-switch arcs are exact whenever both ends
    of a pair are switches; `covers` says where; elsewhere the router walks pair by pair.
    """

    def __init__(self, snap: Snapshot, net: _Subgraph, is_switch: np.ndarray):
        self._bind(snap, net, is_switch)
        s, g, sw = self.snap, self.net, self.is_switch
        src = s.arc_src[g.arcs]
        # Switches with fabric arcs (not NVSwitches) numbered 0..S-1, and the CSR of the
        # arcs between them (in that numbering; the net CSR is sorted by source node, so
        # this one is too).
        self.switches = np.flatnonzero(sw & (np.diff(g.ptr) > 0))
        self.index = np.full(s.n_nodes, -1, dtype=np.int64)
        self.index[self.switches] = np.arange(len(self.switches))
        self.switch_arc = sw[src] & sw[g.dst]
        self.s_src = self.index[src[self.switch_arc]]
        self.s_dst = self.index[g.dst[self.switch_arc]]
        self.s_arc = g.arcs[self.switch_arc]
        self.s_ptr = sorted_ptr(self.s_src, len(self.switches))
        self._group: dict[int, int] = {}          # target switch -> group
        self._group_key: dict[bytes, int] = {}    # switch neighbours -> group
        self._rows: list[np.ndarray] = []         # per group: distance of every switch
        self._table: np.ndarray | None = None
        self._hops = KeyedRows(self._hops_space())   # see `_next`
        self._into = None                         # see `_arcs_into`
        self._pair_keys: tuple | None = None      # see `arc_pairs`
        self.dense_passes = 0                     # see `downhill`

    def _bind(self, snap: Snapshot, net: _Subgraph, is_switch: np.ndarray) -> None:
        """Keep the arrays the groups read (the snapshot, the fabric's subgraph and which
        nodes are switches), never the router that keeps the groups: a reference back
        would make a cycle that only the cyclic garbage collector frees."""
        self.snap, self.net, self.is_switch = snap, net, is_switch

    def rebased(self, snap: Snapshot, net: _Subgraph, is_switch: np.ndarray, change,
                net_reweighed: np.ndarray | None = None) -> _FabricGroups:
        """These groups for the snapshot ``change.new`` (a `change.SnapshotChange` from
        this one's snapshot), its fabric subgraph ``net`` and switches ``is_switch``.

        Distances ignore capacities: after a capacity edit every row is kept, and so are
        the next-hop rows (they move to the new groups), with the splits of the rows
        crossing an arc of ``net_reweighed`` recomputed.  After a fail or restore the
        switches are numbered anew; when the numbering is the same, a row is searched
        again only if a switch lost every arc on its shortest paths (``d(x) = d(y) +
        1``) or an added arc shortens one (``d(y) + 1 < d(x)``): otherwise every
        distance still satisfies the breadth-first recurrence, so none changed.
        Targets at an end of a changed switch-to-switch arc are grouped again (their
        switch neighbours may differ).
        """
        if not change.live:
            out = copy.copy(self)
            out._bind(snap, net, is_switch)
            out._group, out._group_key = dict(self._group), dict(self._group_key)
            out._rows = list(self._rows)
            hops, self._hops = self._hops, KeyedRows(self._hops_space())
            if net_reweighed is not None and net_reweighed.size:
                hops.table = _reweighed(hops.table, net_reweighed, snap.arc_cap)
            out._hops = hops
            return out
        out = _FabricGroups(snap, net, is_switch)
        out._hops.take_map(self._hops)
        if not np.array_equal(out.switches, self.switches):
            return out
        o, n = change.old, change.new
        rx, ry = self.index[o.arc_src[change.removed]], self.index[o.arc_dst[change.removed]]
        ax, ay = self.index[n.arc_src[change.added]], self.index[n.arc_dst[change.added]]
        # Switch-to-switch arcs only (both ends numbered, and a fabric arc: NVSwitches
        # and other planes have no number or no such arc).
        sw_rem = (rx >= 0) & (ry >= 0) & np.isin(change.removed, self.s_arc)
        sw_add = (ax >= 0) & (ay >= 0) & np.isin(change.added, out.s_arc)
        rx, ry, ax, ay = rx[sw_rem], ry[sw_rem], ax[sw_add], ay[sw_add]
        table = self.table()
        flag = np.zeros(len(table), dtype=bool)
        if rx.size and table.size:
            g, k = np.nonzero((table[:, rx] == table[:, ry] + 1) & (table[:, ry] >= 1))
            x = rx[k]
            # Does x keep an arc one step closer (in the new graph)?
            lengths = out.s_ptr[x + 1] - out.s_ptr[x]
            pos = ragged_arange(out.s_ptr[x], lengths)
            owner = np.repeat(np.arange(len(x)), lengths)
            closer = table[g[owner], out.s_dst[pos]] == table[g[owner], x[owner]] - 1
            kept = np.bincount(owner[closer], minlength=len(x)) > 0
            flag[g[~kept]] = True
        if ax.size and table.size:
            dx, dy = table[:, ax], table[:, ay]
            flag |= ((dy >= 1) & ((dx < 0) | (dy + 1 < dx))).any(axis=1)
        out._group_key = dict(self._group_key)
        out._rows = list(self._rows)
        redo = np.flatnonzero(flag).tolist()
        if redo:
            key_of = {g: k for k, g in self._group_key.items()}
            fresh = out._bfs([np.frombuffer(key_of[g], dtype=np.int64) for g in redo])
            for g, row in zip(redo, fresh, strict=True):
                out._rows[g] = row
        touched = set(self.switches[np.concatenate([rx, ry, ax, ay])].tolist())
        out._group = {t: g for t, g in self._group.items() if t not in touched}
        return out

    def _hops_space(self) -> int:
        return 2 * len(self.switches) ** 2

    def row(self, group: int) -> np.ndarray:
        """Group ``group``'s distances (over switches); a row kept by `rebased` is the
        very array of the groups it was kept from."""
        return self._rows[group]

    def covers(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> np.ndarray:
        sw = self.is_switch
        return sw[leaf_a] & sw[leaf_b]

    # ---- distances
    def groups_of(self, targets: np.ndarray) -> np.ndarray:
        """Group of each target switch (computing the new groups' distances together)."""
        uniq, inverse = unique_inverse(targets, self.snap.n_nodes)
        new = [t for t in uniq.tolist() if t not in self._group]
        if new:
            at = np.array(new, dtype=np.int64)
            if self.arc_pairs()[1] and bool(np.all(self.index[at] >= 0)):
                # Each switch's switch neighbours are its arcs' far ends, in order and
                # each once already (`arc_pairs`).
                at = self.index[at]
                lo, hi = self.s_ptr[at], self.s_ptr[at + 1]
                nbr = self.s_dst
            else:
                g, n = self.net, self.snap.n_nodes
                pos, owner = g.neighbours(at)
                keep = self.switch_arc[pos]
                pairs = distinct(owner[keep] * n + g.dst[pos][keep])  # by target, then node
                owner, nbr = pairs // n, self.index[pairs % n]
                lo = np.searchsorted(owner, new)
                hi = np.searchsorted(owner, new, side="right")
            fresh: list[np.ndarray] = []
            for t, a, b in zip(new, lo.tolist(), hi.tolist(), strict=True):
                key = nbr[a:b].tobytes()
                grp = self._group_key.get(key)
                if grp is None:
                    grp = self._group_key[key] = len(self._rows) + len(fresh)
                    fresh.append(nbr[a:b])
                self._group[t] = grp
            if fresh:
                self._rows.extend(self._bfs(fresh))
                self._table = None
        return np.array([self._group[t] for t in uniq.tolist()], dtype=np.int64)[inverse]

    def _bfs(self, firsts: list[np.ndarray]) -> list[np.ndarray]:
        """Distances (over switches) to targets whose switch neighbours are ``firsts[i]``
        (`routing.subgraph.bitwise_bfs`, `Tuning.bfs_batch` searches at a time).

        A switch other than the target is as far from it as from the nearest of its
        switch neighbours plus one, so every target with these neighbours shares the
        result (its own entry is overridden to 0 where it matters)."""
        return bitwise_bfs(*self._arcs_into(), firsts, current().bfs_batch)

    def _arcs_into(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the switch-to-switch arcs by destination: each switch's sources."""
        if self._into is None:
            if self.net._symmetric:
                # Full-duplex links, masked per link: a switch's arcs in are the reverses
                # of its arcs out, so its sources are its out-neighbours (in another
                # order, which the OR of a search level does not see).
                self._into = (self.s_ptr, self.s_dst)
            else:
                order = np.argsort(self.s_dst, kind="stable")
                self._into = (sorted_ptr(self.s_dst[order], len(self.switches)),
                              self.s_src[order])
        return self._into

    def table(self) -> np.ndarray:
        """Group x switch distance matrix."""
        if self._table is None:
            self._table = np.stack(self._rows) if self._rows else np.zeros((0, 0), np.int32)
        return self._table

    def node_dist(self, grp: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Distance of ``nodes[i]`` in group ``grp[i]``'s table (-1 for non-switches)."""
        at = self.index[nodes]
        out = np.full(len(nodes), -1, dtype=np.int64)
        ok = at >= 0
        out[ok] = self.table()[grp[ok], at[ok]]
        return out

    def distance(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> np.ndarray:
        out = self.node_dist(self.groups_of(leaf_b), leaf_a)
        out[leaf_a == leaf_b] = 0
        return out

    # ---- next hops
    def downhill(self, grp: np.ndarray, node: np.ndarray) -> RouteBatch:
        """Next hops of switch ``node[i]`` (switch number) towards group ``grp[i]``: its
        arcs one step closer to the group's targets, in arc order (as
        `_Subgraph.next_arcs`), weighted by the split of `Router._dag_fractions`.

        Where the states cover most switches of each group, one pass per group serves
        them (`_downhill_dense`, unless `Tuning.dense_downhill` is off; ``dense_passes``
        counts the calls it served); else each state's own arcs are tested."""
        dist = self.table()
        flat, n_sw = dist.reshape(-1), dist.shape[1]
        lengths = self.s_ptr[node + 1] - self.s_ptr[node]
        dense = self._downhill_dense(grp, node, lengths) if current().dense_downhill \
            else None
        if dense is not None:
            self.dense_passes += 1
            return dense
        # Every arc of every state is tested: 10^7 entries at 131,072 GPUs (radix-128
        # switches).  In slices of states, the temporaries stay in cache instead of
        # being fresh memory the kernel must fault in, and int32 indexes halve them.
        itype = np.int32 if flat.size < 2**31 else np.int64
        step = max(1, current().downhill_slice // max(int(lengths.max(initial=1)), 1))
        arcs, counts = [], []
        for lo in range(0, len(node), step):
            nd, ln = node[lo:lo + step], lengths[lo:lo + step]
            pos = ragged_arange(self.s_ptr[nd], ln)
            owner = np.repeat(np.arange(len(nd), dtype=itype), ln)
            base = grp[lo:lo + step].astype(itype) * itype(n_sw)
            at = base + nd.astype(itype)
            keep = flat[base[owner] + self.s_dst[pos].astype(itype, copy=False)] \
                == flat[at][owner] - 1
            arcs.append(self.s_arc[pos[keep]])
            counts.append(np.bincount(owner[keep], minlength=len(nd)))
        return self._split(np.concatenate(arcs) if arcs else self.s_arc[:0],
                           np.concatenate(counts) if counts else np.zeros(0, np.int64))

    def _downhill_dense(self, grp: np.ndarray, node: np.ndarray, lengths: np.ndarray
                        ) -> RouteBatch | None:
        """`downhill` when the states, sorted by (group, switch), put most of their
        switches in every group (the cores of a three-tier fabric towards every pod):
        the switches' arcs are listed once, and each group tests them against one row
        of the distance table, with no per-state index arithmetic.  None otherwise."""
        n_sw = len(self.switches)
        if len(node) < 2:
            return None
        key = grp * n_sw + node
        if not bool(np.all(key[1:] > key[:-1])):
            return None
        nodes, which = unique_inverse(node, n_sw)
        u_len = self.s_ptr[nodes + 1] - self.s_ptr[nodes]
        heads = np.flatnonzero(run_heads(grp))
        if len(heads) * int(u_len.sum()) > 2 * int(lengths.sum()):
            return None   # sparse: testing each state's own arcs is less work
        pos = ragged_arange(self.s_ptr[nodes], u_len)
        owner = np.repeat(np.arange(len(nodes)), u_len)
        dst = self.s_dst[pos]
        dist = self.table()
        bounds = np.append(heads, len(node)).tolist()
        arcs, counts = [], []
        for lo, hi in itertools.pairwise(bounds):
            row = dist[grp[lo]]
            keep = row[dst] == (row[nodes] - 1)[owner]
            if hi - lo < len(nodes):     # the group's own switches only
                mine = np.zeros(len(nodes), dtype=bool)
                mine[which[lo:hi]] = True
                keep &= mine[owner]
            arcs.append(self.s_arc[pos[keep]])
            counts.append(np.bincount(owner[keep], minlength=len(nodes))[which[lo:hi]])
        return self._split(np.concatenate(arcs), np.concatenate(counts))

    def _split(self, arcs: np.ndarray, lengths: np.ndarray) -> RouteBatch:
        """Rows of next-hop arcs, each split in proportion to capacity."""
        return split_by_capacity(arcs, lengths, self.snap.arc_cap)

    def _next(self, nodes: np.ndarray, grp: np.ndarray, target: np.ndarray,
              dist: np.ndarray) -> tuple[np.ndarray, RouteBatch]:
        """Next-hop arcs of each ``nodes[i]`` towards ``target[i]`` (in group ``grp[i]``,
        at distance ``dist[i] >= 1``), with the adaptive split of `Router._dag_fractions`
        as weights.

        Returns ``(row, table)``: input ``i`` has the next hops ``table.route(row[i])``.
        """
        n_sw = len(self.switches)
        ident = np.where(dist == 1, n_sw + self.index[target], grp)
        rows = self._hops.rows(ident * n_sw + self.index[nodes], self._build_hops)
        return rows, self._hops.table

    def _build_hops(self, keys: np.ndarray) -> RouteBatch:
        """Next hops of states ``keys = ident * S + switch`` (`_hops`; ``S`` switches):
        before the last hop they depend on the switch and the target's group (``ident``
        = the group: `downhill`); at the last hop they are the switch's arcs into the
        target (``ident = S +`` the target's switch number).  The groups come first so
        that the states of a walk touch few pages of the key map."""
        n_sw = len(self.switches)
        ident, node = keys // n_sw, keys % n_sw
        inner = ident < n_sw
        return self._hops_of(node, np.where(inner, ident, -1), np.where(inner, -1, ident - n_sw))

    def _hops_of(self, node: np.ndarray, grp: np.ndarray, target: np.ndarray) -> RouteBatch:
        """Next hops of switch ``node[i]`` (switch number): towards group ``grp[i]``
        (`downhill`) where ``target[i] < 0``, else its arcs into switch ``target[i]``
        (the last hop, `_ends`).  Row ``i`` is input ``i``'s; a state with none raises."""
        last = target >= 0
        if last.all():
            table = self._ends(node, target)
        elif not last.any():
            table = self.downhill(grp, node)
        else:
            inner = ~last
            parts = self.downhill(grp[inner], node[inner])
            ends = self._ends(node[last], target[last])
            # Back in input order: the inner rows first, then the last-hop rows.
            where = np.empty(len(node), dtype=np.int64)
            where[np.flatnonzero(inner)] = np.arange(len(parts.hops))
            where[np.flatnonzero(last)] = len(parts.hops) + np.arange(len(ends.hops))
            table = _stack([parts, ends]).take(where)
        if np.any(table.hops == 0):
            bad = int(self.switches[node[np.flatnonzero(table.hops == 0)[0]]])
            raise SolverError(f"routing dead end at {self.snap.node_ids[bad]}")
        return table

    def arc_pairs(self) -> tuple[np.ndarray | None, bool]:
        """``(keys, single)``: each switch-to-switch arc's ``source * S + destination``
        (switch numbers), if these never fall (each switch lists its arcs in order of
        their far ends, as the templates add links; else None), and whether no two are
        equal (no parallel arcs).  Made once.  ``(None, False)`` while
        `Tuning.arc_search` is off: the last hops and the targets' neighbours are then
        sorted out of the arcs, as for a fabric whose arcs come in any order."""
        if not current().arc_search:
            return None, False
        if self._pair_keys is None:
            keys = self.s_src.astype(np.int64) * len(self.switches) + self.s_dst
            step = np.diff(keys)
            self._pair_keys = ((keys, bool(np.all(step > 0))) if bool(np.all(step >= 0))
                               else (None, False))
        return self._pair_keys

    def _ends(self, end_node: np.ndarray, end_tgt: np.ndarray) -> RouteBatch:
        """Last hops: row ``i`` is the arcs from switch ``end_node[i]`` into switch
        ``end_tgt[i]`` (switch numbers), in arc order, split by capacity."""
        n_sw = len(self.switches)
        keys, single = self.arc_pairs()
        if keys is not None and keys.size:
            # The arcs sorted by (source, destination) already: a binary search each.
            want = end_node.astype(np.int64) * n_sw + end_tgt
            lo = np.searchsorted(keys, want)
            if single:   # one arc per pair at most: found or not
                found = keys[np.minimum(lo, keys.size - 1)] == want
                return self._split(self.s_arc[lo[found]], found.astype(np.int64))
            lengths = np.searchsorted(keys, want, side="right") - lo
            return self._split(self.s_arc[ragged_arange(lo, lengths)], lengths)
        # Among the switch arcs of the nodes concerned, sorted by (node, destination),
        # arc order within, each (node, target) by binary search.
        nodes, which = unique_inverse(end_node, n_sw)
        lengths = self.s_ptr[nodes + 1] - self.s_ptr[nodes]
        pos = ragged_arange(self.s_ptr[nodes], lengths)
        pair = np.repeat(np.arange(len(nodes)), lengths) * n_sw + self.s_dst[pos]
        by_pair = stable_argsort(pair, len(nodes) * n_sw)
        pair, arcs = pair[by_pair], self.s_arc[pos[by_pair]]
        want = which.astype(np.int64) * n_sw + end_tgt
        lo = np.searchsorted(pair, want)
        lengths = np.searchsorted(pair, want, side="right") - lo
        return self._split(arcs[ragged_arange(lo, lengths)], lengths)

    # ---- adaptive DAGs
    def dags(self, leaf_a: np.ndarray, leaf_b: np.ndarray,
             hops: np.ndarray | None = None, pending: bool = False,
             split: bool = False) -> RouteBatch | SplitDags:
        """Adaptive DAGs of pairs of distinct switches (``hops``: their distances, if
        known), walked together level by level.

        Per pair this is `Router._dag_fractions` (see `routing.walks.walk_levels`); until
        the last hop a switch's next hops depend only on the target's group, so pairs
        whose first hop leaves them alike share the levels in between
        (`routing.walks.walk_shared`, which ``pending`` and ``split`` are passed to)."""
        s = self.snap
        grp = self.groups_of(leaf_b)
        if hops is None:
            hops = self.distance(leaf_a, leaf_b)

        def next_hops(pair: np.ndarray, node: np.ndarray, level: int) -> RouteBatch:
            dist = hops[pair] - level
            if (np.ndim(level) == 0 and level == 0) or int(dist.max(initial=0)) == 1:
                # First and last hops: each state is a route's own (its source, or its
                # target), walked once here, so made as they are, not kept (see `_next`).
                at = self.index[node]
                return self._hops_of(at, grp[pair],
                                     np.where(dist == 1, self.index[leaf_b[pair]], -1))
            row, table = self._next(node, grp[pair], leaf_b[pair], dist)
            return table.take(row)

        return walk_shared(leaf_a, hops, grp, s.arc_dst, s.n_nodes, next_hops, self.index,
                           pending=pending, split=split)

    # ---- single-path walks (ecmp, static)
    def walks(self, leaf_a: np.ndarray, leaf_b: np.ndarray, hops: np.ndarray,
              cls: np.ndarray, keys: np.ndarray, dest_ids: np.ndarray, at: np.ndarray,
              out: np.ndarray, mode: str, seed: int) -> None:
        """The arcs of `Router.fabric_paths` for flows of classes of switch pairs: flow
        ``i`` goes from ``leaf_a[c]`` to ``leaf_b[c]`` (``c = cls[i]``, ``hops[c]`` hops)
        with ECMP key ``keys[i]`` or destination ``dest_ids[i]``, and its path is written
        to ``out[at[i]:at[i] + hops[c]]``.

        A flow's state is a row of the next-hop table (`_next`), so a hop costs a few
        gathers per flow; flows are walked `Tuning.walk_chunk` at a time."""
        s = self.snap
        n_sw = len(self.switches)
        width = int(hops.max(initial=0))
        if width == 0 or len(cls) == 0:
            return
        live_cls = np.flatnonzero(hops > 0)
        grp = np.zeros(len(leaf_b), dtype=np.int64)
        grp[live_cls] = self.groups_of(leaf_b[live_cls])
        # State key of each class at each hop (as in `_next`), hop-major per class; the
        # switch part of later hops comes from the arc taken.
        dist = hops[:, None] - np.arange(width)
        ident = np.where(dist == 1, n_sw + self.index[leaf_b][:, None], grp[:, None])
        state = ident.reshape(-1) * n_sw
        state[::width] += self.index[leaf_a]
        first_row = np.full(len(hops), -1, dtype=np.int64)
        first_row[live_cls] = self._hops.rows(state[live_cls * width], self._build_hops)
        src = keys if mode == "ecmp" else dest_ids  # ECMP hashes keys; static: destinations
        table, lengths_of, next_key = None, None, None
        size = current().walk_chunk
        for lo in range(0, len(cls), size):
            chunk = slice(lo, lo + size)
            c, pos, k = cls[chunk], at[chunk], src[chunk]
            left = hops[c]
            if not left.all():
                live = np.flatnonzero(left)
                if not live.size:
                    continue
                c, pos, k, left = c[live], pos[live], k[live], left[live]
            k = k.astype(np.int64)
            base = c * width
            row = first_row[c]
            for hop in range(width):
                if table is not self._hops.table:    # grown: refresh what hops read
                    table = self._hops.table
                    lengths_of = np.diff(table.ptr)
                    next_key = self.index[s.arc_dst[table.arcs]]
                lengths = lengths_of[row]
                top = int(lengths.max())
                entry = table.ptr[row]
                if top > 1:  # else one way on for every flow: nothing to pick
                    even = int(lengths.min()) == top
                    if mode == "ecmp":
                        h = mix64(k, seed * 1_000_003 + hop)
                        pick = h % np.uint64(top) if even else h % lengths.astype(np.uint64)
                    else:  # one digit of the destination per tier
                        pick = k % (top if even else lengths)
                        k = k // (top if even else lengths)
                    entry = entry + pick.astype(np.int64)
                out[pos + hop] = table.arcs[entry]
                going = left > hop + 1
                if not going.all():
                    base, pos, left, k = base[going], pos[going], left[going], k[going]
                    entry = entry[going]
                if not base.size:
                    break
                row = self._hops.rows(next_key[entry] + state[base + hop + 1], self._build_hops)

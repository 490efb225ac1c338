"""NVLink routes in batches, for `router.Router.nvlink_routes`.

A route inside an NVLink domain is the spray of `Router.nvlink_route`: all shortest
NVLink paths, each hop split in proportion to arc capacity.  Two shortcuts make a whole
batch cheap:

* Domains built alike (same links in the same order with the same capacities, e.g. every
  HGX board of a cluster) share one set of route *templates*: a route found on the
  class's first domain, as positions in the domain's arc list, serves every domain of
  the class (`_Domains`).
* Templates still missing are found all at once (`NvlinkTables.spray`): distances to
  every target by one breadth-first search over all of them, then one level-by-level
  walk of every DAG (`routing.walks.walk_levels`) with the arithmetic of the per-pair
  route, so a degraded cluster, whose domains all differ, costs array work, not a
  Python loop per pair.
"""

from __future__ import annotations

import copy

import numpy as np

from designer.solver.arrays.keyed_rows import KeyedRows
from designer.solver.arrays.ragged import (
    RouteBatch,
    _scatter,
    _stack,
    distinct,
    ragged_arange,
    split_by_capacity,
    stable_argsort,
    unique_inverse,
)
from designer.solver.errors import SolverError
from designer.solver.routing.subgraph import _Subgraph, sorted_ptr
from designer.solver.routing.walks import walk_levels
from designer.solver.snapshot.build import NVLINK, Snapshot
from designer.solver.tuning import current


class _Domains:
    """NVLink domains as arc lists, and classes of domains built alike.

    Each domain's NVLink arcs are listed in arc order and its nodes numbered 0, 1, ... in
    node order (``rel``).  Two domains whose lists match position by position (same
    relative ends, bitwise-equal capacities) are isomorphic by a map that keeps arc order,
    so every route of one, found by the same arithmetic, is the other's with arcs
    translated by position.

    Parameters
    ----------
    snap : Snapshot
    graph : _Subgraph, optional
        The NVLink arcs (`Router.nvlink`), for a snapshot that does not label its nodes'
        domains (``Snapshot.node_domain``); made here if needed and not given.
    """

    def __init__(self, snap: Snapshot, graph: _Subgraph | None = None):
        n_dom = snap.n_domains
        if snap.node_domain is not None:
            self.node_dom = snap.node_domain
        else:
            if graph is None:
                graph = _Subgraph(snap, link_mask=snap.arc_family[0::2] == NVLINK)
            self.node_dom = _node_domains(snap, graph)
        nv_all = np.flatnonzero(snap.arc_family == NVLINK)
        arc_dom = self.node_dom[snap.arc_src[nv_all]]
        if arc_dom.size and arc_dom.min() < 0:   # NVLink arcs of no domain (no GPU)
            keep = np.flatnonzero(arc_dom >= 0)
            nv_all, arc_dom = nv_all[keep], arc_dom[keep]
        # Grouped by domain, arc order within (a template adds its boards' links board
        # by board: already so, and no sort is needed).
        if not _ascending(arc_dom):
            order = stable_argsort(arc_dom, n_dom)
            nv_all, arc_dom = nv_all[order], arc_dom[order]
        self.arcs = nv_all
        self.arc_ptr = sorted_ptr(arc_dom, n_dom)
        # Relative node numbers: rank inside the domain by node index (any fixed numbering
        # works: equal signatures below prove the map between two domains an isomorphism).
        in_dom = np.flatnonzero(self.node_dom >= 0)
        ndom = self.node_dom[in_dom]
        if not _ascending(ndom):
            order = stable_argsort(ndom, n_dom)
            in_dom, ndom = in_dom[order], ndom[order]
        self.nodes = in_dom
        self.node_ptr = sorted_ptr(ndom, n_dom)
        self.rel = np.zeros(snap.n_nodes, dtype=np.int64)
        self.rel[self.nodes] = np.arange(len(self.nodes)) - self.node_ptr[ndom]
        n_arcs, n_nodes = np.diff(self.arc_ptr), np.diff(self.node_ptr)
        self.max_nodes = int(n_nodes.max(initial=0)) + 1
        # Classes: domains with equal (arc count, node count, relative ends, capacities).
        self.dom_class = np.zeros(n_dom, dtype=np.int64)
        reps = []
        shape_key = n_arcs * (self.max_nodes + 1) + n_nodes
        for shape in distinct(shape_key).tolist():
            doms = np.flatnonzero(shape_key == shape)
            m = int(n_arcs[doms[0]])
            if self._all_alike(snap, doms, m):   # a cluster of identical boards
                first, inverse = np.zeros(1, np.int64), np.zeros(len(doms), np.int64)
            else:
                first, inverse = distinct_rows(lambda d, m=m: self._signature(snap, d, m),
                                                doms)
            self.dom_class[doms] = len(reps) + inverse
            reps.extend(doms[first].tolist())
        self.class_rep = np.array(reps, dtype=np.int64)

    def _all_alike(self, snap: Snapshot, doms: np.ndarray, m: int) -> bool:
        """Whether every domain of ``doms`` (``m`` arcs each) has the first one's
        `_signature`: compared part by part, the first difference ends it, and no
        signature matrix is made (a 16,384-GPU cluster's is 1.5 MB of fresh memory)."""
        arcs = self.arcs[self.arc_ptr[doms][:, None] + np.arange(m)]
        for part in (lambda a: self.rel[snap.arc_src[a]], lambda a: self.rel[snap.arc_dst[a]],
                     lambda a: snap.arc_cap[a].view(np.int64)):
            if not bool((part(arcs) == part(arcs[0])).all()):
                return False
        return True

    def _signature(self, snap: Snapshot, doms: np.ndarray, m: int) -> np.ndarray:
        """One row per domain of ``doms`` (``m`` arcs each): its arcs' relative ends and
        capacities (bits), in arc order."""
        at = self.arc_ptr[doms][:, None] + np.arange(m)
        arcs = self.arcs[at]
        return np.concatenate([self.rel[snap.arc_src[arcs]], self.rel[snap.arc_dst[arcs]],
                               snap.arc_cap[arcs].view(np.int64)], axis=1)


def _ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never fall (then a stable sort would leave them as they are)."""
    return bool(np.all(values[1:] >= values[:-1]))


def _node_domains(snap: Snapshot, graph: _Subgraph) -> np.ndarray:
    """NVLink domain of every node (-1: none): a breadth-first search over NVLink arcs
    from every GPU at once, each GPU starting with its own domain.  (A domain is a
    component of the NVLink arcs with GPUs in it, so every node of a component gets its
    GPUs' domain.)"""
    node_dom = np.full(snap.n_nodes, -1, dtype=np.int64)
    node_dom[snap.gpus] = snap.gpu_domain
    frontier = snap.gpus.astype(np.int64)
    while frontier.size:
        lengths = graph.ptr[frontier + 1] - graph.ptr[frontier]
        nxt = graph.dst[ragged_arange(graph.ptr[frontier], lengths)]
        label = np.repeat(node_dom[frontier], lengths)
        new = node_dom[nxt] < 0
        nxt = nxt[new]
        node_dom[nxt] = label[new]       # one label per component: no conflicting writes
        frontier = distinct(nxt)
    return node_dom


def row_hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of an int64 matrix: the entries times odd
    multipliers (one per column, random but the same in every run), summed modulo
    2**64.  Cheap and linear, so rows that differ may collide (`distinct_rows` checks
    every match)."""
    mix = np.random.default_rng(0x5EED).integers(0, 2**63, rows.shape[1], dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (rows.view(np.uint64) * (mix | np.uint64(1))).sum(axis=1, dtype=np.uint64)


def distinct_rows(rows_of, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows among ``rows_of(items)`` (an int64 matrix, one row per item),
    numbered in order of first appearance: the index (into ``items``) of each one's
    first appearance, and each row's number.

    Rows are grouped by a 64-bit hash (`row_hash`), then checked equal to their group's
    first row; only if two different rows share a hash does it compare rows as bytes
    (a dict).
    Rows are made a block of items at a time, once to hash and once to check: a 131,072
    GPU cluster's 16,384 domains sign with ~3 million entries, whose whole matrix and
    its temporaries would be ~70 MB of fresh memory.
    """
    n = len(items)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    probe = rows_of(items[:1])
    if probe.shape[1] == 0:
        return np.zeros(1, np.int64), np.zeros(n, np.int64)
    step = max(1, current().row_block // probe.shape[1])
    blocks = [slice(i, min(i + step, n)) for i in range(0, n, step)]
    whole = rows_of(items) if len(blocks) == 1 else None  # one block: made once, kept

    def block_rows(b: slice) -> np.ndarray:
        return whole if whole is not None else rows_of(items[b])

    hashes = np.concatenate([row_hash(block_rows(b)) for b in blocks])
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    reps = whole[first] if whole is not None else rows_of(items[first])
    if all(np.array_equal(block_rows(b), reps[inverse[b]]) for b in blocks):
        # Number the groups in order of first appearance.
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        return np.sort(first), rank[inverse]
    seen: dict[bytes, int] = {}
    firsts: list[int] = []
    number = np.empty(n, dtype=np.int64)
    for b in blocks:
        for i, row in enumerate(np.ascontiguousarray(block_rows(b)), start=b.start):
            key = row.tobytes()
            k = seen.get(key)
            if k is None:
                k = seen[key] = len(firsts)
                firsts.append(i)
            number[i] = k
    return np.array(firsts, dtype=np.int64), number


class NvlinkTables:
    """Route templates of a router's NVLink domains, computed many at a time.

    A template is keyed by (domain class, relative source, relative target); its route
    is kept as positions in the class's domain arc list, so the same rows serve every
    domain of the class.
    """

    def __init__(self, snap: Snapshot, nvlink: _Subgraph | None):
        self.snap = snap
        self.dom = dom = _Domains(snap, nvlink)
        # Templates are found on each class's first domain alone: the subgraph of those
        # domains' arcs is all the walks read (a cluster of identical boards: one
        # board's, not every NVLink arc of the design).
        reps = dom.class_rep
        start = dom.arc_ptr[reps]
        lengths = dom.arc_ptr[reps + 1] - start
        at = ragged_arange(start, lengths)             # places in `dom.arcs`
        arcs = dom.arcs[at]
        mine = np.zeros(self.snap.n_arcs, dtype=bool)
        mine[arcs] = True
        self.graph = _Subgraph(self.snap, mine)
        # Each of those arcs' position in its domain's list, by arc id (a template's
        # arcs are a class's first domain's: `_templates` looks them up here).
        order = np.argsort(arcs, kind="stable")
        self._rep_arcs = arcs[order]
        self._rep_pos = (at - np.repeat(start, lengths))[order]
        k = self.dom.max_nodes
        # Template keys shifted by one (0: the empty route).
        self._rows = KeyedRows(int(self.dom.class_rep.size) * k * k + 1)

    def rebased(self, snap: Snapshot) -> NvlinkTables:
        """These tables for ``snap``, a later snapshot of the design whose NVLink arcs
        did not change: same domains, classes and arcs, and the templates found so far
        (the key map is copied: it is written in place; the template space is small)."""
        out = copy.copy(self)
        out.snap = snap
        rows = out._rows = copy.copy(self._rows)
        if rows._dense is not None:
            rows._dense = rows._dense.copy()
        return out

    def routes(self, a: np.ndarray, b: np.ndarray) -> RouteBatch:
        """`Router.nvlink_route` of each pair ``(a[i], b[i])``, both in one domain (the
        caller checks), with ``hops`` the NVLink hop count."""
        dom = self.dom
        d = dom.node_dom[a]
        k = dom.max_nodes
        keys = (dom.dom_class[d] * k + dom.rel[a]) * k + dom.rel[b]
        keys[a == b] = -1           # to itself: the empty route (as `nvlink_route`)
        rows = self._rows.rows(keys + 1, self._shifted_templates)
        out = self._rows.table.take(rows)
        # Template arc positions are relative to a domain's arc list: shift to domain d.
        pos = out.arcs
        lengths = out.lengths
        if len(lengths) and lengths.min() == lengths.max() > 0:  # alike: no repeat
            pos = (pos.reshape(len(d), -1) + dom.arc_ptr[d][:, None]).reshape(-1)
        else:
            pos = pos + np.repeat(dom.arc_ptr[d], lengths)
        return RouteBatch(out.ptr, dom.arcs[pos], out.weights, out.hops)

    def _shifted_templates(self, keys: np.ndarray) -> RouteBatch:
        """`_templates` of the table's keys (shifted by one)."""
        return self._templates(keys - 1)

    def _templates(self, keys: np.ndarray) -> RouteBatch:
        """Templates ``keys`` (sorted, distinct; -1: the empty route), found together on
        their classes' first domains, as positions in the domain arc lists."""
        dom, k = self.dom, self.dom.max_nodes
        real = np.flatnonzero(keys >= 0)
        rep = dom.class_rep[keys[real] // (k * k)]
        a = dom.nodes[dom.node_ptr[rep] + keys[real] // k % k]
        b = dom.nodes[dom.node_ptr[rep] + keys[real] % k]
        found = self.spray(a, b)
        # Each arc's position in its domain's list: a binary search among the class
        # domains' arcs.
        pos = self._rep_pos[np.searchsorted(self._rep_arcs, found.arcs)]
        return _scatter(RouteBatch(found.ptr, pos, found.weights, found.hops), real, len(keys))

    # ---- the spray of many pairs at once
    def spray(self, a: np.ndarray, b: np.ndarray) -> RouteBatch:
        """`Router.nvlink_route` of pairs ``(a[i], b[i])`` of nodes in one domain each, as
        absolute arcs, found together (``hops``: NVLink hop counts)."""
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        targets, t_of = unique_inverse(b, self.snap.n_nodes)
        # Larger batches of targets are cut, so a big torus domain never needs a table
        # of every pair at once.
        per = max(1, current().nvlink_max_table // self.dom.max_nodes)
        if len(targets) <= per:
            return self._spray(a, targets, t_of)
        # Too many targets for one table: by chunks of targets, then back in order.
        chunk = t_of // per
        parts, rows = [], []
        for c in range(int(chunk.max()) + 1):
            sel = np.flatnonzero(chunk == c)
            if sel.size:
                lo = c * per
                parts.append(self._spray(a[sel], targets[lo:lo + per], t_of[sel] - lo))
                rows.append(sel)
        where = np.empty(len(a), dtype=np.int64)
        where[np.concatenate(rows)] = np.arange(len(a))
        return _stack(parts).take(where)

    def _spray(self, a: np.ndarray, targets: np.ndarray, t_of: np.ndarray) -> RouteBatch:
        """`spray` of pairs ``(a[i], targets[t_of[i]])``."""
        s, g, dom = self.snap, self.graph, self.dom
        k = dom.max_nodes
        rel = dom.rel
        dist = self._distances(targets).reshape(-1)     # [target, rel node]
        base = t_of * k
        hops = dist[base + rel[a]].astype(np.int64)
        if np.any(hops < 0):
            i = int(np.flatnonzero(hops < 0)[0])
            raise SolverError(f"no NVLink path from {s.node_ids[a[i]]} to "
                              f"{s.node_ids[targets[t_of[i]]]}")

        def next_hops(route: np.ndarray, node: np.ndarray, level: int) -> RouteBatch:
            # Arcs out of each node (in arc order, as `_Subgraph.next_arcs`) one step
            # closer to the route's target; GPUs may forward (torus designs).
            lengths = g.ptr[node + 1] - g.ptr[node]
            pos = ragged_arange(g.ptr[node], lengths)
            owner = np.repeat(np.arange(len(node)), lengths)
            row = base[route]
            closer = dist[row[owner] + rel[g.dst[pos]]] == dist[row + rel[node]][owner] - 1
            counts = np.bincount(owner[closer], minlength=len(node))
            if not counts.all():
                bad = int(node[np.flatnonzero(counts == 0)[0]])
                raise SolverError(f"routing dead end at {s.node_ids[bad]}")
            return split_by_capacity(g.arcs[pos[closer]], counts, s.arc_cap)

        return walk_levels(a, hops, s.arc_dst, s.n_nodes, next_hops)

    def _distances(self, targets: np.ndarray) -> np.ndarray:
        """NVLink hops from every node of a target's domain to the target, as a (target,
        relative node) table (-1: unreachable), all targets in one breadth-first search.

        Links are full duplex with one family per link, so walking out-arcs from the
        target gives the distances towards it (as `_Subgraph.dist_to`)."""
        g, dom = self.graph, self.dom
        k = dom.max_nodes
        dist = np.full(len(targets) * k, -1, dtype=np.int32)
        at, node = np.arange(len(targets)), targets
        dist[at * k + dom.rel[node]] = 0
        start = dom.node_ptr[dom.node_dom[targets]]      # each target's domain in `nodes`
        level = 0
        while at.size:
            level += 1
            lengths = g.ptr[node + 1] - g.ptr[node]
            pos = ragged_arange(g.ptr[node], lengths)
            key = np.repeat(at * k, lengths) + dom.rel[g.dst[pos]]
            key = distinct(key[dist[key] < 0])
            dist[key] = level
            at = key // k
            node = dom.nodes[start[at] + key % k]
        return dist.reshape(len(targets), k)

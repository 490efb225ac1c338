"""All-to-all as flows: every rank sends 1/n of its buffer to every other rank.

Two ways to the same max-min rates (docs/model.md, "All-to-all by classes"):

- per pair (the reference): one flow per ordered pair of ranks, n (n - 1) flows;
- by classes (`Tuning.alltoall_classes`, on by default): under adaptive routing, when
  every rank leaves its NVLink domain over arcs of its own (no PXN, no shared NIC), the
  pairs across domains fall into classes of pairs that provably get equal rates, and
  each class is ONE flow whose routes carry it as many times as it has pairs
  (`SharedRoutes.pair_mult`).  The classes come from colour refinement of the ranks
  (`_rank_colours`): the class of pair ``(a, b)`` is ``(colour of a as a sender,
  colour of b as a receiver)``.  A rail-optimised cluster then has about one class per
  pair of leaf switches instead of 268 million pairs at 16,384 GPUs.

Pairs inside a domain stay pair flows (their NVLink sprays share no arc with the
network, so they are a separate max-min problem).  ECMP hashes each pair onto a path
of its own, and static routing picks by destination, so the pairs of a class would
cross different fabric links, which breaks what the classes rest on: both are solved
per pair.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from designer.solver.arrays.ragged import ragged_arange, segment_hash
from designer.solver.arrays.shared_routes import SharedRoutes
from designer.solver.flows.labels import Labels
from designer.solver.flows.phases import FlowBuilder, Plan
from designer.solver.flows.recipe import shared_piece
from designer.solver.flows.ring_layout import grouped
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import NVLINK
from designer.solver.tuning import current

__all__ = ["plan_alltoall"]


def plan_alltoall(router: Router, ranks: np.ndarray, collective: str = "alltoall") -> Plan:
    """Every rank sends 1/n of its buffer to every other rank, all at once.

    Ranks are numbered (and pairs ECMP-hashed) in structural order (`grouped`), so
    renaming GPUs changes no hash.  By classes where that is exact (module docstring),
    else one flow per pair.
    """
    snap = router.snap
    srt, starts, sizes = grouped(snap, ranks)
    fb = FlowBuilder(router)
    mirrors = None
    if current().alltoall_classes and snap.routing == "adaptive" and len(starts) > 1:
        mirrors = _by_classes(fb, srt, starts, sizes)
    if mirrors is None:
        fb = FlowBuilder(router)
        _pair_flows(fb, srt)
    phase = replace(fb.phase("all-to-all", len(srt) - 1), mirrors=mirrors)
    return Plan("alltoall", "direct", ranks, len(starts), (phase,), True)


def _pair_flows(fb: FlowBuilder, srt: np.ndarray) -> None:
    """One flow per ordered pair ``(i, j)``, ``i != j``, i-major, of ranks ``srt``."""
    n = len(srt)
    # A million pairs: int32 ids when they fit, to halve the memory.
    idx = np.int32 if n * n < 2**31 else np.int64
    i = np.repeat(np.arange(n, dtype=idx), n - 1)
    j = np.tile(np.arange(n - 1, dtype=idx), n)
    j += j >= i
    rank_ids = srt.astype(idx)
    # Labels "a->b", made when read: a million strings would cost more than the routes.
    txt = [str(x) for x in srt.tolist()]
    labels = Labels(len(i), lambda k: f"{txt[k // (n - 1)]}->{txt[int(j[k])]}")
    flows = fb.new_flows(np.full(len(i), 1.0 / n), labels)
    # ECMP keys only where ECMP reads them (zeros are not even backed by memory).
    keys = (i.astype(np.int64) * n + j if fb.snap.routing == "ecmp"
            else np.zeros(len(i), np.int64))
    fb.transfers(flows, rank_ids[i], rank_ids[j], keys)


def _by_classes(fb: FlowBuilder, srt: np.ndarray, starts: np.ndarray, sizes: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Add the all-to-all of ranks ``srt`` (domains at ``starts``, ``sizes``) to ``fb`` as
    pair flows inside domains and class flows across them, and return the phase's
    `Phase.mirrors`; None (``fb`` untouched) where classes would not be exact (a rank
    without a way of its own to a switch) or would not pay."""
    snap, r = fb.snap, fb.router
    n = len(srt)
    rl = r.rank_links()
    leaf = rl.leaf[srt]
    if not (rl.ok[srt].all() and (leaf >= 0).all() and r.is_switch[leaf].all()):
        return None
    legs = r.access_legs()
    n_all = len(rl.gpu)
    rows = np.concatenate([srt, srt + n_all])          # ways out, then ways in
    lengths = np.diff(legs.ptr)[rows]
    entries = ragged_arange(legs.ptr[rows], lengths)
    arcs = legs.arcs[entries].astype(np.int64)
    owner = np.repeat(np.arange(2 * n), lengths)
    # Each leg's arcs its own (no other rank's leg, no NVLink that in-domain sprays use).
    own, inverse = np.unique(owner * snap.n_arcs + arcs, return_inverse=True)
    own_w = np.bincount(inverse.reshape(-1), legs.weights[entries])
    own_owner, own_arc = own // snap.n_arcs, own % snap.n_arcs
    if (len(np.unique(own_arc)) != len(own)
            or (snap.arc_family[own_arc] == NVLINK).any()):
        return None
    # What limits a leg: its tightest arc, capacity over the share the leg puts on it.
    share = np.full(2 * n, np.inf)
    np.minimum.at(share, own_owner, snap.arc_cap[own_arc] / own_w)
    dom = np.repeat(np.arange(len(starts)), sizes)
    send, recv = _rank_colours(dom, leaf, share[:n], share[n:])
    n_s, n_r = int(send.max()) + 1, int(recv.max()) + 1
    if n_s * n_r > n * (n - 1) // 4:
        return None   # barely fewer classes than pairs: per pair is as good
    # Pairs per class: all (sender, receiver) pairs less those inside a domain.
    count = np.outer(np.bincount(send, minlength=n_s), np.bincount(recv, minlength=n_r))
    p = ragged_arange(np.repeat(starts, sizes), np.repeat(sizes, sizes))
    q = np.repeat(np.arange(n), np.repeat(sizes, sizes))   # (p, q): both in one domain
    count -= np.bincount(send[q] * n_r + recv[p], minlength=n_s * n_r).reshape(n_s, n_r)
    cls_s, cls_r = np.nonzero(count)
    mult = count[cls_s, cls_r].astype(float)

    # Pairs inside a domain: their own NVLink sprays.
    a, b = srt[q[p != q]], srt[p[p != q]]
    txt = [str(x) for x in srt.tolist()]
    pos = np.empty(snap.n_gpus, np.int64)
    pos[srt] = np.arange(n)
    intra = fb.new_flows(np.full(len(a), 1.0 / n),
                         Labels(len(a), lambda k: f"{txt[pos[a[k]]]}->{txt[pos[b[k]]]}"))
    fb.transfers(intra, a, b, None)

    # Across domains: one flow per class, at the rate of each of its pairs.
    first_s = np.full(n_s, n)
    np.minimum.at(first_s, send, np.arange(n))
    first_r = np.full(n_r, n)
    np.minimum.at(first_r, recv, np.arange(n))
    labels = Labels(len(mult), lambda k: (
        f"{int(mult[k])} pairs like {txt[first_s[cls_s[k]]]}->{txt[first_r[cls_r[k]]]}"))
    flows = fb.new_flows(np.full(len(mult), 1.0 / n), labels).astype(np.int64)
    # Routes: each sender colour's ways out, each receiver colour's ways in (every leg
    # of the colour's ranks), then the fabric DAG of each pair of leaf switches.
    n_leaf = len(rl.leaves)
    code = rl.leaf_code[srt[first_s[cls_s]]].astype(np.int64) * n_leaf
    code += rl.leaf_code[srt[first_r[cls_r]]]
    uniq, dag_of = np.unique(code, return_inverse=True)
    ua, ub = rl.leaves[uniq // n_leaf], rl.leaves[uniq % n_leaf]
    hops = r.fabric_hops(ua, ub)
    heads, head_of, tails, tail_of, mid_t, mid_of = _dag_parts(r, ua, ub, hops)
    # A colour's way out (in): its first rank's, standing for every rank of the colour
    # (the other ranks' legs carry the same, copied onto them by `Phase.mirrors`).
    rep = np.concatenate([first_s[send], n + first_r[recv]])     # per leg
    rep_rows = np.concatenate([first_s, n + first_r])             # per colour route
    at = np.searchsorted(own_owner, np.arange(2 * n + 1))
    pick = ragged_arange(at[rep_rows], np.diff(at)[rep_rows])
    legs_t = (np.diff(at)[rep_rows], own_arc[pick], own_w[pick])
    tables = (legs_t, heads, tails, mid_t)
    base = np.cumsum([0] + [len(t[0]) for t in tables])
    ptr = np.concatenate([[0], np.cumsum(np.concatenate([t[0] for t in tables]))])
    link = np.concatenate([t[1] for t in tables]).astype(np.int64)
    weight = np.concatenate([t[2] for t in tables])
    head = at[rep[own_owner]]                       # the representative's first arc
    mirrors = (own_arc, own_arc[head], own_w / own_w[head])
    # Each class: the ways out and in (the pairs each rank of the colours sends or
    # receives), then its DAG's parts (all its pairs).
    d = dag_of
    parts = [(cls_s, mult / np.bincount(send)[cls_s]),
             (base[0] + n_s + cls_r, mult / np.bincount(recv)[cls_r]),
             (base[1] + head_of[d], mult), (base[2] + tail_of[d], mult),
             (np.where(mid_of[d] >= 0, base[3] + mid_of[d], -1), mult)]
    pair_flow, pair_route, pair_mult = [], [], []
    for route, times in parts:
        take = np.flatnonzero((route >= 0) & (np.diff(ptr)[np.maximum(route, 0)] > 0))
        pair_flow.append(flows[take])
        pair_route.append(route[take])
        pair_mult.append(times[take])
    fb.shared.append(shared_piece(SharedRoutes(
        ptr, link, weight, *(np.concatenate(x) for x in (pair_flow, pair_route, pair_mult))),
        0))
    fb.net_fixed = max(fb.net_fixed, 2 + int(hops.max(initial=0)))
    return mirrors


def _dag_parts(r: Router, ua: np.ndarray, ub: np.ndarray, hops: np.ndarray) -> tuple:
    """The adaptive DAG of each pair of edge switches ``(ua[i], ub[i])`` as its first hops,
    a middle and its last hops: ``(heads, head_of, tails, tail_of, middles, mid_of)``,
    each a ``(lengths, arcs, weights)`` table of distinct rows and each pair's row in it
    (``mid_of`` -1: no middle).  Entry for entry the router's DAGs (`Router.fabric_dags`).

    Walked for far fewer pairs than asked: until its last hop a DAG's walk depends only
    on its source and its target's group (`routing.walks.walk_shared`), so one pair per
    (source, target group) gives the first hops and the middle of them all, and the last
    hops, taken from where the middle ends, are walked once per (middle, target).  In a
    rail-optimised Clos of 512 leaves: 32k walks instead of 262k.
    """
    g = r.fabric_groups().groups_of(ub).astype(np.int64)
    deep = np.flatnonzero(hops >= 3)
    key = ua[deep].astype(np.int64) * (int(g.max(initial=0)) + 1) + g[deep]
    _, first, key_of = np.unique(key, return_index=True, return_inverse=True)
    walk = np.concatenate([np.flatnonzero(hops < 3), deep[first]])
    one = r.fabric_dags(ua[walk], ub[walk], hops=hops[walk], split=True)
    # The last hops of the deep pairs: from each middle's end, walked from a source that
    # takes that middle, to every target that a source taking it goes to.
    n_shallow = len(walk) - len(first)
    mid_of_key = one.middles.of[n_shallow:]
    n_g = int(g.max(initial=0)) + 1
    by = mid_of_key * n_g + g[deep[first]]          # (middle, target group) of each key
    uniq, by_first = np.unique(by, return_index=True)
    via = deep[first][by_first][np.searchsorted(uniq, by[key_of])]
    n_nodes = r.snap.n_nodes
    pair, tail_of_deep = np.unique(via * n_nodes + ub[deep], return_inverse=True)
    src, dst = pair // n_nodes, pair % n_nodes
    tail_of_deep = tail_of_deep.reshape(-1)
    two = r.fabric_dags(ua[src], dst, hops=r.fabric_hops(ua[src], dst), split=True)
    # Rows: the walks' own rows split at each head (`Middles.head`), pooled.
    pool_a = np.concatenate([one.own.arcs, two.own.arcs])
    pool_w = np.concatenate([one.own.weights, two.own.weights])
    at1, at2 = one.own.ptr[:-1], len(one.own.arcs) + two.own.ptr[:-1]
    len1, len2 = np.diff(one.own.ptr), np.diff(two.own.ptr)
    heads, head_row = _distinct_rows(at1, one.middles.head, pool_a, pool_w)
    tails, tail_row = _distinct_rows(
        np.concatenate([at1[:n_shallow] + one.middles.head[:n_shallow], at2 + two.middles.head]),
        np.concatenate([(len1 - one.middles.head)[:n_shallow], len2 - two.middles.head]),
        pool_a, pool_w)
    n = len(ua)
    head_of, tail_of, mid_of = (np.full(n, -1, np.int64) for _ in range(3))
    shallow = walk[:n_shallow]
    head_of[shallow], tail_of[shallow] = head_row[:n_shallow], tail_row[:n_shallow]
    head_of[deep] = head_row[n_shallow:][key_of]
    mid_of[deep] = mid_of_key[key_of]
    tail_of[deep] = tail_row[n_shallow:][tail_of_deep]
    mid = one.middles.table
    return heads, head_of, tails, tail_of, (mid.lengths, mid.arcs, mid.weights), mid_of


def _distinct_rows(starts: np.ndarray, lengths: np.ndarray, arcs: np.ndarray,
                   weights: np.ndarray) -> tuple[tuple, np.ndarray]:
    """The distinct rows among rows ``arcs[starts[i]:][:lengths[i]]`` (with their
    weights), as a ``(lengths, arcs, weights)`` table, and each row's index in it.
    Rows are matched by a hash of their entries and checked entry by entry, so a hash
    collision only keeps two equal rows apart."""
    lengths = np.asarray(lengths, np.int64)
    at = ragged_arange(starts, lengths)
    a, w = arcs[at], np.asarray(weights)[at]
    row_start = np.cumsum(lengths) - lengths
    _, first, inverse = np.unique(segment_hash(a, w, lengths), return_index=True,
                                  return_inverse=True)
    same = first[inverse.reshape(-1)]
    check = np.flatnonzero(lengths[same] == lengths)
    e = ragged_arange(row_start[check], lengths[check])
    f = ragged_arange(row_start[same[check]], lengths[check])
    bad = (a[e] != a[f]) | (w[e].view(np.int64) != w[f].view(np.int64))
    ok = np.zeros(len(lengths), bool)
    ok[check] = True
    ok[np.repeat(check, lengths[check])[bad]] = False
    same[~ok] = np.flatnonzero(~ok)
    keep, of = np.unique(same, return_inverse=True)
    pick = ragged_arange(row_start[keep], lengths[keep])
    return (lengths[keep], a[pick], w[pick]), of.reshape(-1)


def _rank_colours(dom: np.ndarray, leaf: np.ndarray, out_cap: np.ndarray,
                  in_cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Colours of the ranks as senders and as receivers such that pairs ``(a, b)`` across
    domains with the same ``(send[a], recv[b])`` get equal max-min rates.

    Start: a sender's leaf switch and the capacity of its way out (a receiver's leaf and
    way in).  Refine until stable: a sender also by how many receivers of each colour
    share its domain (those it does not send to over the network), a receiver by the
    senders of each colour in its domain.  Then every sender of a colour sends to as
    many receivers of each colour as every other, and the other way round, which is what
    the argument of docs/model.md needs.  The colours are numbered by sorted keys, so
    they do not depend on names or rank order.
    """
    send = np.unique(np.stack([leaf, out_cap]), axis=1, return_inverse=True)[1].reshape(-1)
    recv = np.unique(np.stack([leaf, in_cap]), axis=1, return_inverse=True)[1].reshape(-1)
    while True:
        new_s = _refine(send, recv, dom)
        new_r = _refine(recv, send, dom)
        if new_s.max() == send.max() and new_r.max() == recv.max():
            return send, recv
        send, recv = new_s, new_r


def _refine(own: np.ndarray, other: np.ndarray, dom: np.ndarray) -> np.ndarray:
    """``own`` split by the multiset of ``other`` colours in each rank's domain."""
    order = np.lexsort((other, dom))
    d, c = dom[order], other[order]
    starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
    sizes = np.diff(np.r_[starts, len(d)])
    table = np.full((len(starts), int(sizes.max())), -1, np.int64)
    row = np.repeat(np.arange(len(starts)), sizes)
    table[row, np.arange(len(d)) - starts[row]] = c
    sig = np.unique(table, axis=0, return_inverse=True)[1].reshape(-1)
    dom_sig = np.empty(int(dom.max()) + 1, np.int64)
    dom_sig[d[starts]] = sig
    return np.unique(np.stack([own, dom_sig[dom]]), axis=1, return_inverse=True)[1].reshape(-1)

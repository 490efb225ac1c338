"""Equivalence classes of a design's elements under its symmetry, from structure alone.

A failure study solves one representative per class instead of every element
(`designer.studies.failures`).  Classes come from a Weisfeiler-Lehman colour refinement
of the design's graph: a node starts coloured by what it is (kind, device model, plane,
failed, whether it is one of the study's ranks), a link by its technology, count, plane
and failed state, and each round a node's colour becomes its colour plus the multiset of
(link colour, neighbour colour) around it, until no class splits any more.  Two nodes of
one colour sit in the same place in the fabric as far as tier, role, rail and port
position go; a link's class is its own colour with the pair of its ends' colours.  Ids
and the order in which the design lists its items play no part, so renaming or
reordering a design gives the same classes.

The refinement is a necessary condition only (it cannot see, say, a ring's order of
ranks), so the study verifies each class on a sample before trusting it.

Example
-------
>>> from designer.model.templates import build_template
>>> classes = element_classes(build_template("fat-tree", k=4), "switches")
>>> sorted(len(members) for members in classes.values())
[4, 8, 8]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

import numpy as np

from designer.model.topology import Topology

__all__ = ["ELEMENT_KINDS", "SWITCH_KINDS", "element_classes", "node_colours"]

#: Kinds a failure study fails, by ``--elements``.
ELEMENT_KINDS = ("links", "switches", "nics", "all")
#: Node kinds that count as switches (fabric and NVLink switches alike).
SWITCH_KINDS = frozenset({"leaf", "spine", "core", "switch", "nvswitch", "nvlink-switch-tray"})

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash of each value (wraps mod 2**64)."""
    x = np.asarray(x, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= _M1
        x ^= x >> np.uint64(27)
        x *= _M2
        x ^= x >> np.uint64(31)
    return x


def _codes(labels: Iterable[tuple]) -> np.ndarray:
    """Each label's rank among the distinct labels, sorted: the same labels always get
    the same codes, whatever order the items come in."""
    labels = list(labels)
    index = {lab: i for i, lab in enumerate(sorted(set(labels)))}
    return np.fromiter((index[lab] for lab in labels), dtype=np.int64, count=len(labels))


def _dense(keys: np.ndarray) -> np.ndarray:
    """Rows of ``keys`` (n x m, uint64) renumbered 0..c-1 in sorted order of the rows."""
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def node_colours(
    topo: Topology,
    ranks: frozenset[str] = frozenset(),
    link_labels: Mapping[str, Hashable] | None = None,
    max_rounds: int = 64,
) -> tuple[list[str], np.ndarray, list, np.ndarray]:
    """Weisfeiler-Lehman colours of every node and link of ``topo``.

    Parameters
    ----------
    topo : Topology
    ranks : frozenset of str
        GPU ids taking part in the study's collective (they differ from idle GPUs).
    link_labels : mapping, optional
        An extra label per link id (the failure study gives each link its load in the
        intact solve, so that links the collective uses differently, such as a tree's
        root and its leaves, fall in different classes).  Labels must be name-free.
    max_rounds : int
        Refinement rounds at most (it stops earlier once no class splits).

    Returns
    -------
    node_ids : list of str
    colour : ndarray of int64
        Per node, its class; equal colours, equal structural place.
    links : list of Link
    link_colour : ndarray of int64
        Per link, its own attributes' code (not its ends').
    """
    nodes = list(topo.nodes())
    node_ids = [n.id for n in nodes]
    where = {nid: i for i, nid in enumerate(node_ids)}
    colour = _codes((n.kind, n.model, n.plane, bool(n.failed), n.id in ranks) for n in nodes)
    links = list(topo.links())
    extra = link_labels or {}
    link_colour = _codes(
        (lk.tech, int(lk.count), lk.plane, bool(lk.failed), extra.get(lk.id, ())) for lk in links
    )
    a = np.fromiter((where[lk.a] for lk in links), dtype=np.int64, count=len(links))
    b = np.fromiter((where[lk.b] for lk in links), dtype=np.int64, count=len(links))
    ends = np.concatenate([a, b])
    others = np.concatenate([b, a])
    edge = np.concatenate([link_colour, link_colour]).astype(np.uint64)
    n = len(nodes)
    count = len(np.unique(colour))
    for _ in range(max_rounds):
        h = _mix(_mix(edge) ^ colour[others].astype(np.uint64))
        s1 = np.zeros(n, dtype=np.uint64)
        s2 = np.zeros(n, dtype=np.uint64)
        np.add.at(s1, ends, h)  # (a multiset's hash: the sum of its members' hashes)
        np.add.at(s2, ends, _mix(h ^ np.uint64(0x9E3779B97F4A7C15)))
        new = _dense(np.stack([colour.astype(np.uint64), s1, s2], axis=1))
        new_count = int(new.max()) + 1 if n else 0
        colour = new
        if new_count == count:
            break
        count = new_count
    return node_ids, colour, links, link_colour


def element_classes(
    topo: Topology,
    elements: str = "links",
    ranks: frozenset[str] = frozenset(),
    link_labels: Mapping[str, Hashable] | None = None,
) -> dict[tuple, list[tuple[str, str]]]:
    """The design's live elements of the kind ``elements`` grouped by structural class.

    Parameters
    ----------
    topo : Topology
    elements : {"links", "switches", "nics", "all"}
    ranks : frozenset of str
    link_labels : mapping, optional
        As `node_colours`.

    Returns
    -------
    dict
        ``{class key: [(kind, id), ...]}`` where kind is ``link`` or ``node``; the key is
        made of colours only (ints), so it does not depend on names or order.  Elements
        already failed in the design are left out (they are down already).
    """
    if elements not in ELEMENT_KINDS:
        raise ValueError(f"unknown elements {elements!r}; choose one of {', '.join(ELEMENT_KINDS)}")
    node_ids, colour, links, link_colour = node_colours(topo, ranks, link_labels)
    where = {nid: i for i, nid in enumerate(node_ids)}
    classes: dict[tuple, list[tuple[str, str]]] = {}
    if elements in ("links", "all"):
        for lk, c in zip(links, link_colour.tolist(), strict=True):
            if lk.failed:
                continue
            ends = sorted((int(colour[where[lk.a]]), int(colour[where[lk.b]])))
            classes.setdefault(("link", c, *ends), []).append(("link", lk.id))
    kinds = {"switches": SWITCH_KINDS, "nics": {"nic"}, "all": SWITCH_KINDS | {"nic"}}.get(
        elements, set()
    )
    for node in topo.nodes():
        if node.kind in kinds and not node.failed:
            classes.setdefault(("node", int(colour[where[node.id]])), []).append(("node", node.id))
    return classes

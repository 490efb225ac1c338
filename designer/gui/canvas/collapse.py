"""What a collapsed group hides and which bundles stand in for its links (no Qt).

Big designs open collapsed (`initial_collapse`), and a collapsed group's members get
no graphics items until it is expanded: `fold` works on the design's numpy columns so
that collapsing, expanding and re-bundling never loop over every link in Python.

Collapse state is view state: a set of group ids kept by the scene, not in the model and
not undoable.  A node is hidden when any of its groups (its own or an ancestor) is
collapsed; it is then represented by the *outermost* collapsed one, so collapsing an SU
hides its racks and servers too.  Every link with an end hidden is drawn as part of one
aggregated `Bundle` per pair of visible ends (a box and an outside node, or two boxes);
links with both ends in the same box disappear inside it.

Example
-------
>>> from designer.model.topology import Group
>>> groups = {"su": Group("su", "su", "SU"), "n1": Group("n1", "node", "N1", parent="su")}
>>> outermost_collapsed(groups, {"n1", "su"})
{'su': 'su', 'n1': 'su'}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from designer.model.topology import Group, Link

KIND_WORDS = {"gpu": "GPU", "nic": "NIC", "nvswitch": "NVSwitch", "host": "host",
              "nvlink-switch-tray": "switch tray", "leaf": "leaf", "spine": "spine",
              "core": "core", "switch": "switch", "storage": "storage"}
MIN_BOXES = 4  # `initial_collapse` looks one level down when fewer outermost groups


@dataclass
class Bundle:
    """The links between two visible ends ``a`` and ``b`` (``"n:<node>"`` or
    ``"g:<group>"`` keys, ``a < b``)."""

    a: str
    b: str
    link_ids: list[str] = field(default_factory=list)
    count: int = 0
    gbps: float = 0.0
    techs: Counter = field(default_factory=Counter)
    rows: np.ndarray | None = None  # the links' rows in the design's columns (`fold`)


def outermost_collapsed(groups: Mapping[str, Group],
                        collapsed: Collection[str]) -> dict[str, str | None]:
    """For every group: the outermost collapsed group among itself and its ancestors
    (None when none is collapsed)."""
    out: dict[str, str | None] = {}

    def top(gid: str) -> str | None:
        if gid in out:
            return out[gid]
        out[gid] = None  # guards against a parent cycle in a malformed design
        parent = groups[gid].parent
        above = top(parent) if parent in groups else None
        out[gid] = above if above is not None else (gid if gid in collapsed else None)
        return out[gid]

    for gid in groups:
        top(gid)
    return out


def endpoint(node_id: str, group: str | None, top: Mapping[str, str | None]) -> str:
    """The visible end a node's links attach to: its collapsed box, or itself."""
    box = top.get(group) if group is not None else None
    return f"g:{box}" if box is not None else f"n:{node_id}"


def aggregate(links: Iterable[Link], node_group: Mapping[str, str | None],
              top: Mapping[str, str | None],
              gbps_of: Callable[[Link], float]) -> tuple[dict[tuple[str, str], Bundle],
                                                         set[str]]:
    """Bundles for the links touching a collapsed group, and the ids of every link that
    is hidden (bundled, or inside one box).

    ``gbps_of(link)`` is the bundle's bandwidth per direction (count x rate).
    """
    bundles: dict[tuple[str, str], Bundle] = {}
    hidden: set[str] = set()
    for lk in links:
        ea = endpoint(lk.a, node_group.get(lk.a), top)
        eb = endpoint(lk.b, node_group.get(lk.b), top)
        if ea[0] == "n" and eb[0] == "n":
            continue
        hidden.add(lk.id)
        if ea == eb:
            continue  # inside one box
        key = (ea, eb) if ea < eb else (eb, ea)
        b = bundles.get(key)
        if b is None:
            b = bundles[key] = Bundle(*key)
        b.link_ids.append(lk.id)
        b.count += lk.count
        b.gbps += gbps_of(lk)
        b.techs[lk.tech] += lk.count
    return bundles, hidden


def summary(kinds: Iterable[str]) -> str:
    """A one-line census of a group's members, most numerous first.

    >>> summary(["gpu"] * 8 + ["nic"] * 8 + ["host"])
    '8 GPU · 8 NIC · 1 host'
    """
    counts = Counter(kinds)
    return " · ".join(f"{n} {KIND_WORDS.get(k, k)}" for k, n in counts.most_common())


def fold(node_ids: Sequence[str], node_box: np.ndarray, box_ids: Sequence[str],
         a_idx: np.ndarray, b_idx: np.ndarray, keys: np.ndarray, counts: np.ndarray,
         tech_of: np.ndarray, tech_names: Sequence[str],
         tech_gbps: np.ndarray) -> tuple[dict[tuple[str, str], Bundle], np.ndarray]:
    """`aggregate` over the design's columns (`Topology.columns`), with no Python work
    per link: what a 100,000-link fabric needs to collapse or open in milliseconds.

    ``node_box`` gives, per node row, the index in ``box_ids`` of the collapsed box that
    hides it (-1: visible); ``keys`` are the link ids as an object array; ``tech_gbps``
    the rate of one link of each technology code.  Returns the bundles (each with
    ``rows``, its links' rows) and, per link row, whether the link is hidden.

    >>> import numpy as np
    >>> b, hidden = fold(["g0", "g1", "sw"], np.array([0, 0, -1]), ["su"],
    ...                  np.array([0, 1, 0]), np.array([2, 2, 1]),
    ...                  np.array(["l0", "l1", "l2"], dtype=object),
    ...                  np.array([2.0, 1.0, 4.0]), np.array([0, 0, 0]), ["ib"],
    ...                  np.array([400.0]))
    >>> [(k, v.link_ids, v.count, v.gbps) for k, v in b.items()], hidden.tolist()
    ([(('g:su', 'n:sw'), ['l0', 'l1'], 3, 1200.0)], [True, True, True])
    """
    n = len(node_ids)
    ba, bb = node_box[a_idx], node_box[b_idx]
    hidden = (ba >= 0) | (bb >= 0)
    ea = np.where(ba >= 0, n + ba, a_idx).astype(np.int64)
    eb = np.where(bb >= 0, n + bb, b_idx).astype(np.int64)
    rows = np.flatnonzero(hidden & (ea != eb))
    if not len(rows):
        return {}, hidden
    span = n + len(box_ids)
    pair = np.minimum(ea[rows], eb[rows]) * span + np.maximum(ea[rows], eb[rows])
    uniq, inv = np.unique(pair, return_inverse=True)
    nb, nt = len(uniq), len(tech_names)
    order = np.argsort(inv, kind="stable")  # links keep their order within a bundle
    bounds = np.cumsum(np.bincount(inv, minlength=nb))[:-1]
    members = np.split(rows[order], bounds)
    cnt = counts[rows]
    count = np.bincount(inv, weights=cnt, minlength=nb).round().astype(int).tolist()
    gbps = np.bincount(inv, weights=cnt * tech_gbps[tech_of[rows]], minlength=nb).tolist()
    techs = np.bincount(inv * nt + tech_of[rows], weights=cnt,
                        minlength=nb * nt).reshape(nb, nt).round().astype(int)

    def end(e: int) -> str:
        return f"n:{node_ids[e]}" if e < n else f"g:{box_ids[e - n]}"

    bundles: dict[tuple[str, str], Bundle] = {}
    for u, (p, row) in enumerate(zip(uniq.tolist(), techs.tolist(), strict=True)):
        a, b = end(p // span), end(p % span)
        key = (a, b) if a < b else (b, a)
        bundles[key] = Bundle(*key, link_ids=keys[members[u]].tolist(), count=count[u],
                              gbps=gbps[u],
                              techs=Counter({tech_names[t]: n for t, n in enumerate(row) if n}),
                              rows=members[u])
    return bundles, hidden


def initial_collapse(groups: Mapping[str, Group], node_count: int,
                     threshold: int) -> set[str]:
    """The groups a design of ``node_count`` nodes opens collapsed: none below
    ``threshold``; above it the outermost groups (SUs, pods), or the level below when
    fewer than `MIN_BOXES` of them would leave one box holding nearly everything.

    >>> gs = {"pod": Group("pod", "pod", "Pod"),
    ...       "su1": Group("su1", "su", "SU 1", parent="pod"),
    ...       "su2": Group("su2", "su", "SU 2", parent="pod")}
    >>> sorted(initial_collapse(gs, 50_000, 10_000)), initial_collapse(gs, 50, 10_000)
    (['su1', 'su2'], set())
    """
    if node_count < threshold:
        return set()
    children: dict[str | None, list[str]] = {}
    for gid, g in groups.items():
        parent = g.parent if g.parent in groups else None
        children.setdefault(parent, []).append(gid)
    level = children.get(None, [])
    while 0 < len(level) < MIN_BOXES:
        below = [c for gid in level for c in children.get(gid, [])]
        if not below:
            break
        level = below
    return set(level)

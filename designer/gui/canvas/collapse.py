"""What a collapsed group hides and which bundles stand in for its links (no Qt).

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
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from designer.model.topology import Group, Link

KIND_WORDS = {"gpu": "GPU", "nic": "NIC", "nvswitch": "NVSwitch", "host": "host",
              "nvlink-switch-tray": "switch tray", "leaf": "leaf", "spine": "spine",
              "core": "core", "switch": "switch", "storage": "storage"}


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

"""`Parts`: groups, nodes and links a template collects before it becomes a `Topology`.

A template adds parts with deterministic, readable ids; `Parts.build` lays them out
(`layout.compute_layout`) and hands them to `Topology.extend` in one go.  `spread` deals
uplinks round-robin over a tier of switches, the wiring rule every Clos tier here uses.

Example
-------
>>> p = Parts()
>>> _ = p.node("g0", "gpu", "H100", "GPU 0")
>>> _ = p.node("g1", "gpu", "H100", "GPU 1")
>>> _ = p.link("g0", "g1", "nvlink4", count=18)
>>> t = p.build("two GPUs")
>>> (len(t), t.link("g0:g1").count)
(2, 18)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from designer.model.catalog import Catalog, default_catalog
from designer.model.errors import DesignError
from designer.model.topology import Group, Link, Node, Topology


def spread(
    sources: Sequence[tuple[str, int]], targets: Sequence[str]
) -> list[tuple[str, str, int]]:
    """Deal each source's links round-robin over ``targets``, one global pointer.

    Link ``k`` overall goes to ``targets[k % len(targets)]``, so every target ends with
    ``floor`` or ``ceil`` of the total / ``len(targets)`` links, and a source with at least
    as many links as there are targets reaches all of them.

    Returns
    -------
    list of (source, target, count)
        One entry per pair that got links.

    Examples
    --------
    >>> spread([("a", 3), ("b", 3)], ["x", "y"])
    [('a', 'x', 2), ('a', 'y', 1), ('b', 'y', 2), ('b', 'x', 1)]
    """
    if not targets:
        raise DesignError("no switches to connect uplinks to")
    n_t = len(targets)
    out: list[tuple[str, str, int]] = []
    pos = 0
    for src, n in sources:
        full, rem = divmod(n, n_t)
        for k in range(min(n, n_t)):
            out.append((src, targets[(pos + k) % n_t], full + (1 if k < rem else 0)))
        pos = (pos + n) % n_t
    return out


def pad(n: int, total: int, width: int = 2) -> str:
    """``n`` zero-padded to fit ``total`` (``pad(3, 40) == '03'``)."""
    return str(n).zfill(max(width, len(str(total))))


@dataclass
class Parts:
    """An ordered, growing collection of groups, nodes and links (ids unique)."""

    catalog: Catalog = field(default_factory=default_catalog)
    groups: dict[str, Group] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)

    def group(self, gid: str, kind: str, name: str, parent: str | None = None) -> str:
        if gid in self.groups or gid in self.nodes:
            raise DesignError(f"template bug: id {gid!r} used twice")
        self.groups[gid] = Group(gid, kind, name, parent)
        return gid

    def set_parent(self, gid: str, parent: str | None) -> None:
        self.groups[gid] = replace(self.groups[gid], parent=parent)

    def node(
        self,
        nid: str,
        kind: str,
        model: str,
        name: str,
        *,
        group: str | None = None,
        plane: str = "compute",
    ) -> str:
        if nid in self.nodes or nid in self.groups:
            raise DesignError(f"template bug: id {nid!r} used twice")
        self.nodes[nid] = Node(nid, kind, model, name, group=group, plane=plane)
        return nid

    def set_group(self, nid: str, group: str | None) -> None:
        self.nodes[nid] = replace(self.nodes[nid], group=group)

    def link(self, a: str, b: str, tech: str, count: int = 1, plane: str = "compute") -> str:
        """Add a bundle ``a``-``b``; its id is ``"a:b"`` (``"a:b:2"`` for a second one)."""
        lid = f"{a}:{b}"
        k = 1
        while lid in self.links:
            k += 1
            lid = f"{a}:{b}:{k}"
        self.links[lid] = Link(lid, a, b, tech, count=count, plane=plane)
        return lid

    def _groups_parent_first(self) -> list[Group]:
        out: list[Group] = []
        done: set[str] = set()

        def visit(g: Group) -> None:
            if g.id in done:
                return
            if g.parent is not None and g.parent in self.groups:
                visit(self.groups[g.parent])
            done.add(g.id)
            out.append(g)

        for g in self.groups.values():
            visit(g)
        return out

    def build(self, name: str, *, wrap: int | None = None) -> Topology:
        """A new `Topology` called ``name`` holding the parts, laid out in layers.

        ``wrap`` lays server blocks out in rows of that many (a torus as a grid).
        """
        from designer.model.templates.layout import compute_layout

        nodes = list(self.nodes.values())
        links = list(self.links.values())
        pos = compute_layout(nodes, self.groups, links, self.catalog, wrap=wrap)
        placed = [replace(n, x=pos[n.id][0], y=pos[n.id][1]) for n in nodes]
        topo = Topology(self.catalog, name=name)
        topo.extend(self._groups_parent_first(), placed, links)
        return topo

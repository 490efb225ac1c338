"""`Topology`: the design itself, stored in a networkx multigraph.

The graph *is* the storage: node attributes hold a `Node`'s fields, edges are keyed by
link id and hold a `Link`'s fields.  `Node`, `Link` and `Group` (`designer.model.elements`,
imported from here) are frozen values, so a command can keep the old value for undo and
an event can carry the new one.

Events: ``topology.events``, a psygnal `SignalGroup` (no Qt, `designer.model.events`),
with one signal per kind of change (``node_added``, ``link_changed``...), none emitted
when nothing changed, and ``changed(edit)`` after them.  An edit of many items (removing
a node with its links, `extend`, `add_parts`, the bulk commands) emits ``changed`` once.

Example
-------
>>> t = Topology()
>>> g = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
>>> s = t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "NVSwitch 0", x=0, y=-100))
>>> link = t.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
>>> t.graph.number_of_edges()
1
"""

from __future__ import annotations

import itertools
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import networkx as nx

from designer.collector import collector_paused
from designer.model import bulk
from designer.model.bulk import PartError  # noqa: F401  (re-exported)
from designer.model.catalog import Catalog, default_catalog
from designer.model.checks import (  # noqa: F401  (GROUP_KINDS re-exported)
    GROUP_KINDS,
    ID_RE,
    check_group,
    check_link,
    check_node,
)
from designer.model.columns import DesignColumns, FrozenColumns
from designer.model.elements import (
    GROUP_FIELDS,  # noqa: F401  (re-exported with the values)
    LINK_FIELDS,
    NODE_FIELDS,
    Group,
    Link,
    Node,
)
from designer.model.errors import DesignError
from designer.model.events import TopologyEvents
from designer.model.scenario import ROUTING_MODES, Scenario, TrainingSpec, check_workloads

#: Design-wide settings and their defaults: the routing mode, and the scenario and
#: training workload the live analysis evaluates (plain dicts, see `model.scenario`),
#: and the training jobs sharing the fabric (`model.scenario.check_workloads`).
DEFAULT_SETTINGS: Mapping[str, Any] = {
    "routing": "adaptive",
    "scenario": Scenario().to_dict(),
    "training": TrainingSpec().to_dict(),
    "workloads": [],
}

_ID_RE = ID_RE  # (tests compare it with the file schema's id pattern)


def _listed(known: bulk.Known) -> tuple[set[str], set[str]]:
    """The fields every item has (those ``known`` gives a column of values for), and
    those no item has."""
    return (
        {name for name, column in known.items() if column is not None},
        {name for name, column in known.items() if column is None},
    )


class Topology:
    """Nodes, links and groups of one design, over a networkx ``MultiGraph``.

    Parameters
    ----------
    catalog : Catalog, optional
        Device models and link technologies; the shipped catalog by default.
    name : str
        Design name.

    Attributes
    ----------
    events : TopologyEvents
        The design's signals (`designer.model.events`).
    generation : int
        Counts changes: one per item added, removed or changed.
    """

    def __init__(self, catalog: Catalog | None = None, name: str = "untitled"):
        self.events = TopologyEvents(self)
        self.catalog = catalog if catalog is not None else default_catalog()
        self.name = name
        self._nx = nx.MultiGraph()
        self._view = self._nx.copy(as_view=True)
        # Edge writes `add_parts(lazy_edges=True)` left for the graph's next reader.
        self._deferred: list[Callable[[], None]] = []
        self._groups: dict[str, Group] = {}
        # link id -> (a, b): networkx finds a keyed edge only with both ends.
        self._link_ends: dict[str, tuple[str, str]] = {}
        self._settings: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v)
                                          for k, v in DEFAULT_SETTINGS.items()}
        # Per-model price/power overrides: {model: {"price_usd": .., "power_w": ..}}.
        self.overrides: dict[str, dict[str, float]] = {}
        self._counters: dict[str, itertools.count] = {}
        self.generation = 0
        # The same nodes and links as numpy columns, for the solver (`model.columns`).
        self._columns = DesignColumns()

    # ------------------------------------------------------------------ reading
    @property
    def _g(self) -> nx.MultiGraph:
        """The graph, its deferred edges written first."""
        if self._deferred:
            with collector_paused():
                while self._deferred:
                    self._deferred.pop(0)()
        return self._nx

    @property
    def graph(self) -> nx.MultiGraph:
        """Read-only networkx view of the design (node attrs = `Node` fields, edge key
        = link id, edge attrs = `Link` fields)."""
        self._g  # noqa: B018  (writes deferred edges)
        return self._view

    def discard(self) -> None:
        """Break the reference cycles of this design's graphs, for a copy about to be
        dropped; the design is unusable afterwards.

        networkx keeps a graph's views (``nodes``, ``edges``, ...) in the graph's own
        instance dict, and each view refers back to the graph: a dropped design is then
        freed only by the cyclic garbage collector, which the application runs on the
        GUI thread, where walking a 16,384-GPU design's ~170,000 dicts is a stall.
        Emptied here, the design is freed by reference counting wherever it is dropped.
        """
        self._deferred.clear()
        for g in (self._view, self._nx):
            g.__dict__.clear()

    def node_data(self) -> Mapping[str, Mapping[str, Any]]:
        """Node id -> its attributes (the `Node` fields but the id), read-only, without
        the links: what a reader of the nodes alone needs, even before the graph's
        edges of a lazy `add_parts` are written."""
        return MappingProxyType(self._nx._node)

    def link_data(self) -> dict[str, Mapping[str, Any]]:
        """Link id -> its attributes (the `Link` fields but the id), in insertion order:
        the graph's own dicts, not to be changed."""
        adj = self._g._adj
        return {k: adj[a][b][k] for k, (a, b) in self._link_ends.items()}

    def __len__(self) -> int:
        return self._nx.number_of_nodes()

    def flush_columns(self) -> None:
        """Write rows added one by one into the column arrays now (`extend` does it;
        a loader that adds items one at a time calls it at the end)."""
        self._columns.flush()

    def columns(self) -> FrozenColumns:
        """Nodes and links as immutable numpy columns, in insertion order: O(1) unless
        nodes or links were removed since the last call (see `designer.model.columns`).
        Safe to hand to another thread; call it on the thread that edits the design."""
        return self._columns.freeze()

    def link_count(self) -> int:
        """Number of links, in O(1) (``graph.number_of_edges()`` walks every node)."""
        return len(self._link_ends)

    def has_node(self, node_id: str) -> bool:
        return node_id in self._nx

    def has_link(self, link_id: str) -> bool:
        return link_id in self._link_ends

    def node(self, node_id: str) -> Node:
        """The node ``node_id``; raises `DesignError` when there is none."""
        try:
            return Node(id=node_id, **self._g.nodes[node_id])
        except KeyError:
            raise DesignError(f"no node {node_id!r}") from None

    def nodes(self, kind: str | None = None) -> Iterator[Node]:
        """All nodes (of one kind if given), in insertion order."""
        for nid, attrs in self._g.nodes(data=True):
            if kind is None or attrs["kind"] == kind:
                yield Node(id=nid, **attrs)

    def link(self, link_id: str) -> Link:
        """The link ``link_id``; raises `DesignError` when there is none."""
        try:
            a, b = self._link_ends[link_id]
        except KeyError:
            raise DesignError(f"no link {link_id!r}") from None
        return Link(id=link_id, **self._g.edges[a, b, link_id])

    def links(self) -> Iterator[Link]:
        """All links, in insertion order."""
        for link_id, (a, b) in self._link_ends.items():
            yield Link(id=link_id, **self._g.edges[a, b, link_id])

    def links_of(self, node_id: str) -> list[Link]:
        """Links with an end at ``node_id``."""
        if node_id not in self._g:
            raise DesignError(f"no node {node_id!r}")
        return [Link(id=k, **d) for _, _, k, d in self._g.edges(node_id, keys=True, data=True)]

    def group(self, group_id: str) -> Group:
        try:
            return self._groups[group_id]
        except KeyError:
            raise DesignError(f"no group {group_id!r}") from None

    def groups(self) -> Iterator[Group]:
        return iter(list(self._groups.values()))

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups

    def members(self, group_id: str) -> list[str]:
        """Ids of the nodes inside ``group_id`` or any of its sub-groups."""
        inside = {group_id}
        grew = True
        while grew:
            more = {g.id for g in self._groups.values() if g.parent in inside} - inside
            grew = bool(more)
            inside |= more
        return [n for n, d in self._g.nodes(data=True) if d["group"] in inside]

    @property
    def settings(self) -> Mapping[str, Any]:
        return {k: (dict(v) if isinstance(v, dict) else
                    check_workloads(v) if k == "workloads" else v)
                for k, v in self._settings.items()}

    def new_id(self, prefix: str) -> str:
        """A fresh id ``prefix-N`` not used by any node, link or group."""
        counter = self._counters.setdefault(prefix, itertools.count())
        while True:
            candidate = f"{prefix}-{next(counter)}"
            if not (self.has_node(candidate) or self.has_link(candidate)
                    or candidate in self._groups):
                return candidate

    # ------------------------------------------------------------------ checking
    def _check_node(self, node: Node) -> None:
        check_node(node, self.catalog, self._groups)

    def _check_link(self, link: Link) -> None:
        check_link(link, self.catalog, self._g)

    def _check_group(self, group: Group) -> None:
        check_group(group, self._groups)

    # ------------------------------------------------------------------ mutating
    def _bump(self, event: str, *args: Any) -> None:
        """Count a change and announce it: the item signal ``event``, then ``changed``."""
        self.generation += 1
        self.events.record(event, *args)

    def add_node(self, node: Node) -> Node:
        """Add ``node``; raises `DesignError` if its id is taken or a field is invalid."""
        if node.id in self._g or node.id in self._link_ends or node.id in self._groups:
            raise DesignError(f"id {node.id!r} is already used")
        self._check_node(node)
        self._g.add_node(node.id, **{f: getattr(node, f) for f in NODE_FIELDS[1:]})
        self._columns.add_node(node.id, node.kind, node.model, node.failed)
        self._bump("node_added", node)
        return node

    def remove_node(self, node_id: str) -> tuple[Node, list[Link]]:
        """Remove a node and the links at it; returns both (for undo)."""
        node = self.node(node_id)
        links = self.links_of(node_id)
        with self.events.paused():  # one ``changed`` for the node and its links
            for link in links:
                self.remove_link(link.id)
            self._g.remove_node(node_id)
            self._columns.remove_node(node_id)
            self._bump("node_removed", node)
        return node, links

    def update_node(self, node_id: str, **changes: Any) -> Node:
        """Change fields of a node; emits ``node_moved`` for position-only changes,
        ``node_changed`` otherwise, and nothing when no field actually changes."""
        old = self.node(node_id)
        if "id" in changes and changes["id"] != node_id:
            raise DesignError(f"node {node_id!r}: the id cannot change")
        new = replace(old, **changes)
        if new == old:
            return old
        self._check_node(new)
        self._g.nodes[node_id].update({f: getattr(new, f) for f in NODE_FIELDS[1:]})
        self._columns.update_node(node_id, new.kind, new.model, new.failed)
        moved_only = all(getattr(old, f) == getattr(new, f) for f in NODE_FIELDS if f not in "xy")
        if moved_only:
            self._bump("node_moved", new)
        else:
            self._bump("node_changed", old, new)
        return new

    def add_link(self, link: Link) -> Link:
        """Add a link bundle; raises `DesignError` naming the problem when impossible."""
        if link.id in self._link_ends or link.id in self._g or link.id in self._groups:
            raise DesignError(f"id {link.id!r} is already used")
        self._check_link(link)
        self._g.add_edge(link.a, link.b, key=link.id,
                         **{f: getattr(link, f) for f in LINK_FIELDS[1:]})
        self._link_ends[link.id] = (link.a, link.b)
        self._columns.add_link(link.id, link.a, link.b, link.tech, link.count, link.plane,
                               link.failed)
        self._bump("link_added", link)
        return link

    def remove_link(self, link_id: str) -> Link:
        link = self.link(link_id)
        self._g.remove_edge(link.a, link.b, key=link_id)
        del self._link_ends[link_id]
        self._columns.remove_link(link_id)
        self._bump("link_removed", link)
        return link

    def update_link(self, link_id: str, **changes: Any) -> Link:
        """Change fields of a link (not its id or ends); no event when nothing changes."""
        old = self.link(link_id)
        for f in ("id", "a", "b"):
            if f in changes and changes[f] != getattr(old, f):
                raise DesignError(f"link {link_id!r}: {f} cannot change (remove and re-add)")
        new = replace(old, **changes)
        if new == old:
            return old
        self._check_link(new)
        self._g.edges[old.a, old.b, link_id].update(
            {f: getattr(new, f) for f in LINK_FIELDS[1:]})
        self._columns.update_link(link_id, new.tech, new.count, new.plane, new.failed)
        self._bump("link_changed", old, new)
        return new

    def add_group(self, group: Group) -> Group:
        if group.id in self._groups or group.id in self._g or group.id in self._link_ends:
            raise DesignError(f"id {group.id!r} is already used")
        self._check_group(group)
        self._groups[group.id] = group
        self._bump("group_added", group)
        return group

    def remove_group(self, group_id: str) -> Group:
        """Remove an empty group (no member nodes, no child groups)."""
        group = self.group(group_id)
        if any(g.parent == group_id for g in self._groups.values()):
            raise DesignError(f"group {group_id!r} still has sub-groups")
        if any(d["group"] == group_id for _, d in self._g.nodes(data=True)):
            raise DesignError(f"group {group_id!r} still has nodes")
        del self._groups[group_id]
        self._bump("group_removed", group)
        return group

    def update_group(self, group_id: str, **changes: Any) -> Group:
        old = self.group(group_id)
        if "id" in changes and changes["id"] != group_id:
            raise DesignError(f"group {group_id!r}: the id cannot change")
        new = replace(old, **changes)
        if new == old:
            return old
        self._check_group(new)
        self._groups[group_id] = new
        self._bump("group_changed", old, new)
        return new

    def set_setting(self, key: str, value: Any) -> Any:
        """Set a design-wide setting; returns the previous value."""
        if key not in DEFAULT_SETTINGS:
            raise DesignError(f"unknown design setting {key!r}")
        if key == "routing" and value not in ROUTING_MODES:
            raise DesignError(f"routing must be one of {', '.join(ROUTING_MODES)}")
        if key == "scenario":
            value = Scenario.from_dict(value).to_dict()
        if key == "training":
            value = TrainingSpec.from_dict(value).to_dict()
        if key == "workloads":
            value = check_workloads(value)
        old = self._settings.get(key)
        if old != value:
            self._settings[key] = value
            self._bump("settings_changed", key, value)
        return old

    # ------------------------------------------------------------------ bulk / state
    def extend(self, groups: Iterable[Group] = (), nodes: Iterable[Node] = (),
               links: Iterable[Link] = ()) -> None:
        """Add groups, then nodes, then links one by one, each with its item event and
        one ``changed`` for all (a paste into a design on screen); `add_parts` adds many
        at once."""
        with collector_paused(), self.events.paused():
            for g in groups:
                self.add_group(g)
            for n in nodes:
                self.add_node(n)
            for link in links:
                self.add_link(link)
        self.flush_columns()

    @classmethod
    def from_parts(
        cls,
        groups: Iterable[Group | Mapping[str, Any]] = (),
        nodes: Iterable[Node | Mapping[str, Any]] = (),
        links: Iterable[Link | Mapping[str, Any]] = (),
        *,
        catalog: Catalog | None = None,
        name: str = "untitled",
    ) -> Topology:
        """A new design holding these groups (parents first), nodes and links: the
        design `extend` would build, at a fraction of the cost (see `add_parts`)."""
        topology = cls(catalog, name=name)
        topology.add_parts(groups, nodes, links)
        return topology

    def add_parts(
        self,
        groups: Iterable[Group | Mapping[str, Any]] = (),
        nodes: Iterable[Node | Mapping[str, Any]] = (),
        links: Iterable[Link | Mapping[str, Any]] = (),
        *,
        progress: Callable[[int], None] | None = None,
        every: int = 4096,
        adopt: bool = False,
        columns: tuple[bulk.Known, bulk.Known] | None = None,
        lazy_edges: bool = False,
    ) -> None:
        """Add groups (parents first), then nodes, then links, all or none.

        Each section is given as values (`Group`, `Node`, `Link`) or as mappings of
        their field names (a missing optional field takes its default).  The items are
        checked by the rules of `add_group`, `add_node` and `add_link`, column by column
        (`designer.model.bulk`), and written into the graph in one go: the result is
        the design those calls in this order would build, at a few microseconds an item.

        Events: the item events (``node_added``...) after everything is in, then one
        ``changed`` carrying them all; none is made when no slot listens (a file being
        loaded into a design not on screen yet).

        ``progress(done)``, if given, is called while the checked items are written,
        each time ``done`` (groups, then nodes, then links) reaches a multiple of
        ``every``; an exception it raises stops the writing, the design then holding
        part of the items (for a loader that discards it when its user cancels).

        ``adopt``: the nodes and links are dicts with no keys but their fields, which
        the caller gives away (a loader's parsed file): they become the graph's
        attribute dicts (see `bulk.with_attributes`), a dict less per item.

        ``columns``: for nodes and links given as mappings, the columns of their fields
        the caller has already read (a list for a field every item has, None for a
        field none has, see `bulk.Known`), which are then not read again.  They are
        checked like the others.

        ``lazy_edges``: write the graph's edges when the graph is next read, not now
        (the links, their ids and columns are in at once): a loader whose caller may
        only read the columns (`columns`, `node_data`) then does not pay for them.
        Only for a design nobody holds a `graph` view of yet: such a view would not see
        the edges until the graph is read through this design again.

        Raises
        ------
        PartError
            For the first item those calls would refuse, with their message (a
            `DesignError`; ``section`` and ``index`` name the item); nothing is added.
        """
        groups, nodes, links = list(groups), list(nodes), list(links)
        # Plain dicts and sets for the id checks: C lookups, one per new id.
        graph_nodes, ends, old_groups = self._g._node, self._link_ends, self._groups
        deferred = self._deferred if lazy_edges else None
        with collector_paused():
            new_groups = bulk.checked_groups(groups, old_groups, (graph_nodes, ends))
            taken = (graph_nodes, ends, old_groups, new_groups)
            known_nodes, known_links = columns or ({}, {})
            ncols = bulk.node_columns(nodes, known_nodes)
            known_groups = ChainMap(new_groups, old_groups)
            bulk.check_nodes(ncols, nodes, self.catalog, known_groups, taken)
            new_nodes = dict(zip(ncols["id"], range(len(nodes)), strict=True))
            lcols = bulk.link_columns(links, known_links)
            ends_at = bulk.check_links(lcols, links, self.catalog, (new_nodes, graph_nodes),
                                       (*taken, new_nodes))
            del new_nodes
            if ends_at is not None:  # every end a new node: joined by place
                lcols[bulk.A_ROW], lcols[bulk.B_ROW] = ends_at
            self._groups.update(new_groups)
            bulk.with_attributes(Node, ncols, nodes, adopt, *_listed(known_nodes))
            bulk.with_attributes(Link, lcols, links, adopt, *_listed(known_links))
            bulk.write_parts(self._g, self._columns, self._link_ends, ncols, lcols,
                             len(groups), progress, every, deferred)
        self.flush_columns()
        added = len(groups) + len(nodes) + len(links)
        if not added:
            return
        self.generation += added  # as many as one call per item makes
        self.events.record_many(itertools.chain(
            (("group_added", (g,)) for g in new_groups.values()),
            (("node_added", (self.node(n),)) for n in ncols["id"]),
            (("link_added", (self.link(lk),)) for lk in lcols["id"])))

    def state(self) -> dict[str, Any]:
        """A canonical, comparable snapshot of everything the design holds."""
        return {
            "name": self.name,
            "settings": dict(sorted(self._settings.items())),
            "overrides": {k: dict(sorted(v.items())) for k, v in sorted(self.overrides.items())},
            "groups": sorted(self._groups.values(), key=lambda g: g.id),
            "nodes": sorted(self.nodes(), key=lambda n: n.id),
            "links": sorted(self.links(), key=lambda lk: lk.id),
        }

    def port_usage(self) -> dict[str, list[tuple[str, float, int]]]:
        """Ports used per node and port family: ``{node: [(family, used, available)]}``.

        A link bundle of ``count`` links uses ``count`` ports at each end (a fraction of a
        port when a faster breakout port carries it).  Links whose technology no port
        group of the device accepts are not counted here; `rules.validate` reports them.
        """
        usage: dict[str, dict[int, float]] = {}
        cat = self.catalog
        nodes = self._g.nodes
        # (model, tech) -> (port group index, ports per link); a design has few of each.
        slot: dict[tuple[str, str], tuple | None] = {}
        for a, b, d in self._g.edges(data=True):
            for end in (a, b):
                key = (nodes[end]["model"], d["tech"])
                if key not in slot:
                    dev, tech = cat.device(key[0]), cat.tech(key[1])
                    group = dev.port_group_for(tech)
                    slot[key] = None if group is None else (dev.ports.index(group), group, tech)
                hit = slot[key]
                if hit is None:
                    continue
                idx, group, tech = hit
                per = usage.setdefault(end, {})
                per[idx] = per.get(idx, 0.0) + group.ports_used(tech, d["count"])
        out: dict[str, list[tuple[str, float, int]]] = {}
        for nid, per in usage.items():
            dev = cat.device(self._g.nodes[nid]["model"])
            out[nid] = [(dev.ports[i].family, used, dev.ports[i].count)
                        for i, used in sorted(per.items())]
        return out

    def ports_free(self, node_id: str, tech_key: str) -> float:
        """Free ports at ``node_id`` for a link of ``tech_key`` (0 if none accepts it)."""
        cat = self.catalog
        dev = cat.device(self.node(node_id).model)
        tech = cat.tech(tech_key)
        group = dev.port_group_for(tech)
        if group is None:
            return 0.0
        used = 0.0
        for link in self.links_of(node_id):
            other = cat.tech(link.tech)
            if dev.port_group_for(other) is group:
                used += group.ports_used(other, link.count)
        return group.count - used

    def over_subscribed_ports(self) -> list[tuple[str, str, float, int]]:
        """``(node, family, used, available)`` for every port group used beyond its count."""
        return [(nid, fam, used, avail)
                for nid, groups in self.port_usage().items()
                for fam, used, avail in groups if used > avail + 1e-9]

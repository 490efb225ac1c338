"""Edit commands: every change a user makes, as a do/undo pair over a `Topology`.

Commands are plain objects (no Qt); the GUI wraps each in a ``QUndoCommand``.  A
command records what it needs for undo when it is first done, so ``do`` after ``undo``
replays exactly, and undoing any sequence restores the exact prior state (see
``tests/model/test_commands.py``, a hypothesis state machine).

A command that changes many items does and undoes them inside
``topo.events.paused()`` (`designer.model.events`): the design's ``changed`` event fires
once per command, carrying every item it touched, so the canvas and the solve runner
react once to a paste of a thousand nodes.

Example
-------
>>> from designer.model.topology import Topology, Node
>>> t = Topology()
>>> cmd = AddNode(Node("g0", "gpu", "H100", "GPU 0"))
>>> cmd.do(t); t.has_node("g0")
True
>>> cmd.undo(t); t.has_node("g0")
False
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from designer.model.errors import DesignError
from designer.model.naming import UniqueNames
from designer.model.topology import Group, Link, Node, Topology


def _one_event(method: Callable[[Command, Topology], None]) -> Callable:
    """Run a command's ``do`` or ``undo`` with the design's ``changed`` held to one."""

    @functools.wraps(method)
    def run(self: Command, topo: Topology) -> None:
        with topo.events.paused():
            method(self, topo)

    return run


class Command:
    """Base class: ``do`` applies the change, ``undo`` reverts it; ``text`` names it."""

    text = "edit"

    def do(self, topo: Topology) -> None:
        raise NotImplementedError

    def undo(self, topo: Topology) -> None:
        raise NotImplementedError


class AddNode(Command):
    def __init__(self, node: Node):
        self.node = node
        self.text = f"Add {node.name}"

    def do(self, topo: Topology) -> None:
        topo.add_node(self.node)

    def undo(self, topo: Topology) -> None:
        topo.remove_node(self.node.id)


class RemoveNodes(Command):
    """Remove nodes and every link at them; undo puts both back with the same ids."""

    def __init__(self, node_ids: Iterable[str]):
        self.node_ids = list(dict.fromkeys(node_ids))
        self._nodes: list[Node] = []
        self._links: dict[str, Link] = {}
        self.text = f"Delete {len(self.node_ids)} node(s)"

    @_one_event
    def do(self, topo: Topology) -> None:
        self._nodes, self._links = [], {}
        for nid in self.node_ids:
            for link in topo.links_of(nid):
                self._links[link.id] = link
        for nid in self.node_ids:
            node, _ = topo.remove_node(nid)
            self._nodes.append(node)

    @_one_event
    def undo(self, topo: Topology) -> None:
        for node in self._nodes:
            topo.add_node(node)
        for link in self._links.values():
            topo.add_link(link)


class MoveNodes(Command):
    """Move nodes to new positions (one command per drag, however many nodes)."""

    def __init__(self, positions: Mapping[str, tuple[float, float]], text: str = "Move"):
        self.positions = dict(positions)
        self._old: dict[str, tuple[float, float]] = {}
        self.text = text

    @_one_event
    def do(self, topo: Topology) -> None:
        self._old = {}
        for nid, (x, y) in self.positions.items():
            n = topo.node(nid)
            self._old[nid] = (n.x, n.y)
            topo.update_node(nid, x=float(x), y=float(y))

    @_one_event
    def undo(self, topo: Topology) -> None:
        for nid, (x, y) in self._old.items():
            topo.update_node(nid, x=x, y=y)


class _SetProps(Command):
    """Change the same properties of several items of one kind, all or nothing: if one
    update is refused, those already made are undone before the error goes on."""

    _kind = ""  # "node", "link" or "group": the Topology methods it uses

    def __init__(self, ids: Iterable[str], **changes: Any):
        self.ids = list(dict.fromkeys(ids))
        self.changes = changes
        self._old: dict[str, Any] = {}

    @_one_event
    def do(self, topo: Topology) -> None:
        get, update = getattr(topo, self._kind), getattr(topo, f"update_{self._kind}")
        # Every item first, so an unknown id fails before anything changes.
        self._old = {i: get(i) for i in self.ids}
        done = []
        try:
            for i in self.ids:
                update(i, **self.changes)
                done.append(i)
        except DesignError:
            self._restore(topo, done)
            raise

    @_one_event
    def undo(self, topo: Topology) -> None:
        self._restore(topo, self.ids)

    def _restore(self, topo: Topology, ids: Sequence[str]) -> None:
        update = getattr(topo, f"update_{self._kind}")
        for i in reversed(ids):
            old = self._old[i]
            update(i, **{f: getattr(old, f) for f in old.__slots__ if f != "id"})


class SetNodeProps(_SetProps):
    """Change properties (name, model, group, plane, failed...) of one or more nodes."""

    _kind = "node"

    def __init__(self, node_ids: Iterable[str], **changes: Any):
        super().__init__(node_ids, **changes)
        self.text = "Change " + ", ".join(sorted(changes))


class AddLink(Command):
    def __init__(self, link: Link):
        self.link = link
        self.text = "Add link"

    def do(self, topo: Topology) -> None:
        topo.add_link(self.link)

    def undo(self, topo: Topology) -> None:
        topo.remove_link(self.link.id)


class RemoveLinks(Command):
    def __init__(self, link_ids: Iterable[str]):
        self.link_ids = list(dict.fromkeys(link_ids))
        self._links: list[Link] = []
        self.text = f"Delete {len(self.link_ids)} link(s)"

    @_one_event
    def do(self, topo: Topology) -> None:
        self._links = [topo.remove_link(lid) for lid in self.link_ids]

    @_one_event
    def undo(self, topo: Topology) -> None:
        for link in self._links:
            topo.add_link(link)


class SetLinkProps(_SetProps):
    """Change technology (retype), count, plane or failed state of links."""

    _kind = "link"

    def __init__(self, link_ids: Iterable[str], **changes: Any):
        super().__init__(link_ids, **changes)
        self.text = "Change link " + ", ".join(sorted(changes))


class AddGroup(Command):
    def __init__(self, group: Group):
        self.group = group
        self.text = f"Add group {group.name}"

    def do(self, topo: Topology) -> None:
        topo.add_group(self.group)

    def undo(self, topo: Topology) -> None:
        topo.remove_group(self.group.id)


class RemoveGroup(Command):
    """Remove an empty group (the inverse of `AddGroup`)."""

    def __init__(self, group_id: str):
        self.group_id = group_id
        self._old: Group | None = None
        self.text = f"Remove group {group_id}"

    def do(self, topo: Topology) -> None:
        self._old = topo.remove_group(self.group_id)

    def undo(self, topo: Topology) -> None:
        topo.add_group(self._old)


class SetGroupProps(_SetProps):
    """Change properties (name, kind, parent) of one or more groups, all or nothing."""

    _kind = "group"

    def __init__(self, group_ids: Iterable[str], **changes: Any):
        super().__init__(group_ids, **changes)
        self.text = "Change group " + ", ".join(sorted(changes))


def group_nodes(topo: Topology, node_ids: Sequence[str], kind: str, name: str) -> Macro:
    """One undo step that puts ``node_ids`` in a new group of ``kind`` named ``name``.

    The new group sits inside the group the nodes share, if they all have the same one
    (a rack made of some servers' nodes stays in its SU); otherwise at the top level.

    Raises
    ------
    DesignError
        When no node is given or a node does not exist (the kind is checked on do).
    """
    if not node_ids:
        raise DesignError("select the nodes to group")
    current = {topo.node(n).group for n in node_ids}
    parent = current.pop() if len(current) == 1 else None
    group = Group(topo.new_id(kind), kind, name or kind, parent)
    return Macro([AddGroup(group), SetNodeProps(node_ids, group=group.id)],
                 f"Group {len(node_ids)} node(s) as {group.name}")


def ungroup(topo: Topology, group_id: str) -> Macro:
    """One undo step that dissolves group ``group_id``: its nodes and sub-groups move to
    its parent (or the top level), then the group goes."""
    group = topo.group(group_id)
    nodes = [n.id for n in topo.nodes() if n.group == group_id]  # direct members
    children = [g.id for g in topo.groups() if g.parent == group_id]
    parts: list[Command] = []
    if nodes:
        parts.append(SetNodeProps(nodes, group=group.parent))
    if children:
        parts.append(SetGroupProps(children, parent=group.parent))
    parts.append(RemoveGroup(group_id))
    return Macro(parts, f"Ungroup {group.name}")


class RenameDesign(Command):
    """Give the design a new name (saved in its file; the window title shows it).

    >>> t = Topology(name="old")
    >>> cmd = RenameDesign("new")
    >>> cmd.do(t); t.name
    'new'
    >>> cmd.undo(t); t.name
    'old'
    """

    def __init__(self, name: str):
        self.name = name
        self._old: str | None = None
        self.text = f"Rename the design to {name}"

    def do(self, topo: Topology) -> None:
        self._old, topo.name = topo.name, self.name

    def undo(self, topo: Topology) -> None:
        topo.name = self._old


class SetSetting(Command):
    def __init__(self, key: str, value: Any):
        self.key, self.value = key, value
        self._old: Any = None
        self.text = f"Set {key}"

    def do(self, topo: Topology) -> None:
        self._old = topo.set_setting(self.key, self.value)

    def undo(self, topo: Topology) -> None:
        topo.set_setting(self.key, self._old)


class PasteSubgraph(Command):
    """Add a sub-graph (groups, nodes, links), giving every item a fresh id.

    The ids in the clipboard are remapped to unused ones when the command is first
    done, and kept on redo, so the pasted items stay the same objects across undo.
    ``offset`` shifts positions so a paste does not sit on its original.  Names are
    made unique where the copies land (`UniqueNames`): a group's among all groups (the
    ranks box and reports list groups by name), a node's among the nodes of its group.
    """

    def __init__(self, groups: Sequence[Group], nodes: Sequence[Node], links: Sequence[Link],
                 offset: tuple[float, float] = (40.0, 40.0)):
        self.src = (list(groups), list(nodes), list(links))
        self.offset = offset
        self.groups: list[Group] = []
        self.nodes: list[Node] = []
        self.links: list[Link] = []
        self.text = f"Paste {len(nodes)} node(s)"

    def _remap(self, topo: Topology) -> None:
        groups, nodes, links = self.src
        gmap = {g.id: topo.new_id(g.kind) for g in groups}
        nmap = {n.id: topo.new_id(n.kind) for n in nodes}
        dx, dy = self.offset
        group_names = UniqueNames(g.name for g in topo.groups())
        self.groups = [replace(g, id=gmap[g.id], parent=gmap.get(g.parent, g.parent),
                               name=group_names.claim(g.name)) for g in groups]
        # A node's name is unique among the nodes of its group (every server has its
        # "GPU 0"); copies that land in a pasted group have no namesakes there.
        landing = {n.id: n.group if n.group is not None and topo.has_group(n.group)
                   else None for n in nodes if n.group not in gmap}
        siblings = _names_by_group(topo, set(landing.values()))
        self.nodes = [replace(n, id=nmap[n.id], x=n.x + dx, y=n.y + dy,
                              group=gmap.get(n.group, n.group),
                              name=siblings[landing[n.id]].claim(n.name)
                              if n.id in landing else n.name)
                      for n in nodes]
        # Only links with both ends inside the pasted set come along.
        self.links = [replace(lk, id=topo.new_id("link"), a=nmap[lk.a], b=nmap[lk.b])
                      for lk in links if lk.a in nmap and lk.b in nmap]

    @_one_event
    def do(self, topo: Topology) -> None:
        if not self.nodes and not self.groups:
            self._remap(topo)
        # Groups whose parent is not in the design any more become top-level.
        groups = [g if g.parent is None or topo.has_group(g.parent)
                  or any(p.id == g.parent for p in self.groups) else replace(g, parent=None)
                  for g in self.groups]
        self.groups = groups
        self.nodes = [n if n.group is None or topo.has_group(n.group)
                      or any(g.id == n.group for g in groups) else replace(n, group=None)
                      for n in self.nodes]
        topo.extend(self.groups, self.nodes, self.links)

    @_one_event
    def undo(self, topo: Topology) -> None:
        for link in reversed(self.links):
            topo.remove_link(link.id)
        for node in reversed(self.nodes):
            topo.remove_node(node.id)
        for group in reversed(self.groups):
            topo.remove_group(group.id)


def _names_by_group(topo: Topology, groups: set[str | None]) -> dict[str | None, UniqueNames]:
    """The node names in use in each of ``groups`` (None: the top level), in one pass."""
    taken: dict[str | None, list[str]] = {g: [] for g in groups}
    if taken:
        # The graph's attributes: no Node objects for the 10^5 nodes of a large design.
        for _nid, attrs in topo.graph.nodes(data=True):
            if attrs["group"] in taken:
                taken[attrs["group"]].append(attrs["name"])
    return {g: UniqueNames(names) for g, names in taken.items()}


class Macro(Command):
    """Several commands as one undo step (done in order, undone in reverse)."""

    def __init__(self, commands: Sequence[Command], text: str = "edit"):
        self.commands = list(commands)
        self.text = text

    @_one_event
    def do(self, topo: Topology) -> None:
        done = []
        try:
            for c in self.commands:
                c.do(topo)
                done.append(c)
        except DesignError:
            for c in reversed(done):
                c.undo(topo)
            raise

    @_one_event
    def undo(self, topo: Topology) -> None:
        for c in reversed(self.commands):
            c.undo(topo)

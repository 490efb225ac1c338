"""The rules a node, link or group must meet to enter a design, one item at a time.

`Topology` checks every item it is given with these, whether one at a time
(``add_node``) or many at once (`designer.model.bulk`), so both ways refuse the same
items with the same one-line message.  Each rule takes what it reads (the catalog, and
lookups of what the design already holds) rather than the topology.

Example
-------
>>> from designer.model.catalog import default_catalog
>>> check_node(Node("g0", "gpu", "H100", "GPU 0", plane="air"), default_catalog(), {})
Traceback (most recent call last):
...
designer.model.errors.DesignError: node 'g0': unknown plane 'air'
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping

from designer.model.catalog import NODE_KINDS, PLANES, Catalog
from designer.model.elements import Group, Link, Node
from designer.model.errors import DesignError

__all__ = [
    "GROUP_KINDS",
    "ID_RE",
    "check_group",
    "check_link",
    "check_node",
    "ids_look_valid",
]

GROUP_KINDS: tuple[str, ...] = ("node", "tray", "rack", "pod", "su", "plane", "cluster")

#: What an id may be: 1 to 128 letters, digits and ``_ . : / -``.
ID_RE = re.compile(r"^[A-Za-z0-9_.:/\-]{1,128}$")
_ID_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:/-"


def check_node(node: Node, catalog: Catalog, groups: Container[str]) -> None:
    """Raise `DesignError` for the first field of ``node`` that cannot be (``groups``:
    the ids of the groups it may belong to)."""
    if not isinstance(node.id, str) or not ID_RE.fullmatch(node.id):
        raise DesignError(f"node id {node.id!r} is not a valid id")
    if node.kind not in NODE_KINDS:
        raise DesignError(f"node {node.id!r}: unknown kind {node.kind!r}")
    model = catalog.device(node.model) if node.model in catalog.devices else None
    if model is None:
        raise DesignError(f"node {node.id!r}: unknown device model {node.model!r}")
    if node.kind not in model.kinds:
        raise DesignError(
            f"node {node.id!r}: a {model.category} ({node.model}) cannot be a {node.kind}"
        )
    if node.plane not in PLANES:
        raise DesignError(f"node {node.id!r}: unknown plane {node.plane!r}")
    if node.group is not None and node.group not in groups:
        raise DesignError(f"node {node.id!r}: no group {node.group!r}")
    for coord in (node.x, node.y):
        if not isinstance(coord, int | float) or coord != coord or abs(coord) > 1e9:
            raise DesignError(f"node {node.id!r}: position must be finite numbers")


def check_link(link: Link, catalog: Catalog, nodes: Container[str]) -> None:
    """Raise `DesignError` for the first field of ``link`` that cannot be (``nodes``:
    the ids of the nodes it may join)."""
    if not isinstance(link.id, str) or not ID_RE.fullmatch(link.id):
        raise DesignError(f"link id {link.id!r} is not a valid id")
    for end in (link.a, link.b):
        if end not in nodes:
            raise DesignError(f"link {link.id!r}: no node {end!r}")
    if link.a == link.b:
        raise DesignError(f"link {link.id!r}: both ends are node {link.a!r}")
    if link.tech not in catalog.techs:
        raise DesignError(f"link {link.id!r}: unknown link technology {link.tech!r}")
    if not isinstance(link.count, int) or isinstance(link.count, bool) or link.count < 1:
        raise DesignError(f"link {link.id!r}: count must be a whole number >= 1")
    if link.plane not in PLANES:
        raise DesignError(f"link {link.id!r}: unknown plane {link.plane!r}")


def check_group(group: Group, groups: Mapping[str, Group]) -> None:
    """Raise `DesignError` for the first field of ``group`` that cannot be (``groups``:
    the groups already there, by id; its parent must be one of them)."""
    if not isinstance(group.id, str) or not ID_RE.fullmatch(group.id):
        raise DesignError(f"group id {group.id!r} is not a valid id")
    if group.kind not in GROUP_KINDS:
        raise DesignError(f"group {group.id!r}: unknown kind {group.kind!r}")
    parent = group.parent
    seen = {group.id}
    while parent is not None:
        if parent in seen:
            raise DesignError(f"group {group.id!r}: parent chain loops")
        if parent not in groups:
            raise DesignError(f"group {group.id!r}: no parent group {parent!r}")
        seen.add(parent)
        parent = groups[parent].parent


def ids_look_valid(ids: list) -> bool:
    """Whether every one of ``ids`` is a str `ID_RE` accepts, checked over the whole
    list at C speed (joined, every character deleted that an id may hold)."""
    if not ids:
        return True
    if set(map(type, ids)) != {str} or min(map(len, ids)) < 1 or max(map(len, ids)) > 128:
        return False
    joined = "".join(ids)
    return joined.isascii() and not joined.encode("ascii").translate(None, _ID_BYTES)

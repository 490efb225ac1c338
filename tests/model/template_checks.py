"""Shared by the template tests (`test_templates.py`, `test_templates_rail.py`): cached
builds, counts by kind, server groups, soundness (port budgets, rules, one connected
graph, distinct positions) and link sums."""

from __future__ import annotations

import functools
from collections import Counter

import networkx as nx

from designer.model.catalog import default_catalog
from designer.model.rules import validate
from designer.model.templates import build_template
from designer.model.topology import Topology

CAT = default_catalog()
#: Builds shared by tests that only read them (big designs cost a second each).
built = functools.cache(build_template)


def kinds(t: Topology) -> Counter:
    return Counter(n.kind for n in t.nodes())


def servers(t: Topology) -> list[str]:
    """Server groups (kind node) that hold GPUs."""
    with_gpu = {n.group for n in t.nodes("gpu")}
    return [g.id for g in t.groups() if g.kind == "node" and g.id in with_gpu]


def assert_sound(t: Topology) -> None:
    """Port budgets hold, no rule error, one connected graph, no shared positions."""
    assert t.over_subscribed_ports() == []
    errors = [f for f in validate(t) if f.severity == "error"]
    assert errors == []
    assert nx.is_connected(nx.Graph(t.graph))
    positions = [(n.x, n.y) for n in t.nodes()]
    assert len(set(positions)) == len(positions)


def link_sum(t: Topology, a_kind: str, b_kind: str, plane: str = "compute") -> int:
    total = 0
    for lk in t.links():
        ends = {t.node(lk.a).kind, t.node(lk.b).kind}
        if ends == {a_kind, b_kind} and lk.plane == plane:
            total += lk.count
    return total


def assert_rail_optimised(t: Topology) -> None:
    rails_of_leaf: dict[str, set[int]] = {}
    for n in t.nodes("nic"):
        if n.plane != "compute" or n.id.startswith("ufm"):
            continue
        rail = int(n.id.rsplit("nic", 1)[1])
        leaves = [
            lk.b if lk.a == n.id else lk.a
            for lk in t.links_of(n.id)
            if t.node(lk.b if lk.a == n.id else lk.a).kind == "leaf"
        ]
        assert len(leaves) == 1
        rails_of_leaf.setdefault(leaves[0], set()).add(rail)
    assert rails_of_leaf
    assert all(len(r) == 1 for r in rails_of_leaf.values())

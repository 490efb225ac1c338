"""The column-by-column writer (`designer.io.fabric_write`) writes the very text of the
item-by-item one, and keeps the file's natural order of ids."""

from __future__ import annotations

import json

import pytest

from designer.io.fabric_json import dumps, loads
from designer.io.fabric_write import column_lines, item_dicts, one_line
from designer.model.templates import build_template
from designer.model.topology import Group, Link, Node, Topology


class ItemByItem:
    """The same design seen only through its item iterators (as the autosaver's frozen
    copy is): `dumps` then writes it one item at a time."""

    def __init__(self, topology: Topology):
        self._t = topology
        self.name, self.catalog = topology.name, topology.catalog
        self.settings, self.overrides = topology.settings, topology.overrides

    def groups(self):
        return self._t.groups()

    def nodes(self, kind=None):
        return self._t.nodes(kind)

    def links(self):
        return self._t.links()


def odd_design() -> Topology:
    t = Topology(name='odd "names" }, { %s \u00e9')
    t.add_group(Group("rack-10", "rack", "Rack }, {"))
    t.add_group(Group("rack-9", "rack", "Rack 9"))
    names = ["GPU }, { 1", "100% %s", "tab\there", "\u4e2d\u6587", 'quote"back\\slash', "\ud800"]
    for i, name in enumerate(names):
        t.add_node(
            Node(
                f"g{10 - i}",
                "gpu",
                "H100",
                name,
                x=[0.0, -0.0, 1e9, 5e-324, 0.1, -3.5][i],
                y=float(i),
                group="rack-10" if i % 2 else None,
            )
        )
    t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "sw", failed=True, plane="storage"))
    for i in range(6):
        t.add_link(
            Link(
                f"l{9 - i}",
                f"g{10 - i}",
                "s0",
                "nvlink4",
                count=i + 1,
                failed=bool(i % 2),
                plane="storage" if i == 3 else "compute",
            )
        )
    return t


@pytest.mark.parametrize(
    "make",
    [
        odd_design,
        lambda: build_template("superpod", sus=1),
        lambda: build_template("rail-cluster", nodes=12),
    ],
)
def test_columns_write_the_text_items_one_by_one_write(make):
    t = make()
    text = dumps(t)
    assert text == dumps(ItemByItem(t))
    assert loads(text).state() == t.state()


def test_ids_out_of_natural_order_are_sorted():
    t = odd_design()
    ids = [item["id"] for item in json.loads(dumps(t))["nodes"]]
    assert ids == ["g5", "g6", "g7", "g8", "g9", "g10", "s0"]


def test_column_lines_are_json_dumps_lines():
    cols = [["a", "b"], [1, 2], [0.5, -0.0], [None, "x"], [True, False]]
    fields = ("id", "n", "f", "g", "ok")
    expected = ",\n".join(f"    {one_line(d)}" for d in item_dicts(cols, fields))
    assert column_lines(cols, fields) == expected

"""`Topology.add_parts` takes the columns a caller has already read (the loader's schema
check reads every field of every item) instead of reading the items again, and builds
the same design from them; the loader hands them over."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from designer.io import fabric_json
from designer.model.elements import LINK_FIELDS, NODE_FIELDS
from designer.model.topology import Group, Link, Node, PartError, Topology


class _Counted(Mapping):
    """A mapping that counts the reads of its values."""

    reads = 0

    def __init__(self, values: dict[str, Any]):
        self._values = values

    def __getitem__(self, key: str) -> Any:
        _Counted.reads += 1
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _parts() -> tuple[list[Group], list[Node], list[Link]]:
    groups = [Group("r0", "rack", "Rack 0")]
    nodes = [
        Node("g-2", "gpu", "H100", "GPU 2", x=5.0, group="r0"),
        Node("g-10", "gpu", "H100", "GPU 10", y=-1.5, failed=True),
        Node("sw", "nvswitch", "NVSwitch-gen3", "NVSwitch", group="r0"),
    ]
    links = [
        Link("l1", "g-2", "sw", "nvlink4", count=9),
        Link("l0", "sw", "g-10", "nvlink4", count=3),
        Link("l2", "g-2", "sw", "nvlink4"),  # parallel to l1
    ]
    return groups, nodes, links


def _known(items: list, names: tuple[str, ...], absent: tuple[str, ...]) -> dict:
    """The columns of ``items``: a list for each field, None for the ``absent`` ones
    (which then take their default)."""
    return {f: None if f in absent else [getattr(i, f) for i in items] for f in names}


def _mappings(items: list, names: tuple[str, ...], absent: tuple[str, ...]) -> list:
    return [_Counted({f: getattr(i, f) for f in names if f not in absent}) for i in items]


def test_given_columns_are_not_read_again_and_build_the_same_design():
    groups, nodes, links = _parts()
    reference = Topology()
    reference.extend(groups, nodes, links)
    # plane and failed in no item: their default (as for every item of these).
    node_absent, link_absent = ("plane",), ("plane", "failed")
    t = Topology()
    _Counted.reads = 0
    t.add_parts(
        groups,
        _mappings(nodes, NODE_FIELDS, node_absent),
        _mappings(links, LINK_FIELDS, link_absent),
        columns=(
            _known(nodes, NODE_FIELDS, node_absent),
            _known(links, LINK_FIELDS, link_absent),
        ),
    )
    assert _Counted.reads == 0
    assert t.state() == reference.state()
    assert list(t.graph.edges(keys=True, data=True)) == list(
        reference.graph.edges(keys=True, data=True)
    )


def test_given_columns_are_checked_like_the_items():
    groups, nodes, links = _parts()
    nodes[1] = Node("g-10", "gpu", "H100", "GPU 10", group="nowhere")
    with pytest.raises(PartError, match="no group 'nowhere'") as err:
        Topology().add_parts(
            groups,
            _mappings(nodes, NODE_FIELDS, ()),
            _mappings(links, LINK_FIELDS, ()),
            columns=(_known(nodes, NODE_FIELDS, ()), _known(links, LINK_FIELDS, ())),
        )
    assert (err.value.section, err.value.index) == ("nodes", 1)


def test_the_loader_hands_the_schema_checks_columns_to_the_model(monkeypatch):
    groups, nodes, links = _parts()
    design = Topology(name="known")
    design.extend(groups, nodes, links)
    text = fabric_json.dumps(design)
    handed = []
    real = Topology.add_parts

    def spy(self, *args, **kwargs):
        handed.append(kwargs.get("columns"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Topology, "add_parts", spy)
    loaded = fabric_json.loads(text)
    assert loaded.state() == design.state()
    (columns,) = handed
    known_nodes, known_links = columns
    by_id = sorted(nodes, key=lambda n: fabric_json.natural_key(n.id))
    assert known_nodes["id"] == [n.id for n in by_id]
    assert known_nodes["model"] == [n.model for n in by_id]
    assert sorted(known_links["id"]) == ["l0", "l1", "l2"]

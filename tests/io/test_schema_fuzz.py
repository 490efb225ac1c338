"""The JSON Schema of ``.fabric.json`` against generated designs: whatever the saver
writes, the schema accepts, and the fast validator agrees with the reference one on
every changed field."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_checks import _at, example_dict, jsonschema, needs_reference, reference_errors

from designer.io import fabric_json
from designer.io.fabric_json import dumps, loads
from designer.io.fabric_schema import SchemaViolation, validate
from designer.model.catalog import CATEGORY_KINDS, PLANES, default_catalog
from designer.model.scenario import ALGORITHMS, COLLECTIVES, DTYPES
from designer.model.topology import GROUP_KINDS, ROUTING_MODES, Group, Link, Node, Topology

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- the saver

ID_CHARS = "abcxyzABZ0189_.:/-"
ids = st.text(alphabet=ID_CHARS, min_size=1, max_size=10)
names = st.text(max_size=8)
planes = st.sampled_from(PLANES)


def _models_by_kind() -> dict[str, list[str]]:
    cat = default_catalog()
    out: dict[str, list[str]] = {}
    for key, device in cat.devices.items():
        for kind in CATEGORY_KINDS[device.category]:
            out.setdefault(kind, []).append(key)
    return {k: sorted(v) for k, v in sorted(out.items())}


MODELS_BY_KIND = _models_by_kind()
TECHS = sorted(default_catalog().techs)
OVERRIDABLE = sorted(default_catalog().devices) + TECHS

scenarios = st.fixed_dictionaries(
    {},
    optional={
        "collective": st.sampled_from(COLLECTIVES),
        "bytes": st.integers(1, 1 << 44),
        "algorithm": st.sampled_from(ALGORITHMS),
        "ranks": st.one_of(
            st.just("all"),
            st.integers(2, 10**6),
            ids.map(lambda g: f"group:{g}"),
            st.lists(ids, min_size=2, max_size=4),
        ),
        "launch": st.sampled_from(["eager", "graph"]),
    },
)
trainings = st.fixed_dictionaries(
    {},
    optional={
        "params": st.floats(1, 1e15),
        "grad_dtype": st.sampled_from(DTYPES),
        "dp_size": st.integers(0, 10_000_000),
        "compute_s": st.floats(0, 1e6),
        "overlap": st.floats(0, 1),
        "compute_cv": st.floats(0, 10),
    },
)
override_values = st.fixed_dictionaries(
    {}, optional={f: st.floats(0, 1e15) for f in fabric_json.OVERRIDE_FIELDS}
)


@st.composite
def topologies(draw) -> Topology:
    """A random design the model accepts: nested groups, nodes of every kind, link
    bundles, settings and overrides anywhere in their ranges."""
    t = Topology(name=draw(names))
    t.set_setting("routing", draw(st.sampled_from(ROUTING_MODES)))
    t.set_setting("scenario", draw(scenarios))
    t.set_setting("training", draw(trainings))
    t.overrides = draw(st.dictionaries(st.sampled_from(OVERRIDABLE), override_values,
                                       max_size=3))  # fmt: skip
    all_ids = draw(st.lists(ids, min_size=2, max_size=24, unique=True))
    n_groups = draw(st.integers(0, min(4, len(all_ids) - 2)))
    group_ids, rest = all_ids[:n_groups], all_ids[n_groups:]
    for i, gid in enumerate(group_ids):
        parent = draw(st.sampled_from([None, *group_ids[:i]]))
        t.add_group(Group(gid, draw(st.sampled_from(GROUP_KINDS)), draw(names), parent))
    n_nodes = draw(st.integers(2, len(rest)))
    node_ids, link_ids = rest[:n_nodes], rest[n_nodes:]
    coords = st.floats(-1e9, 1e9) | st.integers(-1000, 1000)
    for nid in node_ids:
        kind = draw(st.sampled_from(sorted(MODELS_BY_KIND)))
        t.add_node(
            Node(nid, kind, draw(st.sampled_from(MODELS_BY_KIND[kind])), draw(names),
                 x=draw(coords), y=draw(coords),
                 group=draw(st.sampled_from([None, *group_ids])), plane=draw(planes),
                 failed=draw(st.booleans()))
        )  # fmt: skip
    for lid in link_ids:
        a, b = draw(st.lists(st.sampled_from(node_ids), min_size=2, max_size=2, unique=True))
        t.add_link(
            Link(lid, a, b, draw(st.sampled_from(TECHS)),
                 count=draw(st.integers(1, fabric_json.MAX_LINK_COUNT)), plane=draw(planes),
                 failed=draw(st.booleans()))
        )  # fmt: skip
    return t


@FUZZ
@given(topologies())
def test_whatever_the_saver_writes_the_schema_accepts(topology):
    text = dumps(topology)
    data = json.loads(text)
    validate(data)
    if jsonschema is not None:
        assert reference_errors(data) == []
    assert loads(text).state() == topology.state()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**45) | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from(["gpu", "all", "group:n01", "compute", "H100", "fabric-designer", 1, 0]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6,
)  # fmt: skip


def _places(data: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _places(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _places(value, (*path, index))


BASE = example_dict()
PLACES = list(_places(BASE))[1:]


@needs_reference
@FUZZ
@given(st.lists(st.tuples(st.sampled_from(PLACES), json_values), min_size=1, max_size=3))
def test_fast_validator_agrees_with_the_reference(changes):
    # fastjsonschema, fed the schema with its references inlined, accepts exactly what
    # the reference implementation of draft-07 accepts.
    data = copy.deepcopy(BASE)
    for path, value in changes:
        try:
            _at(*path, value)(data)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed or retyped this place
    try:
        validate(data)
        fast_ok = True
    except SchemaViolation as err:
        fast_ok = False
        assert "\n" not in str(err)
    assert fast_ok == (reference_errors(data) == [])

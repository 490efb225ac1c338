"""Fuzzing the ``.fabric.json`` reader: whatever the input, it returns a design or raises
`FileFormatError` with a one-line message, and never anything else.

No wall-clock bound here (a shared machine's timing is not the code's): a reader that
hangs fails by the suite's timeout, and the time huge files take is measured by
``benchmarks/limits.py``."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from designer.io.fabric_json import FileFormatError, dumps, from_dict, loads, to_dict
from designer.model.topology import Group, Link, Node, Topology

# Few examples: the whole file runs in a few seconds.  No per-example deadline (timing).
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def small_design() -> Topology:
    t = Topology(name="fuzz base")
    t.overrides = {"H100": {"price_usd": 1.5}}
    t.add_group(Group("rack", "rack", "Rack"))
    t.add_group(Group("n0", "node", "Node 0", parent="rack"))
    t.add_node(Node("sw", "nvswitch", "NVSwitch-gen3", "NVS", x=1.25, y=-2.0, group="n0"))
    t.add_node(Node("leaf", "leaf", "QM9700", "Leaf", plane="storage"))
    for g in range(3):
        t.add_node(Node(f"gpu-{g}", "gpu", "H100", f"GPU {g}", x=g * 0.1, group="n0"))
        t.add_node(Node(f"nic-{g}", "nic", "ConnectX-7", f"NIC {g}", group="n0", failed=g == 2))
        t.add_link(Link(f"nvl-{g}", f"gpu-{g}", "sw", "nvlink4", count=18))
        t.add_link(Link(f"pcie-{g}", f"gpu-{g}", f"nic-{g}", "pcie5"))
        t.add_link(Link(f"ib-{g}", f"nic-{g}", "leaf", "ib-ndr", plane="storage"))
    return t


BASE = small_design()
BASE_DICT = to_dict(BASE)
BASE_TEXT = dumps(BASE)
BASE_BYTES = BASE_TEXT.encode("utf-8")

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    # values the format really uses, so mutations often stay plausible
    | st.sampled_from(
        [
            "gpu",
            "H100",
            "nvlink4",
            "rack",
            "n0",
            "gpu-1",
            "sw",
            "compute",
            "fabric-designer",
            1,
            0,
            -1,
            1_000_001,
            2.5,
            "",
        ]
    )
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def check_reader(read, *args) -> None:
    """Call ``read(*args)``: a design (that round-trips) or a one-line FileFormatError."""
    try:
        topology = read(*args)
    except FileFormatError as err:
        message = str(err)
        assert message.startswith("<memory>: ")
        assert "\n" not in message
        assert "internal error" not in message, message
    else:
        assert loads(dumps(topology)).state() == topology.state()


@FUZZ
@given(json_values)
@example([])
@example({"format": "fabric-designer", "version": 1})
@example({"format": "fabric-designer", "version": 1, "nodes": [], "links": []})
def test_random_json_values(value):
    check_reader(from_dict, value)
    check_reader(loads, json.dumps(value))


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["name", "settings", "overrides", "groups", "nodes", "links", "extra"]),
        json_values,
    )
)
def test_random_sections_under_a_valid_header(sections):
    data = {"format": "fabric-designer", "version": 1, "nodes": [], "links": []}
    data.update(sections)
    check_reader(from_dict, data)


def _paths(data):
    """Every place a mutation can hit: top-level keys, whole items, item fields, overrides.

    A field is one choice whatever the number of items carrying it (the item index is
    drawn separately), so rare fields such as ``x`` are hit as often as ``id``.
    """
    paths = [(key,) for key in data]
    for section in ("groups", "nodes", "links"):
        paths.append((section, None))
        paths.extend((section, None, field) for field in data[section][0])
    paths.extend(("overrides", model) for model in data["overrides"])
    return paths


PATHS = _paths(BASE_DICT)


def _concrete(path, index):
    """``("nodes", None, "x")`` -> ``("nodes", index % len(nodes), "x")``."""
    if len(path) > 1 and path[1] is None:
        return (path[0], index % len(BASE_DICT[path[0]]), *path[2:])
    return path


def _mutate(data, path, action, value):
    parent = data
    try:
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        current = parent[last]
    except (KeyError, IndexError, TypeError):
        return  # an earlier mutation removed or retyped this part
    if not isinstance(parent, dict | list):
        return  # retyped to a string, whose characters can be read but not written
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = value
    else:
        parent[last] = _retype(current)


def _retype(value):
    """The same value in a neighbouring JSON type."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return [value]
    if value is None:
        return "null"
    return None


mutations = st.tuples(
    st.sampled_from(PATHS),
    st.integers(0, 10_000),
    st.sampled_from(["delete", "replace", "retype"]),
    json_values,
)


@settings(FUZZ, max_examples=200)
@given(mutations)
def test_one_mutation_of_a_valid_file(mutation):
    path, index, action, value = mutation
    data = copy.deepcopy(BASE_DICT)
    _mutate(data, _concrete(path, index), action, value)
    check_reader(from_dict, data)
    check_reader(loads, json.dumps(data))


ODD_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    3,
    1.5,
    -0.0,
    1e308,
    2**64,
    "",
    "x",
    "H100",
    "n0",
    [],
    {},
    [1],
    {"id": "n0"},
    "null",
]


def test_every_field_against_every_odd_value():
    # The systematic counterpart of the random mutations: each place x each odd value,
    # so a missing type check cannot hide behind luck.
    for path in PATHS:
        for index in (0, 1):
            concrete = _concrete(path, index)
            for action, value in [("delete", None), ("retype", None)] + [
                ("replace", v) for v in ODD_VALUES
            ]:
                data = copy.deepcopy(BASE_DICT)
                _mutate(data, concrete, action, value)
                check_reader(from_dict, data)


@FUZZ
@given(st.lists(mutations, min_size=2, max_size=5))
def test_several_mutations_of_a_valid_file(several):
    data = copy.deepcopy(BASE_DICT)
    for path, index, action, value in several:
        _mutate(data, _concrete(path, index), action, value)
    check_reader(from_dict, data)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(raw):
    check_reader(loads, raw)
    check_reader(loads, BASE_BYTES[:100] + raw)


@FUZZ
@given(st.data())
def test_corrupted_file_bytes(data):
    raw = bytearray(BASE_BYTES)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        pos = data.draw(st.integers(0, len(raw) - 1), label="position")
        edit = data.draw(st.sampled_from(["flip", "delete", "insert"]), label="edit")
        if edit == "flip":
            raw[pos] = data.draw(st.integers(0, 255), label="byte")
        elif edit == "delete" and len(raw) > 1:
            del raw[pos]
        else:
            raw.insert(
                pos, data.draw(st.sampled_from(b'{}[],:"\\0-9eE.n\xff\x00 '), label="inserted")
            )
    check_reader(loads, bytes(raw))


@FUZZ
@given(st.integers(0, len(BASE_BYTES)))
def test_truncated_file(length):
    check_reader(loads, BASE_BYTES[:length])


@FUZZ
@given(st.data())
def test_shuffled_lines(data):
    lines = BASE_TEXT.splitlines()
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        j = data.draw(st.integers(0, len(lines) - 1), label="other line")
        edit = data.draw(st.sampled_from(["delete", "duplicate", "swap"]), label="edit")
        if edit == "delete" and len(lines) > 1:
            del lines[i]
        elif edit == "duplicate":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
    check_reader(loads, "\n".join(lines))


def test_pathological_inputs_are_refused_quickly():
    for raw in (
        "[" * 200_000,
        '{"a":' * 200_000,
        '{"format": "fabric-designer", "version": 1, "nodes": ' + "[" * 50_000 + "]" * 50_000,
        "1" * 100_000,
        '"' + "\\u0000" * 50_000 + '"',
        '{"format": "fabric-designer", "version": 1, "nodes": [], "links": [], "name": 1e999}',
    ):
        check_reader(loads, raw)


def test_base_design_is_valid():
    # The fuzzers start from this; it must load, or they would test nothing.
    assert loads(BASE_BYTES).state() == BASE.state()
    assert len(PATHS) > 25

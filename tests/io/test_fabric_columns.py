"""The loader's fast ways give the strict ways' verdicts: `fabric_columns.validate` the
schema's (`fabric_schema.validate`), `fabric_parse.parse` the pre-scan and strict
parser's (value or message)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_checks import example_dict

from designer.io import fabric_columns, fabric_parse, fabric_schema
from designer.io.fabric_limits import prescan
from designer.io.fabric_read import Invalid, parse_json
from designer.model.templates import build_template

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BASE = example_dict()
ITEM_PLACES = [
    (section, index, field)
    for section in ("groups", "nodes", "links")
    for index, item in enumerate(BASE[section])
    for field in item
]
odd_values = (
    st.none()
    | st.booleans()
    | st.integers(-3, 2**70)
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from(
        [
            "gpu",
            "nvswitch",
            "H100",
            "compute",
            "a\n",
            "x" * 129,
            "",
            "n01",
            1e9,
            -1e9,
            1e9 + 1,
            2.0,
            [],
            {},
            "é" * 1025,
        ]
    )
)


def _verdict(check, data: Any) -> str:
    try:
        check(data)
    except fabric_schema.SchemaViolation as err:
        return str(err)
    return "valid"


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(ITEM_PLACES),
            odd_values | st.just("<delete>") | st.just("<unknown key>"),
        ),
        min_size=0,
        max_size=4,
    )
)
def test_column_checks_name_what_the_schema_names(changes):
    data = copy.deepcopy(BASE)
    for (section, index, field), value in changes:
        item = data[section][index]
        if value == "<delete>":
            item.pop(field, None)
        elif value == "<unknown key>":
            item[field + "_"] = 1
        else:
            item[field] = value
    assert _verdict(fabric_columns.validate, data) == _verdict(fabric_schema.validate, data)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["nodes"].append(3),
        lambda d: d.update(nodes={}),
        lambda d: d["settings"].update(routing="warp"),
        lambda d: d.update(version=2),
        lambda d: d["links"][0].update(count=2.0),
        lambda d: d["nodes"][0].update(x=float("nan")),
        lambda d: d["nodes"][0].update(x=float("inf")),
    ],
)
def test_column_checks_defer_to_the_schema(change):
    data = copy.deepcopy(BASE)
    change(data)
    assert _verdict(fabric_columns.validate, data) == _verdict(fabric_schema.validate, data)


def _strict(text: str) -> Any:
    try:
        prescan(text)
        return parse_json(text)
    except Invalid as err:
        return (err.where, err.what)


def _fast(text: str) -> Any:
    try:
        return fabric_parse.parse(text)
    except Invalid as err:
        return (err.where, err.what)


def _same(a: Any, b: Any) -> bool:
    """Equal, the types of numbers too (1 is not 1.0 to a schema)."""
    return json.dumps(a, sort_keys=True, default=repr) == json.dumps(
        b, sort_keys=True, default=repr
    ) and type(a) is type(b)


def test_a_saved_design_parses_to_the_same_value_both_ways():
    from designer.io.fabric_json import dumps

    text = dumps(build_template("rail-cluster", nodes=4, nics_per_node=8))
    assert fabric_parse._fast(text) is not fabric_parse._STRICT  # (the fast way ran)
    assert _same(_fast(text), _strict(text))
    assert _fast(text) == _strict(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"format": "fabric-designer", "a": 1, "a": 2}',  # a duplicate key
        '{"format": "fabric-designer", "n": [{"x:y": 1, "x:y": 2}]}',  # colons in keys
        '{"format": "fabric-designer", "name": "a:b", "name": "c"}',
        '{"format": "fabric-designer", "version": 123456789012345678901234567890}',
        '{"format": "fabric-designer", "version": 1e400}',
        '{"format": "fabric-designer", "version": NaN}',
        '{"format": "fabric-designer", "name": "\\ud800"}',  # a lone surrogate
        '{"format": "fabric-designer", "name": "\\u003a", "name2": "x"}',
        '{"format": "fabric-designer", "nodes": [1, 2,]}',
        "[1, 2, 3]",
        '{"format": "fabric-designer", "version": 1, "nodes": [{}], "links": []}',
        '{"format": "fabric-designer", "version": 1, "name": "' + "n" * 1025 + '"}',
        '{"format": "fabric-designer", "version": 1, "nodes": [{"id": "g", "kind": "gpu", '
        '"model": "H100", "name": "' + "n" * 1025 + '"}], "links": []}',
    ],
)
def test_odd_texts_get_the_strict_value_or_message(text):
    assert _same(_fast(text), _strict(text))

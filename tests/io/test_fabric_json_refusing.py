"""The native ``.fabric.json`` format refuses every kind of bad file with a clear
`FileFormatError` naming the file, the place and the problem (newer versions, bad
content, bad text, missing or oversized files, broken group chains)."""

from __future__ import annotations

import json
import os

import pytest
from test_fabric_json import sample_topology, valid_dict, write_json

from designer.io import design_file, fabric_json, fabric_schema
from designer.io.fabric_json import FileFormatError, dumps, from_dict, load, loads, save
from designer.model.errors import DesignError
from designer.model.topology import (
    GROUP_FIELDS,
    LINK_FIELDS,
    NODE_FIELDS,
    Link,
    Node,
)

# --------------------------------------------------------------------------- refusing


def test_newer_version_is_refused_politely(tmp_path):
    data = valid_dict()
    data["version"] = 3
    data["shiny_new_key"] = {}  # a newer file may have keys we do not know
    path = tmp_path / "new.fabric.json"
    write_json(path, data)
    with pytest.raises(FileFormatError) as info:
        load(path)
    assert str(info.value) == (
        f"{path}: version: written by a newer Fabric Designer (format version 3); "
        "this version reads up to 2"
    )


def _set(section, index, field, value):
    def mutate(data):
        data[section][index][field] = value

    return mutate


def _top(key, value):
    def mutate(data):
        data[key] = value

    return mutate


def _drop(section, index, field):
    def mutate(data):
        del data[section][index][field]

    return mutate


def _node_index(data, node_id):
    return next(i for i, n in enumerate(data["nodes"]) if n["id"] == node_id)


BAD_DICTS = [
    # (mutation, expected message after "<memory>: ")
    (_top("format", "something-else"), "format: expected 'fabric-designer'"),
    (lambda d: d.pop("format"), "top level: missing 'format'"),
    (lambda d: d.pop("version"), "top level: missing 'version'"),
    (_top("version", 0), "version: expected a whole number >= 1, got 0"),
    (_top("version", "1"), "version: expected a whole number >= 1, got '1'"),
    (_top("version", True), "version: expected a whole number >= 1, got True"),
    (_top("version", 1.0), "version: expected a whole number >= 1, got 1.0"),
    (_top("colour", "red"), "top level: unknown key 'colour'"),
    (lambda d: d.pop("nodes"), "top level: missing 'nodes'"),
    (_top("nodes", {}), "nodes: expected a list, got an object"),
    (_top("name", 5), "name: expected a string, got a number"),
    (_top("settings", []), "settings: expected an object, got a list"),
    (
        _top("settings", {"routing": "telepathy"}),
        "settings: field 'routing' must be one of ecmp, adaptive, static, got 'telepathy'",
    ),
    (_top("settings", {"speed": 1}), "settings: unknown field 'speed'"),
    (
        _top("settings", {"scenario": {"bytes": 0}}),
        "settings.scenario: field 'bytes' must be a whole number from 1 to 17_592_186_044_416",
    ),
    (
        _top("settings", {"scenario": {"ranks": 2.0}}),  # a schema integer; not to the model
        "settings.scenario: ranks must be 'all', N >= 2",
    ),
    (
        _top("overrides", {"H900": {}}),
        "overrides['H900']: unknown device model or link technology 'H900'",
    ),
    (_top("overrides", {"H100": {"price": 1.0}}), "overrides['H100']: unknown field 'price'"),
    (
        _top("overrides", {"H100": {"price_usd": -1.0}}),
        "overrides['H100']: field 'price_usd' must be a finite number",
    ),
    (
        _top("overrides", {"H100": {"power_w": True}}),
        "overrides['H100']: field 'power_w' must be a finite number",
    ),
    (_top("overrides", {"H100": 3}), "overrides['H100']: expected an object, got a number"),
    (_set("nodes", 3, "model", "H900"), "nodes[3] (id 'n0-gpu1'): unknown device model 'H900'"),
    (
        _set("nodes", 3, "kind", "toaster"),
        "nodes[3] (id 'n0-gpu1'): field 'kind' must be one of core, spine, leaf, switch, "
        "nvlink-switch-tray, nvswitch, nic, gpu, host, storage, got 'toaster'",
    ),
    (_set("nodes", 3, "kind", "leaf"), "nodes[3] (id 'n0-gpu1'): a gpu (H100) cannot be a leaf"),
    (
        _set("nodes", 3, "plane", "astral"),
        "nodes[3] (id 'n0-gpu1'): field 'plane' must be one of compute, storage, frontend, "
        "management, got 'astral'",
    ),
    (_set("nodes", 3, "group", "nowhere"), "nodes[3] (id 'n0-gpu1'): no group 'nowhere'"),
    (
        _set("nodes", 3, "x", "12"),
        "nodes[3] (id 'n0-gpu1'): field 'x' must be a finite number, got a string",
    ),
    (
        _set("nodes", 3, "y", True),
        "nodes[3] (id 'n0-gpu1'): field 'y' must be a finite number, got a boolean",
    ),
    (
        _set("nodes", 3, "x", 1e308 * 10),  # json.dumps writes Infinity; see the raw tests
        "JSON: Infinity is not a number JSON allows",
    ),
    (
        _set("nodes", 3, "x", 2e9),
        "nodes[3] (id 'n0-gpu1'): field 'x' must be a finite number from -1_000_000_000 to "
        "1_000_000_000, got 2000000000.0",
    ),
    (
        _set("nodes", 3, "failed", 0),
        "nodes[3] (id 'n0-gpu1'): field 'failed' must be true or false, got a number",
    ),
    (
        _set("nodes", 3, "name", None),
        "nodes[3] (id 'n0-gpu1'): field 'name' must be a string, got null",
    ),
    (_set("nodes", 3, "wheels", 4), "nodes[3] (id 'n0-gpu1'): unknown field 'wheels'"),
    (_drop("nodes", 3, "model"), "nodes[3] (id 'n0-gpu1'): missing field 'model'"),
    (_drop("nodes", 3, "id"), "nodes[3]: missing field 'id'"),
    (_set("nodes", 3, "id", 7), "nodes[3]: field 'id' must be a string, got a number"),
    (
        _set("nodes", 3, "id", "has space"),
        "nodes[3] (id 'has space'): field 'id' must be an id of 1 to 128 letters, digits, "
        "'_', '.', ':', '/' or '-', got 'has space'",
    ),
    (_set("nodes", 3, "id", "n0-gpu0"), "nodes[3] (id 'n0-gpu0'): duplicate id (also nodes[2])"),
    (_set("nodes", 3, "id", "su"), "nodes[3] (id 'su'): duplicate id (also groups[2])"),
    (lambda d: d["nodes"].__setitem__(3, ["n0-gpu1"]), "nodes[3]: expected an object, got a list"),
    (
        _set("links", 0, "count", 0),
        "links[0] (id 'n0-ib0'): field 'count' must be a whole number from 1 to 1_000_000",
    ),
    (_set("links", 0, "count", 2.0), "links[0] (id 'n0-ib0'): field 'count' must be a whole"),
    (_set("links", 0, "count", True), "links[0] (id 'n0-ib0'): field 'count' must be a whole"),
    (_set("links", 0, "count", 1_000_001), "links[0] (id 'n0-ib0'): field 'count' must be"),
    (_set("links", 0, "a", "ghost"), "links[0] (id 'n0-ib0'): no node 'ghost'"),
    (_set("links", 0, "b", "n0-nic0"), "links[0] (id 'n0-ib0'): both ends are node 'n0-nic0'"),
    (
        _set("links", 0, "tech", "carrier-pigeon"),
        "links[0] (id 'n0-ib0'): unknown link technology 'carrier-pigeon'",
    ),
    (_set("links", 0, "id", "n0-gpu0"), "links[0] (id 'n0-gpu0'): duplicate id (also nodes[2])"),
    (_drop("links", 0, "tech"), "links[0] (id 'n0-ib0'): missing field 'tech'"),
    (
        _set("groups", 0, "kind", "galaxy"),
        "groups[0] (id 'a-node0'): field 'kind' must be one of node, tray, rack, pod, su, "
        "plane, cluster, got 'galaxy'",
    ),
    (_set("groups", 0, "parent", "nowhere"), "groups[0] (id 'a-node0'): no parent group 'nowhere'"),
    (_set("groups", 2, "parent", "a-node0"), "groups[0] (id 'a-node0'): parent chain loops"),
    (
        _set("groups", 0, "parent", 3),
        "groups[0] (id 'a-node0'): field 'parent' must be a string or null, got a number",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_DICTS)
def test_bad_content_names_the_place(mutate, message):
    data = valid_dict()
    assert [g["id"] for g in data["groups"]] == ["a-node0", "rack-1", "su"]
    assert [n["id"] for n in data["nodes"][2:4]] == ["n0-gpu0", "n0-gpu1"]
    assert data["links"][0]["id"] == "n0-ib0"
    mutate(data)
    with pytest.raises(FileFormatError) as info:
        loads(json.dumps(data), source="x.fabric.json")
    assert str(info.value).startswith(f"x.fabric.json: {message}")
    assert "\n" not in str(info.value)


def test_from_dict_checks_the_same_things():
    data = valid_dict()
    data["links"][1]["count"] = -1
    with pytest.raises(FileFormatError, match=r"^d\.fabric\.json: links\[1\] \(id 'n0-ib1'\)"):
        from_dict(data, source="d.fabric.json")
    with pytest.raises(FileFormatError, match="top level: expected a JSON object, got a list"):
        from_dict([1, 2])
    assert from_dict(valid_dict()).state() == sample_topology(servers=1).state()


def test_a_tiny_hand_written_file_uses_defaults():
    text = """{"format": "fabric-designer", "version": 1,
               "nodes": [{"id": "g", "kind": "gpu", "model": "H100", "name": "G"},
                         {"id": "s", "kind": "nvswitch", "model": "NVSwitch-gen3", "name": "S"}],
               "links": [{"id": "l", "a": "g", "b": "s", "tech": "nvlink4"}]}"""
    t = loads(text)
    assert t.name == "untitled"
    assert t.node("g") == Node("g", "gpu", "H100", "G")
    assert t.link("l") == Link("l", "g", "s", "nvlink4", count=1)


BAD_TEXTS = [
    (b"", "line 1 column 1: not valid JSON (Expecting value)"),
    (b'{"format": "fabric-designer",', "line 1 column 30: not valid JSON"),
    (b'{"format": "fabric-designer", "format": "x"}', "JSON: duplicate key 'format' in an object"),
    (b'{"a": NaN}', "JSON: NaN is not a number JSON allows"),
    (b'{"a": -Infinity}', "JSON: -Infinity is not a number JSON allows"),
    (b"[" * 100_000 + b"]" * 100_000, "JSON: nested too deeply"),
    (b'{"format": "fabric-designer", "version": 1' + b"9" * 5000 + b"}", "JSON: unreadable value"),
    (b'{"name": "caf\xe9"}', "byte 13: not UTF-8 text"),
    (b"\xff\xfe{\x00}\x00", "byte 0: not UTF-8 text"),
    (b"42", "top level: expected a JSON object, got a number"),
]


@pytest.mark.parametrize(("raw", "message"), BAD_TEXTS)
def test_bad_text_names_the_place(tmp_path, raw, message):
    path = tmp_path / "bad.fabric.json"
    path.write_bytes(raw)
    with pytest.raises(FileFormatError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: {message}")


def test_duplicate_key_inside_a_node_is_refused():
    text = dumps(sample_topology(servers=1)).replace(
        '"failed": false}', '"failed": false, "failed": true}', 1
    )
    with pytest.raises(FileFormatError, match="duplicate key 'failed'"):
        loads(text)


def test_byte_order_mark_is_accepted():
    t = sample_topology(servers=1)
    assert loads(b"\xef\xbb\xbf" + dumps(t).encode()).state() == t.state()


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(FileFormatError, match=r"nope\.fabric\.json: cannot read: No such file"):
        load(tmp_path / "nope.fabric.json")
    with pytest.raises(FileFormatError, match="cannot read: not a regular file"):
        load(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.fabric.json")
        with pytest.raises(FileFormatError, match="cannot read: not a regular file"):
            load(tmp_path / "pipe.fabric.json")  # would block forever if opened


def test_too_big_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.fabric.json"
    save(sample_topology(servers=1), path)
    monkeypatch.setattr(design_file, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(fabric_json, "loads", lambda *a, **k: pytest.fail("file was read"))
    with pytest.raises(FileFormatError, match=r"too big \(\d[\d,]* bytes; the limit is 1,000\)"):
        load(path)


def test_errors_are_design_errors():
    assert issubclass(FileFormatError, DesignError)
    with pytest.raises(DesignError):
        loads("[]")


def test_reader_knows_every_model_field():
    # A field added to Node/Link/Group must be taught to the schema the reader checks
    # every file with (and the version bumped if old readers cannot ignore it).
    definitions = fabric_schema.schema()["definitions"]
    assert tuple(definitions["node"]["properties"]) == NODE_FIELDS
    assert tuple(definitions["link"]["properties"]) == LINK_FIELDS
    assert tuple(definitions["group"]["properties"]) == GROUP_FIELDS


def test_group_chains_in_any_order_and_a_depth_limit():
    def chain(n):
        # Listed child first: g0's parent is g1, ..., so every parent comes later.
        groups = [
            {
                "id": f"g{i}",
                "kind": "rack",
                "name": "r",
                "parent": f"g{i + 1}" if i + 1 < n else None,
            }
            for i in range(n)
        ]
        return {
            "format": "fabric-designer",
            "version": 1,
            "groups": groups,
            "nodes": [],
            "links": [],
        }

    depth = fabric_json.MAX_GROUP_DEPTH
    t = from_dict(chain(depth))
    assert t.group("g0").parent == "g1" and t.group(f"g{depth - 1}").parent is None
    with pytest.raises(
        FileFormatError, match=f"groups\\[0\\] \\(id 'g0'\\): groups nested more than {depth}"
    ):
        from_dict(chain(depth + 1))
    looped = chain(5)
    looped["groups"][-1]["parent"] = "g2"
    with pytest.raises(FileFormatError, match=r"groups\[2\] \(id 'g2'\): parent chain loops"):
        from_dict(looped)

"""The native ``.fabric.json`` format: exact round trip, stable text, atomic save, and a
clear `FileFormatError` for every kind of bad file."""

from __future__ import annotations

import difflib
import json
import os
import stat
import sys

import pytest

from designer.io import atomic, fabric_json, fabric_schema
from designer.io.fabric_json import FileFormatError, dumps, from_dict, load, loads, save, to_dict
from designer.model.errors import DesignError
from designer.model.topology import (
    GROUP_FIELDS,
    LINK_FIELDS,
    NODE_FIELDS,
    Group,
    Link,
    Node,
    Topology,
)


def sample_topology(servers: int = 2) -> Topology:
    """Two DGX-like servers (8 GPUs, 4 NVSwitches, NICs) under a leaf, in nested groups,
    with awkward floats, non-ASCII names, failures and every plane in use."""
    t = Topology(name="Sample SU – H100 ✓")
    t.set_setting("routing", "ecmp")
    t.overrides = {"H100": {"price_usd": 25000.5, "power_w": 700.0}, "ib-ndr": {"power_w": 1e-3}}
    # Children before parents in id order ("a-node" < "su"), so loading must reorder.
    t.add_group(Group("su", "su", "SU 1"))
    t.add_group(Group("rack-1", "rack", "Rack 1", parent="su"))
    leaf = t.add_node(Node("leaf-0", "leaf", "QM9700", "Leaf 0", x=0.1 + 0.2, y=-1e-300))
    for s in range(servers):
        grp = t.add_group(Group(f"a-node{s}", "node", f"DGX {s}", parent="rack-1"))
        for k in range(4):
            t.add_node(
                Node(
                    f"n{s}-sw{k}",
                    "nvswitch",
                    "NVSwitch-gen3",
                    f"NVS {k}",
                    x=k * 123.456789,
                    y=1 / 3,
                    group=grp.id,
                )
            )
        for g in range(8):
            gpu = t.add_node(
                Node(
                    f"n{s}-gpu{g}",
                    "gpu",
                    "H100",
                    f"GPU {g}",
                    x=g * 10.0,
                    y=s * 1e9 / 7,
                    group=grp.id,
                    failed=(s, g) == (1, 3),
                )
            )
            for k in range(4):
                t.add_link(
                    Link(
                        f"n{s}-nvl{g}-{k}",
                        gpu.id,
                        f"n{s}-sw{k}",
                        "nvlink4",
                        count=5 if k < 2 else 4,
                    )
                )
            nic = t.add_node(
                Node(f"n{s}-nic{g}", "nic", "ConnectX-7", f"NIC {g}", x=-5, y=7, group=grp.id)
            )
            t.add_link(Link(f"n{s}-pcie{g}", gpu.id, nic.id, "pcie5"))
            t.add_link(Link(f"n{s}-ib{g}", nic.id, leaf.id, "ib-ndr", failed=g == 0))
    t.add_node(Node("mgmt-0", "leaf", "QM9700", "Mgmt 0", plane="management"))
    t.add_node(Node("stor-0", "leaf", "QM9700", "Storage leaf", plane="storage"))
    t.add_link(Link("uplink-0", "stor-0", "leaf-0", "ib-ndr", count=2, plane="storage"))
    return t


def write_json(path, data) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")


def valid_dict() -> dict:
    return to_dict(sample_topology(servers=1))


# --------------------------------------------------------------------------- round trip


def test_round_trip_is_exact(tmp_path):
    t = sample_topology()
    path = tmp_path / "su.fabric.json"
    save(t, path)
    back = load(path)
    assert back.state() == t.state()
    assert back.name == "Sample SU – H100 ✓"
    assert back.settings["routing"] == "ecmp"
    assert back.overrides == {
        "H100": {"price_usd": 25000.5, "power_w": 700.0},
        "ib-ndr": {"power_w": 0.001},
    }
    assert back.node("leaf-0").x == 0.1 + 0.2  # 0.30000000000000004, bit for bit
    assert back.node("leaf-0").y == -1e-300
    assert back.node("n1-gpu3").failed is True
    assert back.link("n0-nvl0-3").count == 4
    assert back.group("a-node1").parent == "rack-1"


def test_round_trip_of_an_empty_design():
    t = Topology()
    back = loads(dumps(t))
    assert back.state() == t.state()
    assert len(back) == 0


def test_positions_load_as_floats():
    t = Topology()
    t.add_node(Node("g0", "gpu", "H100", "GPU", x=3, y=-4))  # ints from a script
    back = loads(dumps(t))
    assert type(back.node("g0").x) is float and back.node("g0").x == 3.0
    assert '"x": 3.0, "y": -4.0' in dumps(t)


def test_lone_surrogate_in_a_name_round_trips():
    t = Topology(name="broken \udc80 paste")
    text = fabric_json._encode(dumps(t))
    text.decode("utf-8")  # the file is valid UTF-8
    assert loads(text).name == "broken \udc80 paste"


try:
    from designer.model.templates import TEMPLATES, build_template, template_names
except ImportError:  # pragma: no cover - the templates package is optional here
    TEMPLATES, build_template, template_names = {}, None, lambda: []


PLANE_PARAMS = ("storage", "frontend", "management")


def _template_cases():
    """Every template with its defaults, plus every plane switched on where it can be."""
    cases = [pytest.param(name, {}, id=name) for name in template_names()]
    for name, template in TEMPLATES.items():
        planes = {p.name: True for p in template.params if p.name in PLANE_PARAMS}
        if planes:
            cases.append(pytest.param(name, planes, id=f"{name}-all-planes"))
    return cases


@pytest.mark.skipif(not template_names(), reason="templates are not written yet")
@pytest.mark.parametrize(("name", "params"), _template_cases())
def test_template_designs_round_trip(tmp_path, name, params):
    t = build_template(name, **params)
    t.set_setting("routing", "static")
    path = tmp_path / f"{name}.fabric.json"
    save(t, path)
    back = load(path)
    assert back.state() == t.state()
    assert len(back) == len(t) > 0
    assert dumps(back) == path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- stable text


def test_dumps_is_stable_and_idempotent():
    t = sample_topology()
    text = dumps(t)
    assert dumps(t) == text
    assert dumps(loads(text)) == text


def test_text_layout_one_item_per_line():
    t = sample_topology()
    text = dumps(t)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    data = json.loads(text)
    assert list(data) == [
        "format",
        "version",
        "name",
        "settings",
        "overrides",
        "groups",
        "nodes",
        "links",
    ]
    lines = text.splitlines()
    node_lines = [ln for ln in lines if ln.lstrip().startswith('{"id"') and '"model"' in ln]
    assert len(node_lines) == len(t)
    for line in node_lines:
        item = json.loads(line.strip().rstrip(","))
        assert tuple(item) == NODE_FIELDS
    link_lines = [ln for ln in lines if ln.lstrip().startswith('{"id"') and '"tech"' in ln]
    assert len(link_lines) == len(list(t.links()))
    assert tuple(json.loads(link_lines[0].strip().rstrip(","))) == LINK_FIELDS
    group_line = next(ln for ln in lines if '"parent"' in ln)
    assert tuple(json.loads(group_line.strip().rstrip(","))) == GROUP_FIELDS
    assert "Sample SU – H100 ✓" in text  # UTF-8, not \u escapes


def test_items_are_in_natural_id_order():
    t = Topology()
    for i in (10, 2, 1, 0, 33, 3):
        t.add_node(Node(f"gpu-{i}", "gpu", "H100", f"GPU {i}"))
    ids = [n["id"] for n in json.loads(dumps(t))["nodes"]]
    assert ids == ["gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-10", "gpu-33"]
    assert fabric_json.natural_key("n2-gpu10") > fabric_json.natural_key("n2-gpu9")
    assert fabric_json.natural_key("a10b") > fabric_json.natural_key("a9z")


def _changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [ln for ln in diff if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]


def test_moving_a_node_changes_one_line():
    t = sample_topology()
    before = dumps(t)
    t.update_node("n1-gpu5", x=-42.25)
    changed = _changed_lines(before, dumps(t))
    assert len(changed) == 2  # one line out, one line in
    assert '"id": "n1-gpu5"' in changed[0] and '"x": 50.0' in changed[0]
    assert '"id": "n1-gpu5"' in changed[1] and '"x": -42.25' in changed[1]


def test_adding_a_link_adds_one_line():
    t = sample_topology()
    before = dumps(t)
    t.add_link(Link("n0-ib9", "n0-nic1", "stor-0", "ib-ndr"))
    changed = _changed_lines(before, dumps(t))
    assert changed == [
        '+    {"id": "n0-ib9", "a": "n0-nic1", "b": "stor-0", "tech": "ib-ndr", "count": 1, '
        '"plane": "compute", "failed": false},'
    ]


# --------------------------------------------------------------------------- saving


def test_save_keeps_a_backup(tmp_path):
    path = tmp_path / "d.fabric.json"
    first, second = Topology(name="first"), Topology(name="second")
    save(first, path)
    assert not atomic.backup_path(path).exists()  # nothing to back up yet
    save(second, path)
    assert load(path).name == "second"
    assert load(atomic.backup_path(path)).name == "first"
    save(first, path, backup=False)
    assert load(atomic.backup_path(path)).name == "first"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.fabric.json", "d.fabric.json.bak"]


def test_save_is_atomic_when_the_rename_fails(tmp_path, monkeypatch):
    path = tmp_path / "d.fabric.json"
    save(Topology(name="old"), path)
    old_bytes = path.read_bytes()

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(FileFormatError) as info:
        save(sample_topology(), path)
    assert str(info.value) == f"{path}: cannot save: No space left on device"
    assert path.read_bytes() == old_bytes
    assert [p.name for p in tmp_path.iterdir()] == ["d.fabric.json"]  # no temp left


def test_failed_final_rename_leaves_old_file_and_backup(tmp_path, monkeypatch):
    path = tmp_path / "d.fabric.json"
    save(Topology(name="old"), path)
    real_replace = os.replace

    def refuse_target(src, dst):
        if os.fspath(dst) == os.fspath(path):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", refuse_target)
    with pytest.raises(FileFormatError, match="Input/output error"):
        save(Topology(name="new"), path)
    assert load(path).name == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.fabric.json", "d.fabric.json.bak"]


def test_save_into_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "d.fabric.json"
    save(Topology(name="old"), path)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("chmod does not stop this user from writing (root?)")
        with pytest.raises(FileFormatError) as info:
            save(Topology(name="new"), path)
        assert str(info.value).startswith(f"{path}: cannot save: ")
        assert "ermission denied" in str(info.value)
    finally:
        folder.chmod(stat.S_IRWXU)
    assert load(path).name == "old"
    assert [p.name for p in folder.iterdir()] == ["d.fabric.json"]


def test_save_when_no_file_can_be_created(tmp_path, monkeypatch):
    # What a read-only folder does, simulated so it also runs as root.
    path = tmp_path / "d.fabric.json"
    save(Topology(name="old"), path)
    real_open = os.open

    def refuse_create(file, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied")
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_create)
    with pytest.raises(FileFormatError) as info:
        save(Topology(name="new"), path)
    assert str(info.value) == f"{path}: cannot save: Permission denied"
    monkeypatch.undo()
    assert load(path).name == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["d.fabric.json"]


def test_save_into_a_missing_folder(tmp_path):
    path = tmp_path / "gone" / "d.fabric.json"
    with pytest.raises(FileFormatError) as info:
        save(Topology(), path)
    assert str(info.value) == f"{path}: cannot save: No such file or directory"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_save_keeps_the_file_mode(tmp_path):
    path = tmp_path / "d.fabric.json"
    save(Topology(), path)
    path.chmod(0o640)
    save(Topology(name="again"), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")
def test_save_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real.fabric.json"
    link = tmp_path / "link.fabric.json"
    save(Topology(name="one"), real)
    link.symlink_to(real)
    save(Topology(name="two"), link)
    assert link.is_symlink()
    assert load(real).name == "two"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"H100": {"price_usd": float("nan")}}, "overrides['H100']: 'price_usd' must be a finite"),
        ({"H100": {"power_w": "700"}}, "overrides['H100']: 'power_w' must be a number"),
        ({"H100": {"colour": 1.0}}, "overrides['H100']: unknown field 'colour'"),
        ({"H900": {"price_usd": 1.0}}, "overrides: unknown device model or link technology"),
        ({7: {"price_usd": 1.0}}, "overrides: unknown device model or link technology 7"),
    ],
)
def test_save_refuses_an_override_it_could_not_read_back(tmp_path, overrides, message):
    t = Topology()
    t.overrides = overrides
    path = tmp_path / "d.fabric.json"
    with pytest.raises(FileFormatError) as info:
        save(t, path)
    assert str(info.value).startswith(f"{path}: cannot save: {message}")
    assert not path.exists()


def test_override_field_order_is_fixed():
    t = Topology()
    t.overrides = {"ib-ndr": {"power_w": 1.0, "price_usd": 2}, "H100": {"power_w": 3.0}}
    assert '"ib-ndr": {"price_usd": 2.0, "power_w": 1.0}' in dumps(t)
    assert dumps(t).index('"H100"') < dumps(t).index('"ib-ndr"')


# --------------------------------------------------------------------------- refusing


def test_newer_version_is_refused_politely(tmp_path):
    data = valid_dict()
    data["version"] = 2
    data["shiny_new_key"] = {}  # a newer file may have keys we do not know
    path = tmp_path / "new.fabric.json"
    write_json(path, data)
    with pytest.raises(FileFormatError) as info:
        load(path)
    assert str(info.value) == (
        f"{path}: version: written by a newer Fabric Designer (format version 2); "
        "this version reads up to 1"
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
    monkeypatch.setattr(fabric_json, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(fabric_json, "loads", lambda *a, **k: pytest.fail("file was read"))
    with pytest.raises(FileFormatError, match=r"too big \(\d[\d_]* bytes; the limit is 1_000\)"):
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

"""The native ``.fabric.json`` format: exact round trip, stable text and atomic save
(every kind of bad file: `test_fabric_json_refusing`)."""

from __future__ import annotations

import difflib
import json
import os
import stat
import sys

import pytest

from designer.io import atomic, fabric_json
from designer.io.fabric_json import FileFormatError, dumps, load, loads, save, to_dict
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


def test_load_reports_its_progress(tmp_path, monkeypatch):
    """``progress(stage, done, total)``: checking first, then building, ``done`` rising
    by `PROGRESS_EVERY` items up to ``total`` (groups, nodes and links); the design is
    the same with or without it."""
    from designer.model.templates import build_template

    monkeypatch.setattr(fabric_json, "PROGRESS_EVERY", 100)
    topo = build_template("superpod", sus=1)
    path = tmp_path / "sp.fabric.json"
    save(topo, path)
    calls = []
    loaded = load(path, progress=lambda *a: calls.append(a))
    total = len(list(topo.groups())) + len(list(topo.nodes())) + len(list(topo.links()))
    assert calls[0] == ("checking", 0, total)
    building = calls[1:]
    assert building and {s for s, _, _ in building} == {"building"}
    done = [d for _, d, _ in building]
    assert done == list(range(100, total + 1, 100)) and {t for _, _, t in building} == {total}
    assert dumps(loaded) == dumps(load(path))


def test_a_progress_callback_can_stop_the_load(tmp_path, monkeypatch):
    from designer.model.templates import build_template

    monkeypatch.setattr(fabric_json, "PROGRESS_EVERY", 50)
    path = tmp_path / "sp.fabric.json"
    save(build_template("superpod", sus=1), path)
    stages = []

    def stop_when_building(stage, done, total):
        stages.append(stage)
        return stage != "building"

    with pytest.raises(fabric_json.LoadCancelled):
        load(path, progress=stop_when_building)
    assert stages == ["checking", "building"]
    # None and True go on
    assert load(path, progress=lambda *a: None) is not None
    assert load(path, progress=lambda *a: True) is not None

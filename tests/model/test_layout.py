"""Layered layout: tiers top to bottom, servers left to right, nothing overlapping."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.model.templates.layout import H_GAP, _spread_row, layered_layout
from designer.model.topology import Group, Link, Node, Topology


def ys(pos, t: Topology, kind: str, plane: str = "compute") -> list[float]:
    return [pos[n.id][1] for n in t.nodes(kind) if n.plane == plane]


def assert_no_overlap(pos: dict[str, tuple[float, float]], min_gap: float = 60.0) -> None:
    by_row: dict[float, list[float]] = {}
    for x, y in pos.values():
        by_row.setdefault(y, []).append(x)
    for xs in by_row.values():
        xs.sort()
        assert all(b - a >= min_gap for a, b in itertools.pairwise(xs))


@pytest.mark.parametrize(
    "name", ["example", "hgx", "nvl72", "fat-tree", "torus3d", "leaf-spine", "rail-cluster"]
)
def test_template_positions_match_layered_layout(name):
    t = build_template(name)
    pos = layered_layout(t, wrap=4 if name == "torus3d" else None)  # the torus is a grid
    assert set(pos) == {n.id for n in t.nodes()}
    assert pos == {n.id: (n.x, n.y) for n in t.nodes()}
    assert_no_overlap(pos)


def test_tiers_run_top_to_bottom():
    t = build_template("rail-cluster", nodes=16, leaf_radix=8, storage=True, management=True)
    pos = layered_layout(t)
    order = [
        ys(pos, t, "core"),
        ys(pos, t, "spine"),
        ys(pos, t, "leaf"),
        ys(pos, t, "nvswitch"),
        ys(pos, t, "nic"),
        ys(pos, t, "gpu"),
        ys(pos, t, "host"),
        ys(pos, t, "leaf", "storage"),
        ys(pos, t, "storage", "storage"),
        ys(pos, t, "leaf", "management"),
    ]
    for upper, lower in itertools.pairwise(order):
        assert upper and lower
        assert max(upper) < min(lower)
    assert_no_overlap(pos)


def test_servers_left_to_right_in_order():
    t = build_template("rail-cluster", nodes=6)
    pos = layered_layout(t)
    left = [min(pos[f"n{s:02d}-gpu{i}"][0] for i in range(8)) for s in range(1, 7)]
    right = [max(pos[f"n{s:02d}-gpu{i}"][0] for i in range(8)) for s in range(1, 7)]
    assert all(r < nl for r, nl in zip(right, left[1:], strict=False))
    # Inside a server: GPUs, and the NIC of each GPU above it, in rail order.
    gx = [pos[f"n01-gpu{i}"][0] for i in range(8)]
    assert gx == sorted(gx)
    assert [pos[f"n01-nic{i}"][0] for i in range(8)] == gx
    assert all(gx[i + 1] - gx[i] >= 60 for i in range(7))


def test_leaves_sit_over_their_servers():
    t = build_template("superpod", gpu="B200", sus=2)
    pos = layered_layout(t)
    for su, nodes in ((1, range(1, 33)), (2, range(33, 65))):
        xs = [pos[f"n{n:02d}-gpu0"][0] for n in nodes]
        leaf_x = pos[f"su{su}-leaf-r0"][0]
        assert min(xs) < leaf_x < max(xs)


def test_unknown_structure_uses_kinds_and_graph_distance():
    """An imported graph: no groups, generic ``switch`` nodes two levels deep."""
    t = Topology(name="imported")
    for i in range(4):
        t.add_node(Node(f"g{i}", "gpu", "H100", f"GPU {i}"))
        t.add_node(Node(f"c{i}", "nic", "ConnectX-7", f"NIC {i}"))
        t.add_link(Link(f"p{i}", f"g{i}", f"c{i}", "pcie5"))
    t.add_node(Node("nvs", "nvswitch", "NVSwitch-gen3", "NVSwitch"))
    for i in range(2):
        t.add_link(Link(f"nv{i}", f"g{i}", "nvs", "nvlink4", count=4))
    t.add_node(Node("tor0", "switch", "QM9700", "ToR 0"))
    t.add_node(Node("tor1", "switch", "QM9700", "ToR 1"))
    t.add_node(Node("agg", "switch", "QM9700", "Aggregation"))
    for i in range(4):
        t.add_link(Link(f"e{i}", f"c{i}", f"tor{i // 2}", "ib-ndr"))
    t.add_link(Link("u0", "tor0", "agg", "ib-ndr"))
    t.add_link(Link("u1", "tor1", "agg", "ib-ndr"))
    pos = layered_layout(t)
    assert pos["agg"][1] < pos["tor0"][1] == pos["tor1"][1] < pos["nvs"][1]
    assert pos["nvs"][1] < pos["c0"][1] < pos["g0"][1]
    # A NIC on PCIe to a GPU joins its block: straight above it.
    assert all(pos[f"c{i}"][0] == pos[f"g{i}"][0] for i in range(4))
    # The aggregation switch centres over its ToRs.
    assert pos["agg"][0] == pytest.approx((pos["tor0"][0] + pos["tor1"][0]) / 2)
    assert len(set(pos.values())) == len(pos)


def test_nvswitch_of_one_server_joins_its_block():
    t = Topology()
    for i in range(2):
        t.add_node(Node(f"g{i}", "gpu", "H100", f"GPU {i}"))
    t.add_node(Node("h", "host", "Host-x86", "Host"))
    t.add_node(Node("s", "nvswitch", "NVSwitch-gen3", "NVSwitch"))
    for i in range(2):
        t.add_link(Link(f"p{i}", "h", f"g{i}", "pcie5"))
        t.add_link(Link(f"n{i}", f"g{i}", "s", "nvlink4", count=4))
    pos = layered_layout(t)
    assert pos["s"][1] < pos["g0"][1] < pos["h"][1]
    assert min(pos["g0"][0], pos["g1"][0]) <= pos["s"][0] <= max(pos["g0"][0], pos["g1"][0])


def test_groups_make_blocks_even_without_links():
    t = Topology()
    for s in range(3):
        t.add_group(Group(f"srv{s}", "node", f"Server {s}"))
        for i in range(2):
            t.add_node(Node(f"s{s}g{i}", "gpu", "H100", f"GPU {i}", group=f"srv{s}"))
    pos = layered_layout(t)
    assert len({y for _, y in pos.values()}) == 1
    gap_inside = pos["s0g1"][0] - pos["s0g0"][0]
    gap_between = pos["s1g0"][0] - pos["s0g1"][0]
    assert gap_inside == H_GAP and gap_between > gap_inside


def test_torus_wraps_into_a_grid():
    t = build_template("torus3d", x=4, y=3, z=2)
    pos = layered_layout(t, wrap=4)
    for j, k in itertools.product(range(3), range(2)):
        row = {pos[f"gpu-{i}-{j}-{k}"][1] for i in range(4)}
        assert len(row) == 1
    cols = {pos[f"gpu-{i}-0-0"][0] for i in range(4)}
    assert cols == {pos[f"gpu-{i}-2-1"][0] for i in range(4)}
    assert len(set(pos.values())) == len(pos)


def test_empty_topology():
    assert layered_layout(Topology()) == {}


def test_spread_row():
    assert _spread_row([0.0, 0.0, 0.0], 70) == [-70.0, 0.0, 70.0]
    assert _spread_row([0.0, 500.0], 70) == [0.0, 500.0]
    out = _spread_row([0.0, 10.0, 20.0, 1000.0], 70)
    assert out[3] == 1000.0
    assert all(b - a >= 70 - 1e-9 for a, b in itertools.pairwise(out))
    assert sum(out[:3]) / 3 == pytest.approx(10.0)  # the pile stays centred on its wishes


def _box(pos, ids):
    xs = [pos[i][0] for i in ids]
    ys = [pos[i][1] for i in ids]
    return min(xs), min(ys), max(xs), max(ys)


def _disjoint(a, b) -> bool:
    return a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1]


def test_a_superpod_folds_into_tiles_per_su_and_rack():
    """One row would be ~100x wider than tall; folded, the picture is near a window's
    shape, each SU is a tile with its leaves on top, racks do not overlap, and the
    spines sit above everything."""
    t = build_template("superpod", gpu="B200", sus=4)
    pos = layered_layout(t)
    assert pos == {n.id: (n.x, n.y) for n in t.nodes()}
    assert len(set(pos.values())) == len(pos)
    x0, y0, x1, y1 = _box(pos, pos)
    assert 0.8 < (x1 - x0) / (y1 - y0) < 3
    members = {}
    for n in t.nodes():
        g = n.group
        while g is not None:
            members.setdefault(g, []).append(n.id)
            g = t.group(g).parent
    kinds = {g.id: g.kind for g in t.groups()}
    for kind in ("su", "rack"):
        boxes = [_box(pos, ids) for g, ids in members.items() if kinds[g] == kind]
        assert all(_disjoint(a, b) for a, b in itertools.combinations(boxes, 2)), kind
    spine_y = max(pos[n.id][1] for n in t.nodes("spine"))
    assert spine_y < min(pos[n.id][1] for n in t.nodes("leaf"))
    for su in range(1, 5):
        gpus = [i for i in members[f"su{su}"] if "gpu" in i]
        leaves = [n.id for n in t.nodes("leaf") if n.group == f"su{su}"]
        gx0, gy0, gx1, _ = _box(pos, gpus)
        assert all(gx0 <= pos[lf][0] <= gx1 and pos[lf][1] < gy0 for lf in leaves)


def test_small_designs_stay_in_one_row():
    """Folding is for strips: a handful of servers keeps the one-row picture."""
    for name in ("example", "leaf-spine", "fat-tree", "rail-cluster"):
        t = build_template(name)
        pos = layered_layout(t)
        assert len({pos[n.id][1] for n in t.nodes("gpu")}) == 1, name


@pytest.mark.parametrize("gpu, switches", [("A100", 6), ("H100", 4), ("B200", 2)])
def test_a_board_s_nvswitches_spread_over_its_gpus(gpu, switches):
    # A row shorter than the block's widest spreads out, a node in the middle of each
    # of equal slots: 4 NVSwitches stood 70 apart over 8 GPUs, their labels ("NVSwitch
    # 0", ~80 units) running into each other.
    pos = layered_layout(build_template("hgx", gpu=gpu))
    nvs = sorted(pos[f"n01-nvs{k}"][0] for k in range(switches))
    gpus = sorted(pos[f"n01-gpu{i}"][0] for i in range(8))
    slot = (gpus[-1] - gpus[0] + H_GAP) / switches
    assert list(np.diff(nvs)) == pytest.approx([slot] * (switches - 1), abs=0.02)
    assert (nvs[0] + nvs[-1]) / 2 == pytest.approx((gpus[0] + gpus[-1]) / 2, abs=0.02)
    assert slot >= 90

"""SHARP aggregation trees over the real switches (issue 31, item 2): collnet reduces up a
tree of SHARP-capable live switches to a root and back, so the tree's uplinks carry
load; without such a tree (spines failed, a switch without SHARP on every path) collnet
cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from designer.io.fabric_json import from_dict, to_dict
from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.flows.sharp import STAGE_DOWN, STAGE_UP
from designer.solver.pipeline import solve_collective
from designer.solver.reuse import RouteMemo
from designer.solver.snapshot.build import take_snapshot
from tests.solver.test_invariance import shuffled

BIG = [1 << 30]
NO_SHARP = "Generic-51T"  # an IB-port switch model with sharp = false


def _kind(snap, node: int) -> str:
    return str(snap.node_kind[node])


def _tier_loads(snap, res, a: str, b: str) -> np.ndarray:
    """Per link between an ``a`` and a ``b`` switch: its busier direction's load."""
    ka = snap.node_kind[snap.arc_src[0::2]]
    kb = snap.node_kind[snap.arc_dst[0::2]]
    sel = ((ka == a) & (kb == b)) | ((ka == b) & (kb == a))
    load = np.maximum(res.arc_load_GBps[0::2], res.arc_load_GBps[1::2])
    return load[sel]


def _collnet(topo):
    snap = take_snapshot(topo)
    return snap, solve_collective(snap, sizes=BIG, algorithm="collnet")


def test_a_multi_su_superpod_loads_its_leaf_spine_links():
    snap, res = _collnet(build_template("superpod", sus=2))
    up = _tier_loads(snap, res, "leaf", "spine")
    assert up.size and np.count_nonzero(up) > 0
    # One tree per rail, one level: each rail's leaves (one per SU) meet at a spine, and
    # the trees of the 8 rails spread over 8 different spines.
    loaded = [
        k
        for k in np.flatnonzero(res.arc_load_GBps > 0).tolist()
        if {_kind(snap, snap.arc_src[k]), _kind(snap, snap.arc_dst[k])} == {"leaf", "spine"}
    ]
    spines = {
        int(snap.arc_dst[k]) if _kind(snap, snap.arc_dst[k]) == "spine" else int(snap.arc_src[k])
        for k in loaded
    }
    assert len(spines) == 8
    mid = res.plan.phases[1]
    assert mid.net_hops == 2 + 2 * 1  # NIC cables plus a switch hop up and down
    assert not any("not modelled and loads no leaf-spine" in n for n in res.notes)


def test_a_three_tier_tree_loads_spine_core_links():
    # Rail r's two leaves reach disjoint spine pairs, which meet only at the cores.
    topo = build_template("rail-cluster", nodes=4, leaf_radix=4, gpus_per_node=2, core="yes")
    snap, res = _collnet(topo)
    assert np.count_nonzero(_tier_loads(snap, res, "leaf", "spine")) > 0
    assert np.count_nonzero(_tier_loads(snap, res, "spine", "core")) > 0
    assert res.plan.phases[1].net_hops == 2 + 2 * 2
    # Each level adds a switch's latency each way: more than the two-level tree of the
    # same ranks where the spines join the leaves.
    flat = build_template("rail-cluster", nodes=4, leaf_radix=4, gpus_per_node=2)
    small = [1 << 10]
    t3 = solve_collective(snap, sizes=small, algorithm="collnet").time_s[0]
    t2 = solve_collective(take_snapshot(flat), sizes=small, algorithm="collnet").time_s[0]
    assert t3 > t2


def test_failed_spines_stop_sharp_across_sus_and_one_failed_spine_is_routed_around():
    topo = build_template("superpod", sus=2)
    spines = sorted(n.id for n in topo.nodes() if n.kind == "spine")
    topo.update_node(spines[0], failed=True)
    snap, res = _collnet(topo)
    assert np.count_nonzero(_tier_loads(snap, res, "leaf", "spine")) > 0
    dead = np.flatnonzero(snap.arc_cap == 0)
    assert not res.arc_load_GBps[dead].any()
    for spine in spines[1:]:
        topo.update_node(spine, failed=True)
    with pytest.raises(SolverError, match=r"collnet: no fabric path from .*SHARP"):
        solve_collective(take_snapshot(topo), sizes=BIG, algorithm="collnet")


def test_a_switch_without_sharp_on_the_only_path_stops_collnet():
    # 4 servers of 2 GPUs: rail r's leaves meet only through spine-0 and spine-1.
    topo = build_template("rail-cluster", nodes=4, leaf_radix=4, gpus_per_node=2)
    topo.update_node("spine-1", model=NO_SHARP)
    snap, res = _collnet(topo)  # spine-0 still joins them: the tree goes there
    assert res.algorithm == "collnet"
    k = snap.node_ids.index("spine-1")
    at_spine1 = (snap.arc_src == k) | (snap.arc_dst == k)
    assert not res.arc_load_GBps[at_spine1].any()
    assert np.count_nonzero(_tier_loads(snap, res, "leaf", "spine")) > 0
    topo.update_node("spine-0", model=NO_SHARP)
    with pytest.raises(SolverError, match=f"no SHARP-capable path from leaf-r0-.*{NO_SHARP}"):
        solve_collective(take_snapshot(topo), sizes=BIG, algorithm="collnet")
    # auto still runs the all-reduce, by another algorithm.
    assert solve_collective(take_snapshot(topo), sizes=BIG).algorithm != "collnet"


def test_an_edge_switch_without_sharp_stops_collnet():
    topo = build_template("rail-cluster", nodes=2, gpus_per_node=2)
    leaf = next(n.id for n in topo.nodes() if n.kind == "leaf")
    topo.update_node(leaf, model=NO_SHARP)
    with pytest.raises(SolverError, match=f"edge switch {leaf} .*SHARP"):
        solve_collective(take_snapshot(topo), sizes=BIG, algorithm="collnet")


def test_the_timeline_shows_the_tree_as_pipelined_stages():
    _, res = _collnet(build_template("superpod", sus=2))
    bars = {b.phase: b for b in res.timeline}
    up, down = bars[STAGE_UP], bars[STAGE_DOWN]
    # Down starts once the first chunk has climbed the tree, and the two overlap.
    assert up.start_s < down.start_s < up.end_s < down.end_s
    assert down.start_s - up.start_s < 1e-5
    after = bars["intra-domain all-gather"]
    assert after.start_s == pytest.approx(down.end_s)
    assert up.steps == down.steps == 2  # the edge switch, then one level


@pytest.mark.parametrize("routing", ["adaptive", "static"])
def test_the_tree_does_not_depend_on_names_or_order(routing):
    def run(topo):
        topo.set_setting("routing", routing)
        snap, res = _collnet(topo)
        return res, np.sort(_tier_loads(snap, res, "leaf", "spine"))

    base, base_up = run(build_template("superpod", sus=2))
    assert np.count_nonzero(base_up) > 0
    for seed in (1, 2):
        other, other_up = run(shuffled(build_template("superpod", sus=2), seed))
        assert other.time_s == pytest.approx(base.time_s, rel=1e-12, abs=0)
        assert other.busbw_GBps == pytest.approx(base.busbw_GBps, rel=1e-12, abs=0)
        assert other_up == pytest.approx(base_up, rel=1e-12, abs=0)
        assert sorted(other.arc_load_GBps.round(9)) == pytest.approx(
            sorted(base.arc_load_GBps.round(9))
        )


def test_a_what_if_that_takes_sharp_from_an_edge_switch_is_not_patched_over():
    # 2 servers: each rail's GPUs share one leaf, so no tree edge (nothing but the GPUs'
    # legs) ties the plan to the switches' models; a spine without SHARP already.
    topo = build_template("rail-cluster", nodes=2, gpus_per_node=2)
    topo.update_node("spine-0", model=NO_SHARP)
    memo = RouteMemo()
    res = solve_collective(take_snapshot(topo), sizes=BIG, algorithm="collnet", memo=memo)
    assert res.algorithm == "collnet"
    for leaf in [n.id for n in topo.nodes() if n.kind == "leaf"]:
        topo.update_node(leaf, model=NO_SHARP)
    with pytest.raises(SolverError, match=r"edge switch leaf-r.* does no in-network reduction"):
        solve_collective(take_snapshot(topo), sizes=BIG, algorithm="collnet", memo=memo)


def test_nics_cabled_back_to_back_have_no_switch_to_reduce_in():
    data = to_dict(build_template("rail-cluster", nodes=2, gpus_per_node=2))
    switches = {n["id"] for n in data["nodes"] if n["kind"] in ("leaf", "spine")}
    cable = next(x for x in data["links"] if x["b"] in switches)
    data["nodes"] = [n for n in data["nodes"] if n["id"] not in switches]
    data["links"] = [x for x in data["links"] if not {x["a"], x["b"]} & switches]
    for rail in range(2):
        a, b = f"n01-nic{rail}", f"n02-nic{rail}"
        data["links"].append({**cable, "id": f"{a}:{b}", "a": a, "b": b})
    snap = take_snapshot(from_dict(data))
    assert solve_collective(snap, sizes=BIG, algorithm="hierarchical").algorithm == "hierarchical"
    with pytest.raises(SolverError, match=r"cabled to n0\d-nic\d, not to a switch"):
        solve_collective(snap, sizes=BIG, algorithm="collnet")


@pytest.mark.parametrize("k, no_sharp", [(4, 0), (8, 0), (8, 4)])
def test_switch_distances_match_a_plain_breadth_first_search(k, no_sharp):
    """The bit-packed searches (64 sources per word; k=8 has 80 switches, so sources
    span two words) give networkx's hop counts between SHARP switches; with core
    switches that do no SHARP some pairs are unreachable (-1)."""
    import networkx as nx

    from designer.solver.flows.sharp import _SharpGraph
    from designer.solver.routing.router import Router

    topo = build_template("fat-tree", k=k)
    cores = sorted(n.id for n in topo.nodes() if n.kind == "core")
    for core in cores[: no_sharp * len(cores) // 4]:
        topo.update_node(core, model=NO_SHARP)
    graph = _SharpGraph(Router(take_snapshot(topo)))
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist(), strict=True))
    sources = np.arange(graph.n)[::-1]  # any order: one row per source, as given
    got = graph.distances(sources)
    unreachable = 0
    for row, s in enumerate(sources.tolist()):
        want = np.full(graph.n, -1)
        for v, d in nx.single_source_shortest_path_length(g, s).items():
            want[v] = d
        unreachable += int((want < 0).sum())
        assert np.array_equal(got[row], want), s
    assert (unreachable > 0) == (no_sharp > 0)

"""Flows on the canvas: a link's tooltip names the flows really on it, selecting a GPU
outlines the links that carry its traffic (checked against routes computed here from
the ring order, independently of the overlay), busbw baselines say what they are and
can be renamed, and one edit routes the design once, not once per solve.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QInputDialog, QToolTip

from designer.gui.analysis import runner as runner_module
from designer.gui.analysis.overlay import TOOLTIP_FLOWS, gpu_path_arcs
from designer.gui.analysis.panels import BusBwPanel
from designer.gui.analysis.panels.busbw import describe, scale_out_name
from designer.gui.app import application
from designer.gui.canvas.items import LinkItem, NodeItem
from designer.model.commands import MoveNodes, SetLinkProps, SetSetting
from designer.model.scenario import Scenario, TrainingSpec
from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.flows import FlowIndex
from designer.solver.flows.collectives import ring_order
from designer.solver.pipeline import SWEEP, solve_collective
from designer.solver.reuse import RouteMemo
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot
from designer.solver.timing import nccl_model
from tests.gui.test_live import SOLVE_TIMEOUT_MS, solved

GPU = "n02-gpu0"


# ---------------------------------------------------------------------- independent routes
def ring_transfers(snap):
    """Every transfer of the ring all-reduce as ``(rank a, rank b, ECMP key)``: channel c
    follows ``ring_order(c)``, one channel per GPU of a domain (what the solver builds)."""
    ranks = np.arange(snap.n_gpus)
    n = len(ranks)
    channels = int(np.bincount(snap.gpu_domain).min())
    for c in range(channels):
        order = ring_order(snap, ranks, c).tolist()
        for i in range(n):
            yield order[i], order[(i + 1) % n], c * n + i


def expected_gpu_arcs(snap, rank: int) -> np.ndarray:
    """The arcs that carry GPU ``rank``'s ring traffic, routed here with the router's
    public routes: every transfer it sends or receives, whole: inside its domain the
    NVLink spray (both ends' NVLinks); across domains the sender's PCIe link and NIC
    cable, the fabric route between the two edge switches and the receiver's NIC cable
    and PCIe link."""
    router = Router(snap)

    def leaf(r):
        return int(snap.arc_dst[router.edge_arc(int(snap.gpu_nic[r]))])

    arcs = []
    for a, b, key in ring_transfers(snap):
        if rank not in (a, b):
            continue
        ga, gb = int(snap.gpus[a]), int(snap.gpus[b])
        if snap.gpu_domain[a] == snap.gpu_domain[b]:
            arcs.append(router.nvlink_route(ga, gb)[0])
            continue
        na, nb = int(snap.gpu_nic[a]), int(snap.gpu_nic[b])
        arcs.append([router.pcie_arc(ga, na), router.edge_arc(na)])
        arcs.append([router.edge_arc(nb) ^ 1, router.pcie_arc(nb, gb)])
        la, lb = leaf(a), leaf(b)
        if la != lb:
            if snap.routing == "adaptive":
                arcs.append(router.fabric_dag(la, lb)[0])
            else:
                arcs.append(router.fabric_paths(la, lb, np.array([key]), np.array([b]),
                                                snap.routing)[1])
    return np.unique(np.concatenate([np.asarray(x, dtype=np.int64) for x in arcs]))


def flows_on_link(result, link_id: str) -> set[str]:
    """Labels of the focus plan's flows with a pair on ``link_id`` (either direction)."""
    k = result.snapshot.link_ids.index(link_id)
    labels = set()
    for phase in result.focus.plan.phases:
        flow, arc, _ = phase.pairs()  # shared routes expanded
        hit = (arc >> 1) == k
        labels |= {phase.flow_label[f] for f in np.unique(flow[hit]).tolist()}
    return labels


# ---------------------------------------------------------------------- fixtures
@pytest.fixture
def ring(qtbot, window):
    """The example window solving a forced ring all-reduce (its default pick, made
    explicit so the expected routes do not depend on the tuner)."""
    runner = window.analysis.runner
    solved(qtbot, window)
    scenario = dict(window.document.topology.settings["scenario"], algorithm="ring")
    with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        window.document.push(SetSetting("scenario", scenario))
    result = solved(qtbot, window)
    assert result.focus.algorithm == "ring" and result.focus.plan is not None
    yield window
    runner.shutdown()


def _link_ids(result, arcs) -> set[str]:
    return {result.snapshot.link_ids[a // 2] for a in np.asarray(arcs).tolist()}


def _halo_links(overlay) -> set[str]:
    return {i.link_id for i in overlay._halo.items} if overlay._halo is not None else set()


# ---------------------------------------------------------------------- tooltips
def _hover_text(window, link_id: str) -> str:
    """Ask the canvas for the tooltip at a spot of ``link_id`` where it is the top item
    and no node covers it, as a resting mouse would."""
    view, item = window.view, window.scene.links[link_id]
    view.centerOn(item)
    QApplication.processEvents()
    vp = view.viewport()
    for t in np.linspace(0.2, 0.8, 25):
        pos = view.mapFromScene(item.line.pointAt(float(t)))
        under = view.items(pos)
        first = next((i for i in under if isinstance(i, LinkItem)), None)
        if first is item and not any(isinstance(i, NodeItem) for i in under):
            QToolTip.hideText()
            QApplication.sendEvent(vp, QHelpEvent(QEvent.Type.ToolTip, pos, vp.mapToGlobal(pos)))
            return QToolTip.text()
    raise AssertionError(f"no free spot on {link_id}")


def test_link_tooltip_names_the_flows_on_the_link(qtbot, ring):
    result = solved(qtbot, ring)
    link = f"{GPU}:n02-nvs1"
    text = _hover_text(ring, link)
    assert text.startswith(link) and "load" in text
    real = flows_on_link(result, link)
    assert real, "the ring loads every NVLink of the GPU"
    lines = text.split("flows on it:\n")[1].splitlines()
    named = [ln.strip() for ln in lines if not ln.strip().startswith("and ")]
    assert 1 <= len(named) <= TOOLTIP_FLOWS
    for line in named:
        label = line.split(" (")[0]
        assert label in real, line  # every flow named is really on the link
    # NVLink transfers are named by their two GPUs: the GPU's in- and out-hops, exactly.
    snap = result.snapshot
    rank = int(np.flatnonzero(snap.gpus == snap.node_ids.index(GPU))[0])
    n = snap.n_gpus
    hops = {(key // n, snap.node_ids[snap.gpus[a]], snap.node_ids[snap.gpus[b]])
            for a, b, key in ring_transfers(snap)
            if rank in (a, b) and snap.gpu_domain[a] == snap.gpu_domain[b]}
    shown = {tuple(line.split(" (")[1].rstrip(")").split(" → ")) for line in named}
    assert shown <= {(a, b) for _c, a, b in hops}
    # The rest are counted: each of its NVLink hops, per channel and direction, crosses
    # the link (NVLink sprays over every NVSwitch).
    more = [ln for ln in lines if ln.strip().startswith("and ")]
    assert more and int(more[0].split()[1]) == len(hops) - len(named)


def test_a_nic_cable_tooltip_names_the_gpu_it_serves(qtbot, ring):
    result = solved(qtbot, ring)
    link = "n02-nic0:leaf-r0-0"
    rows, total = ring.analysis.overlay.link_flows(link, limit=None)
    assert total == len(rows) >= 1
    assert {r.label for r in rows} == flows_on_link(result, link)
    ids = result.snapshot.node_ids
    assert {ids[r.src] for r in rows if r.src >= 0} | {ids[r.dst] for r in rows
                                                       if r.dst >= 0} == {GPU}
    text = _hover_text(ring, link)
    assert f"(from {GPU})" in text or f"(to {GPU})" in text


# ---------------------------------------------------------------------- GPU paths
def test_selecting_a_gpu_outlines_its_traffic_and_deselecting_clears(qtbot, ring):
    overlay, scene = ring.analysis.overlay, ring.scene
    result = solved(qtbot, ring)
    snap = result.snapshot
    rank = int(np.flatnonzero(snap.gpus == snap.node_ids.index(GPU))[0])
    expected = _link_ids(result, expected_gpu_arcs(snap, rank))
    # Its four NVLink bundles, two neighbours' (in- and out-hop), its NIC and its cable.
    assert f"{GPU}:n02-nic0" in expected and "n02-nic0:leaf-r0-0" in expected
    scene.select_ids([GPU])
    assert overlay.path_gpus == [GPU]
    assert overlay.path_links == expected == _link_ids(result, gpu_path_arcs(result, GPU))
    assert _halo_links(overlay) == expected and overlay._halo.isVisible()
    assert GPU in ring.statusBar().currentMessage()

    scene.clearSelection()
    assert overlay.path_links == set() and not overlay._halo.isVisible()

    # A switch is no GPU: nothing outlined.
    scene.select_ids(["n02-nvs0"])
    assert overlay.path_links == set()


def test_the_outline_follows_a_new_result_and_a_moved_node(qtbot, ring):
    overlay, scene, document = ring.analysis.overlay, ring.scene, ring.document
    scene.select_ids([GPU])
    before = set(overlay.path_links)
    cut = f"{GPU}:n02-nvs1"
    assert cut in before
    with qtbot.waitSignal(ring.analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        document.push(SetLinkProps([cut], failed=True))
    result = solved(qtbot, ring)
    snap = result.snapshot
    rank = int(np.flatnonzero(snap.gpus == snap.node_ids.index(GPU))[0])
    assert overlay.path_links == _link_ids(result, expected_gpu_arcs(snap, rank))
    assert cut not in overlay.path_links and overlay.path_links != before

    rect = overlay._halo.boundingRect()
    x, y = document.topology.node(GPU).x, document.topology.node(GPU).y
    document.push(MoveNodes({GPU: (x + 400, y + 300)}))
    QApplication.processEvents()  # the scene reports the change; the outline follows
    qtbot.waitUntil(lambda: overlay._halo.boundingRect() != rect, timeout=2000)
    assert overlay._halo.boundingRect().contains(scene.nodes[GPU].pos())


@pytest.mark.parametrize("design", ["superpod", "fat-tree"])
@pytest.mark.parametrize("routing", ["ecmp", "adaptive", "static"])
def test_gpu_arcs_match_the_routes_across_scalable_units(routing, design):
    """Two SUs: ring hops between SUs cross the spines, so the outline of a GPU at an SU's
    edge runs through them, leaf to leaf (ECMP paths; adaptive shared routes).  A 3-tier
    fat tree's hops between pods cross the cores too (adaptive: through the DAGs'
    shared middles, `routing.middles`)."""
    if design == "superpod":
        topo, ranks, far = build_template("superpod", gpu="B200", sus=2), (
            0, 7, 31, 255, 256, 300, 511), "spine"
    else:
        topo, ranks, far = build_template("fat-tree", k=8), (0, 7, 15, 16, 64, 127), "core"
    SetSetting("routing", routing).do(topo)
    snap = take_snapshot(topo)
    res = solve_collective(snap, sizes=[1 << 30], algorithm="ring")
    index = FlowIndex(snap, res.plan)
    far_seen = False
    for rank in ranks:
        got = index.gpu_arcs([int(snap.gpus[rank])])
        want = expected_gpu_arcs(snap, rank)
        np.testing.assert_array_equal(got, want, err_msg=f"rank {rank}")
        far_seen |= any(far in snap.link_ids[a // 2] for a in got.tolist())
    assert far_seen


# ---------------------------------------------------------------------- busbw baselines
def _analyse(tech: str | None = None, routing: str | None = None):
    topo = build_template("example")
    if tech is not None:
        ib = [lk.id for lk in topo.links() if lk.tech == "ib-ndr"]
        SetLinkProps(ib, tech=tech).do(topo)
    if routing is not None:
        SetSetting("routing", routing).do(topo)
    return runner_module.analyse(take_snapshot(topo), Scenario(), None, None, lambda: False)


def test_baselines_that_differ_in_ib_speed_read_differently_and_can_be_renamed(
        qtbot, monkeypatch):
    application()
    panel = BusBwPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 360)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_design_name("example.fabric.json")
    ndr, xdr = _analyse(), _analyse(tech="ib-xdr")
    assert scale_out_name(ndr) == "infiniband NDR 400G"
    assert scale_out_name(xdr) == "infiniband XDR 800G"
    panel.set_result(ndr)
    first = panel.pin_baseline()
    panel.set_result(xdr)
    second = panel.pin_baseline()
    assert first != second
    for label, speed in ((first, "NDR 400G"), (second, "XDR 800G")):
        assert "example ·" in label and speed in label and "adaptive" in label
        assert label.endswith("ring (auto)")
    assert panel.curve.name() == f"this design: {describe(xdr, 'example.fabric.json')}"

    renamed = []
    monkeypatch.setattr(QInputDialog, "getText",
                        lambda *a, **k: ("XDR upgrade", True))
    panel.baselines_changed.connect(lambda: renamed.append(True))
    assert panel.ask_rename(1)
    assert [b.label for b in panel.baselines] == [first, "XDR upgrade"]
    assert renamed
    drawn = {i.name(): i for i in panel.plot.listDataItems()}
    np.testing.assert_array_equal(drawn["XDR upgrade"].getData()[1], xdr.sweep.busbw_GBps)
    assert "XDR upgrade" in [label.text for _, label in panel.legend.items]
    _header, rows = panel.data_rows()
    assert {r[0] for r in rows} >= {"XDR upgrade", first}
    # A blank name or a cancelled dialog changes nothing.
    assert not panel.rename_baseline(0, "   ")
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("ignored", False))
    assert not panel.ask_rename(0)
    assert panel.baselines[0].label == first


def test_double_clicking_a_legend_entry_renames_that_baseline(qtbot, monkeypatch):
    application()
    panel = BusBwPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 360)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_result(_analyse(routing="ecmp"))
    label = panel.pin_baseline()
    assert "ecmp" in label
    asked = []

    def answer(_parent, _title, _prompt, text=""):
        asked.append(text)
        return "before the edit", True

    monkeypatch.setattr(QInputDialog, "getText", answer)
    entry = next(lbl for _, lbl in panel.legend.items if lbl.text == label)
    at = entry.mapToScene(entry.boundingRect().center())
    vp, pos, left = panel.graphics.viewport(), panel.graphics.mapFromScene(QPointF(at)), \
        Qt.MouseButton.LeftButton
    # What a real double click sends: press, release, double-click, release.
    qtbot.mouseClick(vp, left, pos=pos)
    qtbot.mouseDClick(vp, left, pos=pos)
    qtbot.mouseRelease(vp, left, pos=pos)
    qtbot.waitUntil(lambda: bool(asked), timeout=2000)
    assert asked == [label]
    assert panel.baselines[0].label == "before the edit"


# ---------------------------------------------------------------------- one routing per edit
def test_one_edit_routes_the_design_once(qtbot, window, monkeypatch):
    runner = window.analysis.runner
    solved(qtbot, window)
    plans = []
    real = RouteMemo.plans

    def counting(self, snap, ranks, collective, *args, **kwargs):
        plans.append(collective)
        return real(self, snap, ranks, collective, *args, **kwargs)

    # The runner routes through its memo (the routes of the previous snapshot, patched).
    monkeypatch.setattr(RouteMemo, "plans", counting)
    with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        window.document.push(SetLinkProps(["n01-gpu0:n01-nvs0"], failed=True))
    result = blocker.args[0]
    solved(qtbot, window)
    # Focus size, sweep and training all-reduce: one routing of the snapshot.
    assert plans == ["allreduce"]
    assert result.sweep is not None and result.training is not None
    # ... with the results of three separate solves.
    snap, scenario = result.snapshot, result.scenario
    alone = solve_collective(snap, scenario.collective, sizes=SWEEP)
    np.testing.assert_array_equal(result.sweep.busbw_GBps, alone.busbw_GBps)
    focus = solve_collective(snap, scenario.collective, sizes=[scenario.bytes])
    np.testing.assert_array_equal(result.focus.arc_util, focus.arc_util)
    assert result.training.allreduce.time_s[0] == solve_collective(
        snap, sizes=[result.training.allreduce.sizes[0]]).time_s[0]
    window.analysis.runner.shutdown()


def test_a_solve_cache_serves_one_snapshot():
    a = take_snapshot(build_template("hgx", gpu="H100"))
    b = take_snapshot(build_template("hgx", gpu="H100"))
    cache: dict = {}
    solve_collective(a, sizes=[1 << 20], cache=cache)
    router, entries = cache["router"], set(cache)
    again = solve_collective(a, sizes=[1 << 30], cache=cache)
    # Served from the cache (counted, not timed): the same router, no new routing.
    assert again.plan is not None and cache["router"] is router and set(cache) == entries
    with pytest.raises(SolverError, match="one snapshot"):
        solve_collective(b, sizes=[1 << 20], cache=cache)


def test_training_on_fewer_gpus_routes_its_own_ranks(qtbot):
    """A data-parallel group smaller than the scenario's ranks is another rank set: it
    is routed on its own (and still correct)."""
    snap = take_snapshot(build_template("example"))
    result = runner_module.analyse(snap, Scenario(), None, TrainingSpec(dp_size=16),
                                   lambda: False)
    alone = solve_collective(snap, sizes=[result.training.allreduce.sizes[0]],
                             ranks=list(range(16)))
    assert result.training.allreduce.n_ranks == 16
    assert result.training.allreduce.time_s[0] == alone.time_s[0]


def test_a_result_builds_no_flow_index_without_a_gpu_to_outline(qtbot, ring):
    # Built per result on the GUI thread, the index expands every endpoint route of the
    # plan: only a GPU to outline (or a tooltip) asks for it.
    overlay = ring.analysis.overlay
    ring.scene.clearSelection()
    with qtbot.waitSignal(ring.analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        ring.document.push(SetLinkProps([f"{GPU}:n02-nvs1"], failed=True))
    solved(qtbot, ring)
    assert overlay._index is None
    ring.scene.select_ids([GPU])
    assert overlay._index is not None and overlay.path_links


def test_the_models_caveat_reaches_the_scenario_summary():
    """NVLS on a whole NVL72 rack: the analysis carries the model's caveat and the
    Scenario dock's summary shows it as a note; on the example design there is none."""
    from designer.gui.analysis.scenario_dock import result_summary_html

    rack = runner_module.analyse(take_snapshot(build_template("nvl72")), Scenario(), None,
                                 None, lambda: False)
    assert rack.focus.algorithm == "nvls"
    assert len(rack.notes) == 1 and "upper bound" in rack.notes[0]
    assert "upper bound" in result_summary_html(rack)
    # The example design: no NVLS caveat; the collnet (SHARP) one exactly where the sweep
    # chooses collnet at some size.
    example = _analyse()
    collnet = "collnet" in example.sweep.algorithm_by_size
    assert example.notes == ((nccl_model.COLLNET_NOTE,) if collnet else ())

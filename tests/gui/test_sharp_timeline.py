"""The timeline panel draws a collnet all-reduce's SHARP tree as two pipelined stages
(reduce up the tree, broadcast down it) across the network, between the intra-domain
reduce-scatter and all-gather."""

from __future__ import annotations

import pytest

from designer.gui.analysis.panels import TimelinePanel
from designer.gui.analysis.runner import analyse
from designer.gui.app import application
from designer.model.scenario import Scenario
from designer.model.templates import build_template
from designer.solver.flows.sharp import STAGE_DOWN, STAGE_UP
from designer.solver.snapshot.build import take_snapshot


@pytest.fixture(scope="module")
def collnet_result():
    snap = take_snapshot(build_template("superpod", sus=2))
    return analyse(snap, Scenario(algorithm="collnet"), None, None, lambda: False)


def test_the_sharp_tree_is_drawn_as_two_overlapping_stages(qtbot, collnet_result):
    application()
    panel = TimelinePanel()
    qtbot.addWidget(panel)
    panel.resize(700, 300)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_result(collnet_result)
    bars = {b.phase: b for b in panel.bars}
    assert list(bars) == [
        "intra-domain reduce-scatter",
        STAGE_UP,
        STAGE_DOWN,
        "intra-domain all-gather",
    ]
    up, down = bars[STAGE_UP], bars[STAGE_DOWN]
    assert up.row != down.row  # a row each
    assert up.start_s < down.start_s < up.end_s < down.end_s  # pipelined: they overlap
    assert (up.kind, up.scope) == (down.kind, down.scope) == ("all-reduce", "inter")
    assert up.steps == down.steps == 2  # the edge switch, then one level to a spine
    ticks = [label for _, label in panel.plot.getAxis("left")._tickLevels[0]]
    assert ticks == list(bars)

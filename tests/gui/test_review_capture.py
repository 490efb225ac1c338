"""The review worker's copy of the design: equal to the design when taken, and not
changed by edits made after it (the worker never reads the live design)."""

from __future__ import annotations

from designer.gui.review.runner import capture, rebuild
from designer.io.fabric_json import dumps
from designer.model.templates import build_template
from designer.workload.files import set_design_jobs
from designer.workload.job import Job
from designer.workload.presets import preset


def test_copy_equals_the_design_and_ignores_later_edits():
    topo = build_template("example")
    set_design_jobs(topo, [Job.from_preset("a", preset("tiny"))])
    topo.overrides["H100"] = {"price_usd": 1.0}
    copy = capture(topo)
    text = dumps(topo)
    gpu = next(topo.nodes("gpu")).id
    link = next(iter(topo.links()))
    topo.update_node(gpu, name="renamed", failed=True)
    topo.update_link(link.id, count=link.count + 1)
    topo.overrides["H100"]["price_usd"] = 2.0
    again = rebuild(copy)
    assert dumps(again) == text
    assert again.node(gpu).name != "renamed"


def test_a_copy_rebuilt_in_slices_equals_the_design(monkeypatch):
    from designer.gui.review import runner

    topo = build_template("example")
    text = dumps(topo)
    seen = []
    monkeypatch.setattr(runner, "REBUILD_SLICE", 7)  # many slices of nodes and of links
    again = rebuild(capture(topo), progress=seen.append)
    assert dumps(again) == text
    assert len(seen) > 2 * (topo.graph.number_of_nodes() // 7)


def test_a_discarded_copy_leaves_nothing_for_the_collector():
    import gc

    from designer.model.bom import bom

    copy = rebuild(capture(build_template("superpod", gpu="B200", sus=1)))
    bom(copy)  # reads the graph: its views are cached on it, each referring back
    gc.collect()
    copy.discard()
    del copy
    # The design's tens of thousands of dicts went with their last reference; what is
    # left in cycles is the events' few signal objects.
    assert gc.collect() < 500


def test_an_event_without_a_change_does_not_review_again(qtbot):
    from tests.gui.conftest import close_window, open_window

    win, error = open_window(qtbot)
    assert error is None
    try:
        runner = win.review.runner
        qtbot.waitUntil(lambda: runner.current and not runner.busy, timeout=20_000)
        starts = []
        runner.started.connect(starts.append)
        headline = win.review.info.headline.text()
        runner.schedule()  # as a model event that changed nothing the review reads
        qtbot.wait(800)
        assert starts == [] and runner.current
        assert win.review.info.headline.text() == headline  # not "(updating…)"
    finally:
        close_window(win)

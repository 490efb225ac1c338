"""The window refuses a background solve that would not fit in memory: the panels and
the scenario dock say why, with the estimate and what would fit, instead of the
process swapping or being killed; with room again, the same design solves."""

from __future__ import annotations

import pytest

from designer.io.fabric_json import save
from designer.model.templates import build_template
from designer.solver import estimate_solve
from designer.solver.machine_memory import ENV_MAX_MEMORY, format_bytes
from designer.solver.snapshot.build import take_snapshot
from tests.gui.conftest import close_window, open_window

SOLVE_TIMEOUT_MS = 30_000


@pytest.fixture
def all_to_all(tmp_path):
    """A 256-GPU rail cluster whose scenario is an all-to-all under ECMP (~32 MiB)."""
    topo = build_template("rail-cluster", nodes=32)
    topo.set_setting("routing", "ecmp")
    topo.set_setting("scenario", dict(topo.settings["scenario"], collective="alltoall"))
    path = tmp_path / "a2a.fabric.json"
    save(topo, path)
    return path, estimate_solve(take_snapshot(topo), "alltoall")


def test_a_solve_over_the_limit_is_refused_with_a_message_not_a_crash(
    qtbot, monkeypatch, all_to_all
):
    path, estimate = all_to_all
    monkeypatch.setenv(ENV_MAX_MEMORY, "16MiB")
    win, error = open_window(qtbot, path)
    assert error is None
    analysis = win.analysis
    runner = analysis.runner
    qtbot.waitUntil(lambda: "would need about" in analysis.busbw.message, timeout=SOLVE_TIMEOUT_MS)
    for panel in analysis.panels:
        text = panel.message
        assert text.startswith("Solve failed: all-to-all on 256 GPUs with ECMP routing"), text
        assert f"would need about {format_bytes(estimate.bytes)} of memory" in text
        assert f"more than the {ENV_MAX_MEMORY} limit of 16 MiB" in text
        assert "try adaptive routing (about" in text and "ranks" in text
    assert "would need about" in analysis.scenario.status.text()
    assert runner.latest is None
    qtbot.waitUntil(lambda: not runner.busy, timeout=SOLVE_TIMEOUT_MS)

    # With room again (the limit raised), the next solve runs.
    monkeypatch.setenv(ENV_MAX_MEMORY, "1GiB")
    with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        runner.schedule()
    result = blocker.args[0]
    assert result.focus.collective == "alltoall" and result.focus.n_ranks == 256
    assert "Solved" in analysis.scenario.status.text()
    runner.shutdown()
    close_window(win)

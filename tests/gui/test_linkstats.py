"""The Link statistics panel: the busiest links of the simulated iteration in a table,
the selected links' utilisation over the iteration, and both as CSV."""

from __future__ import annotations

import csv

import numpy as np

from tests.gui.conftest import close_window, open_window
from tests.gui.test_workload_live import with_two_jobs


def test_busiest_links_series_of_the_selection_and_csv_export(qtbot, tmp_path):
    win, error = open_window(qtbot)
    assert error is None
    try:
        result, panel = with_two_jobs(qtbot, win, "linkstats")
        qtbot.waitUntil(lambda: not panel.pending and panel.result is result, timeout=5_000)
        links = result.simulation.links
        used = np.flatnonzero(links.bytes > 0)
        assert len(panel.rows) == min(len(used), 50)
        means = np.array([r["mean_util"] for r in panel.rows])
        assert (np.diff(means) <= 1e-12).all()  # busiest first
        assert abs(means[0] - float(links.mean_util.max())) < 1e-12
        assert panel.table.rowCount() == min(len(used), 50)
        assert panel.plotted == [panel.rows[0]["id"]]  # nothing selected: the busiest

        # Links selected on the canvas are plotted, busiest first.
        picked = [panel.rows[3]["id"], panel.rows[1]["id"]]
        win.scene.select_ids(link_ids=picked)
        assert panel.plotted == [panel.rows[1]["id"], panel.rows[3]["id"]]

        path = panel.export_csv(tmp_path / "links.csv")
        with path.open() as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == len(used)
        k = links.ids.index(rows[0]["link"])
        assert float(rows[0]["mean_util"]) == float(links.mean_util[k])
        assert float(rows[0]["peak_util"]) == float(links.peak_util[k])
        for j, name in enumerate(links.jobs):
            share = float(rows[0][f"share_{name}"])
            assert abs(share - links.job_bytes[j, k] / links.bytes[k]) < 1e-12

        series = panel.export_series_csv(tmp_path / "series.csv")
        with series.open() as f:
            table = list(csv.reader(f))
        assert table[0] == ["time_s", *panel.plotted]
        times = [float(r[0]) for r in table[1:]]
        assert times == sorted(times) and times[0] == 0.0
        peak = max(float(r[1]) for r in table[1:] if r[1])
        assert abs(peak - links.peak_util[links.ids.index(panel.plotted[0])]) < 1e-9
    finally:
        close_window(win)

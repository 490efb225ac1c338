"""File > Export Design Review: one HTML or PDF file with the diagram (legend, title
block), problems, bill of materials, info and the panels; written atomically, with a
clear message when it cannot be."""

from __future__ import annotations

import html
import re

from designer.gui.review.summary import bom_headline, info_headline, problems_headline
from designer.model.bom import bom
from designer.model.report import info
from designer.workload.checks import validate_design
from tests.gui.conftest import close_window, open_window


def exported(qtbot, win, path):
    exporter = win.review.exporter
    exporter.interactive = False
    steps = []
    exporter.progress.connect(lambda p, s: steps.append(p))
    with qtbot.waitSignal(exporter.finished, timeout=60_000) as blocker:
        exporter.export(path)
    assert blocker.args == [str(path)]
    assert steps == sorted(steps) and steps[-1] == 100
    return path


def test_html_report_holds_every_section_of_the_design(qtbot, tmp_path):
    win, error = open_window(qtbot)
    assert error is None
    try:
        topo = win.document.topology
        # A job added just before the export: the report waits for its simulation.
        win.workload.dock.add_job("tiny")
        text = exported(qtbot, win, tmp_path / "review.html").read_text(encoding="utf-8")
        jobs = text[text.index('id="workloads"') : text.index('id="panels"')]
        rows = re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td>", jobs)
        assert rows and all(rows), "every job has its iteration time"
        assert text.startswith("<!DOCTYPE html>")
        svg = text[text.index("<svg") : text.index("</svg>")]  # the diagram, inline
        # its legend (the links are coloured by utilisation: the scale) and title block
        assert "link utilisation (busiest direction)" in svg
        assert html.escape(topo.name) in svg and "scenario: allreduce" in svg
        for answer in (
            problems_headline(validate_design(topo)),
            bom_headline(bom(topo)),
            info_headline(info(topo)),
        ):
            assert html.escape(answer) in text
        assert "assumption" in text and "Source:" in text
        assert 'id="panels"' in text
        assert win.review.exporter.busy is False
    finally:
        close_window(win)


def test_pdf_report_and_failures(qtbot, tmp_path):
    win, error = open_window(qtbot)
    assert error is None
    try:
        data = exported(qtbot, win, tmp_path / "review.pdf").read_bytes()
        assert data.startswith(b"%PDF") and len(data) > 20_000

        exporter = win.review.exporter
        target = tmp_path / "missing-folder" / "review.html"
        with qtbot.waitSignal(exporter.failed, timeout=60_000) as blocker:
            exporter.export(target)
        assert str(target) in blocker.args[0] and "cannot" in blocker.args[0]
        assert not target.parent.exists()

        with qtbot.waitSignal(exporter.failed, timeout=5_000) as blocker:
            exporter.export(tmp_path / "review.docx")
        assert ".html or .pdf" in blocker.args[0]
        assert not (tmp_path / "review.docx").exists()

        # An existing report is replaced whole or left as it was.
        keep = tmp_path / "keep.html"
        keep.write_text("old", encoding="utf-8")
        exported(qtbot, win, keep)
        assert keep.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    finally:
        close_window(win)

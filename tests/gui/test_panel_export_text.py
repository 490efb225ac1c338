"""The analysis panels' CSV files hold no cell a spreadsheet would run as a formula,
and their SVG files parse whatever the labels hold.

Link ids may begin with ``-`` and a baseline can be renamed to anything; a spreadsheet
runs a cell beginning with ``=``, ``+``, ``-`` or ``@`` as a formula.  Every panel's CSV
goes through `designer.model.safe_text.csv_cell`; numbers stay numbers.
"""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import pytest

from designer.gui.analysis.panels import BusBwPanel, LinkLoadPanel
from designer.gui.analysis.runner import analyse
from designer.gui.app import application
from designer.io.fabric_json import dumps, loads
from designer.model.scenario import Scenario
from designer.model.templates import build_template
from designer.solver.snapshot.build import take_snapshot

FORMULA = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture(scope="module")
def result():
    """The example design with every link id beginning with ``-``, solved."""
    data = json.loads(dumps(build_template("example")))
    for link in data["links"]:
        link["id"] = "-" + link["id"]
    return analyse(take_snapshot(loads(json.dumps(data))), Scenario(), None, None, lambda: False)


def _rows(panel, path):
    with panel.export_csv(path).open(newline="") as fh:
        return list(csv.reader(fh))


def _panel(qtbot, cls, result):
    application()
    panel = cls()
    qtbot.addWidget(panel)
    panel.set_result(result)
    return panel


def _no_formula(rows):
    for row in rows:
        for cell in row:
            try:
                float(cell)
            except ValueError:
                assert not cell.startswith(FORMULA), row


def test_link_ids_beginning_with_a_minus_are_neutralised(qtbot, result, tmp_path):
    panel = _panel(qtbot, LinkLoadPanel, result)
    rows = _rows(panel, tmp_path / "links.csv")
    assert len(rows) > 1
    _no_formula(rows)
    _, data = panel.data_rows()
    assert [row[0] for row in rows[1:]] == ["'" + r[0] for r in data]
    # The numbers are untouched.
    assert [float(row[3]) for row in rows[1:]] == [float(r[3]) for r in data]


@pytest.mark.parametrize("label", ['=HYPERLINK("http://x","y")', "-2+3", "+cmd", "@SUM(A1)"])
def test_a_renamed_baseline_is_neutralised(qtbot, result, tmp_path, label):
    panel = _panel(qtbot, BusBwPanel, result)
    panel.pin_baseline()
    assert panel.rename_baseline(0, label)
    rows = _rows(panel, tmp_path / "busbw.csv")
    _no_formula(rows)
    assert {row[0] for row in rows[1:]} == {"current", "'" + label}


def test_a_baseline_label_xml_cannot_hold_still_exports_as_svg(qtbot, result, tmp_path):
    """pyqtgraph re-parses each item's SVG; a control character or U+FFFF in a label
    made that parse fail (an internal error), or the file unparseable."""
    panel = _panel(qtbot, BusBwPanel, result)
    panel.resize(700, 300)
    panel.show()
    panel.pin_baseline()
    assert panel.rename_baseline(0, "bad\x01\uffff\x1b label")
    svg = panel.export_svg(tmp_path / "busbw.svg")
    texts = "".join(ET.parse(svg).getroot().itertext())
    assert "bad\ufffd\ufffd\ufffd label" in texts

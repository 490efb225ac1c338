"""File > Export offers every format of the registry the CLI uses, and File > Open
imports what the draw.io and GraphML exporters wrote."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

import designer.gui.export_dialog as export_dialog_module
from designer.gui.export_dialog import export_dialog
from designer.io.exports import FORMATS
from designer.io.imports import read_design


@pytest.fixture
def save_as(monkeypatch):
    def answer(path, selected_filter):
        monkeypatch.setattr(
            export_dialog_module,
            "ask_export_target",
            staticmethod(lambda *a, **k: (str(path), selected_filter)),
        )

    return answer


def test_every_registry_format_is_offered(window, monkeypatch):
    offered = {}

    def capture(parent, caption, start, filters, selected):
        offered["filters"] = filters
        return "", ""

    monkeypatch.setattr(export_dialog_module, "ask_export_target", staticmethod(capture))
    export_dialog(window, window.scene, window.document)
    for fmt in FORMATS:
        assert f"(*{fmt.suffix})" in offered["filters"] or fmt.suffix == ".air.dot"


@pytest.mark.parametrize(
    "filt, name, check",
    [
        ("draw.io diagram (*.drawio)", "d.drawio", "file"),
        ("Graphviz DOT, UFM cable-validation style (*.ufm.dot)", "u.ufm.dot", "file"),
        ("Cabling plan (CSV) (*.cabling.csv)", "c.cabling.csv", "file"),
        ("NetBox import folder (*.netbox)", "n.netbox", "folder"),
    ],
)
def test_file_export_writes_the_new_formats(window, save_as, tmp_path, filt, name, check):
    stem = name.split(".")[0]
    save_as(tmp_path / stem, filt)  # no suffix typed: the filter's is added
    path = export_dialog(window, window.scene, window.document)
    assert path == tmp_path / name
    assert path.is_dir() if check == "folder" else path.is_file()


def test_file_open_imports_a_drawio_export(window, save_as, tmp_path, monkeypatch):
    save_as(tmp_path / "d.drawio", "draw.io diagram (*.drawio)")
    path = export_dialog(window, window.scene, window.document)
    before = window.document.topology
    expected = {n.id: (n.model, n.group) for n in before.nodes()}
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda *a, **k: None))
    assert window.files.open_file(path)
    opened = window.document.topology
    assert opened is not before and window.document.path is None
    assert {n.id: (n.model, n.group) for n in opened.nodes()} == expected
    assert "Imported" in window.statusBar().currentMessage()
    assert read_design(path).link_count() == opened.link_count()


def test_file_open_reports_an_unknown_model(window, tmp_path, monkeypatch):
    path = tmp_path / "bad.graphml"
    from designer.io.exports import export

    export(window.document.topology, path)
    path.write_text(path.read_text(encoding="utf-8").replace(">H100<", ">H999<"), encoding="utf-8")
    errors = []
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda *a, **k: errors.append(a[2])))
    before = window.document.topology
    assert not window.files.open_file(path)
    assert window.document.topology is before
    shown = errors[-1] if errors else window.statusBar().currentMessage()
    assert "unknown model 'H999'" in shown and "\n" not in shown


def test_file_export_carries_the_canvas_utilisation(window, save_as, tmp_path, qtbot):
    """With links coloured by utilisation, draw.io and GraphML exports carry the solve's
    per-link figures, the same the canvas shows."""
    import xml.etree.ElementTree as ET

    overlay = window.analysis.overlay
    qtbot.waitUntil(
        lambda: (
            overlay.result is not None
            and overlay.result.generation == window.document.topology.generation
        ),
        timeout=60_000,
    )
    assert overlay.by_utilisation
    save_as(tmp_path / "u.drawio", "draw.io diagram (*.drawio)")
    path = export_dialog(window, window.scene, window.document)
    objects = {o.get("id"): o for o in ET.parse(path).getroot().iter("object")}
    busiest = max(overlay.utilisation, key=overlay.utilisation.get)
    assert float(objects[f"link#{busiest}"].get("utilisation")) == pytest.approx(
        overlay.utilisation[busiest], abs=1e-4
    )
    save_as(tmp_path / "u.graphml", "GraphML (yEd, Gephi, networkx) (*.graphml)")
    import networkx as nx

    graph = nx.read_graphml(
        export_dialog(window, window.scene, window.document), force_multigraph=True
    )
    util = {
        k: d["utilisation"]
        for _, _, k, d in graph.edges(keys=True, data=True)
        if "utilisation" in d
    }
    assert util[busiest] == pytest.approx(overlay.utilisation[busiest])


def test_exported_utilisation_colours_are_the_canvas_colours():
    """draw.io/GraphML edges and the legend use the canvas's utilisation colours."""
    from PySide6.QtGui import QColor

    from designer.gui.analysis.overlay import util_color
    from designer.io.exports.common import utilisation_color

    for i in range(101):
        u = i / 100
        mine, canvas = QColor(utilisation_color(u)), util_color(u)
        if u <= 1e-9:
            continue  # the canvas's idle grey is translucent; ours is the opaque grey
        for a, b in (
            (mine.red(), canvas.red()),
            (mine.green(), canvas.green()),
            (mine.blue(), canvas.blue()),
        ):
            assert abs(a - b) <= 6, (u, mine.name(), canvas.name())

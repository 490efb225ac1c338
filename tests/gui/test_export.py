"""Diagram export: SVG with real text, PNG at a scale, PDF, and only the design in them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest
from PySide6.QtCore import QByteArray, QLineF, QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QGraphicsLineItem,
    QInputDialog,
    QMessageBox,
)

import designer.gui.export_dialog as export_dialog_module
from designer.gui import export as ex
from designer.gui import export_sheet
from designer.gui.app import application
from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.style import DARK, LIGHT
from designer.gui.document import Document
from designer.gui.export_dialog import export_dialog
from designer.model.templates import build_template
from designer.model.topology import Topology

SVG = "{http://www.w3.org/2000/svg}"


def make_scene(template: str = "hgx", theme=LIGHT) -> FabricScene:
    application()
    return FabricScene(Document(build_template(template)), theme=theme)


@pytest.fixture
def scene() -> FabricScene:
    return make_scene()


def expected_rect(scene: FabricScene):
    """The export area computed independently of the exporter: every item's box + margin."""
    return (
        scene.itemsBoundingRect()
        .adjusted(-ex.MARGIN, -ex.MARGIN, ex.MARGIN, ex.MARGIN)
        .toAlignedRect()
    )


def image(data: bytes) -> QImage:
    img = QImage()
    assert img.loadFromData(QByteArray(data), "PNG")
    return img.convertToFormat(QImage.Format.Format_ARGB32)


def select_everything(scene: FabricScene) -> None:
    scene.select_ids(list(scene.nodes), list(scene.links))
    assert len(scene.selectedItems()) == len(scene.nodes) + len(scene.links)


# ---------------------------------------------------------------------------- SVG
def test_svg_has_a_text_element_for_every_node_name(scene, tmp_path):
    path = tmp_path / "hgx.svg"
    ex.render_svg(scene, path)
    root = ET.parse(path).getroot()
    texts = {"".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")}
    names = {n.name for n in scene.document.topology.nodes()}
    assert "GPU 0" in names and names <= texts
    assert "x5" in texts  # link bundle badges are text too
    # Nothing embedded as a bitmap (a cached item would be an <image>).
    assert not list(root.iter(f"{SVG}image"))
    assert root.find(f"{SVG}title").text == scene.document.topology.name
    rect = expected_rect(scene)
    assert root.get("viewBox").split() == ["0", "0", str(rect.width()), str(rect.height())]


def test_svg_title_can_be_given(scene):
    root = ET.fromstring(ex.svg_bytes(scene, title="Rack A & B"))
    assert root.find(f"{SVG}title").text == "Rack A & B"


# ---------------------------------------------------------------------------- PNG
@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_png_size_is_the_design_area_times_the_scale(scene, tmp_path, scale):
    path = tmp_path / f"x{scale}.png"
    ex.render_png(scene, path, scale=scale)
    img = QImage(str(path))
    rect = expected_rect(scene)
    assert (img.width(), img.height()) == (rect.width() * scale, rect.height() * scale)
    assert ex.png_size(scene, scale) == (img.width(), img.height())
    # Printed size is the same at every scale: the file records 96 dpi times the scale.
    assert img.dotsPerMeterX() * 0.0254 == pytest.approx(96 * scale, rel=1e-3)


def test_png_shows_the_design_on_white(scene):
    img = image(ex.png_bytes(scene, scale=1))
    assert img.pixelColor(1, 1) == QColor("#FFFFFF")  # margin: white, no grid
    gpu = scene.nodes[next(n.id for n in scene.document.topology.nodes("gpu"))]
    origin = expected_rect(scene).topLeft()
    centre = gpu.pos() - origin.toPointF()
    # The GPU icon's body is drawn in its kind colour (green), not background.
    x, y = int(centre.x()), int(centre.y())
    around = [
        img.pixelColor(x + dx, y + dy) for dx in range(-14, 15, 2) for dy in range(-14, 15, 2)
    ]
    assert any(c.green() > 150 and c.red() < 160 and c.blue() < 60 for c in around)


def test_png_scale_must_be_positive_and_the_image_bounded(scene, tmp_path):
    with pytest.raises(ex.ExportError, match="positive"):
        ex.png_bytes(scene, scale=0)
    with pytest.raises(ex.ExportError, match=r"big\.png: .*too large"):
        ex.render_png(scene, tmp_path / "big.png", scale=200)
    assert not (tmp_path / "big.png").exists()


# ---------------------------------------------------------------------------- PDF
def test_pdf_is_one_page_fitted_to_the_design(scene, tmp_path):
    path = tmp_path / "hgx.pdf"
    ex.render_pdf(scene, path)
    data = path.read_bytes()
    assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF")
    boxes = re.findall(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
    assert len(boxes) == 1
    rect = expected_rect(scene)
    w, h = (float(v) for v in boxes[0])
    assert w == pytest.approx(rect.width() * 0.75, abs=1)
    assert h == pytest.approx(rect.height() * 0.75, abs=1)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler's pdftotext")
def test_pdf_text_is_real_text(scene, tmp_path):
    path = tmp_path / "hgx.pdf"
    ex.render_pdf(scene, path)
    text = subprocess.run(
        ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    words = text.split()
    for name in ("GPU 0", "NVSwitch 3", "NIC 7", "Host"):
        assert name.split()[0] in words and name in " ".join(words)


# ---------------------------------------------------------------------------- dispatch
@pytest.mark.parametrize(
    "suffix, magic", [(".svg", b"<?xml"), (".PNG", b"\x89PNG"), (".pdf", b"%PDF")]
)
def test_export_scene_follows_the_suffix(scene, tmp_path, suffix, magic):
    path = tmp_path / f"d{suffix}"
    ex.export_scene(scene, path, scale=1)
    assert path.read_bytes().startswith(magic)


def test_export_scene_refuses_other_suffixes(scene, tmp_path):
    with pytest.raises(ex.ExportError, match=r"d\.jpg: .*'\.jpg'"):
        ex.export_scene(scene, tmp_path / "d.jpg")


def test_an_empty_design_is_refused(tmp_path):
    application()
    empty = FabricScene(Document(Topology(name="empty")))
    with pytest.raises(ex.ExportError, match=r"e\.svg: nothing to export"):
        ex.render_svg(empty, tmp_path / "e.svg")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- only the design
def test_selection_is_not_exported_and_is_restored(scene, qtbot):
    plain = image(ex.png_bytes(scene, scale=1))
    select_everything(scene)
    before = set(scene.selectedItems())
    # The selection does change what the scene paints (so the comparison below can fail) ...
    rect = expected_rect(scene)
    shown = QImage(plain.size(), QImage.Format.Format_ARGB32)
    shown.fill(QColor("white"))
    painter = QPainter(shown)
    scene.render(painter, QRectF(shown.rect()), QRectF(rect))
    painter.end()
    assert shown != plain
    # ... but not what is exported, and nobody is told of a selection change.
    with qtbot.assertNotEmitted(scene.selectionChanged):
        selected = image(ex.png_bytes(scene, scale=1))
    assert selected == plain
    assert set(scene.selectedItems()) == before


def test_grid_and_temporary_items_are_left_out(scene):
    scene.show_grid = False
    plain = image(ex.png_bytes(scene, scale=1))
    area = ex.export_rect(scene)
    scene.show_grid = True
    # A link being drawn (like `LinkDrawing`'s line), reaching far outside the design.
    line = QGraphicsLineItem(QLineF(0, 0, 5000, 5000))
    scene.addItem(line)
    assert scene.itemsBoundingRect().bottom() > 5000
    assert ex.export_rect(scene) == area
    assert image(ex.png_bytes(scene, scale=1)) == plain
    assert scene.show_grid and line.isVisible()


def test_dark_theme_exports_like_print(tmp_path):
    light = image(ex.png_bytes(make_scene(theme=LIGHT), scale=1))
    dark_scene = make_scene(theme=DARK)
    dark = image(ex.png_bytes(dark_scene, scale=1))
    assert dark == light
    assert dark_scene.theme is DARK
    assert all(item.theme is DARK for item in dark_scene.nodes.values())


# ---------------------------------------------------------------------------- writing
def test_a_failed_write_leaves_the_old_file_and_no_temporary(scene, tmp_path, monkeypatch):
    path = tmp_path / "keep.svg"
    path.write_text("old")

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    for render in (ex.render_svg, ex.render_png, ex.render_pdf):
        with pytest.raises(ex.ExportError, match=r"keep\.svg: cannot write: No space left"):
            render(scene, path)
    monkeypatch.undo()
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.svg"]


def test_a_missing_folder_is_one_clear_error(scene, tmp_path):
    with pytest.raises(ex.ExportError, match=r"nowhere.* cannot write"):
        ex.render_pdf(scene, tmp_path / "nowhere" / "x.pdf")


# ---------------------------------------------------------------------------- File > Export
def plain_sheet(dialog):
    """The diagram-options question answered with no legend and no title block."""
    for box in dialog.findChildren(QCheckBox):
        box.setChecked(False)
    return QDialog.DialogCode.Accepted


@pytest.fixture
def answer(monkeypatch):
    """Script the save dialog (and the PNG scale question); record message boxes."""
    calls = {"scale": None, "warnings": []}

    def set_answers(path, selected_filter, scale=(1.0, True)):
        monkeypatch.setattr(
            export_dialog_module,
            "ask_export_target",
            staticmethod(lambda *a, **k: (str(path), selected_filter)),
        )

        def get_double(*args, **kwargs):
            calls["scale"] = args
            return scale

        monkeypatch.setattr(QInputDialog, "getDouble", staticmethod(get_double))
        monkeypatch.setattr(export_sheet, "run_dialog", plain_sheet)
        monkeypatch.setattr(
            QMessageBox, "warning", staticmethod(lambda *a, **k: calls["warnings"].append(a[2]))
        )
        return calls

    return set_answers


def test_file_export_writes_png_at_the_chosen_scale(window, answer, tmp_path):
    calls = answer(tmp_path / "cluster", "PNG image (*.png)", scale=(1.0, True))
    path = export_dialog(window, window.scene, window.document)
    assert path == tmp_path / "cluster.png"
    assert calls["scale"] is not None and calls["scale"][3] == 2.0  # default offered: 2
    img = QImage(str(path))
    rect = ex.export_rect(window.scene)
    assert (img.width(), img.height()) == (rect.width(), rect.height())
    assert "cluster.png" in window.statusBar().currentMessage()


def test_file_export_writes_graph_formats(window, answer, tmp_path):
    answer(tmp_path / "g.graphml", "GraphML (*.graphml)")
    path = export_dialog(window, window.scene, window.document)
    graph = nx.read_graphml(path)
    devices = [n for n, d in graph.nodes(data=True) if d["kind"] != "group"]
    assert len(devices) == len(window.document.topology)
    answer(tmp_path / "n", "Node-link JSON (*.json)")
    assert export_dialog(window, window.scene, window.document) == tmp_path / "n.json"
    answer(tmp_path / "f", "Fabric design (*.fabric.json)")
    assert export_dialog(window, window.scene, window.document) == tmp_path / "f.fabric.json"


def test_file_export_cancel_and_failure(window, answer, tmp_path):
    answer("", "SVG image (*.svg)")
    assert export_dialog(window, window.scene, window.document) is None
    answer(tmp_path / "x.png", "PNG image (*.png)", scale=(2.0, False))
    assert export_dialog(window, window.scene, window.document) is None
    assert not (tmp_path / "x.png").exists()
    calls = answer(tmp_path / "missing" / "x.svg", "SVG image (*.svg)")
    assert export_dialog(window, window.scene, window.document) is None
    assert len(calls["warnings"]) == 1 and "cannot write" in calls["warnings"][0]
    assert "\n" not in calls["warnings"][0]
    assert "cannot write" in window.statusBar().currentMessage()


def test_file_export_keeps_the_selection(window, answer, tmp_path):
    select_everything(window.scene)
    before = set(window.scene.selectedItems())
    answer(tmp_path / "s.svg", "SVG image (*.svg)")
    assert export_dialog(window, window.scene, window.document) == Path(tmp_path / "s.svg")
    assert set(window.scene.selectedItems()) == before


# ---------------------------------------------------------------------------- PNG limits
@pytest.fixture(scope="module")
def superpod_scene() -> FabricScene:
    """The 1,016-GPU SuperPOD: too large for a PNG at the default scale 2."""
    return make_scene("superpod")


def fits(size: tuple[int, int]) -> bool:
    w, h = size
    return max(w, h) <= ex.MAX_PNG_SIDE and w * h <= ex.MAX_PNG_PIXELS


def test_the_largest_png_scale_that_fits(superpod_scene, scene):
    fit = ex.max_png_scale(superpod_scene)
    assert 0 < fit < ex.DEFAULT_PNG_SCALE and round(fit, 2) == fit
    assert fits(ex.png_size(superpod_scene, fit))
    assert not fits(ex.png_size(superpod_scene, fit + 0.01))
    assert ex.default_png_scale(superpod_scene) == fit
    assert ex.default_png_scale(scene) == ex.DEFAULT_PNG_SCALE  # a small design keeps 2


def test_a_png_too_large_names_the_limit_and_the_scale_that_fits(superpod_scene):
    fit = ex.max_png_scale(superpod_scene)
    with pytest.raises(ex.ExportError) as info:
        ex.png_bytes(superpod_scene, scale=2)
    text = str(info.value)
    assert f"{ex.MAX_PNG_PIXELS / 1e6:.0f} megapixels" in text
    assert f"{ex.MAX_PNG_SIDE} px a side" in text
    assert f"largest scale that fits this design is {fit:g}" in text


def test_the_default_png_scale_shrinks_to_fit(scene, tmp_path, monkeypatch):
    """Without a scale, a design too large for scale 2 is written at the largest scale
    that fits (here the pixel budget is lowered so the small board exceeds it)."""
    w, h = ex.png_size(scene, 1)
    monkeypatch.setattr(ex, "MAX_PNG_PIXELS", int(w * h * 2))  # sqrt(2) = 1.41 fits
    used = ex.render_png(scene, tmp_path / "fit.png")
    assert used == ex.max_png_scale(scene) and 1.3 < used < 1.42
    img = QImage(str(tmp_path / "fit.png"))
    assert (img.width(), img.height()) == ex.png_size(scene, used)
    assert img.width() * img.height() <= ex.MAX_PNG_PIXELS
    assert ex.export_scene(scene, tmp_path / "x.svg") is None


def test_the_default_png_scale_leaves_room_for_the_legend_and_title(scene, tmp_path,
                                                                     monkeypatch):
    """The band under the picture counts: a design that fits at scale 1.41 without it
    is written smaller with it, not refused at 1.41 (the CLI's default refused
    ``superpod --legend --title-block`` naming a scale 0.01 below its own)."""
    w, h = ex.png_size(scene, 1)
    monkeypatch.setattr(ex, "MAX_PNG_PIXELS", int(w * h * 2))
    sheet = export_sheet.Sheet(legend=True, title_block=True)
    used = ex.render_png(scene, tmp_path / "band.png", sheet=sheet)
    assert used == ex.max_png_scale(scene, sheet) < ex.max_png_scale(scene)
    img = QImage(str(tmp_path / "band.png"))
    assert img.width() * img.height() <= ex.MAX_PNG_PIXELS


def test_file_export_offers_a_png_scale_that_fits(window, answer, tmp_path, superpod_scene,
                                                  monkeypatch):
    monkeypatch.setattr(export_sheet, "run_dialog", lambda dialog: 1)  # no legend or title
    calls = answer(tmp_path / "big.png", "PNG image (*.png)", scale=(1.0, False))
    assert export_dialog(window, superpod_scene, superpod_scene.document) is None
    _, _, label, value, low, high, _ = calls["scale"]
    fit = ex.max_png_scale(superpod_scene)
    assert value == high == fit and low <= fit
    assert f"fits up to {fit:g}" in label and "megapixels" in label


# ---------------------------------------------------------------------------- file names
@pytest.mark.parametrize(
    "name",
    ["DGX SuperPOD H100: 4 SU, 1,016 GPUs", 'a<b>c"d/e\\f|g?h*i', "trailing dot.", "CON"],
)
def test_file_export_proposes_a_portable_file_name(window, monkeypatch, name):
    """The default name holds nothing Windows or macOS refuse: no < > : " / \\ | ? *,
    no trailing dot or space, no device name."""
    offered = []
    monkeypatch.setattr(
        export_dialog_module,
        "ask_export_target",
        staticmethod(lambda *a, **k: offered.append(a[2]) or ("", "")),
    )
    window.document.topology.name = name
    window.document.path = None
    assert export_dialog(window, window.scene, window.document) is None
    file_name = Path(offered[0]).name
    stem = file_name.removesuffix(".svg")
    assert file_name.endswith(".svg") and stem
    assert not re.search(r'[<>:"/\\|?*\x00-\x1f]', file_name)
    assert stem == stem.strip(" .") and stem.split(".")[0].upper() != "CON"


# ---------------------------------------------------------------------------- CSV columns
def test_panel_csv_columns_spell_utilization_as_the_cli_json_does(qtbot):
    """One spelling for machine-readable keys: the link-load CSV's column is
    ``utilization_pct``, as the CLI's JSON says ``utilization``."""
    from designer.gui.analysis.panels import LinkLoadPanel
    from designer.gui.analysis.runner import analyse
    from designer.model.scenario import Scenario
    from designer.solver.snapshot.build import take_snapshot

    application()
    panel = LinkLoadPanel()
    qtbot.addWidget(panel)
    panel.set_result(
        analyse(take_snapshot(build_template("hgx")), Scenario(), None, None, lambda: False)
    )
    header, rows = panel.data_rows()
    assert "utilization_pct" in header and rows
    assert not [c for c in header if "utilis" in c]

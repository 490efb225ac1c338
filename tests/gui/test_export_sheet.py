"""Picture exports with a legend, a title block and standard pages (issue 37, piece 1):
from the CLI's flags and from File > Export's options."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtWidgets import QComboBox, QDialog

import designer.gui.export_dialog as export_dialog_module
from designer.gui import export as ex
from designer.gui import export_sheet
from designer.gui.app import application
from designer.gui.canvas.scene import FabricScene
from designer.gui.document import Document
from designer.gui.export_dialog import export_dialog
from designer.gui.export_sheet import BAND, Sheet
from designer.model.templates import build_template

SVG = "{http://www.w3.org/2000/svg}"


def scene_of(template: str, **params) -> FabricScene:
    application()
    return FabricScene(Document(build_template(template, **params)), theme=ex.PRINT_THEME)


@pytest.fixture(scope="module")
def superpod() -> FabricScene:
    """A 1,016-GPU SuperPOD: far larger than any page."""
    return scene_of("superpod")


def svg_texts(data: bytes) -> str:
    root = ET.fromstring(data)
    return " ".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))


def pages(pdf: bytes) -> list[tuple[float, float]]:
    """Each page's MediaBox size in points."""
    boxes = re.findall(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    return [(float(w), float(h)) for w, h in boxes]


def test_svg_band_holds_legend_and_title():
    scene = scene_of("hgx")
    plain = ET.fromstring(ex.svg_bytes(scene))
    sheet = Sheet(legend=True, title_block=True, date="2026-01-02", headline="result: x")
    data = ex.svg_bytes(scene, sheet=sheet)
    root = ET.fromstring(data)
    height = float(root.get("viewBox").split()[3])
    assert height == pytest.approx(float(plain.get("viewBox").split()[3]) + BAND, abs=1)
    text = svg_texts(data)
    for expected in (
        "NVLink 4",
        "PCIe Gen5 x16",
        "HGX H100 (8 GPUs)",
        "2026-01-02",
        "allreduce of 1 GiB",
        "result: x",
    ):
        assert expected in text
    assert "NVLink 4" not in svg_texts(ex.svg_bytes(scene))


def test_png_grows_by_the_band():
    scene = scene_of("hgx")
    w, h = ex.png_size(scene, 1.0)
    from PySide6.QtGui import QImage

    img = QImage.fromData(ex.png_bytes(scene, scale=1.0, sheet=Sheet(legend=True)))
    assert (img.width(), img.height()) == (w, h + BAND)


@pytest.mark.parametrize(
    "page, size",
    [("A4", (842, 595)), ("Letter", (792, 612)), ("A3", (1191, 842)), ("Tabloid", (1224, 792))],
)
def test_pdf_on_a_standard_landscape_page(superpod, page, size):
    scene = superpod
    data = ex.pdf_bytes(scene, sheet=Sheet(page=page, title_block=True))
    (got,) = pages(data)
    assert got == pytest.approx(size, abs=1)


def test_pdf_tiled_over_pages_at_print_scale(superpod):
    scene = superpod
    one = ex.pdf_bytes(scene, sheet=Sheet(page="A3"))
    tiled = ex.pdf_bytes(scene, sheet=Sheet(page="A3", fit="tile", title_block=True))
    assert len(pages(one)) == 1
    rect = ex.export_rect(scene)
    # printable A3 landscape at 96 dpi, 10 mm margins, less the title band
    usable_w = (420 - 20) / 25.4 * 96
    usable_h = (297 - 20) / 25.4 * 96 - BAND
    expected = (-(-rect.width() // usable_w)) * (-(-rect.height() // usable_h))
    assert len(pages(tiled)) == pytest.approx(expected, abs=1) and len(pages(tiled)) > 4


def test_file_export_asks_for_the_options(window, monkeypatch, tmp_path):
    monkeypatch.setattr(
        export_dialog_module,
        "ask_export_target",
        staticmethod(lambda *a, **k: (str(tmp_path / "d.pdf"), "")),
    )
    asked = {}

    def answer(dialog):
        combos = dialog.findChildren(QComboBox)
        asked["combos"] = len(combos)
        combos[0].setCurrentIndex(combos[0].findData("A4"))
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(export_sheet, "run_dialog", answer)
    path = export_dialog(window, window.scene, window.document)
    assert path == tmp_path / "d.pdf" and asked["combos"] == 2
    assert pages(path.read_bytes())[0] == pytest.approx((842, 595), abs=1)


def test_cancelling_the_options_writes_nothing(window, monkeypatch, tmp_path):
    monkeypatch.setattr(
        export_dialog_module,
        "ask_export_target",
        staticmethod(lambda *a, **k: (str(tmp_path / "d.svg"), "")),
    )
    monkeypatch.setattr(export_sheet, "run_dialog", lambda d: QDialog.DialogCode.Rejected)
    assert export_dialog(window, window.scene, window.document) is None
    assert not (tmp_path / "d.svg").exists()

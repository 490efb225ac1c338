"""`fabric-designer export`: diagrams headless (SVG, PNG, PDF) and the graph formats.

Each command runs in a subprocess without a display, as on a build server: the command
must pick Qt's offscreen platform itself.  No Qt in this process.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

SVG = "{http://www.w3.org/2000/svg}"


def headless_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env.update(extra)
    return env


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "designer", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or headless_env(),
        cwd=cwd,
    )


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def hgx(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("export")
    proc = cli("new", "hgx", "-o", "hgx.fabric.json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder / "hgx.fabric.json"


@pytest.fixture(scope="module")
def exported(hgx) -> dict[str, Path]:
    """The template exported as SVG, PNG at scale 1 and 2, and PDF."""
    folder = hgx.parent
    out = {}
    for name, extra in (("x.svg", ()), ("x1.png", ("--scale", "1")), ("x2.png", ()), ("x.pdf", ())):
        proc = cli("export", str(hgx), "-o", str(folder / name), *extra)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == f"wrote {folder / name}"
        assert proc.stderr == ""  # no Qt warnings either
        out[name] = folder / name
    return out


def test_svg_export_has_node_names_as_text(exported, hgx):
    root = ET.parse(exported["x.svg"]).getroot()
    texts = {"".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")}
    names = {n["name"] for n in json.loads(hgx.read_text())["nodes"]}
    assert {"GPU 0", "GPU 7", "NVSwitch 0"} <= names <= texts


def test_png_export_scales(exported):
    root = ET.parse(exported["x.svg"]).getroot()
    _, _, w, h = (int(v) for v in root.get("viewBox").split())
    assert png_size(exported["x1.png"]) == (w, h)
    assert png_size(exported["x2.png"]) == (2 * w, 2 * h)  # the default scale is 2


def test_pdf_export(exported):
    data = exported["x.pdf"].read_bytes()
    assert data.startswith(b"%PDF-") and b"/Page" in data


def test_explicit_offscreen_platform_works_too(hgx, tmp_path):
    out = tmp_path / "o.png"
    proc = cli(
        "export",
        str(hgx),
        "-o",
        str(out),
        "--scale",
        "0.5",
        env=headless_env(QT_QPA_PLATFORM="offscreen"),
    )
    assert proc.returncode == 0, proc.stderr
    assert png_size(out)[0] > 100


def test_graph_exports_keep_working(hgx, tmp_path):
    for name in ("g.graphml", "g.json", "g.fabric.json"):
        proc = cli("export", str(hgx), "-o", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
    graph = nx.read_graphml(tmp_path / "g.graphml")
    devices = [n for n, d in graph.nodes(data=True) if d["kind"] != "group"]
    assert len(devices) == 21  # (its one group, the server, is a node of kind "group")
    assert (tmp_path / "g.fabric.json").read_text().startswith("{")


@pytest.mark.parametrize(
    "output, extra, message",
    [
        ("x.xyz", (), "unknown export format '.xyz'"),
        ("x", (), "unknown export format '(none)'"),
        ("x.svg", ("--scale", "2"), "--scale applies to .png"),
        ("x.png", ("--scale", "0"), "--scale must be a positive number"),
        ("x.drawio", ("--legend",), "--legend and --title-block apply to .svg"),
        ("x.svg", ("--page", "A4"), "--page and --fit apply to .pdf"),
        ("x.pdf", ("--fit", "tile"), "--fit needs --page"),
    ],
)
def test_usage_errors_exit_2_with_one_line(hgx, tmp_path, output, extra, message):
    proc = cli("export", str(hgx), "-o", str(tmp_path / output), *extra)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_failures_exit_1_and_leave_no_file(hgx, tmp_path):
    proc = cli("export", str(hgx), "-o", str(tmp_path / "big.png"), "--scale", "500")
    assert proc.returncode == 1
    assert "too large" in proc.stderr and proc.stderr.count("\n") == 1
    proc = cli("export", str(tmp_path / "none.fabric.json"), "-o", str(tmp_path / "x.svg"))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def superpod(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("superpod")
    proc = cli("new", "superpod", "-o", "sp.fabric.json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder / "sp.fabric.json"


def test_a_png_too_large_says_the_limit_and_the_scale_that_fits(superpod, tmp_path):
    """The 1,016-GPU SuperPOD at scale 2: refused with the pixel limit named and the
    largest scale that fits offered (nothing is rendered, so this is quick)."""
    proc = cli("export", str(superpod), "-o", str(tmp_path / "sp.png"), "--scale", "2")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "134 megapixels" in proc.stderr and "32767 px a side" in proc.stderr
    assert "the largest scale that fits this design is 1.62" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_default_png_scale_fits_the_design(hgx, tmp_path):
    """Without --scale, a design too large for scale 2 is written at the largest scale
    that fits, and the command says so.  The pixel budget is lowered (in the child
    process) so that the small board stands for a SuperPOD without a 130-megapixel
    render."""
    out = tmp_path / "fit.png"
    budget = 1_000_000
    code = (
        "import sys, designer.gui.export as ex; "
        f"ex.MAX_PNG_PIXELS = {budget}; "
        "from designer.cli import main; "
        f"sys.exit(main(['export', {str(hgx)!r}, '-o', {str(out)!r}]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=headless_env(QT_QPA_PLATFORM="offscreen"),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out} at scale 1.")
    assert "the largest that fits" in proc.stdout and "megapixel" in proc.stdout
    scale = float(proc.stdout.split(" at scale ")[1].split(",")[0])
    w1, h1 = png_size_at_1(hgx, tmp_path)

    def size(s: float) -> tuple[int, int]:
        return math.ceil(w1 * s - 1e-9), math.ceil(h1 * s - 1e-9)

    assert png_size(out) == size(scale)
    assert math.prod(size(scale)) <= budget < math.prod(size(scale + 0.01))


def png_size_at_1(design: Path, folder: Path) -> tuple[int, int]:
    out = folder / "one.png"
    assert cli("export", str(design), "-o", str(out), "--scale", "1").returncode == 0
    return png_size(out)


def test_commands_read_drawio_and_graphml_exports(hgx, tmp_path):
    """Every command that reads a design imports draw.io and GraphML exports; an
    unknown model is one line and exit code 1."""
    for suffix in (".drawio", ".graphml"):
        out = tmp_path / f"h{suffix}"
        assert cli("export", str(hgx), "-o", str(out)).returncode == 0
        info = cli("info", str(out))
        assert info.returncode == 0, info.stderr
        assert "gpu 8" in info.stdout
        back = tmp_path / f"back{suffix}.fabric.json"
        assert cli("export", str(out), "-o", str(back)).returncode == 0
        text = out.read_text(encoding="utf-8").replace("NVSwitch-gen3", "NVSwitch-gen99")
        bad = tmp_path / f"bad{suffix}"
        bad.write_text(text, encoding="utf-8")
        proc = cli("bom", str(bad))
        assert proc.returncode == 1
        assert "unknown model 'NVSwitch-gen99'" in proc.stderr
        assert proc.stderr.count("\n") == 1


def test_with_results_carries_what_solve_reports(tmp_path):
    """--with-results: each link's utilisation is the one `solve --json` reports for
    the design's saved scenario."""
    design = tmp_path / "r.fabric.json"
    assert cli("new", "rail-cluster", "-o", str(design)).returncode == 0
    out = tmp_path / "r.graphml"
    proc = cli("export", str(design), "-o", str(out), "--with-results")
    assert proc.returncode == 0, proc.stderr
    graph = nx.read_graphml(out, force_multigraph=True)
    exported = {k: d["utilisation"] for _, _, k, d in graph.edges(keys=True, data=True)}
    solved = json.loads(cli("solve", str(design), "--json").stdout)["links"]
    assert solved and max(exported.values()) > 0.5
    for link in solved:
        assert exported[link["id"]] == pytest.approx(link["utilization"], abs=1e-4)
    refused = cli("export", str(design), "-o", str(tmp_path / "r.dot"), "--with-results")
    assert refused.returncode == 2 and "--with-results applies to" in refused.stderr

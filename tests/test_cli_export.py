"""`fabric-designer export`: diagrams headless (SVG, PNG, PDF) and the graph formats.

Each command runs in a subprocess without a display, as on a build server: the command
must pick Qt's offscreen platform itself.  No Qt in this process.
"""

from __future__ import annotations

import json
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
    assert nx.read_graphml(tmp_path / "g.graphml").number_of_nodes() == 21
    assert (tmp_path / "g.fabric.json").read_text().startswith("{")


@pytest.mark.parametrize(
    "output, extra, message",
    [
        ("x.xyz", (), "unknown export format '.xyz'"),
        ("x", (), "unknown export format '(none)'"),
        ("x.svg", ("--scale", "2"), "--scale applies to .png"),
        ("x.png", ("--scale", "0"), "--scale must be a positive number"),
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

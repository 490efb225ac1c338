"""Names from a design file reach the terminal, SVG and CSV only in a safe form.

A shared design file is untrusted text: its names may hold escape sequences (set the
terminal's title, clear the screen, overwrite a line), control characters XML cannot
hold, lone surrogates no encoder accepts, or a spreadsheet formula.  The CLI is run as a
user runs it (a subprocess, its output read as bytes).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from designer.model.safe_text import csv_cell, terminal_text, xml_bytes, xml_text

EVIL_DESIGN = "Evil\x1b]0;pwned\x07\x1b[2J\ud800\uffff\x01\r\nfaked =cmd"
EVIL_NODE = '=HYPERLINK("x")\x1b[31m\x9b\x01\uffff'
#: Bytes a terminal obeys: C0 controls but tab and newline, DEL, and C1 (as UTF-8).
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def headless_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "designer", *args],
        capture_output=True,
        timeout=180,
        env=headless_env(),
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("evil")
    assert cli("new", "hgx", "-o", "d.fabric.json", cwd=folder).returncode == 0
    data = json.loads((folder / "d.fabric.json").read_text())
    data["name"] = EVIL_DESIGN
    for node in data["nodes"]:
        node["name"] = EVIL_NODE + node["name"]
    # json.dumps writes the lone surrogate as the escape \ud800, as a hostile file would.
    (folder / "evil.fabric.json").write_text(json.dumps(data))
    return folder / "evil.fabric.json"


@pytest.mark.parametrize(
    "argv",
    [
        ["info", "{f}"],
        ["bom", "{f}"],
        ["bom", "{f}", "--csv"],
        ["validate", "{f}"],
        ["solve", "{f}", "--bytes", "1MiB"],
        ["train", "{f}", "--steps", "20"],
    ],
)
def test_the_terminal_gets_no_control_characters(evil, argv):
    proc = cli(*[a.format(f=evil) for a in argv], cwd=evil.parent)
    assert proc.returncode in (0, 1), proc.stderr
    assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert not CONTROL.search(stream), stream[:400]
        stream.decode("utf-8")  # strict: no surrogate escaped into the bytes


def test_info_and_bom_show_the_name_escaped(evil):
    shown = r"Evil\x1b]0;pwned\x07\x1b[2J\ud800" + "\uffff" + r"\x01\r\nfaked =cmd"
    for command in ("info", "bom"):
        out = cli(command, str(evil), cwd=evil.parent).stdout.decode("utf-8")
        assert shown in out.splitlines()[0]


def test_svg_export_parses(evil):
    out = evil.parent / "evil.svg"
    proc = cli("export", str(evil), "-o", str(out), cwd=evil.parent)
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out).getroot()
    texts = "".join(root.itertext())
    assert "Evil\ufffd]0;pwned" in texts and "=HYPERLI" in texts  # labels elide


def test_bom_csv_cells_are_no_formulas(evil):
    proc = cli("bom", str(evil), "--csv", cwd=evil.parent)
    rows = list(csv.reader(io.StringIO(proc.stdout.decode("utf-8"))))
    assert all(not cell.startswith(("=", "+", "@")) for row in rows for cell in row)


# ------------------------------------------------------------------ the functions


@pytest.mark.parametrize("text", ["", "plain", EVIL_DESIGN, EVIL_NODE, "\x00\x7f\x85\udfff"])
def test_terminal_text_prints_and_encodes(text):
    out = terminal_text(text, newlines=False)
    assert not CONTROL.search(out.encode("utf-8")) and "\n" not in out


def test_xml_bytes_parse_whatever_the_text():
    for text in (EVIL_DESIGN, EVIL_NODE, "\ufffe", "a&b<c>"):
        body = xml_text(text).replace("&", "&amp;").replace("<", "&lt;")
        doc = xml_bytes(f"<t a='&#1;&#x41;'>{body}</t>".encode("utf-8", "surrogatepass"))
        root = ET.fromstring(doc)
        assert root.get("a") == "\ufffdA"


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ("=1+1", "'=1+1"),
        ("+1x", "'+1x"),
        ("-x", "'-x"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\r=1", "'\r=1"),
        ("-3.5", "-3.5"),
        ("+2e3", "+2e3"),
        ("-inf", "-inf"),
        ("x=1", "x=1"),
        (-3, -3),
        (2.5, 2.5),
        ("", ""),
    ],
)
def test_csv_cell(cell, safe):
    assert csv_cell(cell) == safe


def test_bom_csv_neutralises_names_that_read_as_formulas():
    from designer.model.bom import bom, to_csv
    from designer.model.templates import build_template

    b = bom(build_template("hgx"))
    first = dataclasses.replace(b.devices[0], model="=cmd|' /C calc'!A0", name="-2+3")
    rows = list(
        csv.reader(io.StringIO(to_csv(dataclasses.replace(b, devices=(first, *b.devices[1:])))))
    )
    assert rows[1][1:3] == ["'=cmd|' /C calc'!A0", "'-2+3"]
    assert rows[1][4] == str(first.count)

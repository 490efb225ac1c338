"""Packaging: the desktop-integration files agree with each other and with the app, the
PyInstaller spec wires the resources and icons on every platform, and (opt-in, slow) the
bundle builds and passes its smoke test.

The full build runs only with ``FABRIC_BUNDLE_TEST=1`` (a couple of minutes and a
package download); CI builds and smoke-tests the bundle in ``.ci/run`` instead.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import re
import shutil
import struct
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from designer import __version__
from designer.model.catalog import resources_dir

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
LINUX = PACKAGING / "linux"
APP_ID = "io.github.fabricdesigner.FabricDesigner"
MIME_TYPE = "application/x-fabric-design"
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"
SVG_NS = "{http://www.w3.org/2000/svg}"
ICON_SIZES = (48, 128, 256)


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive in desktop files
    parser.read(LINUX / f"{APP_ID}.desktop", encoding="utf-8")
    return parser["Desktop Entry"]


def _mime_types() -> list[ET.Element]:
    root = ET.parse(LINUX / f"{APP_ID}.xml").getroot()
    assert root.tag == f"{MIME_NS}mime-info"
    return root.findall(f"{MIME_NS}mime-type")


def _metainfo() -> ET.Element:
    return ET.parse(LINUX / f"{APP_ID}.metainfo.xml").getroot()


def _script_name() -> str:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (name,) = pyproject["project"]["scripts"]
    return name


def _png_size(path: Path) -> tuple[int, int, int]:
    """(width, height, colour type) from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height, _depth, colour = struct.unpack(">IIBB", data[16:26])
    return width, height, colour


# ----------------------------------------------------------------- desktop file
def test_desktop_entry_launches_the_command_on_one_file():
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    exec_line = entry["Exec"].split()
    assert exec_line[0] == _script_name() == entry["TryExec"]
    assert exec_line[1:] == ["%f"]  # the GUI takes one design file
    assert entry["Terminal"] == "false"
    assert entry["Icon"] == APP_ID


def test_desktop_entry_mime_type_is_the_one_the_mime_xml_defines():
    listed = [m for m in _desktop_entry()["MimeType"].split(";") if m]
    defined = [m.get("type") for m in _mime_types()]
    assert listed == defined == [MIME_TYPE]


def test_mime_glob_claims_fabric_json_over_plain_json():
    (mime,) = _mime_types()
    globs = mime.findall(f"{MIME_NS}glob")
    assert [g.get("pattern") for g in globs] == ["*.fabric.json"]
    # application/json's *.json has the default weight 50; a tie would fall to the
    # longer pattern, but a higher weight makes the choice explicit.
    assert int(globs[0].get("weight", "50")) > 50
    assert mime.find(f"{MIME_NS}sub-class-of").get("type") == "application/json"
    pattern = globs[0].get("pattern")
    assert fnmatch.fnmatch("superpod.fabric.json", pattern)
    assert not fnmatch.fnmatch("superpod.json", pattern)
    assert not fnmatch.fnmatch("superpod.fabric.json.bak", pattern)


# ----------------------------------------------------------------- AppStream
def test_metainfo_names_the_same_app_command_and_mime_type():
    root = _metainfo()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    launchable = root.find("launchable")
    assert launchable.get("type") == "desktop-id"
    assert launchable.text == f"{APP_ID}.desktop"
    provides = root.find("provides")
    assert provides.findtext("binary") == _script_name()
    assert provides.findtext("mediatype") == MIME_TYPE
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert root.findtext("project_license") == pyproject["project"]["license"]["text"]


def test_metainfo_newest_release_is_the_package_version():
    releases = _metainfo().find("releases").findall("release")
    assert releases, "metainfo lists no release"
    newest = releases[0]  # AppStream lists releases newest first
    assert newest.get("version") == __version__, (
        f"add a <release version=\"{__version__}\"> to the metainfo")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", newest.get("date", ""))


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstreamcli not installed")
def test_metainfo_passes_appstreamcli_validate():
    proc = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(LINUX / f"{APP_ID}.metainfo.xml")],
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                    reason="desktop-file-validate not installed")
def test_desktop_entry_passes_desktop_file_validate():
    proc = subprocess.run(["desktop-file-validate", str(LINUX / f"{APP_ID}.desktop")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


# ----------------------------------------------------------------- icons
def test_master_svg_is_where_the_app_loads_its_window_icon():
    svg = resources_dir() / "icons" / "fabric-designer.svg"
    root = ET.parse(svg).getroot()
    assert root.tag == f"{SVG_NS}svg"
    _x, _y, width, height = map(float, root.get("viewBox").split())
    assert width == height > 0, "an app icon is square"


@pytest.mark.parametrize("size", ICON_SIZES)
def test_linux_png_icons_have_their_size(size):
    path = LINUX / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
    width, height, colour = _png_size(path)
    assert (width, height) == (size, size)
    assert colour == 6, "RGBA, so the rounded corners are transparent"


def test_windows_ico_holds_png_images_up_to_256():
    data = (PACKAGING / "icons" / "fabric-designer.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1) and count >= 4
    sizes = []
    for k in range(count):
        w, h, _c, _r, _p, _bpp, length, offset = struct.unpack(
            "<BBBBHHII", data[6 + 16 * k: 22 + 16 * k])
        assert w == h, "square images"
        assert data[offset: offset + 8] == b"\x89PNG\r\n\x1a\n"
        assert offset + length <= len(data)
        sizes.append(w or 256)
    assert {16, 32, 48, 256} <= set(sizes)


def test_macos_icns_length_and_elements_add_up():
    data = (PACKAGING / "icons" / "fabric-designer.icns").read_bytes()
    assert data[:4] == b"icns"
    assert struct.unpack(">I", data[4:8])[0] == len(data)
    kinds, at = [], 8
    while at < len(data):
        kind, length = data[at: at + 4], struct.unpack(">I", data[at + 4: at + 8])[0]
        assert data[at + 8: at + 16] == b"\x89PNG\r\n\x1a\n"
        kinds.append(kind)
        at += length
    assert at == len(data)
    assert {b"ic07", b"ic08", b"ic09", b"ic10"} <= set(kinds)  # 128..1024 px


# ----------------------------------------------------------------- PyInstaller spec
class _Recorder:
    """Stand-ins for PyInstaller's spec globals that record how they were called."""

    def __init__(self):
        self.calls: list[tuple[str, tuple, dict]] = []

    def stub(self, name):
        recorder = self

        class Target:
            def __init__(self, *args, **kwargs):
                recorder.calls.append((name, args, kwargs))
                self.name = kwargs.get("name")
                self.pure = self.scripts = []
                self.binaries, self.datas = [], []

        Target.__name__ = name
        return Target

    def named(self, name):
        return [kwargs for called, _args, kwargs in self.calls if called == name]


def _run_spec(monkeypatch, platform: str) -> _Recorder:
    spec = PACKAGING / "fabric-designer.spec"
    code = compile(spec.read_text(encoding="utf-8"), str(spec), "exec")
    recorder = _Recorder()
    namespace = {"__name__": "__main__", "SPECPATH": str(PACKAGING)}
    for name in ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE"):
        namespace[name] = recorder.stub(name)
    monkeypatch.setattr(sys, "platform", platform)
    exec(code, namespace)
    return recorder


@pytest.mark.parametrize("platform", ["linux", "win32", "darwin"])
def test_spec_bundles_resources_where_the_package_finds_them(monkeypatch, platform):
    recorder = _run_spec(monkeypatch, platform)
    (analysis,) = recorder.named("Analysis")
    script = Path(recorder.calls[0][1][0][0])
    assert script.is_file() and script.parent == PACKAGING
    # designer.model.catalog.resources_dir() looks beside the designer package.
    assert (str(ROOT / "resources"), "designer/resources") in analysis["datas"]
    assert "tkinter" in analysis["excludes"]
    # pyqtgraph imports these at run time: excluding them would break the panels.
    for needed in ("PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets", "PySide6.QtTest",
                   "PySide6.QtSvg", "numpy", "networkx"):
        assert needed not in analysis["excludes"]
    (collect,) = recorder.named("COLLECT")
    assert collect["name"] == "fabric-designer"


def test_spec_on_linux_builds_one_console_program(monkeypatch):
    recorder = _run_spec(monkeypatch, "linux")
    (exe,) = recorder.named("EXE")
    assert exe["name"] == "fabric-designer" and exe["console"] is True
    assert recorder.named("BUNDLE") == []


def test_spec_on_windows_adds_a_windowed_twin_with_the_ico(monkeypatch):
    recorder = _run_spec(monkeypatch, "win32")
    exes = {kwargs["name"]: kwargs for kwargs in recorder.named("EXE")}
    assert exes["fabric-designer"]["console"] is True
    assert exes["fabric-designer-gui"]["console"] is False
    for kwargs in exes.values():
        assert kwargs["icon"] == str(PACKAGING / "icons" / "fabric-designer.ico")


def test_spec_on_macos_makes_an_app_bundle_that_opens_designs(monkeypatch):
    recorder = _run_spec(monkeypatch, "darwin")
    (bundle,) = recorder.named("BUNDLE")
    assert bundle["bundle_identifier"] == APP_ID
    assert bundle["icon"] == str(PACKAGING / "icons" / "fabric-designer.icns")
    assert bundle["version"] == __version__
    (uti,) = bundle["info_plist"]["UTExportedTypeDeclarations"]
    assert uti["UTTypeTagSpecification"]["public.filename-extension"] == ["fabric.json"]
    (exe,) = recorder.named("EXE")
    assert exe["argv_emulation"] is True


# ----------------------------------------------------------------- install script
@pytest.mark.skipif(sys.platform == "win32" or shutil.which("bash") is None,
                    reason="the desktop integration is for Linux")
def test_install_script_puts_every_file_in_place_and_removes_it(tmp_path):
    prefix = tmp_path / "share"
    app = tmp_path / "my bundle" / "fabric-designer"
    app.parent.mkdir()
    app.write_text("#!/bin/sh\n")
    app.chmod(0o755)
    env = dict(os.environ, XDG_DATA_HOME=str(prefix), XDG_DATA_DIRS=str(prefix))
    script = LINUX / "install.sh"
    subprocess.run(["bash", str(script), "--exec", str(app)], env=env, check=True,
                   capture_output=True, timeout=60)
    desktop = (prefix / "applications" / f"{APP_ID}.desktop").read_text()
    assert f'Exec="{app}" %f' in desktop.splitlines()
    expected = [prefix / "metainfo" / f"{APP_ID}.metainfo.xml",
                prefix / "mime" / "packages" / f"{APP_ID}.xml",
                prefix / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg"]
    expected += [prefix / "icons" / "hicolor" / f"{s}x{s}" / "apps" / f"{APP_ID}.png"
                 for s in ICON_SIZES]
    assert [p for p in expected if not p.is_file()] == []
    if shutil.which("update-mime-database"):
        globs = (prefix / "mime" / "globs2").read_text()
        assert f"{MIME_TYPE}:*.fabric.json" in globs
    subprocess.run(["bash", str(script), "--uninstall"], env=env, check=True,
                   capture_output=True, timeout=60)
    assert [p for p in expected if p.is_file()] == []


# ----------------------------------------------------------------- the bundle itself
@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.skipif(os.environ.get("FABRIC_BUNDLE_TEST") != "1",
                    reason="builds the PyInstaller bundle (minutes, downloads PyInstaller): "
                           "set FABRIC_BUNDLE_TEST=1; CI builds it in .ci/run")
def test_bundle_builds_and_passes_the_smoke_test(tmp_path):
    env = dict(os.environ, FABRIC_DIST_DIR=str(tmp_path / "dist"),
               FABRIC_WORK_DIR=str(tmp_path / "work"))
    build = subprocess.run(["bash", str(PACKAGING / "build.sh")], env=env, cwd=ROOT,
                           capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    app = tmp_path / "dist" / "fabric-designer" / "fabric-designer"
    smoke = subprocess.run([sys.executable, str(PACKAGING / "smoke.py"), str(app)],
                           capture_output=True, text=True, check=False)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "passed 6 checks" in smoke.stdout

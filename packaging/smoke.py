"""Smoke-test the frozen app headless: ``python3 packaging/smoke.py [APP]``.

APP defaults to ``dist/fabric-designer/fabric-designer`` (``.exe`` on Windows).  Standard
library only, so any Python runs it; it never imports ``designer``: the point is what the
bundle itself can do.  Checks, in order:

1. ``--version`` prints ``fabric-designer <designer.__version__>``;
2. ``templates`` lists the ``example`` template;
3. ``new example -o DIR/example.fabric.json`` writes a design with nodes and links;
4. ``export ... -o example.svg`` (offscreen Qt) writes well-formed SVG whose title is the
   design's name, whose ``<text>`` labels include every spine and nearly every node
   name (long ones are elided), and a PNG export is a PNG;
5. ``solve ... --json`` routes an all-reduce over every GPU at a positive bus bandwidth
   (numpy and the TOML catalog and model parameters are inside the bundle);
6. the GUI starts on the design (offscreen) and keeps running, with no traceback in
   its output, until it is stopped.

Exit status 0 when every check passes; otherwise 1 with the failed check on stderr.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG_NS = "{http://www.w3.org/2000/svg}"
#: How long one CLI command may take (the first start of a cold bundle is the slowest).
TIMEOUT_S = 300
#: How long the GUI must stay up after its platform plugin loaded.
GUI_ALIVE_S = 5.0


class SmokeError(Exception):
    """A check failed."""


def expected_version() -> str:
    text = (ROOT / "designer" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'__version__ = "([^"]+)"', text)
    if not match:
        raise SmokeError("designer/__init__.py: no __version__")
    return match.group(1)


def default_app() -> Path:
    name = "fabric-designer.exe" if sys.platform == "win32" else "fabric-designer"
    return ROOT / "dist" / "fabric-designer" / name


def headless_env(home: Path) -> dict[str, str]:
    """The environment for the app: offscreen Qt, and data/config dirs of its own so a
    recovery copy or setting on this machine cannot change what the GUI does."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", FABRIC_DESIGNER_DATA_DIR=str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[var] = str(home / var.lower())
    return env


def run(app: Path, *args: str, env: dict[str, str]) -> str:
    """Run the app, return its stdout; a non-zero exit is a failed check."""
    proc = subprocess.run([str(app), *args], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise SmokeError(f"`fabric-designer {' '.join(args)}` exited {proc.returncode}:\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeError(message)


def check_version(app: Path, env: dict[str, str]) -> None:
    out = run(app, "--version", env=env).strip()
    want = f"fabric-designer {expected_version()}"
    check(out == want, f"--version printed {out!r}, expected {want!r}")


def check_templates(app: Path, env: dict[str, str]) -> None:
    out = run(app, "templates", env=env)
    check(re.search(r"^example: ", out, re.M) is not None,
          f"`templates` does not list example:\n{out}")


def check_new(app: Path, design: Path, env: dict[str, str]) -> dict:
    run(app, "new", "example", "-o", str(design), env=env)
    data = json.loads(design.read_text(encoding="utf-8"))
    check(len(data.get("nodes", [])) > 0 and len(data.get("links", [])) > 0,
          f"{design.name}: no nodes or no links")
    return data


def check_export(app: Path, design: Path, data: dict, env: dict[str, str]) -> None:
    svg = design.with_name("example.svg")
    run(app, "export", str(design), "-o", str(svg), env=env)
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as exc:
        raise SmokeError(f"{svg.name} is not well-formed XML: {exc}") from None
    check(root.tag == f"{SVG_NS}svg", f"{svg.name}: root element is {root.tag}, not svg")
    title = root.findtext(f"{SVG_NS}title")
    check(title == data["name"], f"{svg.name}: title {title!r}, design is {data['name']!r}")
    labels = {" ".join("".join(t.itertext()).split()) for t in root.iter(f"{SVG_NS}text")}
    names = [node["name"] for node in data["nodes"]]
    missing_spines = [n["name"] for n in data["nodes"]
                      if n["kind"] == "spine" and n["name"] not in labels]
    check(not missing_spines, f"{svg.name}: no label for {missing_spines}")
    shown = sum(name in labels for name in names)
    check(shown >= 0.9 * len(names),
          f"{svg.name}: only {shown} of {len(names)} node names are labels")

    png = design.with_name("example.png")
    run(app, "export", str(design), "-o", str(png), "--scale", "0.5", env=env)
    check(png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{png.name} is not a PNG")


def check_solve(app: Path, design: Path, data: dict, env: dict[str, str]) -> None:
    result = json.loads(run(app, "solve", str(design), "--bytes", "1GiB", "--json", env=env))
    gpus = sum(node["kind"] == "gpu" for node in data["nodes"])
    check(result["ranks"] == gpus, f"solve used {result['ranks']} ranks, the design has "
                                   f"{gpus} GPUs")
    busbw = result["results"][0]["busbw_GBps"]
    check(0 < busbw <= result["ceiling_busbw_GBps"] * 1.0001,
          f"solve: busbw {busbw} GB/s, ceiling {result['ceiling_busbw_GBps']} GB/s")


def _platform_loaded(pid: int) -> bool:
    """Whether Qt loaded its offscreen platform plugin (Linux: /proc/PID/maps)."""
    try:
        return "qoffscreen" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def check_gui(app: Path, design: Path, env: dict[str, str]) -> None:
    """The GUI opens the design and stays up without a traceback: every GUI module made it
    into the bundle.  (The crash handler would keep the window open after an exception,
    so being alive is not enough.)"""
    log = design.with_name("gui-output.txt")
    with log.open("w") as out:
        proc = subprocess.Popen([str(app), str(design)], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        linux = Path(f"/proc/{proc.pid}/maps").exists()
        while proc.poll() is None and linux and not _platform_loaded(proc.pid):
            check(time.monotonic() < deadline, "the GUI did not start its Qt platform")
            time.sleep(0.2)
        # Building the window and its docks, and the first analysis, follow the platform.
        end = time.monotonic() + GUI_ALIVE_S * (1 if linux else 4)
        while proc.poll() is None and time.monotonic() < end:
            time.sleep(0.2)
        output = log.read_text(errors="replace")
        check(proc.poll() is None, f"the GUI exited with {proc.returncode}:\n{output}")
        check("Traceback" not in output, f"the GUI raised:\n{output}")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main(argv: list[str]) -> int:
    app = Path(argv[1]) if len(argv) > 1 else default_app()
    if not app.is_file():
        print(f"smoke: no frozen app at {app} (run packaging/build.sh)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="fabric-smoke-") as tmp:
        work = Path(tmp)
        env = headless_env(work / "home")
        design = work / "example.fabric.json"
        steps = [
            ("--version", lambda: check_version(app, env)),
            ("templates", lambda: check_templates(app, env)),
            ("new example", lambda: data.update(check_new(app, design, env))),
            ("export svg/png", lambda: check_export(app, design, data, env)),
            ("solve", lambda: check_solve(app, design, data, env)),
            ("gui starts", lambda: check_gui(app, design, env)),
        ]
        data: dict = {}
        for name, step in steps:
            t0 = time.perf_counter()
            try:
                step()
            except (SmokeError, subprocess.TimeoutExpired, KeyError, ValueError) as exc:
                print(f"smoke: FAILED {name}: {exc}", file=sys.stderr)
                return 1
            print(f"smoke: ok {name} ({time.perf_counter() - t0:.1f} s)")
    print(f"smoke: {app} passed {len(steps)} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Load and save cases of the 100,000-GPU table (`benchmarks/scale.py`).

- ``load-16k``: ``fabric-designer info`` on the 16,376-GPU SuperPOD, whole process
  (start-up, imports, reading the file, the summary the command prints); its RSS is
  that process's peak.
- ``load-131k``: the same on the 130,752-GPU B300 SuperPOD (186 MB file).
- ``save-16k``: saving the 16,376-GPU SuperPOD (``fabric_json.save``: encoding, the
  atomic write with its fsync and backup), in this process after loading it, which
  is not timed; RSS is this process's peak (load included).
"""

from __future__ import annotations

import time

from scale import Case, Measure, design, fabric_designer, timed_child


def _info(workdir, key: str) -> Measure:
    path = design(workdir, key)
    seconds, rss, done = timed_child([*fabric_designer(), "info", str(path)])
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip()[-300:])
    lines = done.stdout.decode().splitlines()
    gpus = next((line.split()[1] for line in lines if line.startswith("GPUs:")), "?")
    return Measure(seconds, rss, f"{gpus} GPUs, {path.stat().st_size / 1e6:.0f} MB")


def _save_16k(workdir) -> Measure:
    from designer.io.fabric_json import load, save

    topology = load(design(workdir, "superpod-16k"))
    out = workdir / "save-16k.fabric.json"
    t0 = time.perf_counter()
    save(topology, out)
    seconds = time.perf_counter() - t0
    size = out.stat().st_size
    return Measure(seconds, None, f"{topology.link_count():,} links, {size / 1e6:.0f} MB")


CASES = [
    Case(
        "load-16k",
        "load 16,376-GPU SuperPOD (CLI info, whole process)",
        1.0,
        None,
        lambda workdir: _info(workdir, "superpod-16k"),
    ),
    Case(
        "load-131k",
        "load 130,752-GPU SuperPOD (CLI info, whole process)",
        6.0,
        3.0,
        lambda workdir: _info(workdir, "superpod-131k"),
    ),
    Case("save-16k", "save 16,376-GPU SuperPOD (in process, after load)", 1.0, None, _save_16k),
]

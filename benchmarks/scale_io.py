"""Load and save cases of the 100,000-GPU table (`benchmarks/scale.py`).

- ``load-16k``: ``fabric-designer info`` on the 16,376-GPU SuperPOD, whole process
  (start-up, imports, reading the file, the summary the command prints); its RSS is
  that process's peak.
- ``load-131k``: the same on the 130,752-GPU B300 SuperPOD (186 MB file).
- ``save-16k``: saving the 16,376-GPU SuperPOD (``fabric_json.save``: encoding, the
  atomic write with its fsync and backup), in this process after loading it, which
  is not timed; RSS is this process's peak (load included).

Each row's note also gives the CPU time (user + system) of what is timed: on a machine
shared with other work the wall time stretches, the CPU time much less.
"""

from __future__ import annotations

import resource
import time

from scale import Case, Measure, design, fabric_designer, timed_child


def _info(workdir, key: str) -> Measure:
    path = design(workdir, key)
    before = _children_cpu()
    seconds, rss, done = timed_child([*fabric_designer(), "info", str(path)])
    cpu = _children_cpu() - before
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip()[-300:])
    lines = done.stdout.decode().splitlines()
    gpus = next((line.split()[1] for line in lines if line.startswith("GPUs:")), "?")
    size = path.stat().st_size / 1e6
    return Measure(seconds, rss, f"{gpus} GPUs, {size:.0f} MB, CPU {cpu:.2f} s")


def _children_cpu() -> float:
    """User + system seconds of the children reaped so far (a busy machine stretches the
    wall time; the CPU time shows what the command itself cost)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _save_16k(workdir) -> Measure:
    from designer.io.fabric_json import load, save

    topology = load(design(workdir, "superpod-16k"))
    out = workdir / "save-16k.fabric.json"
    t0, cpu0 = time.perf_counter(), time.process_time()
    save(topology, out)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    size = out.stat().st_size / 1e6
    note = f"{topology.link_count():,} links, {size:.0f} MB, CPU {cpu:.2f} s"
    return Measure(seconds, None, note)


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

"""Benchmark of the loader's limits on huge files (issue 29, item 1).

Run ``python benchmarks/limits.py`` (about a minute; needs ~1 GiB of free disk in the
temporary folder, which it empties afterwards).  It streams four hostile design files
to disk, none ever held in memory whole, runs ``fabric-designer validate`` on each in its
own process under a 60 s cap, and prints the wall-clock time and peak RSS of that process
with the goal beside each:

- ~200 MiB of GPU nodes (1.6M nodes, no links): refused, <= 20 s and 2 GB
- ~200 MiB of parallel links between two nodes (3.7M links): refused, <= 20 s and 2 GB
- 200 MiB of ``{}`` objects as nodes: refused, <= 20 s and 2 GB
- a 300 MiB sparse file, over the byte limit: refused, <= 1 s and 100 MB

Each must end in a one-line error that names the file and the limit it broke (the
``{}`` nodes: the first one's missing field).  The tests check the refusals on small files with the
limits lowered (``tests/io/test_huge_inputs.py``); the real sizes are measured here and
in that file's slow test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

MIB = 1 << 20
HEADER = '{\n  "format": "fabric-designer",\n  "version": 1,\n  "name": "huge",\n'
FABRIC_DESIGNER = Path(sys.executable).with_name("fabric-designer")


def _items(f: IO[str], lines: Callable[[int], str], target: int) -> int:
    """Write ``lines(i)`` joined by ``,\\n`` until about ``target`` bytes; the count."""
    i, written = 0, 0
    chunk: list[str] = []
    while written < target:
        line = lines(i)
        chunk.append(line)
        written += len(line) + 2
        i += 1
        if len(chunk) == 4096:
            f.write(",\n".join(chunk) + ",\n")
            chunk.clear()
    f.write(",\n".join(chunk) + "\n")
    return i


def _gpu(i: int) -> str:
    return (
        f'    {{"id": "g{i}", "kind": "gpu", "model": "H100", "name": "GPU {i}", '
        f'"x": {i % 1000}.0, "y": {i // 1000}.0, "group": null, "plane": "compute", '
        f'"failed": false}}'
    )


def gpu_nodes(path: Path, target: int) -> str:
    """``target`` bytes of GPU nodes and no links."""
    with open(path, "w") as f:
        f.write(HEADER + '  "nodes": [\n')
        n = _items(f, _gpu, target)
        f.write('  ],\n  "links": []\n}\n')
    return f"{n / 1e6:.1f}M GPU nodes"


def parallel_links(path: Path, target: int) -> str:
    """Two GPUs and ``target`` bytes of parallel links between them."""

    def link(i: int) -> str:
        return (
            f'    {{"id": "l{i}", "a": "g0", "b": "g1", "tech": "nvlink4", "count": 1, '
            f'"plane": "compute", "failed": false}}'
        )

    with open(path, "w") as f:
        f.write(HEADER + '  "nodes": [\n' + _gpu(0) + ",\n" + _gpu(1) + '\n  ],\n  "links": [\n')
        n = _items(f, link, target)
        f.write("  ]\n}\n")
    return f"{n / 1e6:.1f}M parallel links"


def empty_nodes(path: Path, target: int) -> str:
    """``target`` bytes of ``{}`` as nodes."""
    with open(path, "w") as f:
        f.write(HEADER + '  "nodes": [\n')
        n = _items(f, lambda i: "{}", target)
        f.write('  ],\n  "links": []\n}\n')
    return f"{n / 1e6:.1f}M {{}} nodes"


def sparse(path: Path, target: int) -> str:
    """A file of ``target`` bytes that takes no disk (a hole)."""
    with open(path, "wb") as f:
        f.truncate(target)
    return f"{target // MIB} MiB sparse"


#: (name, maker, size, goal seconds, goal MB, what the refusal must say)
CASES = (
    ("gpu-nodes", gpu_nodes, 200 * MIB, 20.0, 2000, "limit of 500,000 nodes"),
    ("parallel-links", parallel_links, 200 * MIB, 20.0, 2000, "limit of 1,000,000 link"),
    ("empty-nodes", empty_nodes, 200 * MIB, 20.0, 2000, "nodes[0]: missing field 'id'"),
    ("sparse-300MiB", sparse, 300 * MIB, 1.0, 100, "the limit is 268_435_456"),
)


#: Runs the command in its argv and prints its peak RSS (KiB) last: the children's
#: maximum RSS of this small process is that of its one child.
_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print('rss-kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n"
)


def measure(path: Path, cap_s: float = 60.0) -> tuple[float, float, int, str]:
    """Run ``fabric-designer validate path``: (seconds, peak RSS in MB, exit code, the
    last line of its output).  A run past ``cap_s`` is killed (exit code -9)."""
    argv = [sys.executable, "-c", _WRAPPER, str(FABRIC_DESIGNER), "validate", str(path)]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=cap_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the wrapper and the command it runs
        out, _ = proc.communicate()
        return time.perf_counter() - start, float("nan"), -9, f"still running after {cap_s:.0f} s"
    seconds = time.perf_counter() - start
    lines = out.strip().splitlines()
    _, kib, code = lines.pop().split()
    return seconds, int(kib) / 1024, int(code), lines[-1] if lines else ""


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="fabric-limits-"))
    missed = 0
    try:
        print(
            f"{'case':16s} {'what':24s} {'time':>8s} {'goal':>6s} {'peak RSS':>9s} "
            f"{'goal':>7s}  result"
        )
        for name, make, size, goal_s, goal_mb, says in CASES:
            path = folder / f"{name}.fabric.json"
            what = make(path, size)
            seconds, peak, code, line = measure(path)
            path.unlink()
            ok = (
                code == 1
                and says in line
                and path.name in line
                and seconds <= goal_s
                and peak <= goal_mb
            )
            missed += not ok
            verdict = "met" if ok else "MISSED"
            print(
                f"{name:16s} {what:24s} {seconds:7.2f}s {goal_s:5.0f}s {peak:7.0f}MB "
                f"{goal_mb:5d}MB  {verdict}: {line[:110]}"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

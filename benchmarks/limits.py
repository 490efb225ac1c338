"""Benchmark of the loader's limits on huge files (issue 29, item 1).

Run ``python benchmarks/limits.py`` (two to three minutes; needs ~1 GiB of free disk
in the temporary folder, which it empties afterwards), or name the cases to run:
``python benchmarks/limits.py at-limits``.  It streams each design file to
disk, none ever held in memory whole, runs the command on it in its own process (killed
after six times its time goal, at least 60 s), and prints the wall-clock time and peak
RSS of that process with the goal beside each, and its CPU time (user + system):

- ~200 MiB of GPU nodes (1.7M nodes, no links), ``validate``: refused, <= 20 s and 2 GB
- ~200 MiB of parallel links between two nodes (3.6M links), ``validate``: refused,
  <= 20 s and 2 GB
- 200 MiB of ``{}`` objects as nodes, ``validate``: refused, <= 20 s and 2 GB
- a 300 MiB sparse file, over the byte limit, ``validate``: refused, <= 1 s and 100 MB
- a valid design at the node and link limits (500,000 GPUs, 1,000,000 link bundles),
  loaded by `designer.io.fabric_json.load` alone: <= 20 s and 2 GB

Each refusal must be a one-line error that names the file and the limit it broke (for
the ``{}`` nodes, the first one's missing field).  The tests check the refusals on small
files with the limits lowered (``tests/io/test_huge_inputs.py``); the real sizes are
measured here and in that file's slow test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, NamedTuple

from designer.io.fabric_limits import LIMITS

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
        f'"x": {i % 1000}.0, "y": {i // 1000}.0, "group": null}}'
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
        return f'{{"id": "l{i}", "a": "g0", "b": "g1", "tech": "nvlink4"}}'

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


def at_limits(path: Path, target: int) -> str:
    """A valid design at the node and link limits: 500,000 GPUs, 1,000,000 bundles of 4
    NVLinks, each GPU linked to four others (``target`` is not used)."""
    nodes, links = LIMITS["nodes"], LIMITS["links"]
    with open(path, "w") as f:
        f.write(HEADER + '  "nodes": [\n')
        f.write(",\n".join(_gpu(i) for i in range(nodes)))
        f.write('\n  ],\n  "links": [\n')
        f.write(
            ",\n".join(
                f'    {{"id": "l{i}", "a": "g{i % nodes}", "b": "g{(i + 1 + i // nodes) % nodes}", '
                f'"tech": "nvlink4", "count": 4}}'
                for i in range(links)
            )
        )
        f.write("\n  ]\n}\n")
    return f"{nodes:,} GPUs, {links / 1e6:.0f}M links"


class Case(NamedTuple):
    name: str
    make: Callable[[Path, int], str]
    size: int
    goal_s: float
    goal_mb: int
    says: str  #: what the last line of the output must hold
    command: str  #: "validate" (the CLI) or "load" (`fabric_json.load` alone)


CASES = (
    Case("gpu-nodes", gpu_nodes, 200 * MIB, 20.0, 2000, "limit of 500,000 nodes", "validate"),
    Case(
        "parallel-links",
        parallel_links,
        200 * MIB,
        20.0,
        2000,
        "limit of 1,000,000 link",
        "validate",
    ),
    Case(
        "empty-nodes",
        empty_nodes,
        200 * MIB,
        20.0,
        2000,
        "nodes[0]: missing field 'id'",
        "validate",
    ),
    Case("sparse-300MiB", sparse, 300 * MIB, 1.0, 100, "the limit is 268,435,456", "validate"),
    Case("at-limits", at_limits, 0, 20.0, 2000, "loaded 500000 nodes", "load"),
)

#: The "load" command: `fabric_json.load` of the file, in a process of its own.
_LOAD = (
    "import sys\n"
    "from designer.io.fabric_json import load\n"
    "print('loaded', len(load(sys.argv[1])), 'nodes')\n"
)


#: Runs the command in its argv and prints its peak RSS (KiB) and CPU time (user +
#: system, s) last: the children's of this small process are those of its one child.
_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print('rss-kib', use.ru_maxrss, code, use.ru_utime + use.ru_stime)\n"
)


class Run(NamedTuple):
    """What `run` measured of one command."""

    seconds: float  #: wall-clock
    peak_mb: float  #: peak RSS
    code: int  #: exit code (-9: killed)
    line: str  #: the last line of its output
    #: CPU time, user + system: the work the run was.  The wall-clock time, which the
    #: goals are about, is that plus the time it waited for a core: on a busy machine it
    #: is the larger by about as much as the other processes take.
    cpu: float


def run(path: Path, command: str = "validate", cap_s: float = 60.0) -> Run:
    """Run ``fabric-designer validate path`` (or `fabric_json.load` alone) in a process
    of its own; a run past ``cap_s`` is killed."""
    argv = (
        [str(FABRIC_DESIGNER), "validate"]
        if command == "validate"
        else [sys.executable, "-c", _LOAD]
    )
    argv = [sys.executable, "-c", _WRAPPER, *argv, str(path)]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=cap_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the wrapper and the command it runs
        out, _ = proc.communicate()
        nan = float("nan")
        return Run(time.perf_counter() - start, nan, -9, f"still running after {cap_s:.0f} s", nan)
    seconds = time.perf_counter() - start
    lines = out.strip().splitlines()
    _, kib, code, cpu = lines.pop().split()
    return Run(seconds, int(kib) / 1024, int(code), lines[-1] if lines else "", float(cpu))


def measure(
    path: Path, command: str = "validate", cap_s: float = 60.0
) -> tuple[float, float, int, str]:
    """Run ``fabric-designer validate path`` (or `fabric_json.load` alone): (seconds,
    peak RSS in MB, exit code, the last line of its output), as `run` measures them."""
    return run(path, command, cap_s)[:4]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time and memory of huge design files.")
    names = [c.name for c in CASES]
    parser.add_argument(
        "cases", nargs="*", metavar="CASE", help=f"cases to run (default: all): {', '.join(names)}"
    )
    chosen = parser.parse_args(argv).cases or names
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        parser.error(f"no case {', '.join(unknown)} (the cases: {', '.join(names)})")
    folder = Path(tempfile.mkdtemp(prefix="fabric-limits-"))
    missed = 0
    try:
        print(
            f"{'case':16s} {'what':24s} {'time':>8s} {'goal':>6s} {'CPU':>7s} {'peak RSS':>9s} "
            f"{'goal':>7s}  result"
        )
        for name, make, size, goal_s, goal_mb, says, command in CASES:
            if name not in chosen:
                continue
            path = folder / f"{name}.fabric.json"
            what = make(path, size)
            seconds, peak, code, line, cpu = run(path, command, cap_s=max(60.0, 6 * goal_s))
            path.unlink()
            line = line.replace(f"{folder}{os.sep}", "")
            refusal = command == "validate"
            ok = (
                code == (1 if refusal else 0)
                and says in line
                and (path.name in line or not refusal)
                and seconds <= goal_s
                and peak <= goal_mb
            )
            missed += not ok
            verdict = "met" if ok else "MISSED"
            print(
                f"{name:16s} {what:24s} {seconds:7.2f}s {goal_s:5.0f}s {cpu:6.2f}s {peak:7.0f}MB "
                f"{goal_mb:5d}MB  {verdict}: {line}"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Cases of `scale.py` for all-to-all solves at 4,096 and 16,384 GPUs (issue 34).

Each times what a CLI user waits for: the whole ``fabric-designer solve FILE
--collective alltoall --routing MODE --bytes 1GiB`` process, from start to exit (Python
start-up, loading the design, snapshot, routing, max-min rates, timing, printing), and
that process's peak RSS.  The note gives the solver's own split as it prints it
(``timing (ms)``: load, route, rates).

- ``a2a-4k-ecmp``: ``rail-4k`` (512 HGX H100 servers) under ECMP routing, exact
- ``a2a-16k-adaptive``: ``rail-16k`` (2,048 servers, 268 million pairs) under adaptive
  routing, exact (by classes, `designer.solver.flows.alltoall`)
"""

from __future__ import annotations

import re

from scale import Case, Measure, design, fabric_designer, timed_child


def _alltoall(key: str, routing: str):
    def run(workdir) -> Measure:
        path = design(workdir, key)
        cmd = [
            *fabric_designer(),
            "solve",
            str(path),
            "--collective",
            "alltoall",
            "--routing",
            routing,
            "--bytes",
            "1GiB",
        ]
        seconds, rss, done = timed_child(cmd)
        out = done.stdout.decode()
        if done.returncode != 0:
            tail = (done.stderr.decode().strip().splitlines() or ["?"])[-1]
            raise RuntimeError(f"exit {done.returncode}: {tail}")
        split = re.search(r"timing \(ms\): load ([\d.]+).*route ([\d.]+), rates ([\d.]+)", out)
        busbw = re.search(r"1GiB\s+[\d.]+\s+[\d.]+\s+([\d.]+)", out)
        note = (
            f"load {float(split[1]) / 1e3:.1f} s, route {float(split[2]) / 1e3:.1f} s, "
            f"rates {float(split[3]) / 1e3:.1f} s; busbw {busbw[1]} GB/s"
        )
        return Measure(seconds, rss, note)

    return run


CASES = [
    Case(
        "a2a-4k-ecmp",
        "all-to-all 4,096 GPUs, ECMP, exact (CLI solve, whole process)",
        5.0,
        2.0,
        _alltoall("rail-4k", "ecmp"),
    ),
    Case(
        "a2a-16k-adaptive",
        "all-to-all 16,384 GPUs, adaptive, exact (CLI solve, whole)",
        10.0,
        4.0,
        _alltoall("rail-16k", "adaptive"),
    ),
]

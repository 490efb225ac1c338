"""What the ``fabric-designer`` subcommands share: the usage error (exit code 2) and
reading a design file with a log line.  Split from `designer.cli` so that the solver's
commands (`designer.cli_solver`) can use them without importing the parser."""

from __future__ import annotations

import logging
import time
from pathlib import Path

log = logging.getLogger("designer.cli")


class UsageError(Exception):
    """A command-line mistake (exit code 2)."""


def load_design(path: str):
    """The design in ``path`` (`designer.io.fabric_json.load`), its load logged."""
    from designer.io.fabric_json import load

    t0 = time.perf_counter()
    topo = load(Path(path))
    log.info("opened %s: %d nodes in %.0f ms", path, len(topo), (time.perf_counter() - t0) * 1e3)
    return topo

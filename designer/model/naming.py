"""Natural ordering of ids and names: ``gpu-2`` before ``gpu-10``.

One key for every place that sorts ids (file writing, reports, rank order), so the
file, the reports and the solver's rank numbering always agree.
"""

from __future__ import annotations

import re
from typing import Any

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[Any, ...], str]:
    """Sort key that orders digit runs by value.

    Examples
    --------
    >>> sorted(["gpu-10", "gpu-2", "gpu-1"], key=natural_key)
    ['gpu-1', 'gpu-2', 'gpu-10']
    """
    # re.split puts text at even and numbers at odd positions, so the parts always
    # compare str with str and int with int; the raw text breaks ties ("02" vs "2").
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text

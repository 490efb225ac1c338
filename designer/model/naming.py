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


_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_COPY = re.compile(r"^(.*) \((\d+)\)$")


class UniqueNames:
    """Hands out names none of which is taken yet: a copy's name where it lands.

    A free name is kept.  A taken name ending in a number continues after the highest
    number in use with the same stem, at the same width (``Node 2`` -> ``Node 5`` when
    Node 1-4 exist, ``leaf07`` -> ``leaf08``), as an architect numbers servers; any
    other taken name gets the first free `` (n)`` suffix (``Board A`` ->
    ``Board A (2)``).  Each name handed out is taken from then on.

    Parameters
    ----------
    taken : iterable of str
        The names already in use where the copies go.

    Examples
    --------
    >>> names = UniqueNames(["Board A", "Node 1", "Node 2"])
    >>> names.claim("Board A"), names.claim("Board A"), names.claim("Node 1")
    ('Board A (2)', 'Board A (3)', 'Node 3')
    """

    def __init__(self, taken=()):
        self._taken: set[str] = set()
        self._highest: dict[str, int] = {}  # stem -> highest trailing number in use
        for name in taken:
            self._take(name)

    def _take(self, name: str) -> None:
        self._taken.add(name)
        m = _NUMBERED.match(name)
        if m:
            stem, number = m.group(1), int(m.group(2))
            if number > self._highest.get(stem, -1):
                self._highest[stem] = number

    def claim(self, name: str) -> str:
        """``name``, or the next free form of it; taken from now on."""
        if name in self._taken:
            name = self._next(name)
        self._take(name)
        return name

    def _next(self, name: str) -> str:
        m = _NUMBERED.match(name)
        if m:
            stem, digits = m.group(1), m.group(2)
            number = self._highest[stem] + 1
            return f"{stem}{number:0{len(digits)}d}"
        m = _COPY.match(name)
        base = m.group(1) if m else name
        n = 2
        while f"{base} ({n})" in self._taken:
            n += 1
        return f"{base} ({n})"

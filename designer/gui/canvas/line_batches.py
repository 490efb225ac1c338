"""`LineBatch`: the lines drawn with one pen, kept ready for ``drawLines``.

The schematic draws 100,000 links as one ``drawLines`` call per colour and width.  After
a what-if edit one link changes batch; rebuilding the two batches it leaves and joins
from their members costs ~10 ms per 100,000 lines, on the GUI thread.  A `LineBatch`
instead keeps its lines in an object array (which ``drawLines`` takes like a list, and
which Python's cyclic garbage collector does not walk) with each item's position, so
adding, replacing or removing a line is O(1): a removal moves the last line into the
hole (the order of lines drawn with one pen does not matter).

`lines` hands out a view of the array; the next change copies the array first (copy
on write, ~1 ms per 100,000 lines), so a picture being drawn in slices keeps drawing
exactly what it started with.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

__all__ = ["LineBatch"]


class LineBatch:
    """Lines keyed by their item, with O(1) changes (see the module docstring).

    Examples
    --------
    >>> b = LineBatch.of([("a", 1), ("b", 2), ("c", 3)])
    >>> b.remove("a"); b.add("d", 4)
    >>> sorted(b.lines().tolist()), len(b)
    ([2, 3, 4], 3)
    """

    __slots__ = ("_items", "_lines", "_n", "_pos", "_shared")

    def __init__(self, capacity: int = 16):
        self._lines = np.empty(max(capacity, 1), dtype=object)
        self._items = np.empty(max(capacity, 1), dtype=object)
        self._n = 0
        self._pos: dict[Hashable, int] = {}
        self._shared = False

    @classmethod
    def of(cls, pairs: Iterable[tuple[Hashable, object]]) -> LineBatch:
        """A batch of ``(item, line)`` pairs (later pairs replace an item's line)."""
        members = dict(pairs)
        batch = cls(len(members))
        n = len(members)
        batch._items[:n] = np.fromiter(members.keys(), object, n)
        batch._lines[:n] = np.fromiter(members.values(), object, n)
        batch._pos = dict(zip(members, range(n), strict=True))
        batch._n = n
        return batch

    def __len__(self) -> int:
        return self._n

    def __contains__(self, item: Hashable) -> bool:
        return item in self._pos

    def lines(self) -> np.ndarray:
        """The lines, as an object array that later changes leave alone."""
        self._shared = True
        return self._lines[:self._n]

    def _own(self, grow: bool = False) -> None:
        """Copy the lines before writing if `lines` handed them out; grow if full."""
        size = len(self._lines)
        if grow and self._n == size:
            size *= 2
        elif not self._shared:
            return
        lines = np.empty(size, dtype=object)
        lines[:self._n] = self._lines[:self._n]
        self._lines, self._shared = lines, False
        if len(self._items) < size:
            items = np.empty(size, dtype=object)
            items[:self._n] = self._items[:self._n]
            self._items = items

    def add(self, item: Hashable, line) -> None:
        """Add ``item``'s line, or replace it if ``item`` is already here."""
        i = self._pos.get(item)
        if i is None:
            self._own(grow=True)
            i = self._pos[item] = self._n
            self._items[i] = item
            self._n += 1
        else:
            self._own()
        self._lines[i] = line

    def remove(self, item: Hashable) -> None:
        """Remove ``item``'s line (nothing if it is not here)."""
        i = self._pos.pop(item, None)
        if i is None:
            return
        self._own()
        last = self._n - 1
        if i != last:  # the last line fills the hole
            moved = self._items[last]
            self._items[i], self._lines[i] = moved, self._lines[last]
            self._pos[moved] = i
        self._items[last] = self._lines[last] = None
        self._n = last

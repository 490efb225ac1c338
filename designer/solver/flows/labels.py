"""Flow labels made on demand.

An all-to-all among 1,024 GPUs has a million flows; building a million label strings
costs more than routing them, and only a handful are ever read (the slowest flow, the
flows under the mouse).  `Labels` is a read-only sequence that makes each label when it
is asked for; `Labels.chain` joins several label sequences without copying them.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence

__all__ = ["Labels"]


class Labels(Sequence[str]):
    """``n`` labels, label ``i`` being ``make(i)``; compares equal to the tuple of them.

    Examples
    --------
    >>> pairs = Labels(3, lambda i: f"{i}->{(i + 1) % 3}")
    >>> pairs[2], len(pairs), pairs == ("0->1", "1->2", "2->0")
    ('2->0', 3, True)
    >>> Labels.chain([pairs, ["x"]])[3]
    'x'
    """

    __slots__ = ("_make", "_n")

    def __init__(self, n: int, make: Callable[[int], str]):
        self._n = int(n)
        self._make = make

    @classmethod
    def chain(cls, parts: Sequence[Sequence[str]]) -> Sequence[str]:
        """The labels of ``parts`` one after another (a tuple when all are small lists)."""
        if all(isinstance(p, list | tuple) for p in parts):
            return tuple(x for p in parts for x in p)
        starts, total = [], 0
        for p in parts:
            starts.append(total)
            total += len(p)

        def make(i: int) -> str:
            k = bisect.bisect_right(starts, i) - 1
            return parts[k][i - starts[k]]

        return cls(total, make)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        i = int(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"label {i} of {self._n}")
        return self._make(i)

    def __iter__(self) -> Iterator[str]:
        return (self._make(i) for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != self._n:
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable-free but compared by value

    def __repr__(self) -> str:
        head = ", ".join(repr(x) for x in self[:3])
        return f"Labels({self._n}: {head}{', ...' if self._n > 3 else ''})"

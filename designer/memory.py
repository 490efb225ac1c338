"""Process-wide memory setting for the solver's large temporary arrays.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every
array of 4 MB or more.  The solver allocates many such arrays once and drops them: an
all-to-all among 1,024 GPUs touches ~300 MB of fresh ones.  On the 2-core VM this
project is measured on, a huge-page fault costs tens of microseconds (the kernel zeroes
2 MB, and compacts memory to find them), and the cold ECMP all-to-all spent 300-550 ms
of its 1.4 s in the kernel; with ordinary pages it took 1.0-1.1 s, and the other cases
of ``benchmarks/solver.py`` were unchanged or faster.  (One case once looked slower
without them: fail edits of the 131,072-GPU ring, 0.37-0.45 s with and 0.49-0.67 s
without.  Each of those edits took fresh memory, because the routers it let go of were
reference cycles that lived until the cyclic collector ran, so it paid page faults
that huge pages make fewer.  Since routers are freed at once and edits reuse their
memory, fail edits print ~0.30 s with huge pages on or off.)

`no_huge_pages` turns them off for numpy, unless the user chose with numpy's own
``NUMPY_MADVISE_HUGEPAGE`` environment variable.  ``import designer`` calls it.
"""

from __future__ import annotations

import os
import sys

__all__ = ["no_huge_pages"]

_ENV = "NUMPY_MADVISE_HUGEPAGE"


def no_huge_pages() -> bool:
    """Stop numpy from asking for transparent huge pages, unless ``NUMPY_MADVISE_HUGEPAGE``
    says otherwise; return whether they are off.

    numpy reads the variable when it is first imported; if it already was, its setting is
    changed in place (through ``numpy._core.multiarray._set_madvise_hugepage``, which
    numpy's import calls; where a numpy lacks it, nothing changes).
    """
    if os.environ.setdefault(_ENV, "0") != "0":
        return False
    np = sys.modules.get("numpy")
    if np is None:
        return True  # numpy will read the variable
    setter = getattr(getattr(getattr(np, "_core", None), "multiarray", None),
                     "_set_madvise_hugepage", None)
    if setter is None:
        return False
    setter(False)
    return True

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
``NUMPY_MADVISE_HUGEPAGE`` environment variable.

`one_malloc_arena` makes every thread allocate from glibc's main arena.  The solver
forks work onto a helper thread (`designer.solver.parallel`); with an arena of its own
(glibc's default), everything the helper allocates is fresh memory in a new process,
while the main arena holds what the process freed earlier (building the design).  A
cold 131,072-GPU ring solve (design built, then snapshot and solve, in a fresh process)
took 333-428 ms with one arena against 384-449 ms without, four processes each in two
batches on the 2-core VM, with ~4,000 fewer page faults.  glibc reads
``MALLOC_ARENA_MAX`` when the process starts; a user who set it keeps their choice.

`keep_freed_memory` keeps what a solve frees for the next one.  glibc returns a block
of more than ``M_MMAP_THRESHOLD`` to the kernel when it is freed, and the top of its
heap once more than ``M_TRIM_THRESHOLD`` of it is free; both thresholds move with the
sizes freed, so how much of a solve's memory the next solve found mapped varied from
solve to solve: re-solving a pickled 16k SuperPOD snapshot took 0 to 5,700 page faults
per solve in one process, 46-61 ms.  The GUI re-solves on every edit, and on this
project's VM a page fault costs 2-10 us.  With the mmap threshold at glibc's ceiling
(32 MB: larger blocks are still mapped and unmapped) and the trim threshold at 512 MB
(at most that much freed memory is kept), the same solves took ~20 faults each, and a
fresh snapshot of the 16k design 0-23 faults instead of 470-670.  The peak is the same;
after a big solve the process keeps up to 512 MB that it no longer uses, until it
needs it again.  A user who sets ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``
or ``MALLOC_TOP_PAD_`` keeps their choice, and ``FABRIC_DESIGNER_MALLOC=glibc`` leaves
glibc's own (moving) thresholds alone (`benchmarks/maxmin.py` compares the two).

Because of that, the process's resident memory is a high-water mark, not what it uses:
`heap_in_use` says how much of glibc's heap holds live allocations (a soak that looks
for leaks bounds that, not the resident size).
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["heap_in_use", "keep_freed_memory", "no_huge_pages", "one_malloc_arena",
           "tune_process"]

_M_ARENA_MAX = -8        # glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
KEEP_MMAP_BYTES = 32 << 20    # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit
KEEP_TRIM_BYTES = 512 << 20
_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

_ENV = "NUMPY_MADVISE_HUGEPAGE"


def tune_process() -> None:
    """All three settings of this module, for a process that runs Fabric Designer:
    the entry points call it (`designer.cli.main`, `designer.gui.app.run`, the
    benchmarks), before the solver allocates anything.  ``import designer`` does not: a
    notebook, a test run or another program that imports the package keeps numpy's and
    glibc's settings as they were.  Each setting yields to the user's own environment
    variable, as its function says."""
    no_huge_pages()
    one_malloc_arena()
    keep_freed_memory()


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


def one_malloc_arena() -> bool:
    """Let every thread allocate from glibc's main arena (``mallopt(M_ARENA_MAX, 1)``),
    unless ``MALLOC_ARENA_MAX`` says otherwise; return whether it was set.

    Nothing happens off Linux or without glibc's ``mallopt``.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    mallopt = _mallopt()
    return mallopt is not None and mallopt(_M_ARENA_MAX, 1) == 1


def keep_freed_memory() -> bool:
    """Keep freed memory in the process for the next solve (``mallopt`` of the mmap and
    trim thresholds, see the module docstring), unless the user set glibc's variables
    for them; return whether both were set.

    Nothing happens off Linux or without glibc's ``mallopt``.
    """
    if (any(name in os.environ for name in _MALLOC_ENV)
            or os.environ.get("FABRIC_DESIGNER_MALLOC") == "glibc"):
        return False
    mallopt = _mallopt()
    return (mallopt is not None and mallopt(_M_MMAP_THRESHOLD, KEEP_MMAP_BYTES) == 1
            and mallopt(_M_TRIM_THRESHOLD, KEEP_TRIM_BYTES) == 1)


class _Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def heap_in_use() -> int | None:
    """Bytes of glibc's heap held by live allocations, in every arena: ``uordblks``
    (allocated from the heap) plus ``hblkhd`` (blocks mapped on their own) of
    ``mallinfo2()``; None off Linux or without glibc 2.33's ``mallinfo2``.

    Freed memory that glibc keeps for reuse (`keep_freed_memory`) is not counted, so
    this falls when the process frees memory, where the resident size does not.
    Python's small objects live in its own arenas, mapped apart from glibc's heap
    (``sys._debugmallocstats`` reports them); numpy arrays, Qt and every C library
    allocate here.

    >>> heap_in_use() is None or heap_in_use() > 0
    True
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.argtypes, mallinfo2.restype = (), _Mallinfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def _mallopt():
    """glibc's ``mallopt``, or None off Linux or without it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt

"""The cyclic garbage collector, paused while a design's objects are built in bulk.

Opening a 16,384-GPU design creates over a million tracked Python objects (the graph's
dicts, model values, then a scene item and its wrapper per node and link).  Each burst of
allocations triggers collections, and the full ones walk everything built so far: they
were ~30 % of opening that design's window (17 -> 12 s) and ~10 % of loading its file.
Building a design leaves nothing cyclic worth collecting halfway, so the collector is
paused for the duration and runs normally afterwards (the GUI then freezes the long-lived
heap, see `designer.gui.document.settle_heap`; there the collector runs from a GUI-thread
timer, `designer.gui.main_thread_gc`, which waits for the pause too).

No Qt here: the model, the file loader and the canvas use it.

Example
-------
>>> import gc
>>> was = gc.isenabled()
>>> with collector_paused():
...     gc.isenabled()
False
>>> gc.isenabled() == was
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "in_pause"]

_depth = 0  # collector_paused blocks open now (they nest)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block; the previous state after it (so
    blocks nest, and a caller that disabled the collector keeps it disabled)."""
    global _depth
    was_enabled = gc.isenabled()
    gc.disable()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if was_enabled:
            gc.enable()


def in_pause() -> bool:
    """True inside a `collector_paused` block: a collector run by hand (the GUI's, see
    `designer.gui.main_thread_gc`) waits too."""
    return _depth > 0

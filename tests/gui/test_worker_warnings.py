"""Thread workers (`designer.gui.workers`) leave the program's warning settings alone:
two overlapping workers used to leave `warnings.showwarning` pointing at the first one's
signal and an "always" filter behind (superqt's `catch_warnings` per worker)."""

from __future__ import annotations

import threading
import warnings

import pytest

import designer.gui.workers as workers


def _overlap(qtbot, make):
    """Worker A starts, B starts, A ends, B ends (the order that left the settings
    changed); each warns once on its own thread.  The warnings each worker's ``warned``
    signal carried."""
    a_in, b_in, a_go, b_go = (threading.Event() for _ in range(4))
    heard = {"a": [], "b": []}

    def job(name, entered, go):
        entered.set()
        go.wait(5)
        warnings.warn(f"from {name}", UserWarning, stacklevel=1)
        return name

    done = []
    wa = make(job, "a", a_in, a_go)
    wa.warned.connect(lambda w: heard["a"].append(str(w[0])))
    wa.finished.connect(lambda: done.append("a"))
    wa.start()
    assert a_in.wait(5)
    wb = make(job, "b", b_in, b_go)
    wb.warned.connect(lambda w: heard["b"].append(str(w[0])))
    wb.finished.connect(lambda: done.append("b"))
    wb.start()
    assert b_in.wait(5)
    a_go.set()
    qtbot.waitUntil(lambda: "a" in done, timeout=5_000)
    b_go.set()
    qtbot.waitUntil(lambda: "b" in done, timeout=5_000)
    return heard


# The suite turns warnings into errors; these tests are about warnings being shown.
pytestmark = pytest.mark.filterwarnings("always::UserWarning")


def test_overlapping_workers_leave_the_warning_settings_as_they_were(qtbot):
    workers._install()  # what the first worker does
    handler, filters = warnings.showwarning, list(warnings.filters)
    heard = _overlap(qtbot, lambda *a: workers.create_worker(*a, _start_thread=False))
    assert warnings.showwarning is handler
    assert warnings.filters == filters
    # Each worker heard its own warning, and only that.
    assert heard == {"a": ["from a"], "b": ["from b"]}


def test_a_warning_off_any_worker_goes_where_it_went_before(qtbot):
    workers._install()
    _overlap(qtbot, lambda *a: workers.create_worker(*a, _start_thread=False))
    with pytest.warns(UserWarning, match="from the GUI thread"):
        warnings.warn("from the GUI thread", UserWarning, stacklevel=1)


def test_the_worker_protocol_is_superqts(qtbot):
    """Generators yield, results return, errors arrive as ``errored``, and
    ``finished`` comes last, as with superqt's own classes."""
    got = []

    def gen():
        yield 1
        yield 2
        return "done"

    w = workers.create_worker(gen, _start_thread=False)
    w.yielded.connect(got.append)
    w.returned.connect(got.append)
    w.finished.connect(lambda: got.append("finished"))
    w.start()
    qtbot.waitUntil(lambda: "finished" in got, timeout=5_000)
    assert got == [1, 2, "done", "finished"]

    def boom():
        raise ValueError("bad")

    errors = []
    w = workers.create_worker(boom, _start_thread=False, _connect={"errored": errors.append})
    w.finished.connect(lambda: errors.append("finished"))
    w.start()
    qtbot.waitUntil(lambda: "finished" in errors, timeout=5_000)
    assert isinstance(errors[0], ValueError) and errors[1] == "finished"

"""Solver test fixtures."""

from __future__ import annotations

import contextlib

import pytest

from designer.solver.tuning import tuned


@pytest.fixture
def tune():
    """``tune(first_k=1, ...)``: the solver's tuning changed for the rest of the test
    (`designer.solver.tuning.tuned`), restored after it."""
    with contextlib.ExitStack() as stack:
        yield lambda **changes: stack.enter_context(tuned(**changes))

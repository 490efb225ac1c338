"""The collector pause around bulk builds (`designer.collector`) always ends: a file that
fails to load, or a paused caller, leaves the collector as it found it."""

from __future__ import annotations

import gc

import pytest

from designer.collector import collector_paused
from designer.io.fabric_json import FileFormatError, loads
from designer.model.templates import build_template


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_template_build_leaves_the_collector_on(collector_on):
    build_template("hgx", gpu="H100")
    assert gc.isenabled()


def test_a_bad_file_leaves_the_collector_on(collector_on):
    with pytest.raises(FileFormatError):
        loads('{"format": "fabric-designer", "version": 1, "nodes": [{"id": 3}]}')
    assert gc.isenabled()
    with pytest.raises(FileFormatError):
        loads(b"\xff not json")
    assert gc.isenabled()


def test_pauses_nest_and_keep_a_caller_s_choice(collector_on):
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_a_build_that_raises_inside_the_pause_restores_the_collector(collector_on):
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()

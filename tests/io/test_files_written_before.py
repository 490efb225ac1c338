"""A file the item-by-item writer made (before the column-by-column writer and the
numpy summary) loads unchanged, saves to the same bytes and summarises to the same
figures.  ``data/example-v1-writer.fabric.json`` is ``fabric-designer new example`` as
that code wrote it; ``data/example-v1-writer.info.json`` is its ``info --json``."""

from __future__ import annotations

import json
from pathlib import Path

from designer.io.fabric_json import dumps, load, save
from designer.model.report import info

DATA = Path(__file__).parent / "data"
OLD = DATA / "example-v1-writer.fabric.json"


def test_old_file_saves_to_the_same_bytes(tmp_path):
    topology = load(OLD)
    assert dumps(topology) == OLD.read_text(encoding="utf-8")
    save(topology, tmp_path / "again.fabric.json")
    assert (tmp_path / "again.fabric.json").read_bytes() == OLD.read_bytes()


def test_old_file_summarises_to_the_same_figures():
    expected = json.loads((DATA / "example-v1-writer.info.json").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(info(load(OLD)))) == expected


def test_lazy_edges_load_the_same_design():
    lazy = load(OLD, lazy_edges=True)
    assert info(lazy) == info(load(OLD))
    assert lazy.state() == load(OLD).state()

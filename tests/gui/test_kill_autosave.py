"""An autosave killed with SIGKILL at any moment leaves a recovery copy that is offered.

README, "When something goes wrong": while a design has unsaved changes a recovery copy
is written every minute, and after a crash the next start offers to restore it.
`designer.gui.recovery` writes the copy first and its sidecar second, both atomically,
so a crash between the two leaves a copy without a sidecar, which is still offered; the
killed session's lock is stale, so the copy is offered to the next session.

Each trial forks a session from a prepared process (`KillHarness` of
``tests/io/test_kill_save.py``): it adopts the recovery copy of a 2,048-GPU design (as
after restoring it), moves a node and autosaves through its `Autosaver`; the child is
killed at a seeded moment of the write, 50 times over the whole autosave and 25 times
over its part on disk.  After every kill:

* `find_recoveries` offers exactly that copy, and it loads as, byte for byte, the old or
  the new design;
* its sidecar is the old or the new one, and a new sidecar only beside the new design;
* nothing else is in the folder but the lock and temporary files of the copy or sidecar.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from designer.gui.document import Document
from designer.gui.recovery import Autosaver, RecoveryEntry, find_recoveries, write_recovery
from designer.io.fabric_json import save
from designer.io.stale_temps import is_temp_of
from designer.model.commands import MoveNodes
from tests.io.test_kill_save import (
    SEED,
    TRIALS,
    KillHarness,
    assert_kills_covered,
    design,
    kill_trials,
    put,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

NAME = "design-0123abcd"  # the recovery copy's name (a title's slug and a token)


def edit(document: Document) -> None:
    """The unsaved change the session makes: the first node moves right."""
    node = min(document.topology.nodes(), key=lambda n: n.id)
    document.push(MoveNodes({node.id: (node.x + 25.0, node.y)}))


def prepare_autosave(folder: str):
    """Zygote side: a session on the "before" design with an autosaver.  Each child
    adopts the copy on disk and makes its change (``before``), then autosaves (the job)."""
    from PySide6.QtCore import QCoreApplication, Qt

    app = QCoreApplication.instance() or QCoreApplication([])
    document = Document(design("before"))
    saver = Autosaver(document, folder=Path(folder))
    saver.stop()
    failures: list[str] = []
    # Direct: the worker thread's report arrives with no event loop running.
    saver.failed.connect(failures.append, Qt.ConnectionType.DirectConnection)

    def before():
        saver.adopt(RecoveryEntry(Path(folder) / f"{NAME}.fabric.json", None, datetime.now(), ""))
        edit(document)

    def job(_where):
        assert saver.autosave_now(wait=True), "nothing to autosave"
        assert not failures, failures

    job.app = app  # kept alive with the job
    return before, job


@pytest.fixture
def copies(tmp_path):
    """The old and new copies' bytes, as the autosave writes them, and the old sidecar."""
    document = Document(design("before"))
    scratch = tmp_path / "scratch"
    entry = write_recovery(document.topology, scratch, NAME, None, document.title)
    out = {"old": entry.design.read_bytes(), "meta": entry.meta.read_bytes()}
    edit(document)
    save(document.topology, scratch / "new.fabric.json", backup=False)
    out["new"] = (scratch / "new.fabric.json").read_bytes()
    assert out["new"] != out["old"]
    return out


@pytest.mark.slow
def test_kill_during_autosave(tmp_path, copies):
    folder = tmp_path / "recovery"
    folder.mkdir()
    copy = folder / f"{NAME}.fabric.json"
    meta = folder / f"{NAME}.meta.json"
    lock = folder / f"{NAME}.lock"
    known: set[str] = set()
    parsed: dict[str, str] = {}
    harness = KillHarness("tests.gui.test_kill_autosave:prepare_autosave", str(folder))

    def setup():  # the copy and sidecar of the "before" design; no live lock
        put(copy, copies["old"])
        put(meta, copies["meta"])
        lock.unlink(missing_ok=True)
        known.clear()
        known.update(os.listdir(folder))

    def writing() -> bool:
        return any(
            name not in known and is_temp_of(copy, folder / name) for name in os.listdir(folder)
        )

    def check(trial: int) -> str:
        (entry,) = find_recoveries(folder)  # the killed session's lock is stale
        assert entry.design == copy
        data = copy.read_bytes()
        assert data in (copies["old"], copies["new"]), f"trial {trial}: a partial copy"
        which = "new" if data == copies["new"] else "old"
        if which not in parsed:  # each content parses (once: the bytes are equal)
            parsed[which] = entry.load().name
        assert parsed[which] == "before"
        sidecar = json.loads(meta.read_text(encoding="utf-8"))
        if sidecar["pid"] == harness.last_pid:  # this session's sidecar
            assert which == "new", f"trial {trial}: a new sidecar beside the old copy"
        else:
            assert meta.read_bytes() == copies["meta"], trial
        others = [p for p in folder.iterdir() if p not in (copy, meta, lock)]
        assert all(is_temp_of(copy, p) or is_temp_of(meta, p) for p in others), others
        return which

    try:
        whole, length = kill_trials(harness, folder, setup, check, TRIALS, SEED)
        on_disk, disk_length = kill_trials(
            harness, folder, setup, check, TRIALS // 2, SEED + 1, when=writing
        )
    finally:
        harness.close()
    print(
        f"\nkill -9 during autosave (seed {SEED}): {TRIALS} kills over the whole "
        f"autosave ({length:.3f} s): {dict(whole)}; {TRIALS // 2} over its disk part "
        f"({disk_length:.3f} s): {dict(on_disk)}"
    )
    assert_kills_covered([(whole, TRIALS), (on_disk, TRIALS // 2)], "old", "new", "an autosave")

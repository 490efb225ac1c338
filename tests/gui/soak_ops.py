"""`Soak`: seeded random operations on the real main window, for the soak test.

It drives one `MainWindow` the way an architect would: palette drops, Shift-drags
between nodes, node drags and arrow-key nudges, the Edit actions and their keyboard
shortcuts, inspector and scenario-dock edits, what-if failures, undo/redo bursts, group
folding, Select All + Delete + "oops" Undo, saves, autosaves, and pauses that let the
live analysis answer (or get cancelled by the next edit).  After every step the canvas
is compared with the model, and after every save the file with the document (the checks
are in `tests.gui.soak_checks`).

Every choice comes from one seeded `random.Random`, and every choice is drawn whatever
the state, so a seed replays the same steps: `Soak.trace` digests the steps and the
design every `DIGEST_EVERY` steps (equal digests, same run).  Solver timing never changes
the design, so it is left out of the digest.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from collections import Counter, deque
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from designer.gui.canvas.items import NodeItem
from designer.io.atomic import backup_path
from designer.io.fabric_json import load
from designer.model.commands import SetSetting
from tests.gui.conftest import Mouse
from tests.gui.soak_checks import (
    dock_problems,
    quick_scene_problems,
    scene_problems,
    state_diff,
)
from tests.gui.soak_edits import CTRL, NO_MOD, SHIFT, EditOps

#: The design is kept between these sizes (nodes) so solves stay ~0.1-0.5 s.
MIN_NODES, MAX_NODES = 40, 130
#: A solve of a design this size takes well under a second; generous for a loaded CI box.
SOLVE_TIMEOUT_MS = 30_000
#: Every step compares the canvas's item ids with the model's; every this many steps (and
#: at every save and fold) values, positions, geometry and folding too.
FULL_CHECK_EVERY = int(os.environ.get("FABRIC_SOAK_FULL_CHECK_EVERY", "4"))
#: Every this many steps (and at saves) the log records a digest of the design.
DIGEST_EVERY = int(os.environ.get("FABRIC_SOAK_DIGEST_EVERY", "20"))
#: Names the inspector is given: plain, accented, wide, emoji, padded, and a blank one
#: (refused: a node needs a name).
NAMES = ("GPU x", "Spine A", "Nœud é", "節點 7", "rack 🚀 1", "  padded  ", "   ", "a" * 60)

#: Operation -> relative weight.  Growth ops are switched off above MAX_NODES and
#: deletions below MIN_NODES (see `Soak.pick`).
WEIGHTS: dict[str, float] = {
    "add_node": 9, "add_link": 9, "drag": 4, "nudge": 4, "delete": 6, "duplicate": 3,
    "copy_paste": 3, "cut": 1, "inspect_node": 6, "inspect_link": 5, "what_if": 4,
    "scenario": 3, "undo": 12, "redo": 7, "arrange": 2, "auto_layout": 0.3, "fold": 2,
    "wipe": 0.5, "save": 3, "autosave": 1, "solve": 2, "solve_interrupted": 1,
    "add_server": 0.5,
}
GROWTH = ("add_node", "duplicate", "copy_paste", "add_server")
SHRINK = ("delete", "cut")


# ---------------------------------------------------------------------- the driver
class Soak(EditOps):
    """Seeded random operations on ``window`` (a shown `MainWindow`), saving into
    ``folder``.

    Attributes
    ----------
    counts : Counter
        Operations run, by name (``name:variant`` for the path a step took).
    log : deque
        The last steps, ``"<index> <op> <detail>"``, for failure messages.
    """

    def __init__(self, window, qtbot, seed: int, folder: Path):
        self.window = window
        self.qtbot = qtbot
        self.seed = seed
        self.rng = random.Random(seed)
        self.folder = Path(folder)
        self.paths = [self.folder / "soak-a.fabric.json", self.folder / "soak-b.fabric.json"]
        self.last_bytes: dict[Path, bytes] = {}
        self.mouse = Mouse(window.view)
        self.palette = window.palette.entries()
        self.counts: Counter = Counter()
        self.seconds: Counter = Counter()  # wall time per operation, checks included
        self.slowest: tuple[float, str] = (0.0, "")
        self.log: deque[str] = deque(maxlen=25)
        self.trace = hashlib.sha1()  # of every step: two runs of a seed did the same?
        self.history: list[str] = []
        self.step_index = 0
        self.outcome_generation = -1
        self.results = self.failures = 0
        self.last_failed = False
        self.last_failure = ""
        self.failure_texts: Counter = Counter()  # why solves failed (bad designs, mostly)
        self.internal_errors: list[str] = []  # solver bugs: "internal error: ..."
        self.server = self._copied_server()
        runner = window.analysis.runner
        runner.result_ready.connect(self._on_runner_result_ready)
        runner.failed.connect(self._on_runner_failed)
        if runner.latest is None and not runner.busy:
            runner.schedule()  # the opening solve may have failed before we listened

    # ------------------------------------------------------------ bookkeeping
    @property
    def topo(self):
        return self.window.document.topology

    @property
    def stack(self):
        return self.window.document.undo_stack

    def _on_runner_result_ready(self, result) -> None:
        self.outcome_generation = result.generation
        self.last_failed = False
        self.results += 1

    def _on_runner_failed(self, generation: int, text: str) -> None:
        self.outcome_generation = generation
        self.last_failed = True
        self.failures += 1
        self.failure_texts[text[:70]] += 1
        self.last_failure = text
        if text.startswith("internal error"):
            self.internal_errors.append(f"step {self.step_index}: {text}")

    def where(self) -> str:
        """Seed, step and the last steps: enough to replay a failure."""
        recent = "\n  ".join(self.log)
        return (f"soak seed={self.seed} step={self.step_index}; replay with "
                f"FABRIC_SOAK_SEED={self.seed} FABRIC_SOAK_OPS={self.step_index + 1}\n"
                f"last steps:\n  {recent}")

    # ------------------------------------------------------------ stepping
    def pick(self) -> str:
        n = len(self.topo)
        weights = dict(WEIGHTS)
        if n >= MAX_NODES:
            for op in GROWTH:
                weights[op] = 0
            weights["delete"] *= 3
        if n <= MIN_NODES:
            for op in SHRINK:
                weights[op] = 0
            weights["add_node"] *= 3
        names = list(weights)
        return self.rng.choices(names, [weights[k] for k in names])[0]

    def step(self, index: int) -> str:
        """Run one random operation, let the event loop turn, and check the canvas."""
        self.step_index = index
        op = self.pick()
        self.log.append(f"{index} {op} ...")
        t0 = time.perf_counter()
        detail = getattr(self, f"op_{op}")() or ""
        digest = ""
        if index % DIGEST_EVERY == 0 or op == "save":
            # A digest of the design: where two runs of a seed part ways.
            digest = " #" + hashlib.sha1(repr(self.topo.state()).encode()).hexdigest()[:8]
        self.log[-1] = f"{index} {op} {detail}{digest}"
        # Not the details: whether a solve was still running is timing, not the seed.
        self.trace.update(f"{index} {op}{digest}\n".encode())
        self.history.append(self.log[-1])
        self.counts[op] += 1
        QApplication.processEvents()
        # The scene re-bundles and refits on the event loop's next turn; a loaded machine
        # may not have reached it inside one processEvents call.
        deadline = time.perf_counter() + 5.0
        while self.window.scene.refresh_pending and time.perf_counter() < deadline:
            QApplication.processEvents()
        full = index % FULL_CHECK_EVERY == 0 or op in ("save", "fold")
        problems = scene_problems(self.window) if full else quick_scene_problems(self.window)
        assert not problems, "canvas and model disagree:\n  " + "\n  ".join(problems)
        took = time.perf_counter() - t0
        self.seconds[op] += took
        if took > self.slowest[0] and op not in ("solve", "solve_interrupted"):
            self.slowest = (took, self.log[-1][:80])  # a freeze a user would feel
        return op

    # ------------------------------------------------------------ selection helpers
    def _node_ids(self) -> list[str]:
        # Sorted: undo re-inserts items in an order that depends on Qt's selection order.
        return sorted(self.window.scene.nodes)

    def _some_nodes(self, most: int = 4) -> list[str]:
        """A random node, sometimes with neighbours or its whole group."""
        ids = self._node_ids()
        if not ids:
            return []
        first = self.rng.choice(ids)
        roll = self.rng.random()
        if roll < 0.2 and self.topo.node(first).group is not None:
            return self.topo.members(self.topo.node(first).group)
        picked = [first]
        if roll < 0.6:
            nbrs = sorted({lk.b if lk.a == first else lk.a for lk in self.topo.links_of(first)})
            picked += self.rng.sample(nbrs, min(len(nbrs), self.rng.randint(0, most - 1)))
        else:
            picked += self.rng.sample(ids, min(len(ids), self.rng.randint(0, most - 1)))
        return list(dict.fromkeys(picked))

    def _some_links(self, most: int = 3) -> list[str]:
        ids = sorted(self.window.scene.links)
        return self.rng.sample(ids, min(len(ids), self.rng.randint(1, most))) if ids else []

    def _select(self, node_ids=(), link_ids=()) -> None:
        self.window.scene.select_ids(node_ids, link_ids)

    def _visible_node_at(self, nid: str) -> QPoint | None:
        """Viewport point of node ``nid`` if it is the only node there.

        Which of two overlapping nodes a click picks follows Qt's stacking order, which is
        not the same from run to run; a seed must replay the same steps.
        """
        view, item = self.window.view, self.window.scene.nodes[nid]
        if item.hidden:
            return None
        pt = view.mapFromScene(item.pos())
        if not view.viewport().rect().adjusted(10, 10, -10, -10).contains(pt):
            return None
        under = [i for i in view.items(pt) if isinstance(i, NodeItem)]
        return pt if under == [item] else None

    def _key(self, key, modifiers=NO_MOD) -> None:
        self.qtbot.keyClick(self.window.view, key, modifiers)

    def _trigger_or_key(self, action: str, key, modifiers) -> str:
        """An Edit action through its menu entry or its keyboard shortcut."""
        if self.rng.random() < 0.5:
            self.window.actions_by_name[action].trigger()
            return "action"
        self._key(key, modifiers)
        return "key"

    # ------------------------------------------------------------ operations
    # (The edits of the design are `EditOps`'.)
    def op_inspect_node(self) -> str:
        ins = self.window.inspector
        nodes = self._some_nodes(3)
        if not nodes:
            return "empty"
        self._select(nodes)
        field = self.rng.choice(["name", "name", "plane", "group", "failed", "model"])
        if field == "name":
            text = self.rng.choice(NAMES)
            # Real typing, then Return (QTest types ASCII only: it aborts on other text).
            if self.rng.random() < 0.3 and text.isascii():
                ins.name.clear()
                self.qtbot.keyClicks(ins.name, text)
                self.qtbot.keyClick(ins.name, Qt.Key.Key_Return)
                self.window.view.setFocus()  # back to the canvas, as a click there would
            else:
                ins.name.setText(text)
                ins.name.editingFinished.emit()
            return f"name {text!r} on {len(nodes)}"
        combo = {"plane": ins.node_plane, "group": ins.group, "model": ins.model}.get(field)
        if combo is not None:
            if not combo.isEnabled() or combo.count() == 0:
                return f"{field} disabled"
            i = self.rng.randrange(combo.count())
            combo.setCurrentIndex(i)
            combo.activated.emit(i)
            return f"{field} -> {combo.itemText(i)} on {len(nodes)}"
        ins.node_failed.click()
        return f"failed toggled on {len(nodes)}"

    def op_inspect_link(self) -> str:
        ins = self.window.inspector
        links = self._some_links()
        if not links:
            return "no links"
        self._select((), links)
        field = self.rng.choice(["count", "count", "tech", "plane", "failed"])
        if field == "count":
            ins.count.setValue(self.rng.randint(1, 8))
            ins.count.editingFinished.emit()
            return f"count {ins.count.value()} on {len(links)}"
        if field == "failed":
            ins.link_failed.click()
            return f"failed toggled on {len(links)}"
        combo = ins.tech if field == "tech" else ins.link_plane
        if combo.count() == 0:
            return f"{field}: no choice"
        i = self.rng.randrange(combo.count())
        combo.setCurrentIndex(i)
        combo.activated.emit(i)
        return f"{field} -> {combo.itemText(i)} on {len(links)}"

    def op_what_if(self) -> str:
        overlay = self.window.analysis.overlay
        if self.rng.random() < 0.7 and self.window.scene.links:
            lid = self.rng.choice(sorted(self.window.scene.links))
            failed = not self.topo.link(lid).failed
            overlay.set_failed(link_ids=[lid], failed=failed)
            return f"link {lid} failed={failed}"
        if not self._node_ids():
            return "empty design"
        nid = self.rng.choice(self._node_ids())
        failed = not self.topo.node(nid).failed
        overlay.set_failed(node_ids=[nid], failed=failed)
        return f"node {nid} failed={failed}"

    def op_scenario(self) -> str:
        dock = self.window.analysis.scenario
        field = self.rng.choice(["collective", "size", "algorithm", "routing", "ranks",
                                 "dtype", "params", "dp", "compute", "overlap"])
        widget = getattr(dock, field)
        if hasattr(widget, "activated"):
            i = self.rng.randrange(widget.count())
            widget.setCurrentIndex(i)
            widget.activated.emit(i)
            return f"{field} -> {widget.itemText(i)}"
        lo, hi = widget.minimum(), min(widget.maximum(), {"dp": 64}.get(field, 400))
        value = self.rng.uniform(lo, hi) if field != "dp" else self.rng.randint(0, int(hi))
        widget.setValue(value)
        widget.editingFinished.emit()
        return f"{field} -> {widget.value()}"

    def _undo_redo(self, name: str, can, keys) -> str:
        n = self.rng.choice([1, 1, 2, 3, 5, 8])
        done = []
        for _ in range(n):
            if not can():
                break
            before = self.stack.index()
            if self.rng.random() < 0.5:
                self.window.actions_by_name[name].trigger()
                done.append("a")
            else:
                key, mods = self.rng.choice(keys)
                self._key(key, mods)
                done.append("k")
            step = -1 if name == "undo" else 1
            assert self.stack.index() == before + step, f"{name} ({done[-1]}) did nothing"
        return "".join(done) or "nothing to do"

    def op_undo(self) -> str:
        return self._undo_redo("undo", self.stack.canUndo, [(Qt.Key.Key_Z, CTRL)])

    def op_redo(self) -> str:
        return self._undo_redo("redo", self.stack.canRedo,
                               [(Qt.Key.Key_Z, CTRL | SHIFT), (Qt.Key.Key_Y, CTRL)])

    def op_arrange(self) -> str:
        self._select(self._some_nodes(6))
        name = self.rng.choice(["align_left", "align_hcenter", "align_top", "align_vcenter",
                                "distribute_h", "distribute_v"])
        self.window.actions_by_name[name].trigger()
        return name

    def op_auto_layout(self) -> str:
        self._key(Qt.Key.Key_L, CTRL | SHIFT)
        return "Ctrl+Shift+L"

    def op_fold(self) -> str:
        scene = self.window.scene
        if self.rng.random() < 0.15 or not scene.groups:
            scene.expand_all()
            return "expand all"
        gid = self.rng.choice(sorted(scene.groups))
        scene.toggle_collapsed(gid)
        return f"{gid} collapsed={gid in scene.collapsed}"

    def op_wipe(self) -> str:
        """Select All, Delete, "oops": Undo (and sometimes Redo and Undo again)."""
        before = self.topo.state()
        self._key(Qt.Key.Key_A, CTRL)
        self._key(Qt.Key.Key_Delete)
        assert len(self.topo) == 0, f"Select All + Delete left {len(self.topo)} nodes"
        if self.rng.random() < 0.5:
            self._key(Qt.Key.Key_Z, CTRL | SHIFT)  # nothing to redo: does nothing
            self._key(Qt.Key.Key_Z, CTRL)
            QApplication.processEvents()
            self._key(Qt.Key.Key_Y, CTRL)
            assert len(self.topo) == 0, "Redo did not delete everything again"
        self._key(Qt.Key.Key_Z, CTRL)
        diff = state_diff(self.topo.state(), before)
        assert not diff, "Undo after deleting everything:\n  " + "\n  ".join(diff)
        return "deleted everything and undid it"

    def op_save(self) -> str:
        files = self.window.files
        path = self.rng.choice(self.paths)
        if self.window.document.path == path and self.rng.random() < 0.5:
            self._key(Qt.Key.Key_S, CTRL)
            how = "Ctrl+S"
        else:
            assert files.save_as(path)
            how = "save_as"
        problems = self.check_saved(path)
        assert not problems, f"saved {path.name} ({how}):\n  " + "\n  ".join(problems)
        return f"{path.name} via {how}"

    def op_autosave(self) -> str:
        saver = self.window.files.autosaver
        if not saver.autosave_now(wait=True):
            return "nothing to autosave"
        QApplication.processEvents()  # the worker's queued 'saved' signal
        diff = state_diff(load(saver.path).state(), self.topo.state())
        assert not diff, "the recovery copy differs:\n  " + "\n  ".join(diff)
        return "written and checked"

    def op_solve(self) -> str:
        self.wait_solved()
        retry, pick = self.rng.random() < 0.8, self.rng.random()  # drawn whatever happens
        if not (self.last_failed and retry):
            return "failed" if self.last_failed else "solved"
        # Random edits strand GPUs without a NIC (a dropped GPU, a copy inside a server),
        # and then the whole design cannot be analysed.  Do what an architect would:
        # analyse a few GPUs that share an NVSwitch (one NVLink domain needs no NIC).
        domains = self._nvswitch_gpus()
        if not domains:
            return "failed; no two GPUs share an NVSwitch"
        switch, gpus = domains[int(pick * len(domains))]
        # The dock's "Selected GPUs" is refused by the model (see the soak report), so push
        # the command the dock would push for a list of GPUs.
        scenario = dict(self.topo.settings["scenario"], algorithm="auto", ranks=gpus)
        self.window.document.push(SetSetting("scenario", scenario))
        self.wait_solved()
        return f"failed; auto on {len(gpus)} GPUs at {switch}: " + \
            (f"failed: {self.last_failure}" if self.last_failed else "solved")

    def _nvswitch_gpus(self) -> list[tuple[str, list[str]]]:
        """``(switch, GPUs)`` for every working NVSwitch with two or more working GPUs on
        working NVLinks, by switch id."""
        topo = self.topo
        out = []
        for sw in topo.nodes("nvswitch"):
            if sw.failed:
                continue
            gpus = sorted({lk.a if lk.b == sw.id else lk.b for lk in topo.links_of(sw.id)
                           if not lk.failed and lk.tech.startswith("nvlink")})
            gpus = [g for g in gpus if topo.node(g).kind == "gpu" and not topo.node(g).failed]
            if len(gpus) >= 2:
                out.append((sw.id, gpus[:8]))
        return sorted(out)

    def op_solve_interrupted(self) -> str:
        """Let a solve start; the next edit makes it stale (cancelled)."""
        runner = self.window.analysis.runner
        if runner.busy:
            return "already solving"
        if self._answered() and not runner.pending:
            return "nothing to solve"
        # Started, or refused before starting (fewer than two GPUs, bad ranks).
        self.qtbot.waitUntil(lambda: runner.busy or self._answered(), timeout=SOLVE_TIMEOUT_MS)
        return "started" if runner.busy else "refused"

    # ------------------------------------------------------------ solving and saving
    def _answered(self) -> bool:
        """The live analysis answered (a result or a failure) for the design as it is."""
        latest = self.window.analysis.runner.latest
        return self.topo.generation in (self.outcome_generation,
                                        latest.generation if latest is not None else -1)

    def wait_solved(self) -> None:
        """Wait until the live analysis has answered (result or failure) for the design
        as it is now, then check a result against the model."""
        runner = self.window.analysis.runner
        topo = self.topo
        self.qtbot.waitUntil(lambda: (not runner.busy and not runner.pending
                                      and self._answered()), timeout=SOLVE_TIMEOUT_MS)
        latest = runner.latest
        if latest is not None and latest.generation == topo.generation:
            snap = latest.snapshot
            ids = {lid for lid, live in zip(snap.link_ids, snap.live_links().tolist(),
                                            strict=True) if live}
            failed = {lk.id for lk in topo.links() if lk.failed}
            # (the design's links, not the canvas's items: a collapsed box's may have none)
            assert ids <= {lk.id for lk in topo.links()} and not ids & failed, \
                "the applied result solved other links than the design's working ones"

    def check_saved(self, path: Path) -> list[str]:
        """The file loads back to the document; the document is clean; the previous
        save of this path is the backup; no recovery copy is left."""
        doc, window = self.window.document, self.window
        out = state_diff(load(path).state(), self.topo.state())
        data = path.read_bytes()
        previous = self.last_bytes.get(path)
        if previous is not None and backup_path(path).read_bytes() != previous:
            out.append(f"{backup_path(path).name} is not the previous save")
        self.last_bytes[path] = data
        if doc.is_modified or window.isWindowModified() or doc.path != path:
            out.append(f"after saving: modified={doc.is_modified} "
                       f"title-modified={window.isWindowModified()} path={doc.path}")
        if window.files.autosaver.path.exists():
            out.append("the recovery copy outlived the save")
        out += dock_problems(window)
        return out

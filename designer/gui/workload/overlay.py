"""`WorkloadOverlay`: the simulated jobs on the canvas.

* **Tints and outlines**: each job's GPUs tinted in its colour, its racks framed when
  outlines are on (`designer.gui.workload.tint.JobTint`), from where the last
  simulation placed the jobs.
* **Link colours**: with ``link_mode`` ``"mean"`` or ``"peak"`` the links take the jobs'
  time-averaged or peak utilisation (the busier direction) in the analysis overlay's
  colours; ``"collective"`` gives them back to the single-collective scenario.  The
  analysis overlay stays the one painter (`AnalysisOverlay.apply`): this object hands it
  the workload's figures, and hands them again after each scenario result.
* **Hover**: a link's tooltip lists the collectives that crossed it in the iteration,
  each with its job and its share of the link's bytes (`designer.workload.linktrace`).
* **A job's links**: the job selected in the Workloads dock has the links it loads
  outlined (`PathHalo`, the outline the scenario uses for a GPU's paths).
* **Placement by hand**: `assign_selection` puts the selected job on the GPUs selected
  on the canvas (devices, racks or SUs picked with a click, the rubber band or Find),
  in structural order (NVLink domain, then rail): one undoable edit of the job, which
  is also how a job moves to other racks.
"""

from __future__ import annotations

import numpy as np
import shiboken6
from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QToolTip

from designer.gui.analysis.overlay import PerLink
from designer.gui.analysis.paths import PathHalo
from designer.gui.canvas.items import LinkItem, NodeItem
from designer.gui.workload.build import WorkloadResult
from designer.gui.workload.tint import JobTint
from designer.workload.job import Job

__all__ = ["LINK_MODES", "MAX_JOB_LINKS", "TOOLTIP_ROWS", "WorkloadOverlay", "order_gpus"]

#: What link colours show: the jobs' mean or peak utilisation, or the scenario's.
LINK_MODES = {
    "mean": "Workload: time-averaged utilisation",
    "peak": "Workload: peak utilisation",
    "collective": "One collective (Scenario dock)",
}
TOOLTIP_ROWS = 8
#: A job loading more links is not outlined: thousands of outlined lines cost a third
#: of a second a repaint (a 256-GPU job on a SuperPOD), and outline most of the fabric.
MAX_JOB_LINKS = 1500


def order_gpus(topology, gpus: list[str], snap=None) -> list[str]:
    """``gpus`` in structural order: by NVLink domain, then position in it (rail), as
    the placement policies lay ranks, so TP groups stay in a domain.  Ids only break
    ties the structure leaves.  ``snap``: a snapshot of ``topology`` as it is, if one
    is at hand (else one is taken)."""
    if snap is None:
        from designer.solver import take_snapshot

        snap = take_snapshot(topology)
    where = {snap.node_ids[g]: i for i, g in enumerate(snap.gpus.tolist())}
    dom, loc = np.asarray(snap.gpu_domain), np.asarray(snap.gpu_local)
    known = [g for g in gpus if g in where]
    return sorted(known, key=lambda g: (int(dom[where[g]]), int(loc[where[g]]), g))


class WorkloadOverlay(QObject):
    """Connects the workload runner and dock to the canvas (see the module).

    Signals
    -------
    message(str)
    """

    message = Signal(str)

    def __init__(self, document, scene, view, runner, dock, analysis=None, parent=None):
        super().__init__(parent)
        self.document, self.scene, self.view = document, scene, view
        self.runner, self.dock = runner, dock
        self.analysis = analysis  # the AnalysisOverlay (link colours), optional
        self.result: WorkloadResult | None = None
        self.link_mode = "mean"
        self.outlines = False
        self.job_links: set[str] = set()
        self._tint: JobTint | None = None
        self._halo: PathHalo | None = None
        self._tips: dict[str, str] = {}  # link tooltips of this result (hovered again)
        runner.result_ready.connect(self._on_runner_result_ready)
        runner.failed.connect(self._on_runner_failed)
        dock.job_selected.connect(self._on_dock_job_selected)
        document.topology_replaced.connect(self._on_document_topology_replaced)
        scene.changed.connect(self._on_scene_changed)
        scene.collapsed_changed.connect(self._show_tint)
        view.viewport().installEventFilter(self)  # after the analysis overlay: first asked

    # ------------------------------------------------------------ results
    def _on_runner_result_ready(self, result: WorkloadResult | None) -> None:
        self.result = result
        self._tips = {}
        self._show_tint()
        self._colour_links()
        self._show_job_links()

    def _on_runner_failed(self, _generation: int, _text: str) -> None:
        self._on_runner_result_ready(None)

    def _on_document_topology_replaced(self, _topo) -> None:
        self.result = None
        self._tint = self._halo = None  # the scene cleared its items, ours too
        self.job_links = set()

    def _on_scene_changed(self, _regions) -> None:
        for item in (self._tint, self._halo):
            if item is not None and shiboken6.isValid(item) and item.isVisible():
                item.sync()

    # ------------------------------------------------------------ tints
    def set_outlines(self, on: bool) -> None:
        """Frame each job's racks on the canvas (True) or show tints only."""
        self.outlines = bool(on)
        self._show_tint()

    def _show_tint(self) -> None:
        jobs = []
        if self.result is not None:
            for job, placement in zip(self.result.jobs, self.result.placements, strict=False):
                jobs.append((job.name, QColor(job.colour), list(placement.gpus)))
        if not jobs and (self._tint is None or not shiboken6.isValid(self._tint)):
            return
        self.tint_item().set_jobs(jobs, self.outlines)

    def tint_item(self) -> JobTint:
        """The item that tints the GPUs (made on first use)."""
        if self._tint is None or not shiboken6.isValid(self._tint):
            self._tint = JobTint(self.scene)
            self.scene.addItem(self._tint)
            self.scene.overlays.add(self._tint)
        return self._tint

    # ------------------------------------------------------------ link colours
    def set_link_mode(self, mode: str) -> None:
        """``"mean"``, ``"peak"`` (the workload's) or ``"collective"`` (the scenario's)."""
        if mode not in LINK_MODES:
            raise ValueError(f"link mode must be one of {', '.join(LINK_MODES)}")
        self.link_mode = mode
        self._colour_links()
        self._show_job_links()

    def showing_workload(self) -> bool:
        """The links show the workload's utilisation now."""
        return self.link_mode != "collective" and self._links() is not None

    def shows_jobs(self) -> bool:
        """The links are to show the jobs' utilisation: the design has jobs and the
        mode is not ``"collective"`` (whether or not a simulation has answered yet)."""
        return self.link_mode != "collective" and bool(self.dock.jobs)

    def _links(self):
        r = self.result
        if r is None or r.snapshot is None:
            return None
        return r.simulation.links

    def _colour_links(self) -> None:
        a = self.analysis
        if a is None:
            return
        links = self._links()
        if self.link_mode == "collective" or links is None:
            if a.instead is not None:
                a.show_instead(None)  # the scenario's colours again
            return
        snap = self.result.snapshot
        util = links.mean_util if self.link_mode == "mean" else links.peak_util
        cap = np.asarray(snap.arc_cap)[0::2]
        ids = tuple(links.ids)
        a.show_instead(
            (
                PerLink(ids, np.asarray(util, dtype=float), snap.link_positions),
                PerLink(ids, np.asarray(util, dtype=float) * cap, snap.link_positions),
                PerLink(ids, cap, snap.link_positions),
            ),
            lambda generation=self.result.generation: self.runner.describes(generation),
        )

    # ------------------------------------------------------------ hover
    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.ToolTip and self.showing_workload():
            items = self.view.items(event.pos())
            item = next((i for i in items if isinstance(i, LinkItem)), None)
            if item is not None and not any(isinstance(i, NodeItem) for i in items):
                text = self._tips.get(item.link_id)
                if text is None:
                    text = self._tips[item.link_id] = self.link_text(item.link_id)
                QToolTip.showText(event.globalPos(), text, self.view)
                return True
        return super().eventFilter(watched, event)

    def link_text(self, link_id: str) -> str:
        """What a link's tooltip says: its ends, mean and peak utilisation over the
        iteration, and the collectives that crossed it with their shares."""
        topo = self.document.topology
        lk = topo.link(link_id)
        tech = topo.catalog.tech(lk.tech)
        head = (
            f"{lk.id}: {topo.node(lk.a).name} — {topo.node(lk.b).name}\n"
            f"{lk.count} x {tech.name} ({lk.count * tech.GBps:,.1f} GB/s per direction)"
        )
        links, snap = self._links(), self.result.snapshot
        k = snap.link_positions().get(link_id)
        if k is None:
            return head + "\nnot in the simulated design"
        mean, peak = float(links.mean_util[k]), float(links.peak_util[k])
        text = head + (
            f"\nworkload: mean {mean * 100:.1f}%, peak {peak * 100:.1f}% (busier direction)"
        )
        trace = self.result.simulation.trace
        rows = trace.crossings(k) if trace is not None else []
        if not rows:
            return text + "\nno job's traffic crossed it"
        jobs: dict[str, float] = {}
        for c in rows:
            jobs[c.job] = jobs.get(c.job, 0.0) + c.share
        ranked = sorted(jobs.items(), key=lambda x: -x[1])
        text += "\njobs: " + ", ".join(f"{name} {share * 100:.0f}%" for name, share in ranked)
        text += "\ncollectives crossing it (share of its bytes):"
        for c in rows[:TOOLTIP_ROWS]:
            text += f"\n  {c.job}: {c.label} — {c.share * 100:.1f}%"
        if len(rows) > TOOLTIP_ROWS:
            text += f"\n  and {len(rows) - TOOLTIP_ROWS} more"
        return text

    # ------------------------------------------------------------ a job's links
    def _on_dock_job_selected(self, _name: str) -> None:
        self._show_job_links()

    def _show_job_links(self) -> None:
        """Outline the links the dock's selected job loads (workload colours only)."""
        name = self.dock.selected_name()
        links = self._links()
        chosen: set[str] = set()
        if links is not None and name in links.jobs and self.link_mode != "collective":
            j = links.jobs.index(name)
            used = np.flatnonzero(links.job_bytes[j] > 0)
            if len(used) > MAX_JOB_LINKS:
                self.message.emit(
                    f"Job {name} loads {len(used):,} links: too many to outline "
                    "(the Link statistics panel lists them)"
                )
            else:
                chosen = {links.ids[k] for k in used.tolist()}
        self.job_links = chosen
        if not chosen and (self._halo is None or not shiboken6.isValid(self._halo)):
            return
        if self._halo is None or not shiboken6.isValid(self._halo):
            self._halo = PathHalo()
            self.scene.addItem(self._halo)
            self.scene.overlays.add(self._halo)
        items = [self.scene.links[lid] for lid in chosen if lid in self.scene.links]
        shown = [i for i in items if not i.hidden]
        if len(shown) < len(items):
            hidden = {i.link_id for i in items if i.hidden}
            shown += [b for b in self.scene.bundles.values() if hidden & set(b.link_ids)]
        self._halo.set_items(shown)
        self.view.viewport().update()

    # ------------------------------------------------------------ placement by hand
    def assign_selection(self) -> Job | None:
        """Put the dock's selected job on the GPUs selected on the canvas (see the
        module); the job's first GPUs in structural order when more are selected.
        Returns the job as changed, None when refused (the status bar says why)."""
        name = self.dock.selected_name()
        job = next((j for j in self.dock.jobs if j.name == name), None)
        if job is None:
            self.message.emit("Select a job in the Workloads dock first")
            return None
        topo = self.document.topology
        gpus = [
            n
            for n in self.scene.selected_node_ids()
            if topo.has_node(n) and topo.node(n).kind == "gpu" and not topo.node(n).failed
        ]
        if len(gpus) < job.n_gpus:
            self.message.emit(
                f"Job {name} needs {job.n_gpus} GPUs; {len(gpus)} working GPU(s) selected"
            )
            return None
        held = {g: j.name for j in self.dock.jobs if j.name != name for g in j.gpus}
        clash = sorted({held[g] for g in gpus if g in held})
        if clash:
            self.message.emit(f"The selection holds GPUs placed by hand for job {', '.join(clash)}")
            return None
        r = self.result
        snap = r.snapshot if r is not None and r.generation == topo.generation else None
        chosen = tuple(order_gpus(topo, gpus, snap)[: job.n_gpus])
        moved = Job(**{**job.__dict__, "placement": "explicit", "gpus": chosen})
        verb = "Move" if job.placement == "explicit" else "Place"
        jobs = [moved if j.name == name else j for j in self.dock.jobs]
        if not self.dock.push_jobs(jobs, f"{verb} job {name} on {len(chosen)} selected GPUs"):
            return None
        self.dock.refresh(select=name)
        return moved

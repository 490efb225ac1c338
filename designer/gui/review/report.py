"""The design review as one HTML page: the diagram with its legend and title block,
the scenario and workload results and their panels, the problems, the bill of
materials and the summary.

`report_html` assembles the page from parts already made (the diagram, the panels'
pictures, the review's answers); it does no Qt rendering itself, so the exporter can
show progress between the slow parts.  Every name that comes from the design is
escaped.  The page is self-contained (pictures inline), so it can be mailed or
attached to a ticket as one file; for PDF the same HTML is laid out by Qt's rich-text
engine (`designer.gui.review.report_export`).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from designer import __version__
from designer.gui.review.info_dock import bisection_line, counts_line
from designer.gui.review.summary import (
    bom_headline,
    bom_network_line,
    info_headline,
    oversubscription_rows,
    problems_headline,
    usd,
    watts,
)
from designer.model.bom import ASSUMPTION_NOTE, SYSTEM_NOTE, Bom
from designer.model.rules import Finding

STYLE = """
body { font-family: sans-serif; font-size: 10pt; color: #222; margin: 24px; }
h1 { font-size: 18pt; margin-bottom: 2px; }
h2 { font-size: 13pt; border-bottom: 1px solid #999; margin-top: 22px; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #bbb; padding: 2px 6px; text-align: left; vertical-align: top; }
td.n { text-align: right; }
.headline { font-weight: bold; font-size: 11pt; }
.error { color: #d62728; } .warning { color: #8b6508; } .ok { color: #2ca02c; }
.note { font-style: italic; color: #555; }
img.panel { max-width: 100%; border: 1px solid #ccc; }
"""


@dataclass
class Picture:
    """A picture in the report: PNG or SVG data and a caption."""

    caption: str
    data: bytes
    mime: str = "image/png"
    resource: str = ""  # a name to refer to instead of inlining the data (PDF layout)
    width: int | None = None  # display width in px (PDF layout)

    def html(self, css_class: str = "panel") -> str:
        width = self.width
        if self.resource:
            size = f' width="{width}"' if width else ""
            body = f'<img src="{self.resource}"{size} alt="{html.escape(self.caption)}">'
        elif self.mime == "image/svg+xml":
            # Inline, so the diagram's labels stay text (searchable, selectable).
            text = self.data.decode("utf-8")
            text = text[text.find("<svg") :] if "<svg" in text else text
            body = f'<div class="diagram">{text}</div>'
        else:
            src = f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"
            size = f' width="{width}"' if width else ""
            body = f'<img class="{css_class}" src="{src}"{size} alt="{html.escape(self.caption)}">'
        return f"<figure>{body}<figcaption>{html.escape(self.caption)}</figcaption></figure>"


@dataclass
class ReviewParts:
    """What a review report holds; any part may be missing (then it says so)."""

    title: str
    subtitle: str = ""
    diagram: Picture | None = None
    findings: Sequence[Finding] | None = None
    bom: Bom | None = None
    info: dict[str, Any] | None = None
    scenario_html: str = ""  # rich text the Scenario dock shows
    workload_html: str = ""  # the Workloads dock's answer and job table
    panels: list[Picture] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # section -> why


def _e(value: Any) -> str:
    return html.escape(str(value))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric=()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{_e(c)}</td>' if i in numeric else f"<td>{_e(c)}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def problems_section(findings: Sequence[Finding]) -> str:
    worst = (
        "error" if any(f.severity == "error" for f in findings) else "warning" if findings else "ok"
    )
    out = [f'<p class="headline {worst}">{_e(problems_headline(findings))}</p>']
    if findings:
        out.append(
            _table(
                ["Severity", "Problem", "Rule", "Subject"],
                [(f.severity, f.message, f.code, f.subject or "design") for f in findings],
            )
        )
    return "".join(out)


def bom_section(b: Bom, catalog) -> str:
    """The BOM table; where each figure comes from is a numbered note under it (the
    catalog's assumption label and source, or the design's override)."""
    notes: dict[str, int] = {}

    def basis(key: str, overridden: bool, tech: bool, category: str = "") -> str:
        if overridden:
            text, label = "Price or power set in this design (override).", "override"
        elif category == "system":
            text, label = SYSTEM_NOTE, "assumption"
        else:
            try:
                entry = catalog.tech(key) if tech else catalog.device(key)
                text = f"{key}: {entry.assumption_note} Source: {entry.source}"
            except Exception:
                text = f"{key}: {ASSUMPTION_NOTE}"
            label = "assumption"
        number = notes.setdefault(text, len(notes) + 1)
        return f"{label} [{number}]"

    rows = []
    for r in b.devices:
        label = f"{r.model} per GPU" if r.category == "system" else r.model
        rows.append(
            (
                label,
                r.category,
                f"{r.count:,}",
                usd(r.unit_price_usd),
                usd(r.total_price_usd),
                watts(r.total_power_w),
                basis(r.model, r.overridden, False, r.category),
            )
        )
    for r in b.cables:
        rows.append(
            (
                f"{r.tech} ({r.bundles:,} bundles)",
                "link",
                f"{r.links:,}",
                usd(r.unit_price_usd),
                usd(r.total_price_usd),
                watts(r.total_power_w),
                basis(r.tech, r.overridden, True),
            )
        )
    sources = "".join(f"<li>{_e(text)}</li>" for text in notes)
    return (
        f'<p class="headline">{_e(bom_headline(b))}</p><p>{_e(bom_network_line(b))}</p>'
        + _table(
            ["Item", "Category", "Count", "Unit", "Total", "Power", "Basis"],
            rows,
            numeric=(2, 3, 4, 5),
        )
        + f'<p class="note">{_e(ASSUMPTION_NOTE)}</p>'
        + f'<p>Sources and assumptions:</p><ol class="note">{sources}</ol>'
    )


def info_section(d: dict[str, Any]) -> str:
    tiers = oversubscription_rows(d)
    out = [f'<p class="headline">{_e(info_headline(d))}</p>', f"<p>{_e(counts_line(d))}</p>"]
    if tiers:
        out.append(
            _table(
                ["Tier", "Switches", "Oversubscription", "Worst", "Worst switch"],
                tiers,
                numeric=(1,),
            )
        )
    out.append(f"<p>{_e(bisection_line(d))}</p>")
    return "".join(out)


def report_html(parts: ReviewParts, catalog) -> str:
    """The whole report page (UTF-8 text)."""

    def section(title: str, key: str, body: str | None) -> str:
        if body is None:
            why = parts.missing.get(key, "not available")
            body = f'<p class="note">{_e(why)}</p>'
        return f'<h2 id="{key}">{_e(title)}</h2>{body}'

    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Design review: {_e(parts.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Design review: {_e(parts.title)}</h1>",
        f'<p class="note">{_e(parts.subtitle)} Fabric Designer {_e(__version__)}.</p>',
        section(
            "Diagram",
            "diagram",
            parts.diagram.html("diagram") if parts.diagram is not None else None,
        ),
        section(
            "Problems",
            "problems",
            problems_section(parts.findings) if parts.findings is not None else None,
        ),
        section(
            "Bill of materials",
            "bom",
            bom_section(parts.bom, catalog) if parts.bom is not None else None,
        ),
        section("Info", "info", info_section(parts.info) if parts.info is not None else None),
        section("Scenario", "scenario", parts.scenario_html or None),
        section("Workloads", "workloads", parts.workload_html or None),
        section(
            "Panels", "panels", "".join(p.html() for p in parts.panels) if parts.panels else None
        ),
        "</body></html>",
    ]
    return "\n".join(out)

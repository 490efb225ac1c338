"""Regenerate the generated parts of ``docs/file-format.md`` from the JSON Schema:
``python tools/schema_doc.py`` (rewrites the file) or ``--check`` (exit 1 if stale).

Two regions of the page are generated, each between ``<!-- BEGIN GENERATED: name -->``
and ``<!-- END GENERATED: name -->``; everything else is hand-written:

``example``
    A short but complete design file: an excerpt of the ``example`` template (one GPU,
    its NVSwitch, NIC and rail leaf, the links between them, their groups) with one
    price override, written by the real saver.
``fields``
    One table per object of the format (type, required, default, meaning), from the
    schema's types, bounds, enumerations, defaults and descriptions.

``tests/io/test_schema.py`` regenerates both and fails when the page differs, so the
reference cannot drift from the schema or the saver.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from designer.io.fabric_json import dumps  # noqa: E402
from designer.io.fabric_schema import schema  # noqa: E402
from designer.model.templates import build_template  # noqa: E402
from designer.model.topology import Topology  # noqa: E402

DOC = ROOT / "docs" / "file-format.md"
ID_PATTERN = r"^[A-Za-z0-9_.:/\-]{1,128}$"

#: The excerpt of the example template shown in the page.
EXAMPLE_GROUPS = ("rack01", "n01")
EXAMPLE_NODES = ("leaf-r0-0", "n01-gpu0", "n01-nic0", "n01-nvs0")
EXAMPLE_OVERRIDES = {"H100": {"price_usd": 25000.0}}


def example_design() -> Topology:
    """The page's example: a small valid design cut out of the ``example`` template."""
    full = build_template("example")
    design = Topology(name=f"{full.name} (excerpt)")
    for key, value in full.settings.items():
        design.set_setting(key, value)
    design.overrides = {k: dict(v) for k, v in EXAMPLE_OVERRIDES.items()}
    design.extend(
        groups=[full.group(g) for g in EXAMPLE_GROUPS],
        nodes=[full.node(n) for n in EXAMPLE_NODES],
        links=[lk for lk in full.links() if lk.a in EXAMPLE_NODES and lk.b in EXAMPLE_NODES],
    )
    return design


def render_example() -> str:
    return f"```json\n{dumps(example_design())}```\n"


# --------------------------------------------------------------------------- tables


def _resolve(prop: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The property with its ``$ref`` target merged in (its own description wins)."""
    if "$ref" not in prop:
        return prop
    target = root["definitions"][prop["$ref"].removeprefix("#/definitions/")]
    return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}


def _code(value: Any) -> str:
    return f"`{json.dumps(value)}`"


def _number(value: float) -> str:
    if isinstance(value, float) and value >= 1e15:
        return f"{value:g}"
    return f"{value:,}".replace(",", " ")


#: Definitions documented under a heading other than their plural (see `_sections`).
_ANCHORS = {"job": "settingsworkloads-job-objects"}


def _type(prop: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    if "const" in prop:
        return _code(prop["const"])
    if "enum" in prop:
        return "one of " + ", ".join(_code(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(alt["title"] for alt in prop["anyOf"])
    types = prop.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    words = []
    for t in types:
        if t == "string" and prop.get("pattern") == ID_PATTERN:
            words.append("[id](#ids)")
        elif t == "array":
            ref = prop.get("items", {}).get("$ref", "")
            name = ref.removeprefix("#/definitions/")
            anchor = _ANCHORS.get(name, f"{name}s")
            words.append(f"list of [{name}s](#{anchor})" if name else "list")
        elif t == "object":
            words.append("object")
        else:
            words.append(t)
    text = " or ".join(words)
    lo, hi = prop.get("minimum"), prop.get("maximum")
    if lo is not None and hi is not None:
        text += f", {_number(lo)} to {_number(hi)}"
    elif lo is not None:
        text += f", at least {_number(lo)}"
    return text


def _table(obj: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    lines = ["| Field | Type | Required | Default | Meaning |", "|---|---|---|---|---|"]
    required = set(obj.get("required", ()))
    for name, raw in obj["properties"].items():
        prop = _resolve(raw, root)
        default = _code(prop["default"]) if "default" in prop else ""
        if prop.get("type") == "object" and prop.get("default") == {}:
            default = "see below"
        meaning = prop["description"].replace("|", "\\|")
        lines.append(
            f"| `{name}` | {_type(prop, root)} | {'yes' if name in required else 'no'} "
            f"| {default} | {meaning} |"
        )
    return "\n".join(lines) + "\n"


def _sections(root: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(heading, intro, object schema) for each object of the format, top down."""
    props = root["properties"]
    yield "Top level", root["description"], root
    settings = props["settings"]
    yield "settings", settings["description"], settings
    for key in ("scenario", "training"):
        sub = settings["properties"][key]
        yield f"settings.{key}", sub["description"], sub
    job = root["definitions"]["job"]
    jobs = settings["properties"]["workloads"]["description"]
    yield "settings.workloads (`job` objects)", f"{jobs} Each job: {job['description']}", job
    for key in ("model", "training", "parallel"):
        sub = job["properties"][key]
        yield f"settings.workloads: {key}", sub["description"], sub
    entry = props["overrides"]["additionalProperties"]
    yield "overrides", f"{props['overrides']['description']} {entry['description']}", entry
    for key in ("group", "node", "link"):
        definition = root["definitions"][key]
        yield f"{key}s", definition["description"], definition


def render_fields() -> str:
    root = schema()
    parts = []
    for heading, intro, obj in _sections(root):
        parts.append(f"### {heading}\n\n{intro}\n\n{_table(obj, root)}")
    return "\n".join(parts)


# --------------------------------------------------------------------------- the page

GENERATORS = {"example": render_example, "fields": render_fields}
_REGION = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>\w+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)",
    re.DOTALL,
)


def render_doc(text: str) -> str:
    """``text`` with every generated region rebuilt; an unknown or missing region is an
    error (a typo in a marker would otherwise leave the region stale for ever)."""
    found = []

    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise SystemExit(f"{DOC}: unknown generated region {name!r}")
        found.append(name)
        return f"{match[1]}{GENERATORS[name]()}{match[4]}"

    out = _REGION.sub(fill, text)
    missing = sorted(set(GENERATORS) - set(found))
    if missing:
        raise SystemExit(f"{DOC}: no generated region {', '.join(missing)}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = render_doc(text)
    if args.check:
        if new != text:
            print(f"{DOC} is out of date: run python tools/schema_doc.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

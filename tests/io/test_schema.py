"""The JSON Schema of ``.fabric.json`` (``resources/schema/fabric.schema.json``): a valid
draft-07 schema, in step with the model and the saver, used by the loader with one-line
messages, agreeing with the reference validator, and documented by docs/file-format.md.
(Whatever the saver writes, the schema accepts: `test_schema_fuzz.py`.)"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest
from schema_checks import (
    DOC,
    EXAMPLE_TEXT,
    ROOT,
    _at,
    example_dict,
    jsonschema,
    needs_reference,
    reference_errors,
    schema_doc,
)

from designer.io import fabric_columns, fabric_json, fabric_schema
from designer.io.fabric_json import FileFormatError, dumps, load, loads, to_dict
from designer.io.fabric_schema import SchemaViolation, schema, validate
from designer.model.catalog import (
    NODE_KINDS,
    PLANES,
    resources_dir,
)
from designer.model.errors import DesignError
from designer.model.scenario import ALGORITHMS, COLLECTIVES, DTYPES, Scenario, TrainingSpec
from designer.model.templates import TEMPLATES, build_template, template_names
from designer.model.topology import (
    _ID_RE,
    DEFAULT_SETTINGS,
    GROUP_KINDS,
    ROUTING_MODES,
    Group,
    Link,
    Node,
    Topology,
)


def resolved(prop: dict) -> dict:
    return fabric_schema.inline_refs(prop, schema())


# --------------------------------------------------------------------------- the schema


@needs_reference
def test_schema_is_a_valid_draft07_schema():
    s = schema()
    assert s["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(s)


def test_schema_lives_in_resources_and_names_itself():
    path = fabric_schema.SCHEMA_PATH
    assert path == resources_dir() / "schema" / "fabric.schema.json" and path.is_file()
    s = schema()
    assert s["$id"].endswith(f":{fabric_json.VERSION}")
    assert s["title"] and s["description"]
    assert s["type"] == "object" and s["additionalProperties"] is False


def _subschemas(node: Any, where: str) -> Iterator[tuple[str, dict]]:
    """Every property, definition and map value of the schema, with its place."""
    for name, prop in node.get("properties", {}).items():
        yield f"{where}.{name}", prop
        yield from _subschemas(prop, f"{where}.{name}")
    for name, definition in node.get("definitions", {}).items():
        yield f"#/definitions/{name}", definition
        yield from _subschemas(definition, f"#/definitions/{name}")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield f"{where}.*", extra
        yield from _subschemas(extra, f"{where}.*")


def test_every_property_has_a_title_and_a_description():
    places = list(_subschemas(schema(), "$"))
    assert len(places) > 40
    missing = [
        where
        for where, prop in places
        if not (isinstance(prop.get("title"), str) and prop["title"].strip())
        or not (isinstance(prop.get("description"), str) and len(prop["description"]) > 10)
    ]
    assert missing == []


def test_every_object_is_strict():
    # The loader refuses unknown keys everywhere; so must the schema.
    objects = [("$", schema())] + [(w, p) for w, p in _subschemas(schema(), "$")]
    for where, node in objects:
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False or where == "$.overrides", where


# --------------------------------------------------------------------------- the model


def _definition(name: str) -> dict:
    return schema()["definitions"][name]


@pytest.mark.parametrize(("name", "cls"), [("node", Node), ("link", Link), ("group", Group)])
def test_items_have_the_model_fields_required_and_defaults(name, cls):
    definition = _definition(name)
    assert tuple(definition["properties"]) == tuple(f.name for f in fields(cls))
    required = [f.name for f in fields(cls) if f.default is MISSING]
    assert definition["required"] == required
    for f in fields(cls):
        if f.default is not MISSING:
            assert resolved(definition["properties"][f.name])["default"] == f.default, f.name


def test_enumerations_are_the_models():
    props = schema()["properties"]
    scenario = props["settings"]["properties"]["scenario"]["properties"]
    training = props["settings"]["properties"]["training"]["properties"]
    assert tuple(_definition("node")["properties"]["kind"]["enum"]) == NODE_KINDS
    assert tuple(_definition("group")["properties"]["kind"]["enum"]) == GROUP_KINDS
    assert tuple(_definition("plane")["enum"]) == PLANES
    assert tuple(props["settings"]["properties"]["routing"]["enum"]) == ROUTING_MODES
    assert tuple(scenario["collective"]["enum"]) == COLLECTIVES
    assert tuple(scenario["algorithm"]["enum"]) == ALGORITHMS
    assert tuple(training["grad_dtype"]["enum"]) == DTYPES
    for launch in scenario["launch"]["enum"]:
        Scenario.from_dict({"launch": launch})
    with pytest.raises(DesignError):
        Scenario.from_dict({"launch": "lazy"})


def test_top_level_and_settings_are_what_the_saver_writes():
    s = schema()
    assert list(s["properties"]) == list(to_dict(Topology()))
    assert s["required"] == ["format", "version", "nodes", "links"]
    assert s["properties"]["format"]["const"] == fabric_json.FORMAT
    assert s["properties"]["version"]["enum"] == list(range(1, fabric_json.VERSION + 1))
    assert s["properties"]["name"]["default"] == Topology().name
    settings_props = s["properties"]["settings"]["properties"]
    assert list(settings_props) == list(DEFAULT_SETTINGS)
    assert settings_props["routing"]["default"] == DEFAULT_SETTINGS["routing"]
    for key, cls in (("scenario", Scenario), ("training", TrainingSpec)):
        props = settings_props[key]["properties"]
        assert list(props) == [f.name for f in fields(cls)]
        assert {k: p["default"] for k, p in props.items()} == cls().to_dict()
    entry = s["properties"]["overrides"]["additionalProperties"]
    assert tuple(entry["properties"]) == fabric_json.OVERRIDE_FIELDS
    for prop in entry["properties"].values():
        assert (prop["minimum"], prop["maximum"]) == (0, fabric_json.MAX_OVERRIDE)


def test_ids_and_counts_are_the_models():
    id_pattern = _definition("id")["pattern"]
    assert id_pattern == _ID_RE.pattern
    for prop in (_definition("group")["properties"]["parent"],
                 _definition("node")["properties"]["group"]):  # fmt: skip
        assert prop["pattern"] == id_pattern
    count = _definition("link")["properties"]["count"]
    assert (count["minimum"], count["maximum"]) == (1, fabric_json.MAX_LINK_COUNT)


def _bounded_settings() -> Iterator[tuple[str, str, dict]]:
    settings_props = schema()["properties"]["settings"]["properties"]
    for key in ("scenario", "training"):
        for name, prop in settings_props[key]["properties"].items():
            if "minimum" in prop:
                yield key, name, prop


@pytest.mark.parametrize(("key", "name", "prop"), list(_bounded_settings()))
def test_setting_bounds_are_the_models(key, name, prop):
    # The schema and the model refuse the same values: the bounds themselves pass,
    # the next value out is refused by both.
    cls = {"scenario": Scenario, "training": TrainingSpec}[key]
    lo, hi = prop["minimum"], prop["maximum"]
    step = 1 if prop["type"] == "integer" else max(abs(hi), 1) * 1e-9
    for value, ok in ((lo, True), (hi, True), (lo - step, False), (hi + step * 1e3, False)):
        data = {key: {name: value}}
        try:
            cls.from_dict(data[key])
            model_ok = True
        except DesignError:
            model_ok = False
        doc = {"format": "fabric-designer", "version": 1, "settings": data,
               "nodes": [], "links": []}  # fmt: skip
        try:
            validate(doc)
            schema_ok = True
        except SchemaViolation:
            schema_ok = False
        assert (model_ok, schema_ok) == (ok, ok), (key, name, value)


def test_position_bound_is_the_models():
    bound = _definition("node")["properties"]["x"]["maximum"]
    t = Topology()
    t.add_node(Node("g", "gpu", "H100", "G", x=bound, y=-bound))
    with pytest.raises(DesignError, match="position"):
        t.add_node(Node("h", "gpu", "H100", "H", x=math.nextafter(bound, math.inf)))


# --------------------------------------------------------------------------- valid files


def _template_cases():
    cases = [pytest.param(name, {}, id=name) for name in template_names()]
    for name, template in TEMPLATES.items():
        planes = {p.name: True for p in template.params
                  if p.name in ("storage", "frontend", "management")}  # fmt: skip
        if planes:
            cases.append(pytest.param(name, planes, id=f"{name}-all-planes"))
    return cases


@pytest.mark.parametrize(("name", "params"), _template_cases())
def test_every_template_design_validates(name, params):
    data = json.loads(dumps(build_template(name, **params)))
    validate(data)
    size = len(data["nodes"]) + len(data["links"])
    if jsonschema is not None and size < 1500:  # the reference validator is slow
        assert reference_errors(data) == []


def _doc_examples() -> list[str]:
    return re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def _repo_design_files() -> list[Path]:
    """Design files kept in the repository (not in hidden or build folders: .venv)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")
                         and d not in ("build", "dist", "node_modules", "__pycache__")]  # fmt: skip
        found += [Path(folder, f) for f in files if f.endswith(".fabric.json")]
    return sorted(found)


def test_example_files_validate_and_load():
    texts = _doc_examples() + [p.read_text(encoding="utf-8") for p in _repo_design_files()]
    assert texts, "no example design found"
    for text in texts:
        data = json.loads(text)
        validate(data)
        if jsonschema is not None:
            assert reference_errors(data) == []
        assert dumps(loads(text)) == text  # written by the saver, not by hand


# --------------------------------------------------------------------------- broken files


def _drop(*path):
    def mutate(data):
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        del parent[path[-1]]

    return mutate


# (mutation of example_dict(), the path the schema names, what the loader's message says
# after "<file>: ").  Nodes in the example: 0 leaf-r0-0, 1 n01-gpu0, 2 n01-nic0, 3 n01-nvs0.
BROKEN = [
    (_at("nodes", 1, "kind", "gpux"), ("nodes", 1, "kind"),
     "nodes[1] (id 'n01-gpu0'): field 'kind' must be one of core, spine, leaf, switch, "
     "nvlink-switch-tray, nvswitch, nic, gpu, host, storage, got 'gpux'"),
    (_at("nodes", 1, "plane", "astral"), ("nodes", 1, "plane"),
     "nodes[1] (id 'n01-gpu0'): field 'plane' must be one of compute, storage, frontend, "
     "management, got 'astral'"),
    (_at("nodes", 1, "x", "12"), ("nodes", 1, "x"),
     "nodes[1] (id 'n01-gpu0'): field 'x' must be a finite number, got a string"),
    (_at("nodes", 1, "y", -2e9), ("nodes", 1, "y"),
     "nodes[1] (id 'n01-gpu0'): field 'y' must be a finite number from -1_000_000_000 to "
     "1_000_000_000, got -2000000000.0"),
    (_at("nodes", 1, "failed", "no"), ("nodes", 1, "failed"),
     "nodes[1] (id 'n01-gpu0'): field 'failed' must be true or false, got a string"),
    (_at("nodes", 1, "id", "has space"), ("nodes", 1, "id"),
     "nodes[1] (id 'has space'): field 'id' must be an id of 1 to 128 letters, digits, "
     "'_', '.', ':', '/' or '-', got 'has space'"),
    (_at("nodes", 1, "group", "no/such group"), ("nodes", 1, "group"),
     "nodes[1] (id 'n01-gpu0'): field 'group' must be an id of"),
    (_drop("nodes", 1, "model"), ("nodes", 1, "model"),
     "nodes[1] (id 'n01-gpu0'): missing field 'model'"),
    (_at("nodes", 1, "wheels", 4), ("nodes", 1, "wheels"),
     "nodes[1] (id 'n01-gpu0'): unknown field 'wheels'"),
    (_at("nodes", 2, []), ("nodes", 2), "nodes[2]: expected an object, got a list"),
    (_at("nodes", {}), ("nodes",), "nodes: expected a list, got an object"),
    (_at("links", 1, "count", 0), ("links", 1, "count"),
     "links[1] (id 'n01-gpu0:n01-nvs0'): field 'count' must be a whole number from 1 to "
     "1_000_000, got 0"),
    (_at("links", 1, "count", 2.5), ("links", 1, "count"),
     "links[1] (id 'n01-gpu0:n01-nvs0'): field 'count' must be a whole number, got 2.5"),
    (_at("links", 1, "tech", None), ("links", 1, "tech"),
     "links[1] (id 'n01-gpu0:n01-nvs0'): field 'tech' must be a string, got null"),
    (_drop("links", 0, "b"), ("links", 0, "b"),
     "links[0] (id 'n01-gpu0:n01-nic0'): missing field 'b'"),
    (_at("groups", 0, "parent", 3), ("groups", 0, "parent"),
     "groups[0] (id 'n01'): field 'parent' must be a string or null, got a number"),
    (_at("groups", 1, "kind", "galaxy"), ("groups", 1, "kind"),
     "groups[1] (id 'rack01'): field 'kind' must be one of node, tray, rack, pod, su, plane, "
     "cluster, got 'galaxy'"),
    (_at("colour", "red"), ("colour",), "top level: unknown key 'colour'"),
    (_drop("links"), ("links",), "top level: missing 'links'"),
    (_at("name", 5), ("name",), "name: expected a string, got a number"),
    (_at("settings", "routing", "telepathy"), ("settings", "routing"),
     "settings: field 'routing' must be one of ecmp, adaptive, static, got 'telepathy'"),
    (_at("settings", "speed", 1), ("settings", "speed"), "settings: unknown field 'speed'"),
    (_at("settings", "scenario", "bytes", 0), ("settings", "scenario", "bytes"),
     "settings.scenario: field 'bytes' must be a whole number from 1 to 17_592_186_044_416, "
     "got 0"),
    (_at("settings", "scenario", "ranks", "some"), ("settings", "scenario", "ranks"),
     "settings.scenario: field 'ranks' must be \"all\", a whole number >= 2, \"group:<id>\" "
     "or a list of at least 2 GPU ids, got 'some'"),
    (_at("settings", "scenario", "ranks", ["n01-gpu0", 7]), ("settings", "scenario", "ranks"),
     "settings.scenario: field 'ranks' must be \"all\", a whole number >= 2"),
    (_at("settings", "scenario", "launch", "lazy"), ("settings", "scenario", "launch"),
     "settings.scenario: field 'launch' must be one of eager, graph, got 'lazy'"),
    (_at("settings", "training", "overlap", 1.5), ("settings", "training", "overlap"),
     "settings.training: field 'overlap' must be a finite number from 0 to 1, got 1.5"),
    (_at("settings", "training", "grad_dtype", "int4"), ("settings", "training", "grad_dtype"),
     "settings.training: field 'grad_dtype' must be one of fp32, bf16, fp16, fp8, got 'int4'"),
    (_at("settings", "training", []), ("settings", "training"),
     "settings: field 'training' must be an object, got a list"),
    (_at("overrides", "H100", "price_usd", -1), ("overrides", "H100", "price_usd"),
     "overrides['H100']: field 'price_usd' must be a finite number from 0 to 1e+15, got -1"),
    (_at("overrides", "H100", "colour", 1), ("overrides", "H100", "colour"),
     "overrides['H100']: unknown field 'colour'"),
    (_at("overrides", "H100", 3), ("overrides", "H100"),
     "overrides['H100']: expected an object, got a number"),
    # A key holding the characters of a path must not confuse the place.
    (_at("overrides", "ib.ndr[0]", {"power_w": "x"}), ("overrides", "ib.ndr[0]", "power_w"),
     "overrides['ib.ndr[0]']: field 'power_w' must be a finite number, got a string"),
    # The header comes before the schema: these get the loader's own words.
    (_at("version", fabric_json.VERSION + 1), ("version",),
     "version: written by a newer Fabric Designer"),
    (_at("format", "other"), ("format",), "format: expected 'fabric-designer'"),
]  # fmt: skip


def _broken_id(case) -> str:
    return ".".join(str(step) for step in case[1])


@pytest.mark.parametrize(("mutate", "path", "message"), BROKEN, ids=map(_broken_id, BROKEN))
def test_broken_files_are_refused_naming_the_field(tmp_path, mutate, path, message):
    data = example_dict()
    mutate(data)
    with pytest.raises(SchemaViolation) as info:
        validate(data)
    assert info.value.path == path
    assert "\n" not in str(info.value)
    file = tmp_path / "bad.fabric.json"
    file.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        load(file)
    text = str(info.value)
    assert text.startswith(f"{file}: {message}")
    assert "\n" not in text and "data." not in text and "anyOf" not in text


@needs_reference
@pytest.mark.parametrize(("mutate", "path", "message"), BROKEN, ids=map(_broken_id, BROKEN))
def test_reference_validator_finds_the_same_place(mutate, path, message):
    data = example_dict()
    mutate(data)
    places = set()
    for err in reference_errors(data):
        places.add(tuple(err.absolute_path))
        # Missing and unknown keys are reported at their object by jsonschema.
        if err.validator in ("required", "additionalProperties"):
            places.add((*err.absolute_path, path[-1]))
    assert path in places


def test_loader_checks_every_file_with_the_schema(monkeypatch):
    # Through `fabric_columns.validate`: the schema for all but the sections' items,
    # checked column by column (`tests/io/test_fabric_columns.py`: the same verdicts).
    seen = []
    real = fabric_columns.validate
    # (A copy: the loader gives the parsed items to the graph once checked.)
    spy = lambda data: seen.append(json.loads(json.dumps(data))) or real(data)  # noqa: E731
    monkeypatch.setattr(fabric_columns, "validate", spy)
    loads(EXAMPLE_TEXT)
    assert seen == [json.loads(EXAMPLE_TEXT)]


# --------------------------------------------------------------------------- the page


def test_file_format_page_is_generated_from_the_schema():
    text = DOC.read_text(encoding="utf-8")
    assert schema_doc.render_doc(text) == text, "run: python tools/schema_doc.py"


def test_file_format_page_documents_every_field():
    text = DOC.read_text(encoding="utf-8")
    for where, _ in _subschemas(schema(), "$"):
        name = where.rsplit(".", 1)[-1].rsplit("/", 1)[-1]
        if name != "*":
            assert f"`{name}`" in text or f"### {name}" in text, where

"""Shared by the schema tests (`test_schema.py`, `test_schema_fuzz.py`): the reference
validator (jsonschema, when installed), the file-format page's tool and its example
design."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from designer.io.fabric_json import dumps
from designer.io.fabric_schema import schema

try:  # the reference implementation, to check the schema and cross-check fastjsonschema
    import jsonschema
except ImportError:  # pragma: no cover - not a dependency of the app
    jsonschema = None

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "file-format.md"
needs_reference = pytest.mark.skipif(
    jsonschema is None, reason="the reference validator (jsonschema) is not installed"
)


def _load_tool():
    spec = importlib.util.spec_from_file_location("schema_doc", ROOT / "tools" / "schema_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


schema_doc = _load_tool()


def reference_errors(data: Any) -> list:
    """Every violation the reference validator finds (empty: valid)."""
    return list(jsonschema.Draft7Validator(schema()).iter_errors(data))


EXAMPLE_TEXT = dumps(schema_doc.example_design())


def example_dict() -> dict:
    """The page's example design as parsed JSON: small, valid, every section used."""
    return json.loads(EXAMPLE_TEXT)


def _at(*path_and_value):
    *path, value = path_and_value

    def mutate(data):
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = value

    return mutate

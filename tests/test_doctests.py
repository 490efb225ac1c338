"""The examples in the pure layers' docstrings (model, solver, io, studies) run and
print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PURE = ("model", "solver", "io", "studies")


def _modules() -> list[str]:
    names = []
    for layer in PURE:
        package = importlib.import_module(f"designer.{layer}")
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return sorted(names)


MODULES = _modules()


def test_the_pure_layers_have_examples():
    # A walk that found nothing (a moved package) would pass every case below vacuously.
    assert len(MODULES) > 40
    examples = sum(len(test.examples) for m in MODULES
                   for test in doctest.DocTestFinder().find(importlib.import_module(m)))
    assert examples > 100


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"

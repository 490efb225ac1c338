"""The measured data the accuracy tests and benchmarks read lives in this repository."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "resources" / "reference"


@pytest.mark.parametrize("name", ["measured-allreduce.json", "unseen-blackwell.json"])
def test_reference_file_is_in_the_clone_and_every_case_has_a_source(name):
    path = REFERENCE / name
    assert path.is_file(), f"{path} is missing: the accuracy checks would skip in a clone"
    cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
    assert cases
    unsourced = [c["id"] for c in cases if "note" not in c and not c.get("source")]
    assert not unsourced, f"cases without a source in {name}: {unsourced}"


def test_benchmarks_and_tests_read_no_file_outside_the_clone():
    offenders = []
    for folder in ("benchmarks", "tests", "designer", "tools"):
        for py in (ROOT / folder).rglob("*.py"):
            text = py.read_text(encoding="utf-8")
            if "shared/reference" in text and py.name != Path(__file__).name:
                offenders.append(str(py.relative_to(ROOT)))
    assert not offenders, offenders

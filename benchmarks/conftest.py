"""pytest settings for ``benchmarks/harness.py``: its history lives beside it."""

from pathlib import Path

HISTORY = Path(__file__).resolve().parent / ".history"


def pytest_configure(config):
    option = config.option
    if getattr(option, "benchmark_storage", None) in (None, "file://./.benchmarks"):
        option.benchmark_storage = f"file://{HISTORY}"

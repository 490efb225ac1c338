"""Temporary probe case for the scale harness (replaced by the load/save cases)."""

from scale import Case, Measure, design, fabric_designer, timed_child


def _info_16k(workdir):
    path = design(workdir, "superpod-16k")
    seconds, rss, done = timed_child([*fabric_designer(), "info", str(path)])
    return Measure(seconds, rss, f"exit {done.returncode}")


CASES = [
    Case("load-16k", "load 16,376-GPU SuperPOD (CLI info, whole process)", 1.0, None, _info_16k)
]

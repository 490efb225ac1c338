"""Parsing the text of a design file: fast when that is safe, strict always.

The strict way is two walks of the text: the pre-scan that enforces the limits before
anything big is built (`designer.io.fabric_limits.prescan`), then the standard library's
parser with hooks that refuse duplicate keys and NaN (`designer.io.fabric_read.
parse_json`).  Both are Python per item: about 9 us an item, 14 s for a file at the
limits.  orjson parses the same text in about 1 us an item, but it must not change
what a file means or what a bad file is told, so it is used only when:

- the text cannot build more than the limits allow: at most `MAX_FAST_OBJECTS` objects
  and `MAX_FAST_COMMAS` commas (counted at C speed), which bounds what a full parse
  holds (a file of a million ``{}`` is pre-scanned first, as always);
- it parses (anything orjson refuses, bad JSON or NaN or a lone surrogate, goes the
  strict way, whose message names it);
- it has no ``\\u`` escape, no number orjson would read differently (an integer beyond
  64 bits becomes a float there: no run of 20 digits) and no duplicate key: each ``:``
  of the text is a key's or sits in a string, and orjson writes the parsed value back
  with as many, unless a duplicate key was dropped.

Then `fabric_limits.check_parsed` applies the pre-scan's checks to the parsed value, in
the same order with the same messages.  Otherwise the strict way runs.

Example
-------
>>> parse('{"format": "fabric-designer", "a": 1, "a": 2}')
Traceback (most recent call last):
...
designer.io.fabric_read.Invalid: ('JSON', "duplicate key 'a' in an object")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from designer.collector import collector_paused
from designer.io.fabric_limits import LIMITS, check_parsed, prescan
from designer.io.fabric_read import parse_json

try:
    import orjson
except ImportError:  # the strict way alone, slower on big designs
    orjson = None

__all__ = ["MAX_FAST_COMMAS", "MAX_FAST_OBJECTS", "parse"]

#: Objects and commas a text may hold to be parsed whole before its limits are checked:
#: the limits' items (a node has at most 9 fields), and some room for the rest.
MAX_FAST_OBJECTS = sum(LIMITS.values()) + 10_000
MAX_FAST_COMMAS = 9 * LIMITS["nodes"] + 7 * LIMITS["links"] + 4 * LIMITS["groups"] + 10_000
#: orjson reads an integer beyond 64 bits as a float; the standard parser as an int.
_LARGEST_EXACT = 2.0**63


def parse(text: str) -> Any:
    """The JSON value of ``text`` (a whole design file), its limits checked.

    Raises
    ------
    Invalid
        As `fabric_limits.prescan` and `fabric_read.parse_json` say it.
    """
    with collector_paused():  # a dict per item, in bulk (`designer.collector`)
        data = _fast(text)
        if data is not _STRICT:
            check_parsed(data)
            return data
    prescan(text)
    with collector_paused():
        return parse_json(text)


_STRICT = object()


def _fast(text: str) -> Any:
    """orjson's value of ``text`` when it is certainly the strict parser's; else
    `_STRICT`."""
    if orjson is None or "\\u" in text:
        return _STRICT
    if text.count("{") > MAX_FAST_OBJECTS or text.count(",") > MAX_FAST_COMMAS:
        return _STRICT
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _STRICT
    raw = text.encode("utf-8", "surrogatepass")
    # A run of 20 digits may be an integer orjson reads as a float (2**64 has 20).
    if _has_digit_run(raw, 20):
        return _STRICT
    # orjson writes each key with one colon and every colon of a string as it is: as
    # many colons as the text has unless a duplicate key was dropped.
    if orjson.dumps(data).count(b":") != raw.count(b":"):
        return _STRICT
    return data


def _has_digit_run(raw: bytes, n: int) -> bool:
    """Whether ``raw`` holds ``n`` ASCII digits in a row (numpy: a run of 2k digits is
    where a run of k starts and another k places on, doubling up to ``n``).

    >>> _has_digit_run(b"a123456b", 6), _has_digit_run(b"a12345b", 6)
    (True, False)
    """
    run = (np.frombuffer(raw, dtype=np.uint8) - np.uint8(48)) < 10  # '0'..'9'
    k = 1  # run[i]: a run of k digits starts at i
    while 2 * k <= n and len(run):
        run = run[:-k] & run[k:]
        k *= 2
    if k < n and len(run):
        run = run[: -(n - k)] & run[n - k :]  # k < n < 2k: two overlapping runs of k
    return bool(len(run) and run.any())

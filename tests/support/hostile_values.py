"""Values another program may write where a field belongs, for the fuzz of every decoder of other frameworks'
data (tests/unit/test_hostile_fields.py) and of the readers on the real brokers
(tests/frameworks/test_hostile_registries.py), and the strict JSON reader their output must satisfy."""

from __future__ import annotations

import json
from typing import Any

DIGITS_401 = int("9" * 401)
HOSTILE: list[Any] = [
    None,
    "",
    b"",
    " ",
    "text",
    "\x1b]0;owned\x07",
    b"\xff\xfe\xc3\x28",
    [],
    [1, "a", None],
    {},
    {"a": {"b": [1]}},
    True,
    0,
    -1,
    -1.5,
    2**63,
    2**64 + 1,
    10**400,
    DIGITS_401,
    -DIGITS_401,
    str(DIGITS_401),
    "-" + str(DIGITS_401),
    1e308,
    -1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-23:59",
    "x" * 10_000,
]


def strict_json(text: str | bytes) -> Any:
    """``text`` parsed as strict JSON: NaN and Infinity, which Python writes and reads, are no JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def as_json_text(value: Any) -> str:
    """``value`` inside a JSON document as another program could write it: NaN and Infinity as Python
    writes them, bytes as the text they would be."""
    return json.dumps(value, default=lambda b: b.decode("latin-1"))


def as_stored(value: Any) -> bytes | None:
    """``value`` as it can reach a Redis hash field or list (which hold bytes): ``None`` for an absent field,
    lists and objects as JSON, ``nan``/``inf`` as Python and Ruby write them."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, list | dict):
        return as_json_text(value).encode()
    return (repr(value) if isinstance(value, float) else str(value)).encode()

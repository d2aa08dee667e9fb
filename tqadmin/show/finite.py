"""A number that can be shown: finite, or ``None``. The one check every face's numbers pass before they are
kept, printed or served.

Figures come partly from other programs (a Sidekiq job's ``enqueued_at`` of 401 digits, an ``-Infinity``
that Python's JSON reader accepts). Python's ``json.dumps`` writes ``NaN`` and ``Infinity``, which no strict
JSON reader accepts; Prometheus would serve them as ``+Inf``; ``int()``, ``round()`` and
``datetime.fromtimestamp`` raise on them; and an integer too large for a float raises ``OverflowError`` in
any arithmetic with one. So a number is :func:`finite` or it is no figure at all (``None``, shown as "-"),
and a document is passed through :func:`finite_json` before it is printed.
"""

from __future__ import annotations

import math
from typing import Any


def finite(value: object) -> float | None:
    """``value`` when it is a number a float can hold and that number is finite (an ``int`` stays an
    ``int``); ``None`` for NaN, the infinities, an integer past a float's range, a bool or a non-number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        as_float = float(value)
    except OverflowError:  # an integer past 1.8e308
        return None
    return value if math.isfinite(as_float) else None


def finite_json(document: Any) -> Any:
    """``document`` (dicts, lists and tuples of plain values) with every number that is not :func:`finite`
    replaced by ``None``: what ``json.dumps(..., allow_nan=False)`` then writes as valid JSON. Values of
    other types are left as they are (a ``default=`` of the caller's shows them)."""
    if isinstance(document, dict):
        return {key: finite_json(value) for key, value in document.items()}
    if isinstance(document, list | tuple):
        return [finite_json(value) for value in document]
    if isinstance(document, float) or (isinstance(document, int) and not isinstance(document, bool)):
        return finite(document)
    return document

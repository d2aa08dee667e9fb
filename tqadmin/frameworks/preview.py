"""A task's arguments as one short, safe line: enough to tell jobs apart, never enough to flood a screen.

Values are shown as JSON (strings quoted, so ``"1"`` and ``1`` differ); anything a terminal could act on
(control characters, bidirectional overrides) is escaped. The line is built piece by piece and stops at
:data:`MAX_PREVIEW_CHARS`, so a list of a million arguments costs as much as a short one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from tqadmin.show.broker_text import escaped

MAX_PREVIEW_CHARS: Final = 120
ELLIPSIS: Final = "…"


def call_preview(args: Any, kwargs: Any = None) -> str | None:
    """``2, 3, user="ann"`` for positional ``args`` (a list) and keyword ``kwargs`` (an object)."""
    pieces: list[Iterable[str]] = []
    if isinstance(args, list | tuple):
        pieces.append(_json(item) for item in args)
    if isinstance(kwargs, Mapping):
        pieces.append(f"{key}={_json(value)}" for key, value in kwargs.items())
    if not pieces:
        return None
    return _bounded(part for group in pieces for part in group)


def text_preview(text: str) -> str:
    """Arguments a framework already wrote out as text (a ``repr``): bounded and escaped."""
    return _bounded([text])


def _json(value: Any) -> str:
    if isinstance(value, str) and len(value) > MAX_PREVIEW_CHARS:
        value = value[:MAX_PREVIEW_CHARS]  # the rest could never be shown
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return "?"


def _bounded(parts: Iterable[str]) -> str:
    shown = ""
    for part in parts:
        shown = f"{shown}, {part}" if shown else part
        if len(shown) > MAX_PREVIEW_CHARS:
            return escaped(shown[:MAX_PREVIEW_CHARS]) + ELLIPSIS
    return escaped(shown)

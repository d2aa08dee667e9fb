"""The one reading of a message body as a job object, for both plugin faces and the worker.

Bodies come from anyone who can publish, so reading one must never raise anything but
:class:`MalformedJob`, whatever it holds: bytes that are not UTF-8, NaN, JSON nested past the interpreter's
recursion limit (``json.loads`` raises ``RecursionError`` there, which escaped the readers that caught only
``ValueError``: inside pika's callback it dropped the connection, and the message came back for ever). A body
is checked in the cheapest order: size first (before any parsing), then UTF-8, then JSON with NaN and
Infinity refused, then nesting depth, then that it is an object.

The worker dead-letters a refusal with its ``reason``; the admin face (ids, ``--filter``) treats it as a
message that is no job. :func:`load_json` is the same guarded parse for JSON a plugin stores beside a body
(packed headers), so that no field of a message can raise either.
"""

from __future__ import annotations

import json
from typing import Any, Literal

DEFAULT_MAX_BYTES = 1_048_576
DEFAULT_MAX_DEPTH = 32

Reason = Literal["malformed", "too_large"]


class MalformedJob(ValueError):
    """A body that cannot be a job; ``reason`` is the ``x-tq-reason`` it is dead-lettered with."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason: Reason = reason


def load_json(data: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH, constants: bool = True) -> Any:
    """``data`` as a JSON value no deeper than ``max_depth``, or :class:`ValueError` saying why not ("is not
    JSON: ...", "nests deeper than ..."), for any content: never ``RecursionError``. ``constants=False``
    refuses NaN and Infinity."""
    too_deep = f"nests deeper than {max_depth} levels"
    try:
        if constants:
            value = json.loads(data)
        elif isinstance(data, str) and not data.startswith("\ufeff"):
            value = _STRICT.decode(data)  # what json.loads does with a str, without a decoder per call
        else:
            value = json.loads(data, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(too_deep) from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise ValueError(f"is not JSON: {exc}") from None
    if _may_nest_deeper(data, max_depth) and _depth(value, max_depth) > max_depth:
        raise ValueError(too_deep)
    return value


def job_object(
    body: bytes, *, max_bytes: int | None = None, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """``body`` as a JSON object, or :class:`MalformedJob` saying why it cannot be a job's. ``max_bytes``
    is the worker's ``--max-payload-bytes`` (``None``: any size, as the admin face reads what is there)."""
    if max_bytes is not None and len(body) > max_bytes:
        raise MalformedJob("too_large", f"body is {len(body)} bytes, over the {max_bytes}-byte limit")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJob("malformed", f"body is not UTF-8 (byte {exc.start})") from None
    try:
        data = load_json(text, max_depth=max_depth, constants=False)
    except ValueError as exc:
        raise MalformedJob("malformed", f"body {exc}") from None
    if not isinstance(data, dict):
        raise MalformedJob("malformed", f"body is a JSON {type(data).__name__}, not an object")
    return data


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_STRICT = json.JSONDecoder(parse_constant=_refuse_constant)


def _may_nest_deeper(data: bytes | str, limit: int) -> bool:
    """Whether JSON text ``data`` can nest deeper than ``limit`` at all: each level past the first opens a
    bracket, so fewer than ``limit`` of them (in strings too) settle it without walking the value, as for
    nearly every job. Only text is counted; bytes (UTF-16 or 32 maybe) are always walked."""
    return not isinstance(data, str) or data.count("{") + data.count("[") >= limit


def _depth(value: Any, limit: int) -> int:
    """Nesting depth, iterative and cut off past ``limit`` so a hostile body cannot exhaust the stack."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest

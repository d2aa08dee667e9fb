"""``--filter EXPR``: match messages on the job's fields and on headers.

``task_type=resize_image,reason=max_retries,error~Timeout`` is three terms joined by AND. ``=`` is equality
of the value's text, ``~`` a case-insensitive substring, ``!=`` and ``!~`` their negations. ``reason``,
``attempts``, ``original_queue`` and ``replays`` are short for the ``x-tq-*`` headers. ``task_type``, ``id``,
``error`` and ``framework`` mean what :mod:`tqadmin.frameworks` reads, so they select Celery, Dramatiq, RQ and
Sidekiq jobs by their own task names, ids and errors as they select ours (``error`` is ``x-tq-error`` first).
Any other name is looked up in the job body first, then in the headers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tqadmin.errors import UsageError
from tqadmin.frameworks import JobSummary, summarise
from tqadmin.plugin.models import Message

ALIASES = {
    "reason": "x-tq-reason",
    "attempts": "x-tq-attempts",
    "original_queue": "x-tq-original-queue",
    "replays": "x-tq-replays",
}
SUMMARY_FIELDS: dict[str, Callable[[JobSummary], str | None]] = {
    "task_type": lambda summary: summary.task,
    "id": lambda summary: summary.id,
    "error": lambda summary: summary.error,
    "framework": lambda summary: summary.framework,
}
_TERM = re.compile(r"^\s*(?P<field>[A-Za-z0-9_.\-]+)\s*(?P<op>!=|!~|=|~)\s*(?P<value>.*?)\s*$")


@dataclass(frozen=True, slots=True)
class Term:
    field: str
    op: str
    value: str

    def matches(self, message: Message, job: dict[str, Any] | None, summary: JobSummary | None) -> bool:
        found = lookup(self.field, message, job, summary)
        text = as_text(found)
        if self.op in ("=", "!="):
            hit = found is not None and text == self.value
        else:
            hit = found is not None and self.value.lower() in text.lower()
        return hit if not self.op.startswith("!") else not hit


def lookup(field: str, message: Message, job: dict[str, Any] | None, summary: JobSummary | None) -> Any:
    """The value of ``field`` for this message: an alias's header, what its framework says (``summary``,
    given when a term needs it), a job field, or a header."""
    if field in ALIASES:
        return message.headers.get(ALIASES[field])
    if summary is not None and field in SUMMARY_FIELDS and (value := SUMMARY_FIELDS[field](summary)):
        return value
    if job is not None and field in job:
        return job[field]
    return message.headers.get(field)


def as_text(value: Any) -> str:
    """A value as the user writes it in a filter: JSON's ``true``, a binary header's text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def parse_filter(expression: str | None) -> Callable[[Message], bool]:
    """Compile ``expression`` into a predicate; ``None`` or empty matches everything."""
    if not expression or not expression.strip():
        return lambda _message: True
    terms = []
    for raw in expression.split(","):
        match = _TERM.match(raw)
        if match is None:
            raise UsageError(
                f"bad filter term {raw.strip()!r}: write FIELD=VALUE, FIELD~TEXT, FIELD!=VALUE or FIELD!~TEXT"
                " joined by commas (for example task_type=resize_image,error~Timeout)"
            )
        terms.append(Term(match["field"], match["op"], match["value"]))

    reads_framework = any(term.field in SUMMARY_FIELDS for term in terms)

    def predicate(message: Message) -> bool:
        job = message.job()
        summary = summarise(message) if reads_framework else None
        return all(term.matches(message, job, summary) for term in terms)

    return predicate

"""Why dead letters died, grouped: by one field for ``tqadmin dead-letters``, by all three for the dashboard.

A group's key is read once for both faces (:func:`group_key`): the ``x-tq-*`` headers a tqadmin worker
writes, what the message's framework recorded (:mod:`tqadmin.frameworks`), and otherwise what the broker
recorded of its own dead-lettering (a plugin's :meth:`~tqadmin.plugin.base.BrokerAdmin.deaths`), so a
message only the broker dead-lettered shows the broker's reason in both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tqadmin.admin.filters import as_text
from tqadmin.admin.scan import Deaths, no_deaths, scan
from tqadmin.frameworks import TQADMIN, UNKNOWN, JobSummary, summarise
from tqadmin.plugin.base import TransferSession
from tqadmin.plugin.models import HEADER_ERROR, HEADER_REASON, Message

GROUP_FIELDS = ("reason", "error", "task_type")
ERROR_PREFIX = 60


def group_key(message: Message, by: str, deaths: Deaths = no_deaths) -> str:
    """Why a message died, by ``reason``, ``error`` or ``task_type``; what the broker recorded (its own
    dead-lettering, as the plugin reads it) where no tqadmin worker wrote the ``x-tq-*`` headers."""
    summary = summarise(message)
    if by == "task_type":
        return summary.task or "(not a job)"
    value = message.headers.get(HEADER_REASON if by == "reason" else HEADER_ERROR)
    if value is not None:
        return as_text(value)
    if by == "error" and summary.error is not None:  # what its framework recorded
        return summary.error
    latest = next(iter(deaths(message)), None)
    if latest is not None:
        reason = latest.reason or "unknown"
        return f"{reason} (by the broker)" if by == "reason" else f"dead-lettered by the broker: {reason}"
    if by == "reason" and summary.framework not in (TQADMIN, UNKNOWN):  # RQ and Sidekiq keep the error only
        return f"(not recorded by {summary.framework}: try --group-by error)"
    return "(unknown)"


def dead_letter_groups(
    session: TransferSession, by: str, deaths: Deaths = no_deaths
) -> list[tuple[str, int]]:
    """Counts per group by one field, largest first; the queue is left as it was."""
    with session:
        counts = Counter(group_key(d.message, by, deaths) for d in scan(session))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True, slots=True)
class DeadGroup:
    """Dead letters alike in reason, error (its first line) and task type; ``terms`` select them with
    ``--filter`` (:meth:`filter_expression`)."""

    reason: str
    error: str
    task_type: str
    count: int
    terms: tuple[str, ...] = ()

    def filter_expression(self) -> str:
        """Selects this group for replay/move/export, as far as a filter can: on the job's own reason,
        error and task type. Filter terms are comma-separated, so the error is matched by its text up to
        the first comma (``~``, a substring); what only the broker recorded selects nothing, and the dry
        run shows the count."""
        return ",".join(self.terms)


def group_dead_letters(messages: Iterable[Message], deaths: Deaths = no_deaths) -> list[DeadGroup]:
    """Largest group first, by all three fields; errors compared by their first line so stack details do
    not split groups."""
    counts: Counter[tuple[str, str, str, tuple[str, ...]]] = Counter()
    for message in messages:
        error = group_key(message, "error", deaths)
        key = (
            group_key(message, "reason", deaths),
            (error.splitlines() or [""])[0],
            group_key(message, "task_type"),
            _terms(message, summarise(message)),
        )
        counts[key] += 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [DeadGroup(reason, error, task, n, terms) for (reason, error, task, terms), n in ordered]


def _terms(message: Message, summary: JobSummary) -> tuple[str, ...]:
    terms = []
    reason = message.headers.get(HEADER_REASON)
    if reason is not None:
        terms.append(f"reason={as_text(reason)}")
    error = message.headers.get(HEADER_ERROR)
    error_text = as_text(error) if error is not None else summary.error
    if error_text:
        first = (error_text.splitlines() or [""])[0]
        terms.append(f"error~{first.split(',')[0][:ERROR_PREFIX].strip()}")
    if summary.task:
        terms.append(f"task_type={summary.task}")
    return tuple(terms)

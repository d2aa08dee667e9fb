"""Dead letters grouped by why they died, and the ``--filter`` expression that selects one group."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tqadmin.frameworks import summarise
from tqadmin.plugin.models import HEADER_REASON, Message

ERROR_PREFIX = 60


@dataclass(frozen=True, slots=True)
class DeadGroup:
    reason: str
    error: str
    task_type: str
    count: int

    def filter_expression(self) -> str:
        """Selects this group for replay/move/export. Filter terms are comma-separated, so the error is
        matched by its text up to the first comma (``~``, a substring), and the dry run shows the count."""
        terms = [f"reason={self.reason}"] if self.reason != "-" else []
        if self.error != "-":
            terms.append(f"error~{self.error.split(',')[0][:ERROR_PREFIX].strip()}")
        if self.task_type != "-":
            terms.append(f"task_type={self.task_type}")
        return ",".join(terms)


def group_dead_letters(messages: Iterable[Message]) -> list[DeadGroup]:
    """Largest group first; errors compared by their first line so stack details do not split groups. The
    error and task type are what the message's framework records (:mod:`tqadmin.frameworks`), so Celery and
    Dramatiq dead letters group by their own task names, as ``--filter`` selects them."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for message in messages:
        summary = summarise(message)
        reason = str(message.headers.get(HEADER_REASON) or "-")
        error = (summary.error or "-").splitlines()[0]
        counts[(reason, error, summary.task or "-")] += 1
    return [DeadGroup(r, e, t, n) for (r, e, t), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]

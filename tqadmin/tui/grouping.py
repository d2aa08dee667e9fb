"""Dead letters grouped by why they died, and the ``--filter`` expression that selects one group."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tqadmin.plugin.models import HEADER_ERROR, HEADER_REASON, Message

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
    """Largest group first; errors compared by their first line so stack details do not split groups."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for message in messages:
        job = message.job() or {}
        reason = str(message.headers.get(HEADER_REASON) or "-")
        error = str(message.headers.get(HEADER_ERROR) or "-").splitlines()[0] or "-"
        task_type = job.get("task_type")
        counts[(reason, error, task_type if isinstance(task_type, str) else "-")] += 1
    return [DeadGroup(r, e, t, n) for (r, e, t), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]

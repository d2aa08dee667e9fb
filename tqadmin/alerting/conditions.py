"""The alert conditions of a queue and of a task type, as the dashboard evaluates them.

Four have a threshold from the profile (depth, oldest-message age, dead letters, the oldest dead letter's
age; a task type's failure rate over the telemetry window), four have none: ready messages that no consumer
takes, a queue whose workers are all dead, and a queue the read service judges ``stalled`` or ``degraded``
over the profile's ``stall_after_s`` (:mod:`tqadmin.reading.verdicts`). :mod:`tqadmin.alerting.rules` writes
the same conditions as PromQL; a test evaluates both on one scrape and expects the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tqadmin.alerting.figures import exact
from tqadmin.config import Thresholds
from tqadmin.plugin.models import QueueStats
from tqadmin.telemetry.verdict import DEGRADED as DEGRADED_VERDICT
from tqadmin.telemetry.verdict import STALLED as STALLED_VERDICT
from tqadmin.telemetry.verdict import QueueVerdict

DEPTH = "TqadminQueueDepth"
OLDEST = "TqadminQueueOldestMessage"
DEAD_LETTERS = "TqadminQueueDeadLetters"
NO_CONSUMER = "TqadminQueueNoConsumer"
WORKERS_DEAD = "TqadminQueueWorkersDead"
FAILURE_RATE = "TqadminTaskFailureRate"
DLQ_AGE = "TqadminQueueDeadLetterAge"
STALLED = "TqadminQueueStalled"
DEGRADED = "TqadminQueueDegraded"
WEDGED = "TqadminWorkersWedged"


@dataclass(frozen=True, slots=True)
class QueueContext:
    """What a queue's own figures do not say: whether it is a dead-letter queue (nobody is meant to consume
    it), how many workers listed it, live and dead, and its verdict (``None``: not judged)."""

    dead_letter_queue: bool = False
    live_workers: int = 0
    dead_workers: int = 0
    verdict: QueueVerdict | None = None


NO_CONTEXT = QueueContext()


def queue_alerts(
    queue: QueueStats, thresholds: Thresholds, context: QueueContext = NO_CONTEXT
) -> dict[str, str]:
    """Alert name -> a short phrase, for each condition the queue meets."""
    found: dict[str, str] = {}
    if thresholds.depth is not None and queue.messages >= thresholds.depth:
        found[DEPTH] = f"depth {queue.messages} ≥ {thresholds.depth}"
    age = queue.oldest_age_s
    if thresholds.oldest_age_s is not None and age is not None and age >= thresholds.oldest_age_s:
        found[OLDEST] = f"oldest {age:.0f}s ≥ {exact(thresholds.oldest_age_s)}s"
    dlq = queue.dlq_messages
    if thresholds.dlq_messages is not None and dlq is not None and dlq >= thresholds.dlq_messages:
        found[DEAD_LETTERS] = f"{dlq} dead-lettered"
    if not context.dead_letter_queue and queue.ready > 0 and queue.consumers == 0:
        found[NO_CONSUMER] = f"{queue.ready} ready, no consumer"
    if context.live_workers == 0 and context.dead_workers > 0:
        found[WORKERS_DEAD] = f"its {context.dead_workers} worker(s) are all dead"
    dlq_age, limit = queue.dlq_oldest_age_s, thresholds.dlq_oldest_age_s
    if limit is not None and dlq_age is not None and dlq_age >= limit:
        found[DLQ_AGE] = f"oldest dead letter {dlq_age:.0f}s ≥ {exact(limit)}s"
    verdict = context.verdict
    if verdict is not None and verdict.verdict in (STALLED_VERDICT, DEGRADED_VERDICT):
        found[STALLED if verdict.verdict == STALLED_VERDICT else DEGRADED] = (
            f"{verdict.verdict}: {verdict.reason}"
        )
    return found


def failure_rate_alert(failed: int, runs: int, thresholds: Thresholds) -> str | None:
    """The phrase when a task type's runs over the window failed at the threshold's rate or more."""
    if thresholds.failure_rate is None or runs <= 0 or failed / runs < thresholds.failure_rate:
        return None
    return f"{failed / runs:.0%} of {runs} runs failed"


def queue_contexts(
    queues: Iterable[QueueStats],
    workers: Iterable[tuple[Sequence[str], bool]],
    verdicts: Mapping[str, QueueVerdict] | None = None,
) -> dict[str, QueueContext]:
    """Each queue's context from a listing, the workers (the queues each serves, and whether it is alive)
    and the verdicts: the dead-letter queues are those another queue names as its own."""
    listed = list(queues)
    dead_letter_queues = {q.dlq for q in listed if q.dlq}
    live: dict[str, int] = {}
    dead: dict[str, int] = {}
    for served, alive in workers:
        for name in served:
            counts = live if alive else dead
            counts[name] = counts.get(name, 0) + 1
    return {
        q.name: QueueContext(
            q.name in dead_letter_queues,
            live.get(q.name, 0),
            dead.get(q.name, 0),
            (verdicts or {}).get(q.name),
        )
        for q in listed
    }

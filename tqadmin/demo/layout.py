"""Which queues the demo uses and which worker serves which queue.

One queue per task type reads best on the dashboard (a slow report queue grows on its own row), but each
worker consumes one queue, so with fewer workers than task types every type shares one queue
(``<prefix>.tasks``) and no queue is left without a consumer. The parts of a name are joined by what the
broker allows (``.`` by default, ``-`` on SQS: ``demo-images``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tqadmin.plugin.models import dlq_name

# task type -> the short queue name it gets when every type has its own queue
TASK_QUEUES: dict[str, str] = {
    "resize_image": "images",
    "send_email": "emails",
    "generate_report": "reports",
    "charge_card": "payments",
}
SHARED_QUEUE = "tasks"


@dataclass(frozen=True, slots=True)
class Layout:
    """Queues by task type, the queue of each worker process (index = worker number), how the broker
    names a queue's dead-letter queue, and what joins the prefix to a queue's own name."""

    prefix: str
    queue_of: dict[str, str]
    worker_queues: tuple[str, ...]
    dlq_name: Callable[[str], str] = dlq_name
    separator: str = "."

    @property
    def queues(self) -> tuple[str, ...]:
        """The work queues, each once, in task-type order."""
        return tuple(dict.fromkeys(self.queue_of.values()))

    @property
    def dead_letter_queues(self) -> tuple[str, ...]:
        return tuple(self.dlq_name(q) for q in self.queues)

    def owns(self, queue: str) -> bool:
        """Whether ``queue`` (a work, retry or dead-letter queue) belongs to this demo's prefix."""
        return queue.startswith(f"{self.prefix}{self.separator}")


def plan(
    prefix: str, workers: int, dlq_name: Callable[[str], str] | None = None, separator: str = "."
) -> Layout:
    """Spread ``workers`` over the queues: one queue per task type when there are enough workers."""
    if workers < 1:
        raise ValueError("the demo needs at least one worker")
    if workers >= len(TASK_QUEUES):
        queue_of = {task_type: f"{prefix}{separator}{short}" for task_type, short in TASK_QUEUES.items()}
    else:
        queue_of = dict.fromkeys(TASK_QUEUES, f"{prefix}{separator}{SHARED_QUEUE}")
    queues = tuple(dict.fromkeys(queue_of.values()))
    workers_queues = tuple(queues[i % len(queues)] for i in range(workers))
    if dlq_name is None:
        return Layout(prefix, queue_of, workers_queues, separator=separator)
    return Layout(prefix, queue_of, workers_queues, dlq_name, separator)

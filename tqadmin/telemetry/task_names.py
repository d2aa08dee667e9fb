"""What a task type may be called, and how many of them anything tqadmin keeps: the figures, written once.

A task type comes from a message body, and anyone who can publish writes bodies: a name of 900 KB, or 10,000
names made up one per job, would otherwise become a key in every worker's telemetry, a part of every
heartbeat snapshot (720 of them a worker in the store), a label on dozens of exporter series and a series in
the history. So every keeper holds to these figures:

- a ``task_type`` longer than :data:`MAX_TASK_TYPE_CHARS`, or an ``id`` longer than :data:`MAX_JOB_ID_CHARS`,
  is ``malformed`` (the worker dead-letters it, the
  publisher refuses it, ``@task`` refuses such a name, as it refuses a label's); other frameworks' task
  names are cut to it;
- a job no handler takes counts under :data:`UNKNOWN_TASK`, a body without a task type under
  :data:`MALFORMED_TASK`, never under the name the body claims (its dead letter keeps the body as it was);
- a worker's telemetry keeps at most :data:`MAX_TASK_TYPES` task types a queue, and so does a framework's
  event listener; the figures of the rest are added up under :data:`OTHER_TASKS`, and the names folded
  there are counted (up to :data:`MAX_FOLDED_COUNTED`);
- the exporter serves at most ``--max-queues`` task types (and :data:`MAX_TASK_TYPES` a framework) and the
  history records at most as many a profile, each folding or dropping the rest in name order.
"""

from __future__ import annotations

from typing import Final

MAX_TASK_TYPE_CHARS: Final = 200
"""The longest ``task_type`` a job may have, in characters."""
MAX_JOB_ID_CHARS: Final = 255
"""The longest job ``id``, in characters: an id is a store key, a part of every heartbeat's current jobs and
of log lines, so one of megabytes is no job's either (a UUID is 36; a cron tick's ``cron:<name>:<epoch>``)."""
MAX_TASK_TYPE_BYTES: Final = 4 * MAX_TASK_TYPE_CHARS
"""The longest task type in UTF-8 (four bytes a character at most): what a store must take as a name."""
MAX_TASK_TYPES: Final = 100
"""Task types a worker's telemetry (or a framework's event listener) keeps a queue; the rest fold."""
MAX_FOLDED_COUNTED: Final = 10_000
"""Names folded into :data:`OTHER_TASKS` that are counted one by one; past it the count stays there."""

UNKNOWN_TASK: Final = "(unknown)"
"""The task type of jobs no handler takes (dead-lettered ``unknown_task``)."""
MALFORMED_TASK: Final = "(malformed)"
"""The task type of bodies without a valid one (dead-lettered ``malformed`` or ``too_large``)."""
OTHER_TASKS: Final = "(other)"
"""The task type the figures of task types past a cap are added up under."""
LABELS: Final = frozenset({UNKNOWN_TASK, MALFORMED_TASK, OTHER_TASKS})
"""Task types that stand for many: always kept beside the capped names, never folded."""

"""Another framework's queue as tqadmin shows it: where its jobs are, and why tqadmin only reads it.

Each framework keeps its own bookkeeping beside its lists (kombu's global ``unacked`` hash, RQ's job hashes
and registries, Sidekiq's retry and dead sets), which a write from outside would corrupt: so every write is
refused with the reason (:data:`READ_ONLY`) and the framework's own tool for it (:attr:`Foreign.instead`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tqadmin.errors import QueueReadOnly

CELERY, RQ, SIDEKIQ, STREAM = "celery", "rq", "sidekiq", "stream"
READ_ONLY = {
    CELERY: "a Celery (kombu) queue: Celery's workers keep its unacked messages in kombu's own hash, so"
    " tqadmin only shows and peeks it",
    RQ: "an RQ queue: RQ keeps each job in a hash with registries beside it, so tqadmin only shows and"
    " peeks it",
    SIDEKIQ: "a Sidekiq queue: Sidekiq keeps its retries and dead jobs in its own sets, so tqadmin only shows"
    " and peeks it",
    STREAM: "a stream another application reads with its own consumer groups: tqadmin only shows and"
    " peeks it",
}
SIDEKIQ_SET_API = {  # shown name -> (Sidekiq's API class, its Web UI tab, what sends a job back)
    "sidekiq:retry": ("RetrySet", "Retries", "retry"),
    "sidekiq:scheduled": ("ScheduledSet", "Scheduled", "add_to_queue"),
    "sidekiq:dead": ("DeadSet", "Dead", "retry"),
}


@dataclass(frozen=True, slots=True)
class Foreign:
    """One queue of another framework: the keys holding its jobs, oldest first (``newest_left``: lists the
    framework pushes on the left and pops on the right, so the oldest job is the last element)."""

    name: str
    kind: str
    keys: tuple[str, ...]
    key_type: str  # list | zset | stream
    newest_left: bool = False
    started: str | None = None
    scheduled: str | None = None
    workers: str | None = None
    dlq: str | None = None

    @property
    def read_only(self) -> str:
        return READ_ONLY[self.kind]

    def refusal(self) -> QueueReadOnly:
        return QueueReadOnly(self.name, f"{self.read_only}; {self.instead}")

    @property
    def instead(self) -> str:
        """The framework's own tool for what tqadmin refuses to write here, named for this queue."""
        if self.kind == CELERY:
            queue = self.keys[0].removeprefix((self.started or "").removesuffix("unacked"))
            return (
                f"use Celery's own tools: `celery -A APP purge -Q {queue}` empties it, `celery -A APP control"
                " revoke TASK_ID` drops one task, `app.send_task(NAME, args, queue=...)` sends one again"
            )
        if self.kind == RQ:
            queue = self.keys[0].removeprefix("rq:failed:").removeprefix("rq:queue:")
            resend = (
                f"`rq requeue --queue {queue} JOB_ID` (or `--all`) sends failed jobs back to {queue}"
                if self.key_type == "zset"
                else f"`rq empty {queue}` empties it"
            )
            return f"use RQ's own tools: {resend}, `Job.fetch(JOB_ID, connection=redis).delete()` deletes one"
        if self.kind == SIDEKIQ and self.name in SIDEKIQ_SET_API:
            api, tab, resend = SIDEKIQ_SET_API[self.name]
            return (
                f"use Sidekiq's Web UI ({tab} tab) or its API: `Sidekiq::{api}.new.find_job(JID).{resend}`"
                " (or `.delete`)"
            )
        if self.kind == SIDEKIQ:
            queue = self.keys[0].removeprefix("queue:")
            return (
                f"use Sidekiq's Web UI (Queues tab) or its API: `Sidekiq::Queue.new({json.dumps(queue)})"
                ".find_job(JID).delete` (`.clear` empties it)"
            )
        return "write through the application that owns its consumer groups (its own XACK and XDEL)"

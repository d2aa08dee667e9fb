"""What tqadmin reads out of one message, whatever framework wrote it: a value, never the message itself."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

TQADMIN = "tqadmin"
CELERY = "celery"
DRAMATIQ = "dramatiq"
RQ = "rq"
SIDEKIQ = "sidekiq"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class JobSummary:
    """One message as its framework sees it. ``None`` means the framework does not record that fact here.

    ``id`` is the id the framework (and its users) know the job by: what ``delete --id`` and ``--filter id=``
    take. ``args`` is a short preview with unprintable characters escaped, never the arguments themselves.
    ``sent_to`` is the queue the framework addressed the job to, where it writes that into the message (a
    dead letter's way home when the broker recorded none).
    """

    framework: str
    id: str | None = None
    task: str | None = None
    args: str | None = None
    retries: int | None = None
    error: str | None = None
    sent_at: float | None = None
    sent_to: str | None = None

    @property
    def recognised(self) -> bool:
        return self.framework != UNKNOWN

    def to_json(self) -> dict[str, Any]:
        """The facts as ``--json`` keys; ``sent_at`` in ISO 8601 UTC like every time tqadmin prints."""
        return {
            "framework": self.framework,
            "task": self.task,
            "args": self.args,
            "retries": self.retries,
            "error": self.error,
            "sent_at": iso_utc(self.sent_at),
            "sent_to": self.sent_to,
        }


def iso_utc(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    moment = datetime.datetime.fromtimestamp(epoch_s, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""What a worker says of its progress with each heartbeat, apart from the heartbeat itself.

A heartbeat only says the process lives: its monitor thread writes it however stuck the job threads or the
intake loop are. So the heartbeat carries, beside it, the moments progress last happened: the intake loop's
last turn (the consumer's I/O loop, reported by the broker plugin), the last run that ended, and per job
thread the job it runs and since when. :mod:`tqadmin.telemetry.wedged` judges a worker from these.

Times are epoch seconds on the worker's clock, like ``heartbeat_at``; a reader measures ages against
``heartbeat_at`` plus the heartbeat's own age, so the two machines' clocks need not agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tqadmin.show.finite import finite

MAX_ID_CHARS = 200  # a job id comes from a message: clipped before it is kept


@dataclass(frozen=True, slots=True)
class BusyThread:
    """A job thread in a run: the job's id, its task type and when the run started."""

    job_id: str
    task_type: str
    since: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.job_id, "t": self.task_type, "since": self.since}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> BusyThread:
        since = _time(document["since"])
        if since is None:
            raise ValueError("a busy thread's since is no time")
        return cls(str(document["id"])[:MAX_ID_CHARS], str(document["t"]), since)


@dataclass(frozen=True, slots=True)
class Progress:
    """``threads`` job threads, those in a run (``busy``), the intake loop's last turn and the last run's
    end (``None``: not yet, or a broker plugin that does not report its turns)."""

    threads: int
    busy: tuple[BusyThread, ...] = ()
    intake_turn_at: float | None = None
    last_completion_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "busy": [b.to_json() for b in self.busy],
            "intake_turn_at": self.intake_turn_at,
            "last_completion_at": self.last_completion_at,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Progress:
        return cls(
            threads=int(document["threads"]),
            busy=tuple(BusyThread.from_json(b) for b in document.get("busy", ())),
            intake_turn_at=_time(document.get("intake_turn_at")),
            last_completion_at=_time(document.get("last_completion_at")),
        )


def _time(value: Any) -> float | None:
    """A time as written (epoch seconds) or ``None``; anything else, NaN and the infinities included, is an
    unreadable heartbeat (the store's reader says so), never a figure that breaks the arithmetic."""
    if value is None:
        return None
    number = finite(value)
    if number is None:
        raise ValueError(f"{value!r} is no time")
    return float(number)


def progress_json(progress: Progress, now: float) -> dict[str, Any]:
    """``progress`` as the read commands print it: ages in seconds at ``now`` (the worker's clock at its
    last heartbeat plus that heartbeat's age), rounded to milliseconds."""

    def age(at: float | None) -> float | None:
        return None if at is None else round(max(now - at, 0.0), 3)

    return {
        "threads": progress.threads,
        "busy": [{"id": b.job_id, "task": b.task_type, "running_s": age(b.since)} for b in progress.busy],
        "intake_turn_age_s": age(progress.intake_turn_at),
        "last_completion_age_s": age(progress.last_completion_at),
    }

"""What a worker writes with every heartbeat: who it is, what it is doing, and its cumulative telemetry; and
what a store reads back of it for a window (:class:`Reading`, :class:`WorkerHistory`).

The readings are telemetry's own values, below the store that keeps them: the store returns them, the window
arithmetic (:mod:`tqadmin.telemetry.window`) takes them, and neither imports the other's floor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tqadmin.errors import BadResponse
from tqadmin.telemetry.counters import StatsKey, TaskStats, summed
from tqadmin.telemetry.progress import Progress

SNAPSHOT_VERSION = 1
DEAD_WORKER_KEEP_S = 3600.0
"""How long a worker that stopped beating is still listed (as dead) before it is forgotten: tqadmin's own
(the store's :class:`~tqadmin.store.completion.base.Retention`) and other frameworks' known only from their
events (Celery's), the same hour, so a week of rolling deploys does not list every pod that ever ran."""


@dataclass(frozen=True, slots=True)
class WorkerSnapshot:
    """One worker at one heartbeat. Times are epoch seconds (the worker's clock).

    ``stats`` values are not mutated once in a snapshot; treat the snapshot as a value.
    """

    worker_id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    started_at: float
    heartbeat_at: float
    current_jobs: tuple[str, ...] = ()
    stats: Mapping[StatsKey, TaskStats] = field(default_factory=dict)
    store_round_trips: int = 0  # calls to the state store so far: claims, marks, renewals, heartbeats
    restarts: int = 0  # worker processes its supervisor started before this one (crashes, plugin faults)
    folded_task_types: int = 0  # task types recorded under "(other)", past the cap (Telemetry.folded)
    progress: Progress | None = None  # None: written by a worker that did not report it (an older version)
    watchdog_restarts: int = 0  # of the restarts, those its supervisor's watchdog made (intake stuck)

    @property
    def current_job(self) -> str | None:
        return self.current_jobs[0] if self.current_jobs else None

    def totals(self) -> TaskStats:
        """Every (queue, task type) added together."""
        return summed(self.stats.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "v": SNAPSHOT_VERSION,
            "id": self.worker_id,
            "host": self.host,
            "pid": self.pid,
            "queues": list(self.queues),
            "started_at": self.started_at,
            "heartbeat_at": self.heartbeat_at,
            "current_jobs": list(self.current_jobs),
            "tasks": [{"q": q, "t": t, **stats.to_json()} for (q, t), stats in self.stats.items()],
            "store_round_trips": self.store_round_trips,
            "restarts": self.restarts,
            "folded": self.folded_task_types,
            **({} if self.progress is None else {"progress": self.progress.to_json()}),
            "watchdog_restarts": self.watchdog_restarts,
        }

    def encode(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> WorkerSnapshot:
        return cls(
            worker_id=str(document["id"]),
            host=str(document.get("host", "")),
            pid=int(document.get("pid", 0)),
            queues=tuple(document.get("queues", ())),
            started_at=float(document.get("started_at", 0.0)),
            heartbeat_at=float(document.get("heartbeat_at", 0.0)),
            current_jobs=tuple(document.get("current_jobs", ())),
            stats={(str(e["q"]), str(e["t"])): TaskStats.from_json(e) for e in document.get("tasks", ())},
            store_round_trips=int(document.get("store_round_trips", 0)),
            restarts=int(document.get("restarts", 0)),
            folded_task_types=int(document.get("folded", 0)),
            progress=Progress.from_json(document["progress"]) if "progress" in document else None,
            watchdog_restarts=int(document.get("watchdog_restarts", 0)),
        )

    @classmethod
    def decode(cls, text: str | bytes) -> WorkerSnapshot:
        """Parse a stored snapshot; anything unreadable is the store's answer being wrong (exit 4)."""
        try:
            return cls.from_json(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BadResponse(
                f"a worker heartbeat in the state store is unreadable ({type(exc).__name__}: {exc}); "
                "was it written by another program or version?"
            ) from None


@dataclass(frozen=True, slots=True)
class Reading:
    """A snapshot and the store-clock time (epoch seconds) it was written at."""

    at_s: float
    snapshot: WorkerSnapshot


@dataclass(frozen=True, slots=True)
class WorkerHistory:
    """What a window needs of one worker: its latest reading and a baseline.

    ``baseline`` is the newest reading at or before the window's start, or, when there is none, the oldest
    one inside the window (None when the latest is the only reading).
    """

    latest: Reading
    baseline: Reading | None

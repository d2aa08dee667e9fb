"""What a worker is told to do: its queue, threads, window, retry policy, timeouts, leases and heartbeats.

One value for every room of the worker (:mod:`tqadmin.pipeline.worker`), so none of them is handed a piece
of it that could drift from what the others were given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tqadmin.pipeline.breaker import BreakRule
from tqadmin.pipeline.job import DEFAULT_MAX_BYTES
from tqadmin.pipeline.pausing import DEFAULT_RECHECK_S
from tqadmin.pipeline.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    queue: str
    concurrency: int = 4
    prefetch: int = 0  # 0: 8 x concurrency
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    job_timeout_s: float | None = 300.0
    lease_s: float = 30.0
    max_payload_bytes: int = DEFAULT_MAX_BYTES
    dedup: bool = True
    heartbeat_s: float = 2.0
    pause_recheck_s: float = DEFAULT_RECHECK_S  # the longest a set-aside job waits after a resume
    breaker: BreakRule | None = None  # --break-after / --break-for: the tasks' default (None: no breaker)

    @property
    def effective_prefetch(self) -> int:
        return self.prefetch or 8 * self.concurrency

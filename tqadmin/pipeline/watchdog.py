"""The supervisor's opt-in watchdog (``tqadmin worker --watchdog S``): a child whose intake loop has not
turned for S seconds is killed and goes through the crash path like any dead child.

The heartbeat cannot tell a stuck intake loop (the monitor thread writes it), and nothing inside the stuck
process can be trusted to act; the supervisor, another process, reads the child's :class:`~tqadmin.pipeline.
pulse.Pulse` and sends SIGKILL. What follows is the crash path of :func:`~tqadmin.pipeline.supervisor.
supervise`: the broker gives back every delivery the child held unacked, the supervisor gives up its claims
(the claim register), charging a crash to the runs under way, and a new child starts with backoff. So nothing
is acked that did not run; a job the child had finished but not acked runs again, absorbed by the completion
store. Each kill is logged and counted, and the next child's heartbeat carries the count
(``watchdog_restarts``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tqadmin.pipeline.pulse import Pulse


@dataclass(frozen=True, slots=True)
class Watchdog:
    """Watches ``pulse``: overdue once the intake loop has not turned for ``limit_s`` seconds."""

    pulse: Pulse
    limit_s: float

    def overdue(self) -> float | None:
        """Seconds since the last turn when past the limit; ``None`` while on time or before a first turn."""
        last = self.pulse.last()
        if last is None:
            return None
        quiet = time.monotonic() - last
        return quiet if quiet > self.limit_s else None

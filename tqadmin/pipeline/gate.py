"""Who may run beside whom in one worker process: any jobs together, except a suspect, which runs alone.

When a worker process dies, every claim it held expires and the store counts a crash against each of those
jobs: it cannot tell the job that killed the process from the ones running beside it. Left at that, an
innocent job that happened to share the process with a poison job twice more would be quarantined with it.
So a job with a crash on record runs alone: the process runs nothing else while it does, and a further crash
is charged to that job only. Jobs waiting to run beside a suspect hold no claim meanwhile, so they are
redelivered innocent if it kills the process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class SoloGate:
    """A readers-writer gate preferring the writer (a suspect), so a stream of jobs cannot starve it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._shared = 0
        self._solo = False
        self._solo_waiting = 0
        self._blocked = 0  # threads waiting in enter: only then does leave need to wake anyone

    def enter(self, *, solo: bool) -> None:
        with self._changed:
            if not solo:
                if self._solo or self._solo_waiting:
                    self._wait_until(lambda: not self._solo and not self._solo_waiting)
                self._shared += 1
                return
            self._solo_waiting += 1
            self._wait_until(lambda: not self._solo and not self._shared)
            self._solo_waiting -= 1
            self._solo = True

    def try_enter(self) -> bool:
        """Enter beside the others if no suspect runs or waits to; ``False`` (not entered) otherwise."""
        with self._changed:
            if self._solo or self._solo_waiting:
                return False
            self._shared += 1
            return True

    def _wait_until(self, ready: Callable[[], bool]) -> None:
        self._blocked += 1
        try:
            self._changed.wait_for(ready)
        finally:
            self._blocked -= 1

    def leave(self, *, solo: bool) -> None:
        with self._changed:
            if solo:
                self._solo = False
            else:
                self._shared -= 1
            if self._blocked:
                self._changed.notify_all()

"""The intake loop's pulse, in memory a worker process shares with its supervisor.

The worker process writes the time of each turn of its intake loop (``time.monotonic()``, one clock for every
process of the machine) into an anonymous ``mmap`` made before the fork, as the claim register is
(:mod:`tqadmin.pipeline.claim_register`); the supervisor's watchdog (:mod:`tqadmin.pipeline.watchdog`) reads
it without a system call or a lock, however stuck the child is. Zero means "not turned yet": a child is judged
from its first turn on, so one still waiting for its broker at start is never killed for it.
"""

from __future__ import annotations

import mmap
import struct
import time

_FORMAT = "d"


class Pulse:
    """Eight bytes of shared memory: the last turn, or 0.0 before the first."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, struct.calcsize(_FORMAT))  # MAP_SHARED: the forked child writes here

    def beat(self) -> None:
        """The intake loop turned (in the worker process's I/O thread)."""
        struct.pack_into(_FORMAT, self._memory, 0, time.monotonic())

    def last(self) -> float | None:
        """The last turn (``time.monotonic()``), ``None`` before the first."""
        (value,) = struct.unpack_from(_FORMAT, self._memory, 0)
        return value or None

    def clear(self) -> None:
        """Before a new child starts: unarmed until its first turn."""
        struct.pack_into(_FORMAT, self._memory, 0, 0.0)

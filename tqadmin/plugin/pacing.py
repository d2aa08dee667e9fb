"""``--rate R``, written once: the pace of every publish that has one, and of every move and replay.

A plugin never paces: :meth:`tqadmin.plugin.transport.BrokerTransport.publish` cuts a paced publish into
small batches and hands each to the plugin's ``publish_now`` when the pace allows, and the transfer engine
(:mod:`tqadmin.admin.transfer`) fetches and copies in such batches. So every broker keeps one rate the same
way: ``n`` messages take at least ``n / R`` seconds from the start, in batches of about a tenth of a second.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Sleep = Callable[[float], object]


class Pacer:
    """``--rate R``: sleep so that ``n`` messages take at least ``n / R`` seconds from the start."""

    def __init__(
        self, rate: float | None, clock: Callable[[], float] = time.monotonic, sleep: Sleep = time.sleep
    ) -> None:
        self._rate = rate
        self._clock = clock
        self._sleep = sleep
        self._start = clock()
        self._count = 0

    def batch_size(self, window: int) -> int:
        """Small batches under a rate limit, so the pace is smooth rather than bursts of a window."""
        if self._rate is None:
            return window
        return max(1, min(window, int(self._rate / 10) or 1))

    def took(self, n: int) -> None:
        """``n`` more went out: wait until the pace allows the next."""
        self._count += n
        if self._rate is None:
            return
        ahead = self._count / self._rate - (self._clock() - self._start)
        if ahead > 0:
            self._sleep(ahead)

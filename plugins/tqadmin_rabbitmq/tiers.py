"""How RabbitMQ applies a retry delay: a ladder of delay queues, each with one TTL.

Per-message expiry in one shared queue would make a 1 s retry wait behind a 60 s one (RabbitMQ only expires
the head of a queue); a queue per tier keeps every message in a queue where all share the same TTL, so the
head always expires first. The tiers are spaced so that the applied delay is within 10 % or 100 ms of the one
asked for (interface.md), and a tier's queue is declared the first time a delay needs it, so only the tiers
in use exist.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

# RabbitMQ's x-message-ttl is an unsigned 32-bit count of milliseconds: about 49.7 days.
MAX_TTL_MS = 2**32 - 1
MAX_DELAY_S = MAX_TTL_MS / 1000

ABSOLUTE_SLACK_S = 0.1
RELATIVE_SLACK = 0.1


@dataclass(frozen=True, slots=True)
class DelayTiers:
    """A fixed ladder of delays (seconds) covering 0 .. ``cap_s``, each within tolerance of its neighbours.

    A tier ``t`` may stand for any delay ``d`` with ``|t - d| <= max(0.1 * d, 0.1 s)``. The ladder is built
    greedily, each tier as high as it can be while still covering the end of the previous one, so there are
    few of them (about 26 up to 60 s, 45 up to an hour). Tiers are whole milliseconds, which keeps queue names
    and TTL arguments exact.
    """

    tiers_ms: tuple[int, ...]
    upper_s: tuple[float, ...]  # the largest delay each tier stands for, ascending

    @classmethod
    def up_to(cls, cap_s: float) -> DelayTiers:
        tiers = [0]
        covered = ABSOLUTE_SLACK_S  # tier 0 stands for every delay up to 100 ms
        while covered < cap_s:
            # round to whole ms, nudged so float noise (0.7999..) does not lose a millisecond
            tier_ms = int(max(covered + ABSOLUTE_SLACK_S, covered * (1 + RELATIVE_SLACK)) * 1000 + 1e-6)
            tiers.append(tier_ms)
            covered = _covers_up_to(tier_ms / 1000)
        return cls(tuple(tiers), tuple(_covers_up_to(ms / 1000) for ms in tiers))

    @property
    def tiers_s(self) -> tuple[float, ...]:
        return tuple(ms / 1000 for ms in self.tiers_ms)

    def tier_ms_for(self, delay_s: float) -> int:
        """The tier (milliseconds) that applies ``delay_s``; delays past the ladder use its top tier."""
        index = bisect.bisect_left(self.upper_s, max(delay_s, 0.0))
        return self.tiers_ms[min(index, len(self.tiers_ms) - 1)]

    def tier_s_for(self, delay_s: float) -> float:
        return self.tier_ms_for(delay_s) / 1000


def _covers_up_to(tier_s: float) -> float:
    """The largest delay a tier may stand for: ``d`` with ``tier >= d - max(0.1 d, 0.1)``."""
    return max(tier_s + ABSOLUTE_SLACK_S, tier_s / (1 - RELATIVE_SLACK))


LADDER = DelayTiers.up_to(MAX_DELAY_S)
"""Every tier a delay can need; the first ones (up to a minute) are the ladder worker queues always had."""

"""Which run of which job fails, and how: decided from the job id, so every worker agrees.

The fate of a run is drawn from a RNG seeded with (seed, task type, job id, attempt): the same job fails
the same way whichever worker process runs it and however often the demo is replayed with the same seed,
which makes a run reproducible enough to explain ("this payment was declined on its first try") while the
mix over many jobs still follows the failure rate. Workers read the knobs from the environment because the
orchestrator starts them as plain ``tqadmin worker`` processes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

ENV_FAILURE_RATE = "TQADMIN_DEMO_FAILURE_RATE"
ENV_SEED = "TQADMIN_DEMO_SEED"
ENV_SLOW_S = "TQADMIN_DEMO_SLOW_S"

DEFAULT_FAILURE_RATE = 0.1
DEFAULT_SEED = 7
DEFAULT_SLOW_S = 3.0

# Shares of the failure rate: fatal failures and slow runs are rarer than transient ones.
FATAL_SHARE = 0.2
SLOW_SHARE = 0.1


class Fate(StrEnum):
    """What the chaos makes one run of a job do."""

    OK = "ok"
    TRANSIENT = "transient"  # raise TransientError: retried with backoff
    FATAL = "fatal"  # raise FatalError: straight to the dead-letter queue
    SLOW = "slow"  # sleep past the worker's --job-timeout: a failed run, retried


@dataclass(frozen=True, slots=True)
class Chaos:
    """The failure knobs of one demo run."""

    failure_rate: float = DEFAULT_FAILURE_RATE
    seed: int = DEFAULT_SEED
    slow_s: float = DEFAULT_SLOW_S

    def __post_init__(self) -> None:
        if not 0.0 <= self.failure_rate <= 1.0:
            raise ValueError("the failure rate is a fraction from 0 to 1")
        if self.slow_s < 0:
            raise ValueError("the slow-run duration cannot be negative")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Chaos:
        """The knobs the orchestrator passed down; defaults for a worker started by hand."""
        env = os.environ if environ is None else environ
        return cls(
            failure_rate=float(env.get(ENV_FAILURE_RATE, DEFAULT_FAILURE_RATE)),
            seed=int(env.get(ENV_SEED, DEFAULT_SEED)),
            slow_s=float(env.get(ENV_SLOW_S, DEFAULT_SLOW_S)),
        )

    def to_env(self) -> dict[str, str]:
        return {
            ENV_FAILURE_RATE: repr(self.failure_rate),
            ENV_SEED: str(self.seed),
            ENV_SLOW_S: repr(self.slow_s),
        }

    def fate(self, task_type: str, job_id: str, attempt: int) -> Fate:
        """How run ``attempt`` (1 for the first) of this job goes.

        A fatal failure can only happen on the first run (a declined card stays declined, a retry would not
        have started); transient failures and slow runs can strike any run, each independently, so a job
        with ``max_retries`` N is dead-lettered as ``max_retries`` with probability about rate^(N+1).
        """
        draw = random.Random(f"{self.seed}:{task_type}:{job_id}:{attempt}").random()
        rate = self.failure_rate
        fatal = rate * FATAL_SHARE if attempt == 1 else 0.0
        slow = rate * SLOW_SHARE
        if draw < fatal:
            return Fate.FATAL
        if draw < fatal + slow:
            return Fate.SLOW
        if draw < fatal + slow + rate:
            return Fate.TRANSIENT
        return Fate.OK

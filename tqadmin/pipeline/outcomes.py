"""What a job thread holds between the worker's rooms, and what handling a delivery left, as typed values.

A delivery goes from the intake (decoded, claimed: :class:`Decoded`) to the run room (a :class:`Run`) to the
settler. Each step tells its job thread what is left to do with a :data:`Handled`: nothing
(:data:`SETTLED`: settled or given back), end this thread (:data:`ABANDONED`: the run timed out and a fresh
thread has taken its place), or hand the run to the next store round trip (:class:`Finished`: its
completion mark rides along, and the settler acks it once the store has answered).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TypeAlias

from tqadmin.pipeline.handoff import Handoff
from tqadmin.pipeline.job import Job
from tqadmin.pipeline.retry import Failure
from tqadmin.pipeline.tasks import TaskSpec
from tqadmin.plugin.base import Delivery
from tqadmin.store.completion.base import Claim


@dataclass(slots=True, eq=False)
class Decoded:
    """A delivery decoded into a job of a known task; ``claim`` is held while it waits to run (None for a
    suspect, which gave its claim back)."""

    delivery: Delivery
    job: Job
    spec: TaskSpec
    claim: Claim | None = None


@dataclass(slots=True, eq=False)
class Run:
    """A job taken by a job thread to run; mutable because the monitor marks it ``abandoned`` on timeout."""

    delivery: Delivery
    job: Job
    spec: TaskSpec
    claim: Claim | None
    attempt: int
    started: float = field(default_factory=time.monotonic)
    run_s: float = 0.0
    abandoned: bool = False
    solo: bool | None = None  # how it holds the SoloGate: alone (True), beside others (False), not (None)
    recorded: bool = False  # the store has its start (a crash of the process from now on is charged)


@dataclass(frozen=True, slots=True)
class Failed:
    """Why a run failed: the kind the retry policy weighs, and what was raised (for the log and headers)."""

    kind: Failure
    error: BaseException


@dataclass(frozen=True, slots=True)
class Settled:
    """The delivery is settled on the broker or given back to it: the job thread takes its next step."""


@dataclass(frozen=True, slots=True)
class Abandoned:
    """The run timed out and the monitor settled it: its thread ends, a fresh one has taken its place."""


@dataclass(frozen=True, slots=True)
class Finished:
    """The run ended fine with nothing to commit but its completion mark, which goes out with a coming store
    round trip; it holds its place in the gate until the settler has acked it."""

    run: Run


Handled: TypeAlias = Settled | Abandoned | Finished
WindowHandoff: TypeAlias = Handoff[Delivery, Decoded, Run]
"""The prefetch window shared by the job threads: fresh deliveries, decoded jobs, runs waiting for a mark."""
SETTLED = Settled()
ABANDONED = Abandoned()


def claims_of(marks: list[Run]) -> list[Claim]:
    """The claims of runs to mark done (every run on the store's path holds one)."""
    claims = [run.claim for run in marks if run.claim is not None]
    assert len(claims) == len(marks)
    return claims

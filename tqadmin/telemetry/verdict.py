"""Each queue's verdict (``stalled``, ``degraded``, ``no consumer``, ``idle``, ``ok``, ``paused``,
``unknown``) from successive observations over a window, with the reason said in words.

Why a window of observations and not one reading: a worker that is alive but makes no progress passes
every one-reading check (it holds its connection, its heartbeat is fresh, the queue has a consumer). What
shows it is that work waited *throughout* the window while *nothing completed*. Completions are taken from
every source that gives them, and none is guessed:

- the broker's ack rate (RabbitMQ's, and the Redis and SQLite plugins' own counters): ``None`` means the
  broker gives none, 0 means none happened; and what waits shrinking between two observations (taken by a
  consumer that does not ack, deleted): work left the queue;
- tqadmin's worker telemetry: each worker's cumulative completions on the queue (a count that rose between
  two observations is a completion) and its last completion's time;
- a worker whose every job slot has held the same jobs since before the window began completed nothing in it
  (an RQ worker on one job, a tqadmin worker whose threads all block): a proof of *no* completion, for the
  frameworks whose registries say what each worker runs and since when;
- a total kept over several workers (Sidekiq's ``stat:processed`` + ``stat:failed``, every Sidekiq process's
  jobs together): one that did not move proves that nothing completed on any of their queues, so none on
  this one; one that rose proves a completion on this queue only when every worker it counts serves this
  queue alone (:attr:`WorkerView.shared` is ``None``), otherwise it proves nothing here and the verdict
  says so.

A queue is ``stalled`` when work (ready, or held unacked in a consumer's prefetch) waited throughout the
window, at least one consumer or live worker serves it, and the sources prove no completion in the window:
the broker's ack rate, or, where the broker gives none, every worker serving it (and no consumer besides
them). Where no source can prove it the verdict is ``unknown`` and the reason says which source is missing.
A queue with a paused task type whose work does not move is ``paused``, not ``stalled`` (the work waiting
may be that type's, set aside by the workers), the reason saying both. ``degraded``: the backlog rose
throughout the window, or it drains slower than
:attr:`VerdictPolicy.drain_limit_s`, or completions run far under arrivals (:attr:`VerdictPolicy.under_ratio`)
while the backlog rose.

Pure: times are the observer's epoch seconds (a worker's own times are moved onto that clock by whoever
builds the :class:`WorkerView`), and :class:`QueueWatch` is driven by the observations it is given, never a
clock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from tqadmin.show.tables import human_duration

OK, IDLE, DEGRADED, STALLED, NO_CONSUMER, PAUSED, UNKNOWN = (
    "ok",
    "idle",
    "degraded",
    "stalled",
    "no consumer",
    "paused",
    "unknown",
)
VERDICTS = (STALLED, DEGRADED, NO_CONSUMER, UNKNOWN, PAUSED, OK, IDLE)
"""Every verdict, the most urgent first: the order a face lists queues in."""
UNHEALTHY = frozenset({STALLED, DEGRADED})
"""The verdicts that make ``tqadmin health`` exit 7 and the shipped rules page."""
DEFAULT_WINDOW_S = 60.0
"""A profile's ``stall_after_s`` when it sets none."""
MAX_OBSERVATIONS = 240
"""Observations kept per queue, however fast the polls: memory stays flat."""


@dataclass(frozen=True, slots=True)
class VerdictPolicy:
    """How long and how far: the window (the profile's ``stall_after_s``) and the degraded thresholds
    (documented in docs/health.md)."""

    window_s: float = DEFAULT_WINDOW_S
    drain_limit_s: float = 3600.0  # a backlog that takes longer than this to drain is degraded
    under_ratio: float = 0.1  # completions under this fraction of arrivals, the backlog rising: degraded

    def __post_init__(self) -> None:
        if not self.window_s > 0:
            raise ValueError("the verdict window must be a positive number of seconds")


@dataclass(frozen=True, slots=True)
class WorkerView:
    """What one live worker serving a queue tells of its progress there, on the observer's clock.

    ``completed``: its cumulative completions on the queue (``None``: it counts none); ``slots``: how many
    jobs it runs at once (``None``: not said), ``busy_since`` the start of each job it runs now.
    ``counted_by`` names where ``completed`` comes from when it is a total over several workers (said in
    the reason); ``shared`` says what else that total counts besides this queue's jobs (``None``: only
    this queue's), so that a rise proves no completion here; ``flush_s`` how late a completion may show in
    it (Sidekiq flushes its counters at each beat): a window shorter than that proves nothing by it.
    """

    name: str
    completed: int | None = None
    last_completion_at: float | None = None
    slots: int | None = None
    busy_since: tuple[float, ...] = ()
    counted_by: str | None = None
    shared: str | None = None
    flush_s: float = 0.0

    def idle_since(self, start: float) -> bool:
        """Whether it provably completed nothing after ``start``: every slot held a job begun before it."""
        return (
            self.slots is not None
            and self.slots > 0
            and len(self.busy_since) >= self.slots
            and max(self.busy_since) <= start
        )


@dataclass(frozen=True, slots=True)
class Observation:
    """One queue at one reading: what waits, who serves it, and the completion signals."""

    name: str
    at: float
    ready: int
    unacked: int
    consumers: int | None = None
    workers: tuple[WorkerView, ...] = ()
    ack_rate: float | None = None
    publish_rate: float | None = None
    delayed: int | None = None
    growing: bool | None = None
    drain_s: float | None = None
    paused: str | None = None  # the standing pause, in words; None when the queue is not paused
    paused_types: str | None = None  # its task types paused, in words: a stall may be theirs

    @property
    def waiting(self) -> int:
        return max(self.ready, 0) + max(self.unacked, 0)


@dataclass(frozen=True, slots=True)
class QueueVerdict:
    """A queue's verdict and why, in one line: ``ready 340 for 2m10s, 4 consumers, no ack since 14:02:11``."""

    verdict: str
    reason: str

    @property
    def unhealthy(self) -> bool:
        return self.verdict in UNHEALTHY


@dataclass(slots=True)
class _Track:
    readings: deque[Observation] = field(default_factory=lambda: deque(maxlen=MAX_OBSERVATIONS))
    waiting_since: float | None = None
    completed_at: float | None = None  # the last observation at which a completion was seen


class QueueWatch:
    """Successive observations of every queue, over the policy's window; not thread-safe (one per poller).

    A queue absent from an observation round is forgotten, and each keeps the observations of its window plus
    the one just before it (the window's anchor), at most :data:`MAX_OBSERVATIONS`.
    """

    def __init__(self, policy: VerdictPolicy | None = None) -> None:
        self.policy = policy or VerdictPolicy()
        self._tracks: dict[str, _Track] = {}

    def observe(self, observations: Iterable[Observation]) -> dict[str, QueueVerdict]:
        """Record one round of observations (one per queue) and return each queue's verdict."""
        tracks: dict[str, _Track] = {}
        verdicts: dict[str, QueueVerdict] = {}
        for obs in observations:
            track = tracks[obs.name] = self._tracks.get(obs.name) or _Track()
            while track.readings and obs.at <= track.readings[-1].at:
                track.readings.pop()  # a clock that did not move (or stepped back): the newer reading stands
            previous = track.readings[-1] if track.readings else None
            track.readings.append(obs)
            start = obs.at - self.policy.window_s
            while len(track.readings) > 2 and track.readings[1].at <= start:
                track.readings.popleft()
            if obs.waiting == 0:
                track.waiting_since = None
            elif track.waiting_since is None:
                track.waiting_since = obs.at
            if (obs.ack_rate or 0) > 0 or (previous is not None and _completed_between(previous, obs)):
                track.completed_at = obs.at
            verdicts[obs.name] = judge(
                list(track.readings), self.policy, track.waiting_since, track.completed_at
            )
        self._tracks = tracks
        return verdicts


def judge(
    readings: Sequence[Observation],
    policy: VerdictPolicy,
    waiting_since: float | None = None,
    completed_at: float | None = None,
) -> QueueVerdict:
    """The verdict on one queue from its observations, oldest first, the newest last; ``waiting_since`` is
    when work began waiting without a break (the first reading when not said), ``completed_at`` the last
    reading at which a completion was seen (for the reason)."""
    last = readings[-1]
    if last.paused is not None:
        return QueueVerdict(PAUSED, last.paused)
    if last.waiting == 0:
        later = f"; {last.delayed} delayed, not yet due" if last.delayed else ""
        if last.paused_types is not None and last.delayed:  # set aside by the pause (or retries)
            return QueueVerdict(PAUSED, f"{last.paused_types}; nothing ready{later}")
        return QueueVerdict(IDLE, f"nothing waiting{later}")
    serving = _serving(last)
    start = last.at - policy.window_s
    window = [
        r
        for i, r in enumerate(readings)
        if r.at > start or (i + 1 < len(readings) and readings[i + 1].at > start)
    ]
    if not serving:
        if last.consumers == 0:
            return QueueVerdict(NO_CONSUMER, f"{_waiting_text(last)}, no consumer and no live worker")
        return _uncounted(readings, window, policy)
    completion = _completion(window, start)
    seen = last.at - readings[0].at
    if seen < policy.window_s and not completion.seen:
        watched = human_duration(seen)
        return QueueVerdict(UNKNOWN, f"watched {watched} of the {human_duration(policy.window_s)} window")
    throughout = all(r.waiting > 0 for r in window)
    since = window[0].at if waiting_since is None else min(waiting_since, window[0].at)
    if throughout and not completion.seen and completion.proof is not None:
        latest = max(
            filter(None, (completed_at, *(w.last_completion_at for w in last.workers))), default=None
        )
        what = "ack" if completion.proof == "broker" else "completion"
        when = (
            f"no {what} since {_clock(latest)}"
            if latest is not None
            else f"no {what} in {human_duration(last.at - since)}"
        )
        proof = f" ({completion.note})" if completion.note else ""
        stalled = f"{_waiting_text(last)} for {human_duration(last.at - since)}, {serving}, {when}{proof}"
        if last.paused_types is not None:  # the work waiting may be all the paused types': set aside
            return QueueVerdict(PAUSED, f"{last.paused_types}; {stalled}")
        return QueueVerdict(STALLED, stalled)
    degraded = _degraded(window, policy)
    if degraded is not None:
        return QueueVerdict(DEGRADED, f"{degraded}, {serving}")
    if throughout and not completion.seen:
        return QueueVerdict(
            UNKNOWN,
            f"{_waiting_text(last)} for {human_duration(last.at - since)}, {serving}; {completion.missing}",
        )
    return QueueVerdict(OK, _ok_text(last, completion.seen, completion.note))


def _uncounted(
    readings: Sequence[Observation], window: Sequence[Observation], policy: VerdictPolicy
) -> QueueVerdict:
    """A queue whose broker counts no consumers (SQS) and that no known worker serves: ``no consumer`` once
    a whole window showed work ready, nothing in flight and nothing leaving (nobody received anything), else
    ``unknown``."""
    last = readings[-1]
    covered = last.at - readings[0].at >= policy.window_s
    untouched = all(r.ready > 0 and r.unacked == 0 for r in window) and not any(
        _completed_between(a, b) or (b.ack_rate or 0) > 0 for a, b in pairwise(window)
    )
    if covered and untouched:
        span = human_duration(last.at - window[0].at)
        return QueueVerdict(NO_CONSUMER, f"ready {last.ready} for {span}, nothing received, no worker known")
    return QueueVerdict(
        UNKNOWN,
        f"{_waiting_text(last)}; the broker counts no consumers and no worker tqadmin knows serves it",
    )


@dataclass(frozen=True, slots=True)
class _Completion:
    seen: bool
    proof: str | None  # "broker" or "workers": what proves that nothing completed (when nothing was seen)
    missing: str = ""  # why nothing proves it
    note: str = ""  # what a total over several workers proved, said in the reason


def _completion(window: Sequence[Observation], start: float) -> _Completion:
    """Whether anything completed after ``start``, and, if not, what proves it."""
    later = window[1:] or window
    pairs = list(pairwise(window))
    if any(b.waiting < a.waiting for a, b in pairs) or any((r.ack_rate or 0) > 0 for r in later):
        return _Completion(True, None)
    risen = [w for a, b in pairs for w in _risen(a, b)]
    if mine := [w for w in risen if w.shared is None]:
        said = mine[0].counted_by
        return _Completion(
            True, None, note=f"{said} rose, every worker it counts serving this queue alone" if said else ""
        )
    last = window[-1]
    if any(w.last_completion_at is not None and w.last_completion_at > start for w in last.workers):
        return _Completion(True, None)
    if all(r.ack_rate is not None for r in later):
        return _Completion(False, "broker")
    first = {w.name: w for w in window[0].workers}
    busy = [w for w in last.workers if not w.idle_since(start)]
    unproven = [
        w.name
        for w in busy
        if w.completed is None or first.get(w.name) is None or first[w.name].completed is None
    ]
    slow = [w for w in busy if w.flush_s > last.at - window[0].at]
    if last.consumers is not None and last.consumers > len(last.workers):
        others = last.consumers - len(last.workers)
        return _Completion(
            False, None, f"the broker gives no ack rate and {others} of its consumers report nothing"
        )
    if unproven:
        names = ", ".join(unproven[:3]) + (f" and {len(unproven) - 3} more" if len(unproven) > 3 else "")
        return _Completion(
            False, None, f"the broker gives no ack rate and no completion count comes from {names}"
        )
    if slow:
        flushed = f"{slow[0].counted_by or 'its count'} moves only every {human_duration(slow[0].flush_s)}"
        return _Completion(False, None, f"{flushed}, longer than the window: it proves nothing in it")
    if risen:
        return _Completion(False, None, f"{risen[0].counted_by or 'its count'} rose, but {risen[0].shared}")
    totals = [w.counted_by for w in busy if w.counted_by]
    return _Completion(False, "workers", note=f"{totals[0]} did not move" if totals else "")


def _completed_between(a: Observation, b: Observation) -> bool:
    """Whether work left the queue from ``a`` to ``b`` (what waits shrank: taken without an ack, by a
    consumer that does not ack, or deleted), or a worker's completion count on it rose (a count that fell is
    a restarted worker: not a completion) where it counts this queue's jobs alone (not ``shared``)."""
    return b.waiting < a.waiting or any(w.shared is None for w in _risen(a, b))


def _risen(a: Observation, b: Observation) -> list[WorkerView]:
    """The workers of ``b`` whose completion count rose from ``a``."""
    before = {w.name: w.completed for w in a.workers if w.completed is not None}
    return [w for w in b.workers if w.completed is not None and w.completed > before.get(w.name, w.completed)]


def _degraded(window: Sequence[Observation], policy: VerdictPolicy) -> str | None:
    first, last = window[0], window[-1]
    span = human_duration(last.at - first.at)
    if last.growing:
        return f"backlog growing from {first.waiting} to {last.waiting} in {span}"
    if last.drain_s is not None and last.drain_s > policy.drain_limit_s:
        limit = human_duration(policy.drain_limit_s)
        return f"{_waiting_text(last)} drains in {human_duration(last.drain_s)} (limit {limit})"
    arrivals = _mean([r.publish_rate for r in window[1:]])
    acks = _mean([r.ack_rate for r in window[1:]])
    if (
        arrivals
        and acks is not None
        and acks < policy.under_ratio * arrivals
        and last.waiting > first.waiting
    ):
        return f"completing {acks:.2g}/s of {arrivals:.2g}/s arriving, {_waiting_text(last)}"
    return None


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None


def _serving(obs: Observation) -> str:
    """Who serves the queue, in words (``4 consumers``, ``2 workers``), or '' when nobody does. Messages
    held unacked have a holder even when the broker counts no consumer: a client that took them with a
    get, or a consumer the broker's statistics have not caught up with; either holds work that waits."""
    consumers = obs.consumers or 0
    if consumers >= len(obs.workers) and consumers:
        return f"{consumers} consumer{'s' * (consumers != 1)}"
    workers = len(obs.workers)
    if workers:
        return f"{workers} worker{'s' * (workers != 1)}"
    return "a client holding them" if obs.unacked > 0 and obs.consumers == 0 else ""


def _waiting_text(obs: Observation) -> str:
    parts = [f"ready {obs.ready}"] if obs.ready or not obs.unacked else []
    if obs.unacked:
        parts.append(f"{obs.unacked} held unacked")
    return ", ".join(parts)


def _ok_text(obs: Observation, seen: bool, note: str = "") -> str:
    drain = f", drains in {human_duration(obs.drain_s)}" if obs.drain_s else ""
    said = f" ({note})" if note else ""
    return f"{_waiting_text(obs)}, {'completing' if seen else 'drained in the window'}{said}{drain}"


def _clock(epoch_s: float) -> str:
    """``14:02:11`` (UTC): when the last completion was seen."""
    return time.strftime("%H:%M:%S", time.gmtime(epoch_s))

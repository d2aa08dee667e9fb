"""What ``tqadmin health`` reads: one poll of the queues, the workers and the pauses (through the code of
``tqadmin queues`` and ``tqadmin workers``), each queue as the verdict sees it, and a window read back
from the profile's recorded history where the dashboard or the exporter recorded one.

History first: when every queue's 10 s points cover the window without a gap, the verdict is given at once
from them and one poll (the workers' completion counts come from the store's baseline heartbeats of the
window's start); otherwise the command watches the window (docs/health.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tqadmin.commands import queues as queue_listing
from tqadmin.commands import workers as worker_listing
from tqadmin.commands.context import CommandContext
from tqadmin.errors import TqadminError
from tqadmin.file_access import Access
from tqadmin.frameworks.progress import foreign_views, serves
from tqadmin.masking import mask_text
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.delays import work_queues
from tqadmin.plugin.drain import DrainWindow, estimate
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.workers import WorkerReading
from tqadmin.store import open_store
from tqadmin.store.base import WorkerRecord
from tqadmin.store.history import TIERS, open_history
from tqadmin.store.history_points import Figures
from tqadmin.store.pauses import Pause, of_queue
from tqadmin.store.recording import history_name
from tqadmin.telemetry.verdict import Observation, QueueVerdict, VerdictPolicy, WorkerView, judge
from tqadmin.telemetry.verdict_inputs import observation, own_views, recorded

FINEST = TIERS[0]


@dataclass(slots=True)
class Poll:
    """What one poll read: the queues, tqadmin's workers, other frameworks' workers and what failed."""

    queues: Sequence[QueueStats] = ()
    records: list[WorkerRecord] = field(default_factory=list)
    foreign: WorkerReading = field(default_factory=WorkerReading)
    pauses: list[Pause] | None = None
    pauses_at: float = 0.0
    unreadable: list[str] = field(default_factory=list)


def read(
    ctx: CommandContext, admin: BrokerAdmin, drains: DrainWindow, name_filter: str | None = None
) -> Poll:
    """One poll of the work queues (not the dead-letter queues); with ``name_filter``, only those whose name
    contains it, and the workers serving them."""
    listing = drains.apply(admin.list_queues())
    listed = work_queues(listing.queues, include_delay_queues=False)
    dead_letters = {q.dlq for q in listed}  # no work waits there: their age has its own alert
    queues = [q for q in listed if q.name not in dead_letters and (not name_filter or name_filter in q.name)]
    failures: list[tuple[str, TqadminError]] = []
    records = worker_listing._own_workers(ctx, failures)
    foreign, unreadable = worker_listing._framework_workers(ctx, failures)
    pauses_at, pauses = queue_listing._pauses(ctx)
    said = [f"{what}: {mask_text(str(exc))}" for what, exc in failures]
    if pauses is None:
        said.append("pauses: the state store could not be read")
    if name_filter:
        names = {q.name for q in queues}
        records = [r for r in records if names.intersection(r.snapshot.queues)]
        kept = tuple(w for w in foreign.workers if any(serves(w, n) for n in names))
        foreign = replace(foreign, workers=kept)
    return Poll(queues, records, foreign, pauses, pauses_at, said + unreadable)


def observations(poll: Poll, at: float) -> list[Observation]:
    """Each queue of ``poll`` as the verdict sees it at ``at``; a queue is paused by a pause of the whole
    queue (a paused task type is named in the reason by the command)."""
    own = [(r.snapshot, r.age_s, r.alive) for r in poll.records]
    found = []
    for queue in poll.queues:
        workers = own_views(own, queue.name, at) + foreign_views(poll.foreign, queue.name)
        whole = [p for p in of_queue(poll.pauses or (), queue.name) if p.target.task_type is None]
        paused = whole[0].describe(poll.pauses_at) if whole else None
        found.append(observation(queue, at, workers, paused))
    return found


def from_history(
    ctx: CommandContext, poll: Poll, at: float, policy: VerdictPolicy
) -> dict[str, QueueVerdict] | None:
    """Every queue's verdict from the recorded history and ``poll`` (taken at ``at``), or ``None`` when
    the history does not cover the window for every queue (or cannot be read)."""
    if policy.window_s < 2 * FINEST.resolution_s or not poll.queues:
        return None
    try:
        points, before = _recorded(ctx, [q.name for q in poll.queues], policy.window_s, at)
    except TqadminError:
        return None
    verdicts = {}
    for queue, current in zip(poll.queues, observations(poll, at), strict=True):
        window = recorded(
            current,
            points.get(queue.name, []),
            FINEST.resolution_s,
            policy.window_s,
            before.get(queue.name, ()),
        )
        if window is None:
            return None
        depths = [(o.at, o.waiting) for o in window]
        drain = estimate(depths, queue, policy.window_s)
        window[-1] = replace(current, growing=drain.growing, drain_s=drain.drain_s)
        verdicts[queue.name] = judge(window, policy)
    return verdicts


def _recorded(
    ctx: CommandContext, names: list[str], window_s: float, at: float
) -> tuple[dict[str, list[tuple[int, Figures]]], dict[str, tuple[WorkerView, ...]]]:
    """The queues' finest points, and per queue the live workers as they were at the window's start."""
    settings = ctx.settings
    history = open_history(settings.store_url, timeout_s=settings.timeout_s, access=Access.READ)
    try:
        points = history.queue_histories(history_name(settings.profile), names, FINEST)
    finally:
        history.close()
    store = open_store(settings.store_url, timeout_s=settings.timeout_s, access=Access.READ)
    try:
        store_now, workers = store.history(window_s)
    finally:
        store.close()
    baselines = [(w.baseline.snapshot, store_now - w.baseline.at_s, True) for w in workers if w.baseline]
    return dict(points), {name: own_views(baselines, name, at - window_s) for name in names}

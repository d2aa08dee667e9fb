"""The demo's connections to the real pipeline: the broker's transport and admin faces, and the state store.

Everything is checked before any worker starts, so an unreachable broker, management API or store is one
line naming what to start (exit 3) rather than a screen of workers failing one after the other.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from urllib.parse import urlsplit

from tqadmin.config import Settings
from tqadmin.demo.cron import CronTally
from tqadmin.demo.cron import namespace as cron_namespace
from tqadmin.demo.layout import Layout
from tqadmin.demo.live import DemoTelemetry
from tqadmin.demo.orchestrator import Wiring
from tqadmin.demo.summary import BrokerView, Telemetry
from tqadmin.demo.traffic import TrafficMessage
from tqadmin.errors import ConnectError, NotAuthorized, NotSupported, TqadminError
from tqadmin.plugin.base import BrokerAdmin, BrokerPlugin
from tqadmin.plugin.models import HEADER_REASON, Message
from tqadmin.plugin.transport import BrokerTransport, Outcome
from tqadmin.store import open_store
from tqadmin.store.completion.base import StateStore
from tqadmin.store.factory import open_cron_store
from tqadmin.telemetry.counters import TaskStats

PEEK_LIMIT = 2000
# What to start when the state store cannot be reached, by its scheme; the broker's hints are its plugin's
# (``BrokerPlugin.start_hint``), since only the plugin knows what its broker is and how one is started.
REDIS_STORE_HINT = "start Redis (e.g. `docker run -d -p 6379:6379 redis:7`) or point --store at a running one"
STORE_HINTS = {
    "redis": REDIS_STORE_HINT,
    "rediss": REDIS_STORE_HINT,
    "sqlite": "check that the SQLite file's directory exists and is writable, or point --store at a running"
    " Redis",
}


def connect(settings: Settings, plugin: BrokerPlugin, layout: Layout) -> Wiring:
    """Check every service the demo needs, declare its queues, and wire the demo to them."""
    store = open_store(settings.store_url, timeout_s=settings.timeout_s)
    admin = plugin.admin(settings.broker_config())
    _all_reachable(
        [
            (
                store.workers,
                STORE_HINTS.get(urlsplit(settings.store_url).scheme.lower(), "check the --store URL"),
            ),
            (admin.list_queues, plugin.admin_start_hint or plugin.start_hint),
        ]
    )
    transport = plugin.transport(settings.broker_config())
    for queue in layout.queues:
        _all_reachable([(partial(transport.declare, queue), plugin.start_hint)])
    started_at = time.time()
    cron_store = open_cron_store(settings.store_url, cron_namespace(layout), settings.timeout_s)
    return Wiring(
        sink_factory=lambda: TransportSink(transport),
        telemetry=lambda layout: read_telemetry(store, layout, started_at),
        broker_view=lambda layout, baseline: read_broker(admin, layout, baseline),
        dashboard_telemetry=lambda: DemoTelemetry(store, layout, started_at),
        cron=CronTally(cron_store),
    )


def _all_reachable(checks: Sequence[tuple[Callable[[], object], str]]) -> None:
    """Make a first call to each service; name every one that cannot be reached, and what to do, in one
    line (a wrong password is reported as it is: starting something would not help)."""
    problems: list[str] = []
    first: ConnectError | None = None
    for call, hint in checks:
        try:
            call()
        except NotAuthorized:
            raise
        except ConnectError as exc:
            first = first or exc
            problems.append(f"{str(exc).rstrip('.')} - to run the demo, {hint}")
    if first is not None:
        raise type(first)("; and ".join(problems))


class TransportSink:
    """The traffic's sink on the broker plugin's transport: each batch one windowed, confirmed publish."""

    def __init__(self, transport: BrokerTransport) -> None:
        self._transport = transport

    def publish(self, messages: Sequence[TrafficMessage], rate: float) -> tuple[list[bool], str]:
        result = self._transport.publish(
            [(m.queue, Message(m.body, id=m.job_id)) for m in messages], window=64, rate=rate
        )
        confirmed = [outcome is Outcome.CONFIRMED for outcome in result.outcomes]
        return confirmed, str(result.error) if result.error is not None else ""

    def close(self) -> None:
        self._transport.close()


def read_telemetry(store: StateStore, layout: Layout, started_at: float) -> Telemetry:
    """Add up the cumulative figures of this run's workers (started after it, on its queues).

    A restarted worker is a new worker id; the one it replaced keeps its last figures in the store, so
    adding every worker of the run counts each message once.
    """
    total = TaskStats()
    by_type: dict[str, TaskStats] = {}
    workers = 0
    for record in store.workers():
        snapshot = record.snapshot
        if snapshot.started_at < started_at or not any(layout.owns(q) for q in snapshot.queues):
            continue
        workers += 1
        for (queue, task_type), stats in snapshot.stats.items():
            if layout.owns(queue):
                by_type.setdefault(task_type, TaskStats()).add(stats)
                total.add(stats)
    return Telemetry(total=total, task_types=by_type, workers=workers)


def read_broker(admin: BrokerAdmin, layout: Layout, baseline: BrokerView | None = None) -> BrokerView:
    """What the demo's queues hold: messages in the work queues and their retries, and in each dead-letter
    queue; given the counts at the start, also why the dead letters added since died (``x-tq-reason``,
    peeked).

    The broker counts the work and dead-letter queues itself (the management API's figures lag by a few
    seconds). Retries wait one of two ways: in delay queues of their own (RabbitMQ's tiers, marked
    ``delay_for``), found in the listing and counted again unless it reports them empty; or beside the queue
    (a Redis delay set, SQS's delayed messages, a due time), reported as the queue's ``delayed``, which is
    added only for a queue no delay queue feeds (there ``delayed`` is the tiers' sum, already counted) and
    only where the count left them out (SQLite's rows waiting out a due time are in it).
    """
    exact = {name: _exact_count(admin, name) for name in (*layout.queues, *layout.dead_letter_queues)}
    counts = {name: count for name, (count, _) in exact.items()}
    note = ""
    try:
        listed = admin.list_queues().queues
    except TqadminError as exc:
        listed = ()
        note = f"retry queues not counted: {exc}"
    fed_by_delay_queues = {q.delay_for for q in listed if q.delay_for is not None}
    for queue in listed:
        if not layout.owns(queue.name):
            continue
        if queue.name not in counts and queue.messages:
            counts[queue.name] = _exact_count(admin, queue.name)[0]
        elif (
            queue.name in layout.queues
            and queue.name not in fed_by_delay_queues
            and queue.delayed
            and not exact[queue.name][1]
        ):
            counts[queue.name] += queue.delayed
    dead_letters = {name: counts[name] for name in layout.dead_letter_queues}
    return BrokerView(
        left_in_queues=sum(n for name, n in counts.items() if name not in dead_letters),
        dead_letters=dead_letters,
        reasons=None if baseline is None else _reasons(admin, dead_letters, baseline.dead_letters),
        note=note,
    )


def _reasons(
    admin: BrokerAdmin, dead_letters: Mapping[str, int], earlier: Mapping[str, int]
) -> dict[str, int] | None:
    """The added dead letters by ``x-tq-reason``, peeked (they stay where they are) past the ones an
    earlier run left at the head of each queue; None when the broker cannot peek."""
    reasons: Counter[str] = Counter()
    for name, count in sorted(dead_letters.items()):
        skip = earlier.get(name, 0)
        if count <= skip:
            continue
        try:
            peeked = admin.peek(name, min(count, PEEK_LIMIT))
        except NotSupported:
            return None
        reasons.update(str(m.headers.get(HEADER_REASON, "unknown")) for m in peeked.messages[skip:])
    return dict(reasons)


def _exact_count(admin: BrokerAdmin, queue: str) -> tuple[int, bool]:
    """The broker's own count (the management API's figures lag by seconds), and whether it includes the
    messages waiting out a retry delay; nothing is consumed."""
    with admin.open_transfer(queue) as session:
        return session.count_at_start(), session.takes_delayed

"""Celery's task events turned into workers, current tasks and per task name latencies (driver-free).

Celery keeps no worker registry: what its workers do is known only from the events they send when the
operator enabled them (``-E`` / ``worker_send_task_events``; ``task_send_sent_event`` for ``task-sent``).
tqadmin only listens (it never sends ``enable_events`` or any other control command) and folds each event
into :class:`CeleryEvents`:

- ``worker-online`` / ``worker-heartbeat`` (every ``freq`` seconds, 2 by default) / ``worker-offline``: a
  worker is alive until ``2 x freq`` passes without a beat, Celery's own ``heartbeat_expires`` window;
- ``task-sent`` / ``task-received`` / ``task-started``: the wait, measured from ``task-sent`` once any
  such event was seen (comparable with tqadmin's published -> started), from ``task-received`` otherwise,
  and named so (:attr:`CeleryEvents.wait_from`);
- ``task-succeeded`` (its ``runtime``) / ``task-failed`` / ``task-retried``: run time, failures, retries,
  in the same mergeable histograms as tqadmin's own tasks (:class:`~tqadmin.telemetry.counters.Telemetry`).

Memory is bounded whatever the event rate: at most :data:`MAX_TASKS` tasks between their first event and
their last (the oldest forgotten first, counted in ``forgotten``), :data:`MAX_WORKERS` workers (pods
come and go: the longest silent go first; one dead for
:data:`~tqadmin.telemetry.snapshot.DEAD_WORKER_KEEP_S`, an hour, is forgotten, as tqadmin's own dead workers
are) and figures for at most
:data:`~tqadmin.telemetry.task_names.MAX_TASK_TYPES` task names, each cut to
:data:`~tqadmin.telemetry.task_names.MAX_TASK_TYPE_CHARS` characters: a name past them is counted under
``(other)`` (the telemetry's cap, :class:`~tqadmin.telemetry.counters.Telemetry`), as tqadmin's own
workers count theirs. A body that is not an event, and an event with a field Celery would not write (a
``timestamp`` that is no time, a ``freq`` that is no interval, a ``pid`` of 401 digits), is counted in
``skipped`` and changes nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tqadmin.frameworks.celery import envelope_body
from tqadmin.frameworks.decoding import (
    NOT_JSON,
    as_text,
    checked,
    count,
    epoch_seconds,
    name,
    parse_json,
)
from tqadmin.frameworks.summary import CELERY
from tqadmin.plugin.workers import CurrentJob, ForeignWorker, MalformedEntry
from tqadmin.show.finite import finite
from tqadmin.telemetry.counters import TaskStats, Telemetry
from tqadmin.telemetry.snapshot import DEAD_WORKER_KEEP_S

MAX_TASKS = 10_000
MAX_WORKERS = 1_000
DEFAULT_FREQ_S = 2.0
EXPIRE_WINDOW = 2.0  # Celery's HEARTBEAT_EXPIRE_WINDOW, 200 %
MAX_FREQ_S = 86_400.0  # a heartbeat interval past a day is no interval: it would keep a worker alive for ever
ANY_QUEUE = ""  # Celery's events name no queue on the worker side: one key per task name


def events_in(body: bytes) -> list[dict[str, Any]]:
    """The events an AMQP message body carries: one event object, or a list of them (``task.multi``, the
    buffered task events); anything else none."""
    parsed = parse_json(body)
    items = parsed if isinstance(parsed, list) else [parsed]
    return [item for item in items if isinstance(item, dict) and isinstance(item.get("type"), str)]


def events_in_envelope(payload: bytes) -> list[dict[str, Any]]:
    """The events of one Redis PUBLISH: kombu's envelope around the body."""
    envelope = parse_json(payload)
    if envelope is NOT_JSON or not isinstance(envelope, dict):
        return []
    body = envelope_body(envelope)
    return events_in(body) if body is not None else []


@dataclass(slots=True)
class _Worker:
    beat_s: float
    freq_s: float = DEFAULT_FREQ_S
    offline: bool = False
    pid: int | None = None
    active: int = 0  # tasks running, as its last heartbeat counted them
    started_s: float | None = None


@dataclass(slots=True)
class _Task:
    name: str | None = None
    hostname: str | None = None
    sent_s: float | None = None
    received_s: float | None = None
    started_s: float | None = None
    queue: str | None = None
    waited: bool = False  # its wait was recorded


@dataclass(slots=True)
class CeleryEvents:
    """What the events seen so far say; one listener thread applies, readers take copies under its lock."""

    events: int = 0
    skipped: int = 0
    forgotten: int = 0
    wait_from: str = "received"
    _workers: OrderedDict[str, _Worker] = field(default_factory=OrderedDict)
    _tasks: OrderedDict[str, _Task] = field(default_factory=OrderedDict)
    _telemetry: Telemetry = field(default_factory=Telemetry)

    def apply(self, event: Mapping[str, Any]) -> None:
        kind, timestamp = as_text(event.get("type")) or "", epoch_seconds(finite(event.get("timestamp")))
        hostname = name(event.get("hostname"))
        uuid = name(event.get("uuid"))
        if timestamp is None or hostname is None or (kind.startswith("task-") and uuid is None):
            self.skipped += 1
            return
        try:
            _check_fields(event)
        except MalformedEntry:
            self.skipped += 1
            return
        self.events += 1
        if kind.startswith("worker-"):
            self._worker_event(kind, hostname, timestamp, event)
        elif uuid is not None and kind.startswith("task-"):
            self._task_event(kind, uuid, hostname, timestamp, event)

    def _worker_event(self, kind: str, hostname: str, timestamp: float, event: Mapping[str, Any]) -> None:
        worker = self._workers.pop(hostname, None) or _Worker(timestamp, started_s=timestamp)
        worker.beat_s = max(worker.beat_s, timestamp)
        worker.freq_s = _number(event.get("freq")) or worker.freq_s
        worker.pid = count(event.get("pid")) or worker.pid
        worker.active = count(event.get("active")) or 0
        worker.offline = kind == "worker-offline"
        self._workers[hostname] = worker  # the newest beat last: the longest silent go first
        while len(self._workers) > MAX_WORKERS:
            self._workers.popitem(last=False)

    def _task_event(
        self, kind: str, uuid: str, hostname: str, timestamp: float, event: Mapping[str, Any]
    ) -> None:
        task = self._tasks.get(uuid)
        if task is None:
            task = self._tasks[uuid] = _Task()
            while len(self._tasks) > MAX_TASKS:
                self._tasks.popitem(last=False)
                self.forgotten += 1
        task.name = name(event.get("name")) or task.name
        if kind == "task-sent":
            self.wait_from = "sent"
            task.sent_s, task.queue = timestamp, name(event.get("routing_key")) or name(event.get("queue"))
            if task.started_s is not None and task.name and not task.waited:  # came after the worker's
                task.waited = True
                self._telemetry.started(ANY_QUEUE, task.name, max(0.0, task.started_s - timestamp))
        elif kind == "task-received":
            task.received_s, task.hostname = timestamp, hostname
        elif kind == "task-started":
            task.started_s, task.hostname = timestamp, hostname
            basis = task.sent_s if self.wait_from == "sent" else task.received_s
            if basis is not None and task.name:
                task.waited = True
                self._telemetry.started(ANY_QUEUE, task.name, max(0.0, timestamp - basis))
        elif kind in ("task-succeeded", "task-failed", "task-retried"):
            self._finished(uuid, task, kind, timestamp, _number(event.get("runtime")))
        elif kind in ("task-rejected", "task-revoked"):
            self._tasks.pop(uuid, None)

    def _finished(self, uuid: str, task: _Task, kind: str, timestamp: float, runtime: float | None) -> None:
        """A run ended. A retried task keeps its entry: its retry is the same uuid, and the retry's own
        events can arrive before ``task-retried`` does (the pool reports it after the retry went out)."""
        if kind != "task-retried":
            self._tasks.pop(uuid, None)
        if not task.name:
            return
        if runtime is None and task.started_s is not None:
            runtime = max(0.0, timestamp - task.started_s)
        if runtime is not None:
            self._telemetry.finished(ANY_QUEUE, task.name, runtime, ok=kind == "task-succeeded")
        if kind == "task-retried":
            self._telemetry.retried(ANY_QUEUE, task.name)

    def workers(self, now_s: float, present: Iterable[str] = ()) -> tuple[ForeignWorker, ...]:
        """Every worker the events named, and those ``present`` (their control queues exist) that sent no
        event yet: listed without a heartbeat. A worker silent for :data:`DEAD_WORKER_KEEP_S` is forgotten
        (listed again only by its control queue, if that is still there)."""
        self._forget_dead(now_s)
        running: dict[str, list[CurrentJob]] = {}
        for uuid, task in self._tasks.items():
            if task.started_s is not None and task.hostname:
                job = CurrentJob(uuid, task.name, task.queue, task.started_s)
                running.setdefault(task.hostname, []).append(job)
        shown = []
        for hostname, worker in self._workers.items():
            age = max(0.0, now_s - worker.beat_s)
            expired = age > worker.freq_s * EXPIRE_WINDOW
            reason = (
                "it sent worker-offline"
                if worker.offline
                else f"no worker-heartbeat in 2 x its {worker.freq_s:g} s interval"
                if expired
                else None
            )
            jobs = tuple(running.get(hostname, ())) if reason is None else ()
            shown.append(
                ForeignWorker(
                    CELERY,
                    hostname,
                    reason is None,
                    age,
                    reason,
                    current_jobs=jobs,
                    host=hostname.partition("@")[2] or None,
                    pid=worker.pid,
                    state=None if reason else _state(len(jobs), worker.active),
                )
            )
        shown += [celery_node(node) for node in sorted(set(present) - set(self._workers))]
        return tuple(sorted(shown, key=lambda w: w.name))

    def _forget_dead(self, now_s: float) -> None:
        for hostname in [h for h, w in self._workers.items() if now_s - w.beat_s > DEAD_WORKER_KEEP_S]:
            del self._workers[hostname]

    def task_stats(self) -> dict[str, TaskStats]:
        """Each task name's figures since the listener started."""
        return {task: stats for (_queue, task), stats in self._telemetry.read().items()}

    @property
    def folded(self) -> int:
        """Task names whose figures went to ``(other)``, past the cap."""
        return self._telemetry.folded


def _state(seen: int, active: int) -> str:
    """``busy`` or ``idle``; a worker whose heartbeat counts more running tasks than the events showed
    started (they started before the listener did) says how many it runs."""
    if active > seen:
        return f"busy ({active} running)"
    return "busy" if seen else "idle"


def celery_node(node: str, *, consumed: bool | None = None) -> ForeignWorker:
    """A worker known only by its control queue (``<node>.celery.pidbox``). Where the broker counts that
    queue's consumers (RabbitMQ, ``consumed``) a queue nobody consumes is a dead worker's; on Redis the
    binding outlives a crash, and without task events nothing says whether the worker lives: ``alive`` is
    ``None``, unknown."""
    host = node.partition("@")[2] or None
    if consumed is False:
        return ForeignWorker(CELERY, node, False, None, "its control queue has no consumer", host=host)
    return ForeignWorker(CELERY, node, consumed, None, None, host=host)


def _check_fields(event: Mapping[str, Any]) -> None:
    """:class:`MalformedEntry` for an optional field that is there but not what Celery writes: read before
    the event changes anything, so that a hostile one changes nothing."""
    checked(event.get("freq"), _interval, "freq", "an interval")
    checked(event.get("runtime"), _duration, "runtime", "a duration")
    for key in ("pid", "active"):
        checked(event.get(key), count, key, "a count")
    for key in ("name", "routing_key", "queue"):
        checked(event.get(key), name, key, "a name")


def _interval(value: Any) -> float | None:
    seconds = _number(value)
    return seconds if seconds is not None and 0 < seconds <= MAX_FREQ_S else None


def _duration(value: Any) -> float | None:
    seconds = _number(value)
    return seconds if seconds is not None and seconds >= 0 else None


def _number(value: Any) -> float | None:
    number = finite(value)
    return None if number is None else float(number)


class CeleryWatch:
    """:class:`CeleryEvents` shared by one listener thread that feeds it and the polls that read it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events = CeleryEvents()

    def feed_body(self, body: bytes) -> None:
        """An AMQP message's body (RabbitMQ's ``celeryev`` exchange)."""
        self._apply(events_in(body))

    def feed_envelope(self, payload: bytes) -> None:
        """A Redis PUBLISH on ``/<db>.celeryev/<routing key>``: kombu's envelope."""
        self._apply(events_in_envelope(payload))

    def _apply(self, events: list[dict[str, Any]]) -> None:
        with self._lock:
            for event in events:
                self._events.apply(event)

    def workers(self, now_s: float, present: Iterable[str] = ()) -> tuple[ForeignWorker, ...]:
        with self._lock:
            return self._events.workers(now_s, present)

    def task_stats(self) -> dict[str, TaskStats]:
        with self._lock:
            return self._events.task_stats()

    @property
    def folded(self) -> int:
        return self._events.folded

    @property
    def wait_from(self) -> str:
        return self._events.wait_from

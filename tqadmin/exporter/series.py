"""The last readings as Prometheus families, with bounded labels.

Labels are ``profile``, ``queue``, ``task_type``, ``reason``, ``framework`` and ``state``, never a worker id,
host or pod. Past ``max_queues`` queues (over every profile, in profile then name order, so the same queues
keep their series from one scrape to the next) the rest are summed into one series per profile, labelled
``queue="amq.tqadmin.folded", folded="true"`` (:data:`~tqadmin.telemetry.metric_names.OTHER_QUEUES`), which
no queue's own series can be taken for; tqadmin's task types are capped the same way and summed into
``task_type="(other)"``, another framework's at :data:`~tqadmin.telemetry.task_names.MAX_TASK_TYPES` (its
listener's own cap), and how many task types were folded, here or by the workers and listeners, is served as
``tqadmin_task_types_folded``. A figure the broker does not give (SQS's oldest-message age, a consumer count)
is absent, never 0, and so is one that is not finite (Prometheus would serve it as ``+Inf``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from tqadmin.alerting.conditions import queue_contexts
from tqadmin.exporter.polling import Served
from tqadmin.plugin.models import QueueStats
from tqadmin.show.finite import finite
from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.counters import TaskStats, fold_task_types
from tqadmin.telemetry.families import task_families
from tqadmin.telemetry.task_names import LABELS, MAX_TASK_TYPES
from tqadmin.telemetry.verdict import VERDICTS

QueueFigure = Callable[[QueueStats], float | None]
# name, help, how to read it of a queue, how to fold it over the queues past the cap
QUEUE_FIGURES: tuple[tuple[str, str, QueueFigure, Callable[[Iterable[float]], float]], ...] = (
    (names.QUEUE_MESSAGES, "Messages in the queue: ready and in flight.", lambda q: q.messages, sum),
    (names.QUEUE_READY, "Messages ready to be delivered.", lambda q: q.ready, sum),
    (names.QUEUE_IN_FLIGHT, "Messages delivered and not yet acknowledged.", lambda q: q.unacked, sum),
    (names.QUEUE_DELAYED, "Messages waiting out a retry delay.", lambda q: q.delayed, sum),
    (
        names.QUEUE_OLDEST_AGE,
        "Age of the oldest message that can be taken now (a retry counts from its due time), seconds.",
        lambda q: q.oldest_age_s,
        max,
    ),
    (names.QUEUE_PUBLISH_RATE, "Messages published a second.", lambda q: q.publish_rate, sum),
    (names.QUEUE_DELIVER_RATE, "Messages delivered a second.", lambda q: q.deliver_rate, sum),
    (names.QUEUE_ACK_RATE, "Messages acknowledged a second.", lambda q: q.ack_rate, sum),
    (names.QUEUE_CONSUMERS, "Consumers attached.", lambda q: q.consumers, sum),
    (names.QUEUE_DEAD_LETTERS, "Messages in the queue's dead-letter queue.", lambda q: q.dlq_messages, sum),
    (
        names.QUEUE_DLQ_OLDEST_AGE,
        "Age of the oldest message in the queue's dead-letter queue, seconds.",
        lambda q: q.dlq_oldest_age_s,
        max,
    ),
    (
        names.QUEUE_DRAIN,
        "Seconds the queue takes to empty at the pace of the drain window (absent: no estimate).",
        lambda q: q.drain_s,
        max,
    ),
    (
        names.QUEUE_GROWING,
        "1 when the queue's depth rose throughout the drain window, 0 when it did not.",
        lambda q: None if q.growing is None else float(q.growing),
        max,
    ),
)


@dataclass(frozen=True, slots=True)
class Folded:
    """Series kept and folded (queues into the fold series, task types into ``(other)``) for one profile;
    ``folded_tasks``: task types folded by framework, here and by the workers or listeners that read them."""

    queues: tuple[QueueStats, ...]
    other_queues: tuple[QueueStats, ...]
    tasks: dict[str, TaskStats]
    framework_tasks: dict[str, dict[str, TaskStats]]
    folded_tasks: dict[str, int]


def fold(readings: Sequence[Served], max_queues: int) -> dict[str, Folded]:
    """Each profile's queues and task types within the cap (shared by every profile, in order)."""
    queue_room = task_room = max_queues
    folded: dict[str, Folded] = {}
    for reading in readings:
        queues = sorted(reading.queues or (), key=lambda q: q.name)
        kept, queue_room = queues[:queue_room], max(queue_room - len(queues), 0)
        tasks, folded_here = fold_task_types(reading.tasks, task_room)
        task_room = max(task_room - sum(name not in LABELS for name in reading.tasks), 0)
        framework_tasks: dict[str, dict[str, TaskStats]] = {}
        folded_tasks = {names.FRAMEWORK: reading.folded_task_types + folded_here}
        for framework, named in sorted(reading.framework_tasks.items()):
            framework_tasks[framework], folded_there = fold_task_types(named, MAX_TASK_TYPES)
            folded_tasks[framework] = reading.framework_folded.get(framework, 0) + folded_there
        folded[reading.profile] = Folded(
            tuple(kept), tuple(queues[len(kept) :]), tasks, framework_tasks, folded_tasks
        )
    return folded


def reading_families(readings: Sequence[Served], folded: dict[str, Folded]) -> list[Metric]:
    """Everything that changes only when a profile is polled (encoded once per poll)."""
    return [
        *_folded(readings, folded),
        *_queues(readings, folded),
        *task_families(
            (
                *(
                    ({"profile": reading.profile, "framework": names.FRAMEWORK, "task_type": name}, stats)
                    for reading in readings
                    for name, stats in folded[reading.profile].tasks.items()
                ),
                *(
                    ({"profile": reading.profile, "framework": framework, "task_type": name}, stats)
                    for reading in readings
                    for framework, tasks in folded[reading.profile].framework_tasks.items()
                    for name, stats in tasks.items()
                ),
            ),
            ("profile", "framework", "task_type"),
        ),
        *_workers(readings),
        _verdicts(readings, folded),
        *_cron(readings),
        *_pauses(readings),
    ]


def health_families(readings: Sequence[Served], now_s: float) -> list[Metric]:
    """Whether each profile is up and how old its values are, as of the scrape."""
    up = GaugeMetricFamily(names.UP, "1 when the last poll of every part succeeded.", labels=["profile"])
    age = GaugeMetricFamily(names.POLL_AGE, "Age of the values served, seconds.", labels=["profile"])
    duration = GaugeMetricFamily(
        names.POLL_DURATION, "How long the last poll took, seconds.", labels=["profile"]
    )
    errors = CounterMetricFamily(names.POLL_ERRORS, "Polls that failed.", labels=["profile"])
    for reading in readings:
        labels = [reading.profile]
        up.add_metric(labels, 1 if reading.up else 0)
        if reading.last_success_s is not None:
            age.add_metric(labels, max(now_s - reading.last_success_s, 0.0))
        if reading.duration_s is not None:
            duration.add_metric(labels, reading.duration_s)
        errors.add_metric(labels, reading.errors)
    return [up, age, duration, errors]


def _folded(readings: Sequence[Served], folded: dict[str, Folded]) -> list[Metric]:
    family = GaugeMetricFamily(
        names.QUEUES_FOLDED,
        f'Queues past --max-queues, summed into queue="{names.OTHER_QUEUES}" ({names.FOLDED}="true").',
        labels=["profile"],
    )
    tasks = GaugeMetricFamily(
        names.TASK_TYPES_FOLDED,
        'Task types past a cap, summed into task_type="(other)" (by the workers, added up, and here).',
        labels=["profile", "framework"],
    )
    for reading in readings:
        shown = folded[reading.profile]
        family.add_metric([reading.profile], len(shown.other_queues))
        for framework, count in shown.folded_tasks.items():
            tasks.add_metric([reading.profile, framework], count)
    return [family, tasks]


def _queues(readings: Sequence[Served], folded: dict[str, Folded]) -> list[Metric]:
    result: list[Metric] = []
    for name, help_text, figure, combine in QUEUE_FIGURES:
        family = GaugeMetricFamily(name, help_text, labels=["profile", "queue"])
        for reading in readings:
            shown = folded[reading.profile]
            for queue in shown.queues:
                value = finite(figure(queue))
                if value is not None:
                    family.add_metric([reading.profile, queue.name], value)
            present = [v for q in shown.other_queues if (v := finite(figure(q))) is not None]
            if present:  # a queue label as every queue series has, and the one label only the fold has
                labels = {"profile": reading.profile, "queue": names.OTHER_QUEUES, names.FOLDED: "true"}
                family.samples.append(Sample(name, labels, combine(present)))
        result.append(family)
    return [*result, *_queue_contexts(readings, folded)]


def _queue_contexts(readings: Sequence[Served], folded: dict[str, Folded]) -> list[Metric]:
    """What the alert rules need beside a queue's figures: which queues are dead-letter queues (no consumer
    is expected there) and the workers of each queue by state (all dead is an alert)."""
    dead_letter_queue = GaugeMetricFamily(
        names.QUEUE_IS_DEAD_LETTER_QUEUE,
        "1 for a queue another queue names as its dead-letter queue.",
        labels=["profile", "queue"],
    )
    workers = GaugeMetricFamily(
        names.QUEUE_WORKERS, "Workers that list the queue, by state.", labels=["profile", "queue", "state"]
    )
    for reading in readings:
        contexts = queue_contexts(reading.queues or (), reading.worker_queues, reading.verdicts)
        for queue in folded[reading.profile].queues:
            context = contexts[queue.name]
            if context.dead_letter_queue:
                dead_letter_queue.add_metric([reading.profile, queue.name], 1)
            if context.live_workers or context.dead_workers:
                workers.add_metric([reading.profile, queue.name, "live"], context.live_workers)
                workers.add_metric([reading.profile, queue.name, "dead"], context.dead_workers)
    return [dead_letter_queue, workers]


def _workers(readings: Sequence[Served]) -> list[Metric]:
    family = GaugeMetricFamily(
        names.WORKERS,
        "Workers by framework and state (live, dead; unknown: a Celery worker seen without task events).",
        labels=["profile", "framework", "state"],
    )
    for reading in readings:
        for state in ("live", "dead"):
            family.add_metric([reading.profile, names.FRAMEWORK, state], reading.workers.get(state, 0))
        for framework in sorted({framework for framework, _state in reading.framework_workers}):
            for state in ("live", "dead", "unknown"):
                count = reading.framework_workers.get((framework, state), 0)
                if count or state != "unknown":
                    family.add_metric([reading.profile, framework, state], count)
    wedged = GaugeMetricFamily(
        names.WORKERS_WEDGED,
        "Live workers alive by their heartbeat yet making no progress (docs/pipeline.md, Wedged workers).",
        labels=["profile", "framework"],
    )
    for reading in readings:
        frameworks = {names.FRAMEWORK, *reading.wedged, *(f for f, _state in reading.framework_workers)}
        for framework in sorted(frameworks):
            wedged.add_metric([reading.profile, framework], reading.wedged.get(framework, 0))
    return [family, wedged]


def _verdicts(readings: Sequence[Served], folded: dict[str, Folded]) -> Metric:
    """Each work queue with a series of its own: 1 for its verdict, 0 for the others (seven values of the
    label, so a series is there whatever the verdict and ``== 1`` tells which). The reason is the
    dashboard's and ``tqadmin health``'s, not a label: free text would make the label set unbounded."""
    family = GaugeMetricFamily(
        names.QUEUE_VERDICT,
        "1 for the queue's verdict over the profile's stall_after_s (docs/health.md), 0 for the others.",
        labels=["profile", "queue", "verdict"],
    )
    for reading in readings:
        for queue in folded[reading.profile].queues:
            found = reading.verdicts.get(queue.name)
            if found is None:
                continue  # a DLQ or a delay queue: not judged
            for verdict in VERDICTS:
                family.add_metric([reading.profile, queue.name, verdict], float(verdict == found.verdict))
    return family


def _pauses(readings: Sequence[Served]) -> list[Metric]:
    """Each standing pause: ``task_type`` is the paused type, or ``(all)`` for the whole queue (labels
    bounded by what people paused; a schedule's pause is not served here)."""
    labels = ["profile", "queue", "task_type"]
    paused = GaugeMetricFamily(
        names.PAUSED, "1 for each standing pause of a queue or task type.", labels=labels
    )
    until = GaugeMetricFamily(
        names.PAUSED_UNTIL, "When the pause runs out, epoch seconds (absent: until resumed).", labels=labels
    )
    since = GaugeMetricFamily(names.PAUSED_SINCE, "When the pause was set, epoch seconds.", labels=labels)
    for reading in readings:
        for pause in reading.pauses:
            t = pause.target
            if t.queue is None:
                continue
            key = [reading.profile, t.queue, t.task_type or names.WHOLE_QUEUE]
            paused.add_metric(key, 1)
            since.add_metric(key, pause.since)
            if pause.until is not None:
                until.add_metric(key, pause.until)
    return [paused, until, since]


def _cron(readings: Sequence[Served]) -> list[Metric]:
    lateness = GaugeMetricFamily(
        names.CRON_LATENESS, "The latest fire's lateness over every schedule, seconds.", labels=["profile"]
    )
    schedules = GaugeMetricFamily(names.CRON_SCHEDULES, "Schedules registered.", labels=["profile"])
    leader = GaugeMetricFamily(
        names.CRON_LEADER, "1 while a cron instance holds the lease.", labels=["profile"]
    )
    fence = GaugeMetricFamily(names.CRON_FENCE, "The latest fencing token.", labels=["profile"])
    for reading in readings:
        status = reading.cron
        if status is None:
            continue
        labels = [reading.profile]
        late = [row.lateness_s for row in status.rows if row.lateness_s is not None]
        if late:
            lateness.add_metric(labels, max(late))
        schedules.add_metric(labels, len(status.rows))
        leader.add_metric(labels, 1 if status.leader else 0)
        fence.add_metric(labels, status.fencing_token)
    return [lateness, schedules, leader, fence]

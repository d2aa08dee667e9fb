"""The job a tick publishes, and publishing it: what the scheduler's ticks and on-call's triggers share."""

from __future__ import annotations

from collections.abc import Callable

from tqadmin.errors import TqadminError
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.status import iso
from tqadmin.pipeline.job import Job
from tqadmin.store.cron.base import tick_id
from tqadmin.store.triggers.base import TriggerRequest

Publish = Callable[[str, Job], None]
"""``publish(queue, job)``: durable and confirmed; raises when the broker did not confirm."""


class PublishFailed(Exception):
    """A tick's job was not confirmed; it stays pending and is published again after a back-off."""


def cron_job(schedule: Schedule, scheduled: int, token: int, instance: str, now: float) -> Job:
    """The job of one tick: the schedule's fields plus ``scheduled``, ``fencing_token`` and ``instance``."""
    fields = {**schedule.job, "scheduled": scheduled, "fencing_token": token, "instance": instance}
    return Job(schedule.task_type, tick_id(schedule.name, scheduled), iso(now) or "", 0, fields)


def trigger_job(schedule: Schedule, request: TriggerRequest, token: int, instance: str, now: float) -> Job:
    """The job of a triggered tick: a tick's, with its own id and ``triggered_by`` (who asked for it)."""
    job = cron_job(schedule, int(now), token, instance, now)
    return Job(job.task_type, request.job_id, job.timestamp, 0, {**job.fields, "triggered_by": request.who})


def publish_job(publish: Publish, queue: str, job: Job) -> None:
    """``publish(queue, job)``, whatever it raised said as one :class:`PublishFailed`."""
    try:
        publish(queue, job)
    except Exception as exc:
        detail = str(exc) if isinstance(exc, TqadminError) else f"{type(exc).__name__}: {exc}"
        raise PublishFailed(f"publishing {job.id} to {queue!r} failed: {detail}") from exc

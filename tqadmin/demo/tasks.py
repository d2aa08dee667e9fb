"""The demo's task module, loaded by each worker with ``--tasks tqadmin.demo.tasks``.

Four task types with the shapes real ones have: an image resize (the seed's example), an email, a report that
is sometimes slow, and a card charge whose effect must happen exactly once (``ctx.once``). Each run first asks
:mod:`tqadmin.demo.chaos` how it should go, so failures are injected at the failure rate the demo was started
with and the same job fails the same way on whichever worker runs it.
"""

from __future__ import annotations

import time
from typing import Any

from tqadmin import FatalError, TransientError, task
from tqadmin.demo.chaos import Chaos, Fate
from tqadmin.pipeline.tasks import TaskContext
from tqadmin.store.completion.effects import add
from tqadmin.store.keys import job_tag

CHAOS = Chaos.from_env()


def ledger_key(queue_prefix: str, job_id: str) -> str:
    """One ledger entry per charge, carrying the job's hash tag so the effect and the completion mark share
    a slot on Redis Cluster; ``times`` above 1 would be a double charge."""
    return f"{queue_prefix}:charge:{job_tag(job_id)}"


# What each task type's injected failures look like in the dead-letter queue's x-tq-error.
FAILURES: dict[str, tuple[str, str]] = {
    "resize_image": ("image store answered 503 Service Unavailable", "image is corrupt: not a JPEG"),
    "send_email": ("SMTP server busy: 421 try again later", "mailbox does not exist: 550 no such user"),
    "generate_report": ("database connection reset while reading", "report template is missing"),
    "charge_card": ("payment gateway timed out", "card declined: insufficient funds"),
}


def strike(ctx: TaskContext, chaos: Chaos = CHAOS) -> None:
    """Fail this run, or slow it down past the worker's ``--job-timeout``, as the chaos decides."""
    fate = chaos.fate(ctx.task_type, ctx.job_id, ctx.attempt)
    transient, fatal = FAILURES.get(ctx.task_type, ("temporary failure", "permanent failure"))
    if fate is Fate.TRANSIENT:
        raise TransientError(transient)
    if fate is Fate.FATAL:
        raise FatalError(fatal)
    if fate is Fate.SLOW:
        ctx.logger.info("slow run: %.1f s", chaos.slow_s)
        time.sleep(chaos.slow_s)


@task("resize_image", max_retries=3)
def resize_image(ctx: TaskContext, job: dict[str, Any]) -> dict[str, Any]:
    strike(ctx)
    width, height = int(job.get("width", 640)), int(job.get("height", 480))
    scale = min(1.0, 256 / max(width, height, 1))
    return {"thumbnail": f"{job.get('image_url', '')}@{round(width * scale)}x{round(height * scale)}"}


@task("send_email", max_retries=2)
def send_email(ctx: TaskContext, job: dict[str, Any]) -> dict[str, Any]:
    strike(ctx)
    return {"sent_to": job.get("to"), "template": job.get("template")}


@task("generate_report", max_retries=3)
def generate_report(ctx: TaskContext, job: dict[str, Any]) -> dict[str, Any]:
    strike(ctx)
    rows = int(job.get("rows", 0))
    time.sleep(min(rows, 5000) / 50_000)  # a report takes a little while: 0 to 100 ms
    return {"report": job.get("report"), "rows": rows}


@task("charge_card", max_retries=3)
def charge_card(ctx: TaskContext, job: dict[str, Any]) -> dict[str, Any]:
    """Charges once however often the job is delivered: the ledger entry commits with the completion mark."""
    strike(ctx)
    amount = int(job.get("amount_cents", 0))
    key = ledger_key(ctx.queue.rsplit(".", 1)[0] if ctx.queue else "demo", ctx.job_id)
    ctx.once(add(key, "times", 1))  # the same effects on the embedded SQLite store and on Redis
    ctx.once(add(key, "cents", amount))
    return {"customer": job.get("customer"), "charged_cents": amount}

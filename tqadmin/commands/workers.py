"""`tqadmin workers`: every framework's workers, live and recently dead, each from where it keeps itself.

tqadmin's own workers beat into the state store; RQ's, Sidekiq's and Dramatiq's are read from their
registries on the profile's broker where its plugin knows them (``capabilities.worker_registries``),
without writing a byte. When one source cannot be read the others are still listed and the exit code is 5,
naming what is missing (docs/interface.md, exit codes).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode
from tqadmin.frameworks.summary import TQADMIN
from tqadmin.plugin.workers import CurrentJob, ForeignWorker, WorkerReading
from tqadmin.reading.reading import Part, ProfileReading
from tqadmin.show.masking import mask_text
from tqadmin.show.tables import table
from tqadmin.store.completion.base import WorkerRecord
from tqadmin.telemetry.progress import progress_json
from tqadmin.telemetry.wedged import Verdict


def configure(parser: argparse.ArgumentParser) -> None:
    """No options: the store and the broker are global options (``--store``, ``--broker``)."""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    reading = ctx.read({Part.WORKERS, Part.FRAMEWORKS})
    registries = ctx.plugin().capabilities.worker_registries
    failed = [part for part in (Part.WORKERS, Part.FRAMEWORKS) if part in reading.unread]
    if len(failed) == 1 + bool(registries):  # nothing could be read: the first failure's own exit code
        reading.raise_for(failed[0])
    unreadable = not_listed(reading, registries)
    workers = listed(reading)
    document = {"workers": workers, "unreadable": unreadable}
    ctx.emit(document, lambda: describe(workers))
    for what in unreadable:
        ctx.progress(f"tqadmin: warning: workers not listed: {what}")
    return int(ExitCode.PARTIAL if unreadable else ExitCode.OK)


def not_listed(reading: ProfileReading, registries: Iterable[str]) -> list[str]:
    """The sources of workers that could not be read, each with why, then the registry entries skipped."""
    sources = {Part.WORKERS: f"{TQADMIN} workers", Part.FRAMEWORKS: f"{', '.join(registries)} workers"}
    said = [f"{sources[part]}: {reading.unread[part].why}" for part in sources if part in reading.unread]
    return said + [mask_text(what) for what in (reading.frameworks or WorkerReading()).unreadable]


def listed(reading: ProfileReading) -> list[dict[str, Any]]:
    """Every worker of ``reading`` as ``--json`` lists it, tqadmin's first, each with its wedged verdict."""
    records, others = reading.workers or (), reading.frameworks or WorkerReading()
    own = [own_worker(record, verdict) for record, verdict in zip(records, reading.verdicts, strict=True)]
    judged = zip(others.workers, reading.framework_verdicts, strict=True)
    return own + [foreign_json(worker, verdict) for worker, verdict in judged]


def own_worker(record: WorkerRecord, verdict: Verdict) -> dict[str, Any]:
    snapshot = record.snapshot
    counts = snapshot.totals().counts()
    progress = snapshot.progress
    now = snapshot.heartbeat_at + max(record.age_s, 0.0)
    return {
        "name": snapshot.worker_id,
        "id": snapshot.worker_id,
        "framework": TQADMIN,
        "host": snapshot.host,
        "pid": snapshot.pid,
        "queues": list(snapshot.queues),
        "alive": record.alive,
        "dead_reason": None if record.alive else f"no heartbeat for {record.age_s:.0f} s",
        "heartbeat_age_s": round(record.age_s, 3),
        "state": None,
        "current_job": snapshot.current_job,
        "current_jobs": list(snapshot.current_jobs),
        "current_tasks": [job_json(CurrentJob(job_id)) for job_id in snapshot.current_jobs],
        "started_at": iso(snapshot.started_at),
        **counts,
        "counts": counts,
        "wedged": verdict.wedged,
        "wedged_reason": verdict.reason,
        "progress": None if progress is None else progress_json(progress, now),
        "restarts": snapshot.restarts,
        "watchdog_restarts": snapshot.watchdog_restarts,
    }


def foreign_json(worker: ForeignWorker, verdict: Verdict) -> dict[str, Any]:
    jobs = worker.current_jobs
    return {
        "name": worker.name,
        "id": worker.name,
        "framework": worker.framework,
        "host": worker.host,
        "pid": worker.pid,
        "queues": list(worker.queues),
        "alive": worker.alive,
        "dead_reason": worker.dead_reason,
        "heartbeat_age_s": None if worker.heartbeat_age_s is None else round(worker.heartbeat_age_s, 3),
        "state": worker.state,
        "concurrency": worker.concurrency,
        "current_job": jobs[0].id if jobs else None,
        "current_jobs": [job.id for job in jobs],
        "current_tasks": [job_json(job) for job in jobs],
        "started_at": iso(worker.started_at) if worker.started_at is not None else None,
        "wedged": verdict.wedged,
        "wedged_reason": verdict.reason,
    }


def job_json(job: CurrentJob) -> dict[str, Any]:
    started = iso(job.started_at) if job.started_at is not None else None
    return {"id": job.id, "task": job.task, "queue": job.queue, "started_at": started}


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def describe(workers: list[dict[str, Any]]) -> str:
    if not workers:
        return "no worker has sent a heartbeat (start one with: tqadmin worker --queue Q --tasks MODULE)"
    rows = [
        [
            w["name"],
            w["framework"],
            "wedged" if w["wedged"] else {True: "alive", False: "dead", None: "unknown"}[w["alive"]],
            "-" if w["heartbeat_age_s"] is None else round(w["heartbeat_age_s"], 1),
            ",".join(w["queues"]),
            current_text(w["current_tasks"]) if w["current_tasks"] else w["state"] or "-",
            w.get("done", "-"),
            w.get("failed", "-"),
            w["dead_reason"] or (w["wedged_reason"] if w["wedged"] else "") or "",
        ]
        for w in workers
    ]
    headers = [
        "worker",
        "framework",
        "state",
        "age_s",
        "queues",
        "current jobs",
        "done",
        "failed",
        "why dead or wedged",
    ]
    return table(headers, rows)


def current_text(tasks: list[dict[str, Any]]) -> str:
    """``task id`` for each current job, ``-`` when idle."""
    shown = [" ".join(filter(None, (t["task"], t["id"]))) for t in tasks]
    return ", ".join(shown) if shown else "-"

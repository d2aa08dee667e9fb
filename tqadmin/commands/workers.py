"""`tqadmin workers`: every framework's workers, live and recently dead, each from where it keeps itself.

tqadmin's own workers beat into the state store; RQ's, Sidekiq's and Dramatiq's are read from their
registries on the profile's broker where its plugin knows them (``capabilities.worker_registries``),
without writing a byte. When one source cannot be read the others are still listed and the exit code is 5,
naming what is missing (docs/interface.md, exit codes).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any

from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, NoDatabase, TqadminError
from tqadmin.file_access import Access
from tqadmin.frameworks.summary import TQADMIN
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.masking import mask_text
from tqadmin.plugin.workers import CurrentJob, ForeignWorker, WorkerReading
from tqadmin.store import open_store
from tqadmin.store.base import WorkerRecord
from tqadmin.tables import table
from tqadmin.telemetry.progress import progress_json
from tqadmin.telemetry.wedged import Verdict, judge_all


def configure(parser: argparse.ArgumentParser) -> None:
    """No options: the store and the broker are global options (``--store``, ``--broker``)."""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    failures: list[tuple[str, TqadminError]] = []
    records = _own_workers(ctx, failures)
    reading, unreadable = _framework_workers(ctx, failures)
    sources = 1 + bool(ctx.plugin().capabilities.worker_registries)
    if len(failures) == sources:  # nothing could be read: the first failure's own exit code (3, 4)
        raise failures[0][1]
    unreadable = [f"{what}: {mask_text(str(exc))}" for what, exc in failures] + unreadable
    policy, now = ctx.settings.wedged, time.time()
    verdicts = judge_all([(r.snapshot, r.age_s, r.alive) for r in records], policy)
    own = [own_worker(record, verdict) for record, verdict in zip(records, verdicts, strict=True)]
    tasks = reading.tasks
    workers = own + [
        foreign_json(w, judge_foreign(w, policy, now, tasks.get(w.framework))) for w in reading.workers
    ]
    document = {"workers": workers, "unreadable": unreadable}
    ctx.emit(document, lambda: describe(workers))
    for what in unreadable:
        ctx.progress(f"tqadmin: warning: workers not listed: {what}")
    return int(ExitCode.PARTIAL if unreadable else ExitCode.OK)


def _own_workers(ctx: CommandContext, failures: list[tuple[str, TqadminError]]) -> list[WorkerRecord]:
    """tqadmin's workers from the state store; none on a fresh machine (said on stderr)."""
    try:
        store = open_store(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s, access=Access.READ)
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
        return []
    except TqadminError as exc:
        failures.append((f"{TQADMIN} workers", exc))
        return []
    try:
        return store.workers()
    except TqadminError as exc:
        failures.append((f"{TQADMIN} workers", exc))
        return []
    finally:
        store.close()


def _framework_workers(
    ctx: CommandContext, failures: list[tuple[str, TqadminError]]
) -> tuple[WorkerReading, list[str]]:
    """Other frameworks' workers from the broker, and the registries there that could not be read."""
    registries = ctx.plugin().capabilities.worker_registries
    if not registries:
        return WorkerReading(), []
    try:
        with ctx.admin() as admin:
            reading = admin.framework_workers()
    except TqadminError as exc:
        failures.append((f"{', '.join(registries)} workers", exc))
        return WorkerReading(), []
    return reading, [mask_text(what) for what in reading.unreadable]


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

"""`tqadmin workers`: live and recently dead workers, from their heartbeats in the state store."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from tqadmin.commands.context import CommandContext
from tqadmin.errors import NoDatabase
from tqadmin.store import open_store
from tqadmin.store.base import WorkerRecord
from tqadmin.tables import table


def configure(parser: argparse.ArgumentParser) -> None:
    """No options: the store URL is a global option (``--store``)."""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    records: list[WorkerRecord] = []
    try:
        store = open_store(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s, create=False)
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
    else:
        try:
            records = store.workers()
        finally:
            store.close()
    document = {"workers": [worker_json(record) for record in records]}
    ctx.emit(document, lambda: describe(records))
    return 0


def worker_json(record: WorkerRecord) -> dict[str, Any]:
    snapshot = record.snapshot
    counts = snapshot.totals().counts()
    return {
        "name": snapshot.worker_id,
        "id": snapshot.worker_id,
        "host": snapshot.host,
        "pid": snapshot.pid,
        "queues": list(snapshot.queues),
        "alive": record.alive,
        "heartbeat_age_s": round(record.age_s, 3),
        "current_job": snapshot.current_job,
        "current_jobs": list(snapshot.current_jobs),
        "started_at": iso(snapshot.started_at),
        **counts,
        "counts": counts,
    }


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def describe(records: list[WorkerRecord]) -> str:
    if not records:
        return "no worker has sent a heartbeat (start one with: tqadmin worker --queue Q --tasks MODULE)"
    rows = []
    for record in records:
        snapshot = record.snapshot
        counts = snapshot.totals()
        rows.append(
            [
                snapshot.worker_id,
                "alive" if record.alive else "dead",
                round(record.age_s, 1),
                ",".join(snapshot.queues),
                snapshot.current_job or "-",
                counts.done,
                counts.failed,
                counts.retried,
                counts.dead_lettered,
                counts.deduplicated,
            ]
        )
    headers = [
        "worker",
        "state",
        "age_s",
        "queues",
        "current job",
        "done",
        "failed",
        "retried",
        "dlq",
        "dedup",
    ]
    return table(headers, rows)

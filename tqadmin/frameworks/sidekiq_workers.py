"""Sidekiq's processes, decoded from the keys Sidekiq writes (lib/sidekiq/launcher.rb and api.rb; BROKERS.md).

The ``processes`` set holds identities (``hostname:pid:random``); each identity is a hash Sidekiq rewrites
with every beat and gives 60 seconds to live: ``info`` (JSON: hostname, started_at, pid, tag, queues,
concurrency...), ``busy``, ``beat``, ``quiet``, ``rss``. ``<identity>:work`` maps each busy thread to
``{"queue", "payload", "run_at"}``, the payload being the job's own JSON (a string from Sidekiq 7 on, an
object before). A member whose hash is gone is dead; Sidekiq's own ``ProcessSet`` would remove it, which a
reader must not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tqadmin.frameworks.decoding import NOT_JSON, as_text, count, name, parse_json
from tqadmin.frameworks.sidekiq import moment
from tqadmin.frameworks.summary import SIDEKIQ
from tqadmin.plugin.workers import CurrentJob, ForeignWorker

PROCESSES = "processes"
HASH_TTL_S = 60.0  # the expiry Sidekiq sets on a process's hash at each beat


def work_key(identity: str) -> str:
    return f"{identity}:work"


def process(
    identity: str, fields: Mapping[str, Any] | None, work: Mapping[Any, Any], now_s: float
) -> ForeignWorker:
    """The process ``identity``: ``fields`` its hash (``None`` when gone), ``work`` its ``:work`` hash."""
    if not fields:
        return ForeignWorker(SIDEKIQ, identity, False, None, "hash expired; a stale member of processes")
    info = _object(fields.get("info"))
    beat = moment(_number(fields.get("beat")))
    age = max(0.0, now_s - beat) if beat is not None else None
    late = age is not None and age > HASH_TTL_S
    quiet = as_text(fields.get("quiet")) == "true"
    busy = count(fields.get("busy")) or 0
    return ForeignWorker(
        SIDEKIQ,
        identity,
        not late,
        age,
        f"heartbeat older than Sidekiq's {HASH_TTL_S:.0f} s" if late else None,
        queues=tuple(q for q in map(name, info.get("queues") or ()) if q),
        current_jobs=tuple(_job(tid, entry) for tid, entry in sorted(work.items(), key=lambda i: str(i[0]))),
        host=name(info.get("hostname")),
        pid=count(info.get("pid")),
        state="quiet" if quiet else ("busy" if busy else "idle"),
        concurrency=count(info.get("concurrency")),
        started_at=moment(info.get("started_at")),
    )


def _job(tid: Any, entry: Any) -> CurrentJob:
    work = _object(entry)
    payload = work.get("payload")
    job = payload if isinstance(payload, dict) else _object(payload)
    return CurrentJob(
        name(job.get("jid")) or f"thread {as_text(tid)}",
        name(job.get("wrapped")) or name(job.get("class")),
        name(work.get("queue")) or name(job.get("queue")),
        moment(work.get("run_at")),
    )


def _object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    parsed = parse_json(value) if isinstance(value, bytes | str) else NOT_JSON
    return parsed if isinstance(parsed, dict) else {}


def _number(value: Any) -> float | None:
    text = as_text(value)
    try:
        return float(text) if text else None
    except ValueError:
        return None

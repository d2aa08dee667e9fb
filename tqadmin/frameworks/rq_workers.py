"""RQ's workers, decoded from the keys RQ writes (BROKERS.md, "Other frameworks' workers").

``rq:workers`` is a set of ``rq:worker:<name>`` keys; each is a hash (``birth``, ``last_heartbeat``,
``queues``, ``pid``, ``hostname``, ``state``, ``death``) that RQ gives ``worker_ttl + 60`` seconds to live
at each heartbeat, and a busy worker ``job_monitoring_interval + 60``. So a hash with less than a minute
left has missed its own time-to-live, whatever TTL that worker was started with: it is dead, as is a
member whose hash is gone (RQ leaves those in the set). The current job is the ``current_job`` field in
releases before mid-2026 and the ``<key>:executions`` set of ``job_id:execution_id`` after; a job's task
name comes from its ``description`` (``module.func(args)``), never from the pickled ``data``. A field that
is there but not what RQ writes (a ``last_heartbeat`` that is no time, a ``pid`` that is no process id) makes
the worker :class:`~tqadmin.plugin.workers.MalformedEntry`, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tqadmin.frameworks.decoding import as_text, checked, count, epoch_seconds, name, seconds
from tqadmin.frameworks.rq import called_function
from tqadmin.frameworks.summary import RQ
from tqadmin.plugin.workers import CurrentJob, ForeignWorker

WORKER_PREFIX = "rq:worker:"
RENEWAL_MARGIN_S = 60.0  # what RQ adds to the TTL it gives the hash at each heartbeat


def executions_key(worker_key: str) -> str:
    return f"{worker_key}:executions"


def job_key(job_id: str) -> str:
    return f"rq:job:{job_id}"


def current_job_ids(fields: Mapping[str, Any] | None, executions: Sequence[Any]) -> tuple[str, ...]:
    """The ids of the jobs the worker runs now: its executions (``job_id:execution_id``), or the older
    ``current_job`` field."""
    ids = [
        job_id for text in filter(None, map(as_text, executions)) if (job_id := name(text.rsplit(":", 1)[0]))
    ]
    legacy = name((fields or {}).get("current_job"))
    if not ids and legacy:
        ids.append(legacy)
    return tuple(sorted(set(ids)))


def worker(
    key: str,
    fields: Mapping[str, Any] | None,
    ttl_s: float | None,
    jobs: Mapping[str, Mapping[str, Any]],
    now_s: float,
) -> ForeignWorker:
    """The worker registered as ``key``: ``fields`` its hash (``None`` when gone), ``ttl_s`` what is left
    of the hash's life (``None`` without an expiry), ``jobs`` the hashes of its current jobs by id."""
    shown = key.removeprefix(WORKER_PREFIX)
    if not fields:
        return ForeignWorker(RQ, shown, False, None, "hash expired; a stale member of rq:workers")
    birth = checked(fields.get("birth"), epoch_seconds, "birth", "a time")
    beat = checked(fields.get("last_heartbeat"), epoch_seconds, "last_heartbeat", "a time") or birth
    age = max(0.0, now_s - beat) if beat is not None else None
    reason = None
    if fields.get("death") is not None:
        reason = "it registered its death"
    elif ttl_s is not None and ttl_s < RENEWAL_MARGIN_S:
        reason = "heartbeat overdue (past its own TTL)"
    current = tuple(
        CurrentJob(
            job_id,
            called_function(job.get("description")),
            checked(job.get("origin"), name, f"job {job_id}: origin", "a queue name"),
            checked(job.get("started_at"), epoch_seconds, f"job {job_id}: started_at", "a time"),
        )
        for job_id, job in sorted(jobs.items())
    )
    queues = checked(fields.get("queues"), as_text, "queues", "text") or ""
    working = checked(fields.get("total_working_time"), seconds, "total_working_time", "seconds")
    counts = [
        checked(fields.get(field), count, field, "a count")
        for field in ("successful_job_count", "failed_job_count")
    ]
    ran = sum(n or 0 for n in counts)
    return ForeignWorker(
        RQ,
        shown,
        reason is None,
        age,
        reason,
        queues=tuple(q for q in map(name, queues.split(",")) if q),
        current_jobs=current,
        host=checked(fields.get("hostname"), name, "hostname", "a name"),
        pid=checked(fields.get("pid"), count, "pid", "a process id"),
        state=checked(fields.get("state"), name, "state", "a name"),
        started_at=birth,
        usual_run_s=working / ran if working is not None and ran else None,
        ended=ran if any(n is not None for n in counts) else None,
    )

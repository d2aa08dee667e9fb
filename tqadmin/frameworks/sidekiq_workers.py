"""Sidekiq's processes, decoded from the keys Sidekiq writes (lib/sidekiq/launcher.rb and api.rb; BROKERS.md).

The ``processes`` set holds identities (``hostname:pid:random``); each identity is a hash Sidekiq rewrites
with every beat and gives 60 seconds to live: ``info`` (JSON: hostname, started_at, pid, tag, queues,
concurrency...), ``busy``, ``beat``, ``quiet``, ``rss``. ``<identity>:work`` maps each busy thread to
``{"queue", "payload", "run_at"}``, the payload being the job's own JSON (a string from Sidekiq 7 on, an
object before). A member whose hash is gone is dead; Sidekiq's own ``ProcessSet`` would remove it, which a
reader must not. A field that is there but not what Sidekiq writes (``info.queues`` of ``5``) makes the
process :class:`~tqadmin.plugin.workers.MalformedEntry`, naming the field.

Sidekiq counts the jobs its processes ran in two global counters, flushed by each process at its beat
(every 10 s from Sidekiq 7 on, 5 s before): ``stat:processed`` (every job run, failures included) and
``stat:failed``; per-day copies (``stat:processed:YYYY-MM-DD``) add nothing for a window. No process hash
counts its own jobs. The total is every Sidekiq process's on this Redis together: it says that *some* job
ended, and on which queue only when every live process serves one queue alone (:func:`finished`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tqadmin.frameworks.decoding import as_text, checked, count, json_object, name
from tqadmin.frameworks.sidekiq import moment
from tqadmin.frameworks.summary import SIDEKIQ
from tqadmin.plugin.workers import CurrentJob, ForeignWorker, MalformedEntry

PROCESSES = "processes"
HASH_TTL_S = 60.0  # the expiry Sidekiq sets on a process's hash at each beat
COUNTERS = ("stat:processed", "stat:failed")
BEAT_S = 10.0  # how often a process flushes its counts into COUNTERS (Sidekiq 7 and 8; 5 s before)


def finished(processed: Any, failed: Any) -> int:
    """``stat:processed`` + ``stat:failed`` as Sidekiq keeps them (decimal text; absent before any job
    ended, which Sidekiq's own ``Stats`` reads as 0): any rise is a job that ended. A value that is no
    count is :class:`~tqadmin.plugin.workers.MalformedEntry`, naming the key."""
    pairs = zip(COUNTERS, (processed, failed), strict=True)
    return sum(checked(value, count, key, "a count") or 0 for key, value in pairs)


def work_key(identity: str) -> str:
    return f"{identity}:work"


def process(
    identity: str, fields: Mapping[str, Any] | None, work: Mapping[Any, Any], now_s: float
) -> ForeignWorker:
    """The process ``identity``: ``fields`` its hash (``None`` when gone), ``work`` its ``:work`` hash."""
    if not fields:
        return ForeignWorker(SIDEKIQ, identity, False, None, "hash expired; a stale member of processes")
    info = json_object(fields.get("info"), "info")
    beat = checked(fields.get("beat"), _moment_text, "beat", "a time")
    age = max(0.0, now_s - beat) if beat is not None else None
    late = age is not None and age > HASH_TTL_S
    quiet = checked(fields.get("quiet"), _flag, "quiet", '"true" or "false"')
    busy = checked(fields.get("busy"), count, "busy", "a count") or 0
    jobs = tuple(_job(tid, entry) for tid, entry in sorted(work.items(), key=lambda i: str(i[0])))
    return ForeignWorker(
        SIDEKIQ,
        identity,
        not late,
        age,
        f"heartbeat older than Sidekiq's {HASH_TTL_S:.0f} s" if late else None,
        queues=_queues(info.get("queues")),
        current_jobs=jobs,
        host=checked(info.get("hostname"), name, "info.hostname", "a name"),
        pid=checked(info.get("pid"), count, "info.pid", "a process id"),
        state="quiet" if quiet == "true" else ("busy" if busy else "idle"),
        concurrency=checked(info.get("concurrency"), count, "info.concurrency", "a count"),
        started_at=checked(info.get("started_at"), moment, "info.started_at", "a time"),
    )


def _queues(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise MalformedEntry("info.queues is not a list")
    return tuple(
        q for i, item in enumerate(value) if (q := checked(item, name, f"info.queues[{i}]", "a name"))
    )


def _job(tid: Any, entry: Any) -> CurrentJob:
    thread = name(tid) or "?"
    where = f"work[{thread}]"
    work = json_object(entry, where)
    payload = work.get("payload")
    job = json_object(payload, f"{where}.payload")
    return CurrentJob(
        checked(job.get("jid"), name, f"{where}.payload.jid", "a job id") or f"thread {thread}",
        checked(job.get("wrapped"), name, f"{where}.payload.wrapped", "a class name")
        or checked(job.get("class"), name, f"{where}.payload.class", "a class name"),
        checked(work.get("queue"), name, f"{where}.queue", "a queue name")
        or checked(job.get("queue"), name, f"{where}.payload.queue", "a queue name"),
        checked(work.get("run_at"), moment, f"{where}.run_at", "a time"),
    )


def _moment_text(value: Any) -> float | None:
    """``beat``: epoch seconds as text (a Redis hash holds strings)."""
    text = as_text(value)
    if text is None or len(text) > 32:
        return None
    try:
        return moment(float(text))
    except ValueError:
        return None


def _flag(value: Any) -> str | None:
    text = as_text(value)
    return text if text in ("true", "false") else None

"""Dramatiq's workers on Redis, decoded from its broker's keys (dramatiq/brokers/redis/dispatch.lua).

Each broker process beats into the sorted set ``<namespace>:__heartbeats__``, scored by the time in
milliseconds, at every fetch; it holds the ids of the messages it fetched and has not acknowledged in
``<namespace>:__acks__.<worker id>.<queue>`` sets, the messages themselves in ``<namespace>:<queue>.msgs``.
Those held messages are what it runs or has prefetched: Dramatiq does not tell the two apart. Past the
broker's ``heartbeat_timeout`` (60 s by default) without a beat the others requeue its messages: dead.
A beat that is no time, or a held message that is a JSON object with fields Dramatiq would not write, makes
the worker :class:`~tqadmin.plugin.workers.MalformedEntry`, naming what; a body that is not JSON at all
is another encoder's (Dramatiq's ``PickleEncoder``) and is shown by its id alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tqadmin.frameworks.decoding import checked, epoch_seconds, name, parse_json
from tqadmin.frameworks.summary import DRAMATIQ
from tqadmin.plugin.workers import CurrentJob, ForeignWorker, MalformedEntry

HEARTBEATS = "__heartbeats__"
HEARTBEAT_TIMEOUT_S = 60.0  # RedisBroker's default heartbeat_timeout


def heartbeats_key(namespace: str) -> str:
    return f"{namespace}:{HEARTBEATS}"


def acks_prefix(namespace: str, worker_id: str) -> str:
    """What every one of the worker's held-message sets is named with, its queue after it."""
    return f"{namespace}:__acks__.{worker_id}."


def messages_key(namespace: str, queue: str) -> str:
    return f"{namespace}:{queue}.msgs"


def worker(
    namespace: str,
    worker_id: str,
    beat_ms: float,
    held: Mapping[str, Mapping[str, Any]],
    now_s: float,
) -> ForeignWorker:
    """The worker ``worker_id`` of ``namespace`` that last beat at ``beat_ms``; ``held`` maps each queue it
    holds messages of to their bodies by message id (``None`` for a body already gone)."""
    beat = epoch_seconds(beat_ms, milliseconds=True)
    if beat is None:
        raise MalformedEntry("its heartbeat score is not a time")
    age = max(0.0, now_s - beat)
    late = age > HEARTBEAT_TIMEOUT_S
    jobs = [
        _job(held_id, queue, body)
        for queue, bodies in sorted(held.items())
        for held_id, body in sorted(bodies.items())
    ]
    return ForeignWorker(
        DRAMATIQ,
        worker_id if namespace == "dramatiq" else f"{namespace}:{worker_id}",
        not late,
        age,
        f"no heartbeat in Dramatiq's {HEARTBEAT_TIMEOUT_S:.0f} s timeout" if late else None,
        queues=tuple(sorted(held)),
        current_jobs=tuple(jobs),
        state="busy" if jobs else "idle",
    )


def _job(held_id: str, queue: str, body: Any) -> CurrentJob:
    """The held message as its job: the message's own ``message_id`` (the Redis broker holds it under a
    ``redis_message_id`` of its own)."""
    message = parse_json(body) if isinstance(body, bytes | str) else None
    if not isinstance(message, dict):
        return CurrentJob(held_id, None, queue)
    where = f"message {held_id} of {queue}"
    return CurrentJob(
        checked(message.get("message_id"), name, f"{where}: message_id", "an id") or held_id,
        checked(message.get("actor_name"), name, f"{where}: actor_name", "a name"),
        queue,
    )

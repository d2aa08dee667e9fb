"""The state store on Redis: claims with fencing tokens, completion marks, heartbeats and their history.

Every state change of a job is one Lua script on the job's own key, except a completion with a user effect:
that one is ``WATCH job; check token; MULTI; effect(tx); mark done; EXEC``, so the effect (queued by the user
on the pipeline ``tx``) and the mark commit together, and not at all if the token moved meanwhile. Keys and
the Redis Cluster rule are described in :mod:`tqadmin.store.keys`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from tqadmin.connect.redis_client import (
    ScriptCall,
    connect,
    detail,
    is_cluster,
    run_scripts,
    server_time,
    text,
)
from tqadmin.errors import BadResponse, TqadminError
from tqadmin.store.completion import redis_scripts
from tqadmin.store.completion.base import (
    Claim,
    ClaimState,
    Effect,
    Retention,
    StateStore,
    WorkerRecord,
    by_start,
    unique_chunks,
)
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix, heartbeat_keys, history_key, job_key
from tqadmin.store.redis_errors import FLAG, translated, where
from tqadmin.telemetry.snapshot import Reading, WorkerHistory, WorkerSnapshot

if TYPE_CHECKING:
    import redis

_DONE_AMONG_CHUNK = 1000
_HELD = ("claimed", "running")  # the states of a job someone holds a claim on


class RedisStore(StateStore):
    """:class:`StateStore` on one Redis, its keys laid out so that they would work on a Redis Cluster.

    Thread-safe: redis-py pools connections. What is kept for how long: :class:`Retention`.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        url: str = "redis://",
        prefix: str = DEFAULT_PREFIX,
        retention: Retention | None = None,
    ) -> None:
        self.url = url
        self.prefix = check_prefix(prefix)
        self._client = client
        retention = retention or Retention()
        self._retention_s = max(int(retention.job_s), 1)
        self._history_step_ms = _ms(retention.history_step_s)
        self._history_cap = retention.history_cap
        self._dead_retention_ms = _ms(retention.dead_worker_s)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        timeout_s: float = 10.0,
        prefix: str = DEFAULT_PREFIX,
        retention: Retention | None = None,
    ) -> RedisStore:
        try:
            import redis  # noqa: F401 - only to say what is missing
        except ImportError:
            raise TqadminError(
                "the Redis store needs the redis package: pip install 'tqadmin[redis]'"
            ) from None
        client = connect(url, timeout_s, where(url), FLAG)
        return cls(client, url=url, prefix=prefix, retention=retention)

    # -- completion store ---------------------------------------------------------------------------------

    def claim(self, job_id: str, owner: str, lease_s: float) -> Claim:
        return self.claim_many([job_id], owner, lease_s)[0]

    def claim_many(self, job_ids: Sequence[str], owner: str, lease_s: float) -> list[Claim]:
        return self.complete_and_claim((), job_ids, owner, lease_s)[1]

    def complete_and_claim(
        self, claims: Sequence[Claim], job_ids: Sequence[str], owner: str, lease_s: float
    ) -> tuple[list[bool], list[Claim]]:
        if is_cluster(self._client) or len(claims) + len(job_ids) < 2:  # jobs' keys are in many slots
            claim_args = (owner, _ms(lease_s), self._retention_s)
            replies = self._eval(
                [self._completion(c) for c in claims]
                + [(redis_scripts.CLAIM, (job_key(self.prefix, j),), claim_args) for j in job_ids]
            )
        else:
            keys = [job_key(self.prefix, c.job_id) for c in claims] + [
                job_key(self.prefix, j) for j in job_ids
            ]
            args = (len(claims), self._retention_s, owner, _ms(lease_s), *(c.token for c in claims))
            [replies] = self._eval([(redis_scripts.COMPLETE_AND_CLAIM, tuple(keys), args)])
        marks = [bool(reply) for reply in replies[: len(claims)]]
        return marks, [
            Claim(
                job_id=job_id,
                state=ClaimState(text(state)),
                owner=text(holder),
                token=int(token),
                crashes=int(crashes),
                retry_after_s=int(remaining_ms) / 1000,
            )
            for job_id, (state, holder, token, crashes, remaining_ms) in zip(
                job_ids, replies[len(claims) :], strict=True
            )
        ]

    def renew(self, claim: Claim, lease_s: float) -> bool:
        return self.renew_many([claim], lease_s)[0]

    def renew_many(self, claims: Sequence[Claim], lease_s: float) -> list[bool]:
        lease_ms = _ms(lease_s)
        replies = self._eval(
            [
                (
                    redis_scripts.RENEW,
                    (job_key(self.prefix, c.job_id),),
                    (c.token, lease_ms, self._retention_s),
                )
                for c in claims
            ]
        )
        return [bool(reply) for reply in replies]

    def start_many(self, claims: Sequence[Claim]) -> list[bool]:
        calls = [(redis_scripts.START, (job_key(self.prefix, c.job_id),), (c.token,)) for c in claims]
        return [bool(reply) for reply in self._eval(calls)] if calls else []

    def complete_many(self, claims: Sequence[Claim]) -> list[bool]:
        return [bool(reply) for reply in self._eval([self._completion(c) for c in claims])]

    def _completion(self, claim: Claim) -> ScriptCall:
        return redis_scripts.COMPLETE, (job_key(self.prefix, claim.job_id),), (claim.token, self._retention_s)

    def _eval(self, calls: Sequence[ScriptCall]) -> list[Any]:
        return run_scripts(self._client, calls, where(self.url), FLAG)

    def complete(self, claim: Claim, effect: Effect | None = None) -> bool:
        if effect is None:
            return self.complete_many([claim])[0]
        with translated(self.url):
            return self._complete_with_effect(job_key(self.prefix, claim.job_id), claim.token, effect)

    def _complete_with_effect(self, key: str, token: int, effect: Effect) -> bool:
        import redis

        with self._client.pipeline(transaction=True) as tx:
            while True:
                try:
                    tx.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
                    state, current = cast(list[Any], tx.hmget(key, ["state", "token"]))  # watched: immediate
                    if text(state) not in _HELD or text(current) != str(token):
                        tx.unwatch()
                        return False
                    tx.multi()
                    effect(tx)
                    tx.hset(key, mapping={"state": "done", "done_at": int(time.time() * 1000)})
                    tx.hdel(key, "expires")
                    tx.expire(key, self._retention_s)
                except BaseException:
                    tx.reset()  # the user's effect raised while queueing: nothing is sent
                    raise
                try:
                    tx.execute()
                    return True
                except redis.WatchError:
                    continue  # the record changed under us: look at the token again
                except redis.ResponseError as exc:
                    raise BadResponse(
                        f"a ctx.once effect command failed in the completion transaction of job "
                        f"{key!r}: {detail(exc)} (Redis applies the other commands of a MULTI; a command "
                        "rejected before EXEC cancels them all)"
                    ) from None

    def release(self, claim: Claim, *, forget_crashes: bool = False) -> bool:
        key = job_key(self.prefix, claim.job_id)
        [released] = self._eval(
            [(redis_scripts.RELEASE, (key,), (claim.token, "1" if forget_crashes else "0"))]
        )
        return bool(released)

    def abandon_many(self, claims: Sequence[Claim], *, started: bool) -> list[bool]:
        flag = "1" if started else "0"
        calls = [(redis_scripts.ABANDON, (job_key(self.prefix, c.job_id),), (c.token, flag)) for c in claims]
        return [bool(reply) for reply in self._eval(calls)] if calls else []

    def done_among(self, job_ids: Iterable[str]) -> set[str]:
        done: set[str] = set()
        with translated(self.url):
            for chunk in unique_chunks(job_ids, _DONE_AMONG_CHUNK):
                pipe = self._client.pipeline(transaction=False)
                for job_id in chunk:
                    pipe.hget(job_key(self.prefix, job_id), "state")
                states = pipe.execute()
                done.update(j for j, s in zip(chunk, states, strict=True) if text(s) == "done")
        return done

    # -- heartbeats -------------------------------------------------------------------------------------

    def beat(self, snapshot: WorkerSnapshot, ttl_s: float) -> None:
        latest, seen, ttl = heartbeat_keys(self.prefix)
        history_keep_ms = self._history_step_ms * (self._history_cap + 1) + self._dead_retention_ms
        keys = (latest, seen, ttl, history_key(self.prefix, snapshot.worker_id))
        args = (
            snapshot.worker_id,
            snapshot.encode(),
            _ms(ttl_s),
            self._history_step_ms,
            self._history_cap,
            history_keep_ms,
            self._dead_retention_ms,
        )
        self._eval([(redis_scripts.BEAT, keys, args)])

    def workers(self) -> list[WorkerRecord]:
        latest, seen, ttl = heartbeat_keys(self.prefix)
        with translated(self.url):
            pipe = self._client.pipeline(transaction=False)
            pipe.hgetall(latest)
            pipe.zrange(seen, 0, -1, withscores=True)
            pipe.hgetall(ttl)
            snapshots, beats, ttls = pipe.execute()
            sec, usec = server_time(self._client, latest)
        now_ms = sec * 1000 + usec / 1000
        promised = {text(k): int(v) for k, v in ttls.items()}
        records = []
        for raw_id, beat_ms in beats:
            worker_id = text(raw_id)
            document = snapshots.get(raw_id)
            if document is None:
                continue
            age_ms = max(now_ms - beat_ms, 0.0)
            records.append(
                WorkerRecord(
                    snapshot=WorkerSnapshot.decode(document),
                    age_s=age_ms / 1000,
                    alive=age_ms <= promised.get(worker_id, 0),
                )
            )
        return by_start(records)

    def history(self, window_s: float) -> tuple[float, list[WorkerHistory]]:
        latest, seen, _ = heartbeat_keys(self.prefix)
        with translated(self.url):
            pipe = self._client.pipeline(transaction=False)
            beats = cast(list[tuple[bytes, float]], self._client.zrange(seen, 0, -1, withscores=True))
            sec, usec = server_time(self._client, seen)
            now_ms = sec * 1000 + usec / 1000
            start_ms = now_ms - window_s * 1000
            active = [(text(raw), score) for raw, score in beats if score >= start_ms]
            if not active:
                return now_ms / 1000, []
            pipe = self._client.pipeline(transaction=False)
            pipe.hmget(latest, [worker_id for worker_id, _ in active])
            for worker_id, _ in active:
                key = history_key(self.prefix, worker_id)
                pipe.zrevrangebyscore(key, start_ms, "-inf", start=0, num=1, withscores=True)
                pipe.zrangebyscore(key, start_ms, "+inf", start=0, num=1, withscores=True)
            documents, *bounds = pipe.execute()
        histories = []
        for index, ((_, beat_ms), document) in enumerate(zip(active, documents, strict=True)):
            if document is None:
                continue
            before, inside = bounds[2 * index], bounds[2 * index + 1]
            found = before or inside
            baseline = Reading(found[0][1] / 1000, WorkerSnapshot.decode(found[0][0])) if found else None
            histories.append(
                WorkerHistory(Reading(beat_ms / 1000, WorkerSnapshot.decode(document)), baseline)
            )
        return now_ms / 1000, histories

    def delete_prefix(self) -> int:
        """Delete every key under this store's prefix (tests and ``demo`` clean-up); returns how many."""
        deleted = 0
        with translated(self.url):
            for pattern in (f"{self.prefix}:*", "{" + self.prefix + ":*"):
                keys = list(self._client.scan_iter(match=pattern, count=1000))
                if keys:
                    deleted += int(self._client.delete(*keys))
        return deleted

    def check(self) -> None:
        with translated(self.url):
            self._client.ping()

    def close(self) -> None:
        self._client.close()


def _ms(seconds: float) -> int:
    return max(int(seconds * 1000), 0)

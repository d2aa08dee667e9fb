"""What every Redis user in tqadmin shares: connecting (one Redis or a Redis Cluster, found out by asking),
running Lua scripts by SHA in one round trip, and turning redis-py's exceptions into tqadmin's error tree.

The state store, the cron store and the Redis broker plugin all go through here, so a cluster is handled,
a script reloaded after a restart and a password masked the same way everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqadmin.errors import BadResponse, ConnectTimeout, NotAuthorized, Unreachable
from tqadmin.show.masking import clip_masked

if TYPE_CHECKING:
    import redis


@dataclass(frozen=True, slots=True)
class Script:
    """A Lua script and its SHA1, the name Redis knows it by once loaded."""

    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())  # noqa: S324 - Redis's id


NOW_MS = (
    "local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
)

ScriptCall = tuple[Script, Sequence[str], Sequence[Any]]
"""A script, the keys it touches (all in one slot) and its arguments."""


def connect(url: str, timeout_s: float, where: str, flag: str) -> redis.Redis:
    """A client for ``url``: a :class:`redis.RedisCluster` when the server says it runs in cluster mode
    (``INFO cluster``), a plain :class:`redis.Redis` otherwise. Both speak the commands tqadmin uses; the
    cluster client routes each one (and each script, by its keys' slot) to the master that owns it."""
    import redis

    options: dict[str, Any] = {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s}
    with translated(where, flag):
        client = redis.Redis.from_url(url, health_check_interval=30, **options)
        try:
            enabled = client.info("cluster").get("cluster_enabled") == 1
        except redis.ResponseError:  # INFO refused by an ACL: assume a single server
            enabled = False
        if not enabled:
            return client
        client.close()
        cluster: Any = redis.RedisCluster.from_url(url, **options)
        return cluster  # type: ignore[no-any-return]


def is_cluster(client: Any) -> bool:
    import redis

    return isinstance(client, redis.RedisCluster)


def server_time(client: Any, key: str) -> tuple[int, int]:
    """``TIME`` of the server that holds ``key`` (a cluster pipeline cannot carry TIME, so it is a call of
    its own): seconds and microseconds."""
    if is_cluster(client):
        seconds, micros = client.time(target_nodes=client.get_node_from_key(key))
    else:
        seconds, micros = client.time()
    return int(seconds), int(micros)


def run_scripts(client: Any, calls: Sequence[ScriptCall], where: str, flag: str) -> list[Any]:
    """Run each (script, keys, args), in one round trip, by SHA; replies in order.

    redis-py's own Script objects check ``SCRIPT EXISTS`` before every pipeline, which doubles the round
    trips; here a script is loaded once per client before its first use, and again when Redis answers
    NOSCRIPT (a restart, a flush), when only the calls refused for that are sent again. Loading first
    matters within a batch: were a later call's script known and an earlier one's not, the later call would
    run first (a completion mark after the claim of the same job). The first other error reply is raised
    (translated) after the whole batch ran.
    """
    import redis

    replies: list[Any] = [None] * len(calls)
    pending = list(range(len(calls)))
    with translated(where, flag):
        known = _loaded.setdefault(client, set())
        for script in {call[0] for call in calls if call[0].sha not in known}:
            _load(client, script)
            known.add(script.sha)
        for _ in range(3):
            if len(pending) == 1:
                script, keys, args = calls[pending[0]]
                try:
                    replies[pending[0]] = client.evalsha(script.sha, len(keys), *keys, *args)
                    return replies
                except redis.exceptions.NoScriptError:
                    _load(client, script)
                    continue
            for index, reply in _evalsha_batch(client, [calls[i] for i in pending], pending):
                replies[index] = reply
            retry = [i for i in pending if isinstance(replies[i], redis.exceptions.NoScriptError)]
            failed = next(
                (replies[i] for i in pending if isinstance(replies[i], Exception) and i not in retry), None
            )
            if failed is not None:
                raise failed
            if not retry:
                return replies
            for index in retry:
                _load(client, calls[index][0])
            pending = retry
        raise BadResponse(f"{where} keeps forgetting its scripts (SCRIPT FLUSH?)")


def _evalsha_batch(client: Any, calls: Sequence[ScriptCall], indexes: Sequence[int]) -> list[tuple[int, Any]]:
    """Replies of ``calls`` (errors as values), in one pipeline per server. A cluster pipeline refuses
    EVALSHA, so on a cluster the calls are grouped by the master of their keys' slot and each group is
    pipelined on that master's connection; a call the master redirects (the slot moved meanwhile) is sent
    again through the cluster client, which follows the redirection."""
    import redis

    if not is_cluster(client):
        pipe = client.pipeline(transaction=False)
        for script, keys, args in calls:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        return list(zip(indexes, pipe.execute(raise_on_error=False), strict=True))
    by_node: dict[str, list[tuple[int, ScriptCall]]] = {}
    nodes: dict[str, Any] = {}
    for index, call in zip(indexes, calls, strict=True):
        node = client.get_node_from_key(call[1][0])
        nodes[node.name] = node
        by_node.setdefault(node.name, []).append((index, call))
    replies: list[tuple[int, Any]] = []
    for name, group in by_node.items():
        pipe = client.get_redis_connection(nodes[name]).pipeline(transaction=False)
        for _, (script, keys, args) in group:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        for (index, (script, keys, args)), reply in zip(
            group, pipe.execute(raise_on_error=False), strict=True
        ):
            answer = reply
            if isinstance(reply, redis.ResponseError) and str(reply).startswith(("MOVED", "ASK")):
                try:
                    answer = client.evalsha(script.sha, len(keys), *keys, *args)
                except redis.ResponseError as exc:
                    answer = exc
            replies.append((index, answer))
    return sorted(replies, key=lambda pair: pair[0])


_loaded: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""The scripts each client has loaded (by SHA)."""


def _load(client: Any, script: Script) -> None:
    """Load ``script``; a cluster client loads it on every master."""
    client.script_load(script.source)


def text(value: Any) -> str:
    """A reply as text (redis-py gives bytes), ``""`` for a missing one."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


@contextlib.contextmanager
def translated(where: str, flag: str) -> Iterator[None]:
    """Turn redis-py's exceptions into tqadmin's error tree, naming ``where`` and never its password;
    ``flag`` is the option the user would check (``--store``, ``--broker``)."""
    import redis

    try:
        yield
    except redis.AuthenticationError as exc:
        raise NotAuthorized(f"{where} refused the credentials ({detail(exc)}); check {flag}") from None
    except redis.TimeoutError as exc:
        raise ConnectTimeout(f"{where} did not answer in time ({detail(exc)}); check it is up") from None
    except redis.ConnectionError as exc:
        raise Unreachable(
            f"cannot reach the {where} ({detail(exc)}); check {flag} and that Redis runs"
        ) from None
    except redis.exceptions.RedisClusterException as exc:
        raise Unreachable(f"cannot use the {where} as a cluster ({detail(exc)}); check {flag}") from None
    except redis.ResponseError as exc:
        raise BadResponse(f"{where} answered with an error: {detail(exc)}") from None


def detail(exc: BaseException) -> str:
    return clip_masked(str(exc), 300)

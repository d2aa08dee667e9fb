"""Where a queue lives in Redis: the keys of one queue, all under one hash tag, and the names tqadmin shows.

A queue ``Q`` is the stream ``tq:{Q}:q`` with the consumer group ``tq``; its dead-letter queue ``Q.dlq`` is
the stream ``tq:{Q}:q.dlq`` (a queue like any other, shown as ``Q.dlq``); retries wait in the sorted set
``<stream>:delay`` (score: due time in ms on the server's clock); ``<stream>:consumers`` is a hash of each
consumer's lease in ms, so that recovery takes an entry back only once it is idle past its own holder's
lease. Every key of ``Q`` and of ``Q.dlq`` carries the tag ``{Q}``: every script touches one slot, so it
runs on Redis Cluster, and a replay from ``Q.dlq`` back to ``Q`` is one script. ``tq:queues`` is the set of
queues tqadmin declared. ``tq`` is the default prefix; the broker URL's ``?prefix=`` sets another.
"""

from __future__ import annotations

from dataclasses import dataclass

from tqadmin.plugin.models import DLQ_SUFFIX, dlq_name

DEFAULT_PREFIX = "tq"
GROUP = "tq"
RELEASED = "tq:released"
"""The consumer that holds entries given back (released) until a live consumer claims them: it has no lease,
so the next recovery pass of any consumer takes them, oldest first."""


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The Redis keys of one queue (``name`` as tqadmin shows it)."""

    name: str
    stream: str

    @property
    def delay(self) -> str:
        return f"{self.stream}:delay"

    @property
    def consumers(self) -> str:
        return f"{self.stream}:consumers"


class Layout:
    """Key names under one prefix."""

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError("a key prefix must be non-empty and contain no braces")
        self.prefix = prefix

    @property
    def registry(self) -> str:
        return f"{self.prefix}:queues"

    def queue(self, name: str) -> QueueKeys:
        """The keys of ``name``; ``Q.dlq`` lives under ``Q``'s tag, so ``Q`` and its DLQ share a slot."""
        base, depth = split_dlq(name)
        tag = base.replace("{", "").replace("}", "") or "_"
        where = f"{{{tag}}}" if tag == base else f"{{{tag}}}:={base}"
        return QueueKeys(name, f"{self.prefix}:{where}:q{DLQ_SUFFIX * depth}")

    def dlq(self, name: str) -> QueueKeys:
        return self.queue(dlq_name(name))

    def stream_pattern(self) -> str:
        """A SCAN pattern matching tqadmin's own streams (so discovery leaves them out)."""
        return f"{self.prefix}:{{*"


def split_dlq(name: str) -> tuple[str, int]:
    """``("Q", 2)`` for ``Q.dlq.dlq``: the queue whose tag the name lives under, and how deep a DLQ it is."""
    depth = 0
    while name.endswith(DLQ_SUFFIX) and len(name) > len(DLQ_SUFFIX):
        name = name[: -len(DLQ_SUFFIX)]
        depth += 1
    return name, depth


def same_slot(a: str, b: str) -> bool:
    """Whether queues ``a`` and ``b`` share a hash tag (a move between them can be one script)."""
    return split_dlq(a)[0] == split_dlq(b)[0]


FOREIGN_PREFIXES = ("celery:", "rq:", "sidekiq:", "stream:")
"""How tqadmin names the queues of other frameworks on Redis (:mod:`.foreign`): never a queue of its own."""


def check_own_name(queue: str) -> None:
    """Refuse a queue name tqadmin shows for another framework's queue, or that Redis cannot tag."""
    from tqadmin.errors import UsageError

    if queue.startswith(FOREIGN_PREFIXES):
        raise UsageError(
            f"queue names starting with {queue.partition(':')[0]}: name other frameworks' queues on Redis;"
            " pick another name"
        )
    if not split_dlq(queue)[0].strip():
        raise UsageError("a queue needs a name")

"""What the Redis plugin can do, what a peek costs on it, and how its transport applies delays."""

from __future__ import annotations

from tqadmin.frameworks.summary import CELERY, DRAMATIQ, RQ, SIDEKIQ
from tqadmin.plugin.capabilities import Capabilities, Operation, TransportCapabilities

PEEK_COST = (
    "free on Redis: XRANGE reads the stream without taking anything (entries in flight are listed too,"
    " with their delivery count)"
)

FOREIGN_PEEK_COST = "free on Redis: LRANGE, ZRANGE or XRANGE reads the jobs without taking anything"

CAPABILITIES = Capabilities(
    supported=frozenset(Operation),
    peek_cost=PEEK_COST,
    server_side_needs="on Redis Cluster, a source and target of one hash tag (a queue and its Q.dlq)",
    worker_registries=(RQ, SIDEKIQ, DRAMATIQ, CELERY),
)

# A retry waits in the delay set until a consumer's next take promotes it: consumers block no longer than
# the next due time, so it is back within a few milliseconds of its due time while a consumer runs.
TRANSPORT_CAPABILITIES = TransportCapabilities(
    max_delay_s=float("inf"),
    delay_slack_s=0.1,
    leased=True,  # a pending entry idle past its holder's lease is claimed by another consumer
)

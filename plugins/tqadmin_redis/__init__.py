"""Redis broker plugin: one stream per queue with a consumer group, retries in a sorted set, Lua scripts.

Registered under the ``redis`` and ``rediss`` schemes of the ``tqadmin.brokers`` entry-point group, exactly
as a third-party plugin would be. This module imports no driver: redis-py loads with the faces. The layout
and its guarantees are described in docs/redis.md and :mod:`tqadmin_redis.naming`.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.capabilities import Capabilities, TransportCapabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_redis.capabilities import CAPABILITIES, TRANSPORT_CAPABILITIES


class RedisPlugin(BrokerPlugin):
    name: ClassVar[str] = "redis"
    schemes: ClassVar[tuple[str, ...]] = ("redis", "rediss")
    capabilities: ClassVar[Capabilities] = CAPABILITIES
    transport_capabilities: ClassVar[TransportCapabilities | None] = TRANSPORT_CAPABILITIES
    start_hint: ClassVar[str] = (
        "start Redis (e.g. `docker run -d -p 6379:6379 redis:7`) or point --broker at a running one"
    )

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_redis.admin import RedisAdmin

        return RedisAdmin(config)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_redis.transport import RedisTransport

        return RedisTransport(config)

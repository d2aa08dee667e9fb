"""The memory broker, for tests: both faces over an in-process broker named by ``memory://NAME``.

Like dramatiq's stub broker, it lets a test run the whole contract (leases, delays, dead letters, every
admin operation) with no server; it is never a stand-in for a real broker outside tests. Registered under the
``memory`` scheme of the ``tqadmin.brokers`` entry-point group, like every other plugin.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.capabilities import Capabilities, TransportCapabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_memory.capabilities import CAPABILITIES, TRANSPORT_CAPABILITIES


class MemoryPlugin(BrokerPlugin):
    name: ClassVar[str] = "memory"
    schemes: ClassVar[tuple[str, ...]] = ("memory",)
    capabilities: ClassVar[Capabilities] = CAPABILITIES
    transport_capabilities: ClassVar[TransportCapabilities | None] = TRANSPORT_CAPABILITIES

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_memory.admin import admin_for

        return admin_for(config.url)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_memory.transport import MemoryTransport

        return MemoryTransport(config.url)

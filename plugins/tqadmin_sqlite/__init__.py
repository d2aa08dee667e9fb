"""The embedded broker: every queue in one SQLite file on this host, no server to run (``sqlite:///PATH``).

Registered under the ``sqlite`` scheme of the ``tqadmin.brokers`` entry-point group, exactly as a third-party
plugin would be. With nothing configured, tqadmin uses it (and the SQLite state store) on one file under
``~/.local/state/tqadmin/``. How it keeps its guarantees is in docs/sqlite.md.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.capabilities import Capabilities, TransportCapabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_sqlite.capabilities import CAPABILITIES, TRANSPORT_CAPABILITIES


class SQLitePlugin(BrokerPlugin):
    name: ClassVar[str] = "sqlite"
    schemes: ClassVar[tuple[str, ...]] = ("sqlite",)
    capabilities: ClassVar[Capabilities] = CAPABILITIES
    transport_capabilities: ClassVar[TransportCapabilities | None] = TRANSPORT_CAPABILITIES
    start_hint: ClassVar[str] = (
        "check that the SQLite file's directory exists and is writable, or point --broker at a running broker"
    )

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_sqlite.admin import SQLiteAdmin

        return SQLiteAdmin(config)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_sqlite.transport import SQLiteTransport

        return SQLiteTransport(config)

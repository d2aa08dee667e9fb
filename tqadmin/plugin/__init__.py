"""The broker plugin contract: what a plugin implements (the admin and transport faces) and the values it
returns. Imports no driver and no Textual (a layering test checks).

The machinery a plugin may reuse (the leased consumer, transfer sessions, settles, the retry loop, background
threads, listeners, delay folding) is :mod:`tqadmin.plugin.kit`, built on this contract; the contract never
imports it.
"""

from tqadmin.plugin.base import (
    BrokerAdmin,
    BrokerConfig,
    BrokerPlugin,
    Closing,
    Delivery,
    PluginOption,
    TransferSession,
)
from tqadmin.plugin.capabilities import Capabilities, Operation, TransportCapabilities
from tqadmin.plugin.models import (
    HEADER_ATTEMPTS,
    HEADER_DEAD_LETTERED_AT,
    HEADER_ERROR,
    HEADER_FIRST_SEEN,
    HEADER_ORIGINAL_QUEUE,
    HEADER_REASON,
    HEADER_REPLAYS,
    HEADER_RETRY_COUNT,
    ActionReport,
    Alarm,
    DeathRecord,
    Message,
    PeekResult,
    QueueListing,
    QueueStats,
)
from tqadmin.plugin.transport import (
    BrokerTransport,
    Consumer,
    Outcome,
    Outgoing,
    PublishResult,
    publish_options,
)

__all__ = [
    "HEADER_ATTEMPTS",
    "HEADER_DEAD_LETTERED_AT",
    "HEADER_ERROR",
    "HEADER_FIRST_SEEN",
    "HEADER_ORIGINAL_QUEUE",
    "HEADER_REASON",
    "HEADER_REPLAYS",
    "HEADER_RETRY_COUNT",
    "ActionReport",
    "Alarm",
    "BrokerAdmin",
    "BrokerConfig",
    "BrokerPlugin",
    "BrokerTransport",
    "Capabilities",
    "Closing",
    "Consumer",
    "DeathRecord",
    "Delivery",
    "Message",
    "Operation",
    "Outcome",
    "Outgoing",
    "PeekResult",
    "PluginOption",
    "PublishResult",
    "QueueListing",
    "QueueStats",
    "TransferSession",
    "TransportCapabilities",
    "publish_options",
]

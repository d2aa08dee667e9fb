"""The broker plugin contract. Imports no driver and no Textual (a layering test checks)."""

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin, Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import ActionReport, Alarm, Message, PeekResult, QueueListing, QueueStats

__all__ = [
    "ActionReport",
    "Alarm",
    "BrokerAdmin",
    "BrokerConfig",
    "BrokerPlugin",
    "Capabilities",
    "Delivery",
    "Message",
    "Operation",
    "PeekResult",
    "QueueListing",
    "QueueStats",
    "TransferSession",
]

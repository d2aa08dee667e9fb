"""The transport face of a broker plugin: what the reference publisher, worker and cron use.

Defined by the pipeline work (issue 3): durable confirmed publishing, consuming with manual acks,
broker-scheduled retries, dead-lettering with a reason, and recovery of a dead consumer's in-flight messages.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class BrokerTransport(ABC):
    """Publish, consume, retry-later and dead-letter on one broker; see the pipeline for the methods."""

    @abstractmethod
    def close(self) -> None:
        """Close every connection this transport opened."""

"""Purge with a backup: each batch is written and fsynced to the JSONL file before it is acked."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from tqadmin.admin.jsonl import MessageWriter
from tqadmin.admin.scan import BATCH
from tqadmin.plugin.base import TransferSession
from tqadmin.plugin.models import ActionReport


def purge_with_backup(session: TransferSession, queue: str, path: Path, batch: int = BATCH) -> ActionReport:
    """Remove the messages present at start, each one on disk before it leaves the queue."""
    purged = 0
    with session, closing(MessageWriter(path)) as writer:
        while deliveries := session.fetch(batch):
            writer.write(d.message for d in deliveries)
            writer.sync()
            session.ack(deliveries)
            purged += len(deliveries)
    return ActionReport(action="purge", source=queue, target=queue, matched=purged, purged=purged)

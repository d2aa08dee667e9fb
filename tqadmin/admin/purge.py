"""Purge with a backup: each batch is written and fsynced to the JSONL file before it is acked."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from tqadmin.admin.jsonl import MessageWriter
from tqadmin.admin.scan import BATCH
from tqadmin.errors import PartialFailure, UsageError
from tqadmin.plugin.base import TransferSession
from tqadmin.plugin.models import ActionReport


def purge_with_backup(session: TransferSession, queue: str, path: Path, batch: int = BATCH) -> ActionReport:
    """Remove the messages present at start, each one on disk before it leaves the queue."""
    purged = 0
    try:
        with session, closing(MessageWriter(path)) as writer:
            while deliveries := session.fetch(batch):
                writer.write(d.message for d in deliveries)
                writer.sync()
                session.ack(deliveries)
                purged += len(deliveries)
    except UsageError as exc:
        if not purged:
            raise
        raise PartialFailure(
            f"{exc}; {purged} message(s) were purged (all in the backup), the rest is still in {queue!r}"
        ) from None
    return ActionReport(action="purge", source=queue, target=queue, matched=purged, purged=purged)

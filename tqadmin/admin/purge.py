"""Purge: on the broker side, or with a backup where each batch is written and fsynced to the JSONL file
before it is acked."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from tqadmin.admin.jsonl import MessageWriter
from tqadmin.admin.scan import BATCH
from tqadmin.admin.transfer import TransferOutcome
from tqadmin.errors import PartialFailure, TqadminError
from tqadmin.plugin.base import BrokerAdmin, TransferSession
from tqadmin.plugin.models import ActionReport


def purge(admin: BrokerAdmin, queue: str) -> ActionReport:
    """Drop every message of ``queue`` on the broker side (no backup), reported as every face reports it."""
    purged = admin.purge(queue)
    return ActionReport(action="purge", source=queue, target=queue, matched=purged, purged=purged)


def purge_with_backup(
    session: TransferSession, queue: str, path: Path, batch: int = BATCH, *, force: bool = False
) -> TransferOutcome:
    """Remove the messages present at start, each one on disk before it leaves the queue.

    Stopped part-way (a full disk, Ctrl-C), the report says how many were purged: all of those are in the
    backup, the rest is still in the queue. An existing ``path`` is replaced only with ``force``: a rerun
    after Ctrl-C must not lose the first backup by accident.
    """
    purged = 0
    error: TqadminError | None = None
    try:
        with session, closing(MessageWriter(path, force=force)) as writer:
            while deliveries := session.fetch(batch):
                writer.write(d.message for d in deliveries)
                writer.sync()
                session.ack(deliveries)
                purged += len(deliveries)
    except TqadminError as exc:
        if not purged:
            raise
        error = exc
    except KeyboardInterrupt:
        error = PartialFailure(f"purge of {queue!r} interrupted after {purged} message(s): rerun to continue")
    not_done = (
        (f"stopped early: the rest is still in {queue}; what was purged is in {path}",) if error else ()
    )
    report = ActionReport(
        action="purge", source=queue, target=queue, matched=purged, purged=purged, not_done=not_done
    )
    return TransferOutcome(report, error)

"""Import: publish a JSONL file's messages to a queue, each batch confirmed before the next."""

from __future__ import annotations

from collections.abc import Sequence

from tqadmin.admin.transfer import TransferOutcome
from tqadmin.errors import PartialFailure, TqadminError
from tqadmin.plugin.base import TransferSession
from tqadmin.plugin.models import ActionReport, Message

BATCH = 500


def import_messages(
    session: TransferSession, queue: str, messages: Sequence[Message], source: str, batch: int = BATCH
) -> TransferOutcome:
    """Publish ``messages`` to ``queue``; on a failure the report says how many were confirmed."""
    sent = 0
    error: TqadminError | None = None
    with session:
        try:
            for start in range(0, len(messages), batch):
                chunk = messages[start : start + batch]
                session.publish_confirmed([(queue, m) for m in chunk])
                sent += len(chunk)
        except TqadminError as exc:
            error = exc
        except KeyboardInterrupt:
            error = PartialFailure(
                f"import interrupted after {sent} confirmed message(s); some of the next {batch} may have"
                " arrived too, unconfirmed: a rerun of the whole file would duplicate those confirmed"
            )
    failed = len(messages) - sent
    not_done = (f"lines after the first {sent} message(s) of {source} were not confirmed",) if failed else ()
    report = ActionReport(
        action="import",
        source=source,
        target=queue,
        matched=len(messages),
        moved=sent,
        failed=failed,
        not_done=not_done,
    )
    return TransferOutcome(report, error)

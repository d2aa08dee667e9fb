"""Read a queue without consuming it, and the actions built on that: export, delete one, the targets of a
replay (dead-letter groups: :mod:`tqadmin.admin.dead_letters`).

A scan fetches up to the count at start and acks nothing, so closing the session puts every message back;
on RabbitMQ they keep their positions but are marked redelivered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from pathlib import Path

from tqadmin.admin.jsonl import MessageWriter
from tqadmin.errors import MessageNotFound
from tqadmin.frameworks import summarise
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.models import ActionReport, DeathRecord, Message

BATCH = 500

Deaths = Callable[[Message], Sequence[DeathRecord]]
"""How the broker recorded a message's deaths: a plugin's :meth:`~tqadmin.plugin.base.BrokerAdmin.deaths`."""


def no_deaths(_message: Message) -> Sequence[DeathRecord]:
    return ()


def scan(session: TransferSession, batch: int = BATCH) -> Iterator[Delivery]:
    """Every delivery up to the count at start, oldest first; none is acked."""
    while deliveries := session.fetch(batch):
        yield from deliveries


def export(session: TransferSession, queue: str, path: Path, *, force: bool = False) -> ActionReport:
    """Write every message of ``queue`` to ``path`` (a new file; an existing one only with ``force``) and
    leave the queue as it was."""
    with session, closing(MessageWriter(path, force=force)) as writer:
        count = 0
        for delivery in scan(session):
            writer.write([delivery.message])
            count += 1
    return ActionReport(action="export", source=queue, target=str(path), matched=count, moved=count)


def delete_by_id(session: TransferSession, queue: str, job_id: str) -> ActionReport:
    """Ack the one message whose job id is ``job_id`` (its framework's id: a Celery task id, a Dramatiq
    message id...); every other one is released to its position."""
    with session:
        for delivery in scan(session):
            if job_id in (delivery.message.id, summarise(delivery.message).id):
                session.ack([delivery])
                return ActionReport(action="delete", source=queue, target=queue, matched=1, moved=1)
    raise MessageNotFound(f"no message with id {job_id!r} in queue {queue!r}; nothing was deleted")


def distinct_targets(session: TransferSession, route: Callable[[Message], str | None]) -> set[str | None]:
    """Every target ``route`` gives the messages of the queue (``None`` for those without one)."""
    with session:
        return {route(d.message) for d in scan(session)}

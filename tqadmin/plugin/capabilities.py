"""What a broker plugin can do, declared as data so the UI can grey out the rest and say why.

Modelled on kombu's transport capability flags: the answer to "can this broker peek?" is a value a plugin
declares once, not an exception the user discovers by trying.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from tqadmin.errors import NotSupported


class Operation(StrEnum):
    """Optional admin operations; listing queues is the one thing every plugin must do."""

    PEEK = "peek"
    PURGE = "purge"
    MOVE = "move"
    REPLAY = "replay"
    EXPORT = "export"
    IMPORT = "import"
    DELETE = "delete"
    PUBLISH = "publish"
    SERVER_SIDE_MOVE = "server_side_move"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The operations a plugin supports, why it lacks the others, and what a peek costs on it."""

    supported: frozenset[Operation]
    reasons: tuple[tuple[Operation, str], ...] = ()
    peek_cost: str = ""
    rates: bool = False
    oldest_message_age: bool = False
    alarms: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    def supports(self, operation: Operation) -> bool:
        return operation in self.supported

    def why_not(self, operation: Operation) -> str:
        """A sentence for the user explaining why ``operation`` is unavailable."""
        for op, reason in self.reasons:
            if op is operation:
                return reason
        return f"this broker plugin does not support {operation.value}"

    def require(self, operation: Operation) -> None:
        """Raise :class:`NotSupported` with the declared reason when ``operation`` is unavailable."""
        if not self.supports(operation):
            raise NotSupported(self.why_not(operation))

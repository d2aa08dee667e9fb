"""One tree of errors, each carrying the exit code that docs/interface.md fixes for it.

Every layer raises these (plugins translate their driver's exceptions at the boundary), so the CLI can turn
any failure into one line and a stable exit code, and the TUI into a notification, without knowing which
broker or library produced it. Messages are written for the person on call: what failed, and what to check.
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """The exit codes of every command (docs/interface.md, "Exit codes")."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    CONNECTION = 3
    BROKER = 4
    PARTIAL = 5
    READ_ONLY = 6
    UNHEALTHY = 7  # ``health`` only: a queue stalled or degraded, or a worker wedged


class TqadminError(Exception):
    """Base of every error tqadmin reports to a user; ``str(err)`` is the one line shown."""

    exit_code: ExitCode = ExitCode.INTERNAL


class UsageError(TqadminError):
    """Bad arguments, a bad config file, or a confirmation that was refused."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """The configuration (file, profile, environment) cannot be used as written."""


class ConfirmationRefused(UsageError):
    """A destructive action was not confirmed (no terminal, or the answer differed)."""


class ConnectError(TqadminError):
    """The broker or its API could not be reached or would not let us in."""

    exit_code = ExitCode.CONNECTION


class Unreachable(ConnectError):
    """Refused, reset, DNS failure or TLS failure."""


class NoDatabase(Unreachable):
    """The SQLite file a read was pointed at does not exist: a read never creates one, so that a mistyped
    path is said, not shown as an empty broker. ``path`` lets a caller tell the embedded default that
    nothing has created yet (a fresh machine, not an error) from a path the user named."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(
            f"no SQLite database at {path} (the {what}): check the path; tqadmin publish, a worker, cron"
            " or demo create one"
        )
        self.path = path


class ConnectTimeout(ConnectError):
    """No answer within ``--timeout``."""


class NotAuthorized(ConnectError):
    """Wrong credentials (401) or missing permission (403, ACCESS_REFUSED)."""


class Blocked(ConnectError):
    """The broker blocks publishers (a memory or disk resource alarm)."""


class BrokerError(TqadminError):
    """The broker or its API answered, but with an error or something we cannot read."""

    exit_code = ExitCode.BROKER


class BadResponse(BrokerError):
    """A 5xx, a body that is not JSON, or JSON of the wrong shape."""


class QueueNotFound(BrokerError):
    """The named queue does not exist."""


class MessageNotFound(BrokerError):
    """No message with the given id is in the queue."""


class Unroutable(BrokerError):
    """A mandatory publish was returned: no queue is bound for it."""


class Nacked(BrokerError):
    """The broker refused to take responsibility for a published message."""


class PayloadTooLarge(BrokerError):
    """A message or response exceeds the limit we accept."""


class NotSupported(BrokerError):
    """The broker plugin does not offer this operation (see its ``Capabilities``)."""


class QueueReadOnly(NotSupported):
    """A write to a queue that tqadmin shows but never writes (another framework's), refused before anything
    was written: exit 6, as in read-only mode, because for a script it is the same outcome (nothing sent)."""

    exit_code = ExitCode.READ_ONLY

    def __init__(self, queue: str, reason: str, action: str | None = None) -> None:
        refused = f"{action} refused: " if action else ""
        super().__init__(f"{refused}{queue} is {reason}; nothing was written")
        self.queue = queue
        self.reason = reason


class PartialFailure(TqadminError):
    """Some of the work was done; the report says what was not."""

    exit_code = ExitCode.PARTIAL


class ReadOnly(TqadminError):
    """A write was refused because the profile is read-only; nothing was sent."""

    exit_code = ExitCode.READ_ONLY

    def __init__(self, action: str, profile: str | None = None) -> None:
        where = f"profile {profile!r} is read-only" if profile else "read-only mode is on"
        super().__init__(f"{action} refused: {where}; nothing was sent")
        self.action = action
        self.profile = profile

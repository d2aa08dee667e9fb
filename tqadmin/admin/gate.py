"""The write gate: what both faces ask before an action sends anything, in one order.

1. The profile (before connecting): a read-only profile refuses every write (:class:`ReadOnly`, exit 6), and
   a write whose audit record could not be kept is refused too (exit 2). A dry run writes nothing, so it
   passes.
2. The broker's declaration: an operation the plugin does not offer is refused with its declared reason
   (``Capabilities.why_not``: :class:`NotSupported`, exit 4), whatever path would run it.
3. The queues: a queue tqadmin only shows (another framework's) is never written (:class:`QueueReadOnly`,
   exit 6); a dry run still counts what would be selected and says the real run would be refused.

The CLI asks 1 before it connects and 2 and 3 on the connected admin; the dashboard asks all three at once
with what its last poll knows (:func:`check_before`), and shows the refusal instead of the dialog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tqadmin.config import Settings
from tqadmin.errors import QueueReadOnly
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities, Operation

WRITES = frozenset({"publish", "move", "replay", "purge", "import", "delete", "pause", "resume", "trigger"})
"""The admin writes of docs/interface.md (worker, cron and demo check read-only mode themselves)."""


def check_profile(settings: Settings, action: str, *, dry_run: bool = False) -> None:
    """Step 1: read-only mode, then the audit log; nothing to check for a read or a dry run."""
    if action in WRITES and not dry_run:
        settings.require_writable(action)


def check_capability(capabilities: Capabilities, action: str) -> None:
    """Step 2: the operation ``action`` needs is one the plugin declares."""
    capabilities.require(Operation(action))


def check_admin(
    admin: BrokerAdmin,
    action: str,
    *queues: str | None,
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda _line: None,
) -> None:
    """Steps 2 and 3 on a connected admin, before anything is read or written."""
    check_capability(admin.capabilities, action)
    if action not in WRITES:
        return
    try:
        admin.require_writable(action, *queues)
    except QueueReadOnly as refusal:
        if not dry_run:
            raise
        progress(f"{action}: dry run only; a real run is refused: {refusal.queue} is {refusal.reason}")


def check_before(
    settings: Settings,
    capabilities: Capabilities,
    action: str,
    read_only: Iterable[tuple[str, str | None]] = (),
) -> None:
    """All three steps without a broker call: ``read_only`` pairs each queue the action writes with the
    reason the listing gave for showing it only (``QueueStats.read_only``), ``None`` for a writable one."""
    check_profile(settings, action)
    check_capability(capabilities, action)
    if action in WRITES:
        for queue, reason in read_only:
            if reason is not None:
                raise QueueReadOnly(queue, reason, action)

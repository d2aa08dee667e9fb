"""Server-side moves through a RabbitMQ dynamic shovel, created and watched over the management API.

The shovel runs inside the broker (no client in the data path) with ``ack-mode: on-confirm`` (the source is
acked only after the destination confirmed) and ``src-delete-after`` set to the count taken at start, so it
removes itself once that many messages are moved and never chases a live producer. Its name is derived from
source and target, so a rerun after tqadmin was killed finds the running shovel and waits for it instead of
starting a second one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from tqadmin.errors import BrokerError, TqadminError
from tqadmin_rabbitmq.management import ManagementClient, path_of

# The shovel removes itself when done; its parameter is looked up first after _FIRST_POLL_S, then at
# intervals doubling up to _POLL_S, so a small move is not held up by a whole interval and a long one costs
# the broker at most 1 / _POLL_S cheap lookups a second.
_FIRST_POLL_S = 0.005
_POLL_S = 0.05
_LOOK_EVERY_S = 1.0
_STALL_FACTOR = 3  # give up after this many --timeout periods without progress


class ShovelUnavailable(Exception):
    """The shovel plugins are not enabled on this broker: the caller takes the client path."""


_ORPHAN_GRACE_S = 3.0  # a shovel the broker is still starting shows up in /api/shovels well within this


class _Missing(BrokerError):
    """A 404 from the management API for the shovel: it is gone (done) or was never there."""


class Shovel:
    """One dynamic shovel from ``source`` to ``target`` in ``vhost``, managed through the admin's own
    management API client (one keep-alive connection for the whole run)."""

    def __init__(self, api: ManagementClient, vhost: str, source: str, target: str):
        self._vhost = vhost
        self._api = api
        self._timeout_s = api.timeout_s
        self.source = source
        self.target = target
        self.name = f"tqadmin-move-{source}-to-{target}"
        self._path = path_of("api", "parameters", "shovel", self._vhost, self.name)

    def exists(self) -> bool:
        try:
            self._api.get_json(self._path, missing=f"shovel {self.name!r}", missing_error=_Missing)
        except _Missing:
            return False
        return True

    def start(self, count: int) -> None:
        """Create the shovel; raises :class:`ShovelUnavailable` when the shovel plugins are off (the
        ``/api/shovels`` endpoint comes with ``rabbitmq_shovel_management``, which needs the shovel)."""
        try:
            self._api.get_json(
                path_of("api", "shovels", self._vhost), missing="the shovel API", missing_error=_Missing
            )
        except _Missing:
            raise ShovelUnavailable(self._api.where) from None
        local = "amqp:///" + path_of(self._vhost)
        value: dict[str, Any] = {
            "src-protocol": "amqp091",
            "src-uri": local,
            "src-queue": self.source,
            "dest-protocol": "amqp091",
            "dest-uri": local,
            "dest-queue": self.target,
            "ack-mode": "on-confirm",
            "src-delete-after": count,
            "dest-add-forward-headers": False,
        }
        self._api.request_json("PUT", self._path, body={"value": value})

    def wait(self, remaining: Callable[[], int]) -> None:
        """Block until the shovel removed itself. ``remaining()`` (the source depth) is read once a second
        to detect a stall; the cheap existence check runs every poll."""
        last = remaining()
        last_change = last_look = time.monotonic()
        pause = _FIRST_POLL_S
        while self.exists():
            time.sleep(pause)
            pause = min(2 * pause, _POLL_S)
            if time.monotonic() - last_look < _LOOK_EVERY_S:
                continue
            last_look = time.monotonic()
            now_left = remaining()
            if now_left != last:
                last, last_change = now_left, last_look
            elif last_look - last_change > _STALL_FACTOR * self._timeout_s:
                state = self._state()
                self._delete()
                raise BrokerError(
                    f"the RabbitMQ shovel {self.name} made no progress for"
                    f" {_STALL_FACTOR * self._timeout_s:g} s (state: {state}) and was removed; nothing"
                    " unconfirmed was acked; check the broker's shovel status, or rerun with --client-side"
                )

    def orphaned(self) -> bool:
        """Whether the parameter exists but the broker runs no shovel for it, for a grace period.

        An earlier run killed while the broker was still starting its shovel can leave exactly that: the
        parameter stored, no shovel behind it. Waiting on it would only end in a stall.
        """
        deadline = time.monotonic() + _ORPHAN_GRACE_S
        while time.monotonic() < deadline:
            if self._state() != "unknown" or not self.exists():
                return False
            time.sleep(_POLL_S)
        return True

    def remove_orphan(self) -> None:
        """Delete an orphaned parameter. RabbitMQ 3.10 answers 500 when no shovel runs for it; what counts
        is whether the parameter is gone afterwards."""
        try:
            self._delete()
        except BrokerError:
            if self.exists():
                raise BrokerError(
                    f"an earlier run left the shovel parameter {self.name} with no shovel running, and the"
                    f" broker would not delete it: run `rabbitmqctl clear_parameter shovel {self.name}`"
                    " or rerun with --client-side; nothing was acked"
                ) from None

    def _delete(self) -> None:
        with contextlib.suppress(_Missing):
            self._api.request_json("DELETE", self._path, missing="shovel", missing_error=_Missing)

    def _state(self) -> str:
        """The shovel's state and reason as the broker reports them, for the error message."""
        try:
            found = self._api.get_json(path_of("api", "shovels", self._vhost, self.name), missing="shovel")
        except TqadminError:
            return "unknown"
        entries = found if isinstance(found, list) else [found]
        return "; ".join(
            f"{e.get('state')} {e.get('reason', '')}".strip() for e in entries if isinstance(e, dict)
        )

"""Server-side moves through a RabbitMQ dynamic shovel, created and watched over the management API.

The shovel runs inside the broker (no client in the data path) with ``ack-mode: on-confirm`` (the source is
acked only after the destination confirmed) and ``src-delete-after`` set to the count taken at start, so it
removes itself once that many messages are moved and never chases a live producer. Its name is derived from
source and target, so a rerun after tqadmin was killed finds the running shovel and waits for it instead of
starting a second one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from tqadmin.errors import BadResponse, BrokerError, ConnectError, NotAuthorized
from tqadmin.masking import mask_url
from tqadmin_rabbitmq.urls import management_endpoint, vhost_of

_POLL_S = 0.05
_LOOK_EVERY_S = 1.0
_STALL_FACTOR = 3  # give up after this many --timeout periods without progress


class ShovelUnavailable(Exception):
    """The shovel plugin is not enabled on this broker: the caller takes the client path."""


class Shovel:
    """One dynamic shovel from ``source`` to ``target`` in the broker URL's vhost."""

    def __init__(self, amqp_url: str, management_url: str | None, source: str, target: str, timeout_s: float):
        endpoint = management_endpoint(amqp_url, management_url)
        self._vhost = vhost_of(amqp_url)
        self._base = endpoint.base_url
        self._client = httpx.Client(
            base_url=endpoint.base_url, auth=(endpoint.username, endpoint.password), timeout=timeout_s
        )
        self._timeout_s = timeout_s
        self.source = source
        self.target = target
        self.name = f"tqadmin-move-{source}-to-{target}"
        self._path = f"api/parameters/shovel/{quote(self._vhost, safe='')}/{quote(self.name, safe='')}"

    def close(self) -> None:
        self._client.close()

    def exists(self) -> bool:
        return self._request("GET", self._path, allow=(404,)).status_code == 200

    def start(self, count: int) -> None:
        """Create the shovel; raises :class:`ShovelUnavailable` when the plugin is not enabled."""
        local = "amqp:///" + quote(self._vhost, safe="")
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
        response = self._request("PUT", self._path, json={"value": value}, allow=(400, 404))
        if response.status_code in (400, 404):
            raise ShovelUnavailable(response.text[:200])

    def wait(self, remaining: Callable[[], int]) -> None:
        """Block until the shovel removed itself. ``remaining()`` (the source depth) is read once a second
        to detect a stall; the cheap existence check runs every poll."""
        last = remaining()
        last_change = last_look = time.monotonic()
        while self.exists():
            time.sleep(_POLL_S)
            if time.monotonic() - last_look < _LOOK_EVERY_S:
                continue
            last_look = time.monotonic()
            now_left = remaining()
            if now_left != last:
                last, last_change = now_left, last_look
            elif last_look - last_change > _STALL_FACTOR * self._timeout_s:
                state = self._state()
                self._request("DELETE", self._path, allow=(404,))
                raise BrokerError(
                    f"the RabbitMQ shovel {self.name} made no progress for"
                    f" {_STALL_FACTOR * self._timeout_s:g} s (state: {state}) and was removed; nothing"
                    " unconfirmed was acked; check the broker's shovel status, or rerun with --client-side"
                )

    def _state(self) -> str:
        """The shovel's state and reason as the broker reports them, for the error message."""
        path = f"api/shovels/{quote(self._vhost, safe='')}/{quote(self.name, safe='')}"
        try:
            found = self._request("GET", path, allow=(404,)).json()
        except ValueError:
            return "unknown"
        entries = found if isinstance(found, list) else [found]
        return "; ".join(
            f"{e.get('state')} {e.get('reason', '')}".strip() for e in entries if isinstance(e, dict)
        )

    def _request(self, method: str, path: str, allow: tuple[int, ...] = (), **kwargs: Any) -> httpx.Response:
        where = f"the RabbitMQ management API at {mask_url(self._base)}"
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ConnectError(
                f"cannot reach {where} ({type(exc).__name__}): is the management plugin on?"
            ) from None
        if response.status_code in (401, 403):
            raise NotAuthorized(
                f"{where} refused the login ({response.status_code}): check the management user"
            )
        if response.status_code >= 400 and response.status_code not in allow:
            raise BadResponse(
                f"{where} answered {response.status_code} to {method} {path}: {response.text[:200]}"
            )
        return response

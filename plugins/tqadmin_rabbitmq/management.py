"""A small client for RabbitMQ's management HTTP API that turns every failure into one line and an exit code.

Responses are streamed and cut off past a size limit (a proxy or a wrong URL can answer with anything), the
whole call is bounded by ``--timeout`` even when a server trickles bytes, and every message names the
endpoint without its credentials and says what to check. httpx is imported here only, lazily by the admin.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from tqadmin.errors import (
    BadResponse,
    BrokerError,
    ConnectTimeout,
    NotAuthorized,
    PayloadTooLarge,
    QueueNotFound,
    TqadminError,
    Unreachable,
)
from tqadmin.show.masking import clip_masked
from tqadmin_rabbitmq.urls import ManagementEndpoint

MAX_BODY_BYTES = 16 * 1024 * 1024  # a page of 500 queues with our columns is well under 1 MiB


def path_of(*segments: str) -> str:
    """``api/queues/%2F/a%20b``: every segment quoted, since vhosts and queue names may hold ``/``."""
    return "/".join(quote(segment, safe="") for segment in segments)


class ManagementClient:
    """One keep-alive HTTP connection to the management API, used by one thread."""

    def __init__(
        self, endpoint: ManagementEndpoint, timeout_s: float, max_body_bytes: int = MAX_BODY_BYTES
    ) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes
        self._http = httpx.Client(
            base_url=endpoint.base_url,
            auth=(endpoint.username, endpoint.password),
            timeout=timeout_s,
            # identity: gzip would spend the broker's CPU, which is what polling must not do.
            headers={"accept": "application/json", "accept-encoding": "identity"},
            follow_redirects=False,
            # Plain http never reaches TLS (paths are relative, redirects are not followed); loading the CA
            # bundle for nothing costs 15-30 ms per client. https keeps full verification.
            verify=endpoint.base_url.startswith("https://"),
        )

    def __repr__(self) -> str:
        return f"ManagementClient({self.endpoint!r}, timeout_s={self.timeout_s:g})"

    @property
    def where(self) -> str:
        return f"the RabbitMQ management API at {self.endpoint.base_url}"

    def get_json(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        missing: str | None = None,
        missing_error: type[BrokerError] = QueueNotFound,
        max_bytes: int | None = None,
    ) -> Any:
        """GET ``path`` as JSON. ``missing`` names what a 404 means (``"queue 'x'"``) and a 404 then raises
        ``missing_error``; without it a 404 is an error about the URL itself. ``max_bytes`` overrides the
        client's body limit for a call whose expected size is known."""
        return self.request_json(
            "GET", path, params=params, missing=missing, missing_error=missing_error, max_bytes=max_bytes
        )

    def request_json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        missing: str | None = None,
        missing_error: type[BrokerError] = QueueNotFound,
        max_bytes: int | None = None,
    ) -> Any:
        """Send one request and return its decoded JSON body (``None`` for an empty body)."""
        deadline = time.monotonic() + self.timeout_s
        call = f"{method} /{path}"
        try:
            request = self._http.build_request(method, path, params=params, json=body)
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, call) from None
        try:
            self._check_status(response, call, missing, missing_error)
            raw = self._read_capped(response, call, deadline, max_bytes or self.max_body_bytes)
        except httpx.TimeoutException:
            raise self._timeout(call) from None
        except httpx.NetworkError as exc:  # reset (or the socket failed) mid-answer: the link, not the API
            raise Unreachable(
                f"the connection to {self.where} was reset while it answered {call} ({_detail(exc)}): "
                "check the broker's health and any proxy or load balancer in between"
            ) from None
        except httpx.HTTPError as exc:  # an orderly close before the announced end: a broken answer
            raise BadResponse(
                f"{self.where} cut its answer to {call} short ({_detail(exc)}): "
                "check the broker's health and any proxy in between"
            ) from None
        finally:
            response.close()
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            start = clip_masked(raw[:4096].decode("utf-8", "replace"), 40).replace("\n", " ")
            raise BadResponse(
                f"{self.where} answered {call} with something that is not JSON ({start!r}...): "
                "is the management URL pointing at the management API?"
            ) from None

    def close(self) -> None:
        self._http.close()

    def _check_status(
        self, response: httpx.Response, call: str, missing: str | None, missing_error: type[BrokerError]
    ) -> None:
        status = response.status_code
        if status < 300:
            return
        reason = self._reason(response)
        if status == 401 and _logged_in(response, reason):
            # RabbitMQ also answers 401 when the login worked but the user lacks a tag.
            raise NotAuthorized(
                f"{self.where} denied user {self.endpoint.shown_user!r} {call} (401{reason}): the user needs"
                " a tag for this (management, monitoring, or policymaker for shovels)"
            )
        if status == 401:
            raise NotAuthorized(
                f"{self.where} refused the login of user {self.endpoint.shown_user!r} (401): check the "
                "credentials in the management URL or the broker URL"
            )
        if status == 403:
            raise NotAuthorized(
                f"{self.where} denied user {self.endpoint.shown_user!r} {call} (403{reason}): the user needs "
                "the management (or monitoring) tag and permissions on the vhost"
            )
        if status == 404:
            if missing:
                raise missing_error(f"{missing} does not exist on {self.where} (404 for {call})")
            raise BrokerError(
                f"{self.where} has no {call} (404{reason}): check the vhost and the management URL"
            )
        if 300 <= status < 400:
            raise BadResponse(
                f"{self.where} redirected {call} ({status}) to {response.headers.get('location', '?')}: "
                "set --management-url to the final address"
            )
        if status >= 500:
            raise BadResponse(
                f"{self.where} failed on {call} ({status}{reason}): check the broker's logs and health"
            )
        raise BadResponse(f"{self.where} rejected {call} ({status}{reason})")

    def _reason(self, response: httpx.Response) -> str:
        """The ``reason`` of RabbitMQ's JSON error body, short and masked; empty when there is none."""
        try:
            raw = self._read_capped(response, "", time.monotonic() + self.timeout_s, 4096)
            reason = json.loads(raw).get("reason", "")
        except (TqadminError, httpx.HTTPError, ValueError, AttributeError):
            return ""
        text = clip_masked(str(reason), 200).replace("\n", " ")
        return f": {text}" if text else ""

    def _read_capped(self, response: httpx.Response, call: str, deadline: float, cap: int) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise self._too_large(call, f"a body of {int(declared)} bytes", cap)
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > cap:
                raise self._too_large(call, f"a body of more than {cap} bytes", cap)
            if time.monotonic() > deadline:
                raise self._timeout(call)
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, call: str, what: str, cap: int) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"{self.where} answered {call} with {what}, over the {cap} byte limit: "
            "check the management URL (a proxy or another service?)"
        )

    def _timeout(self, call: str) -> ConnectTimeout:
        return ConnectTimeout(
            f"{self.where} did not answer {call} within {self.timeout_s:g}s (--timeout): check that the "
            "broker is not overloaded, and the host, port and firewall"
        )

    def _transport_error(self, exc: httpx.HTTPError, call: str) -> TqadminError:
        """Failures before any answer arrived: the endpoint is unreachable (exit 3)."""
        if isinstance(exc, httpx.TimeoutException):
            return self._timeout(call)
        if _caused_by(exc, ssl.SSLError):
            return Unreachable(
                f"TLS with {self.where} failed ({_detail(exc)}): check the certificate, its CA, and "
                "http:// versus https://"
            )
        detail = _detail(exc)
        if _caused_by(exc, socket.gaierror):
            return Unreachable(f"cannot resolve the host of {self.where} ({detail}): check the host name")
        if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
            return Unreachable(f"cannot use {self.where} ({detail}): check the management URL")
        return Unreachable(
            f"cannot reach {self.where} ({detail}): is RabbitMQ running with the rabbitmq_management plugin "
            "enabled, and are host and port right?"
        )


def _logged_in(response: httpx.Response, reason: str) -> bool:
    """A 401 with a reason other than a failed login and no login challenge: the user lacks a tag."""
    return bool(reason) and "login" not in reason.lower() and "www-authenticate" not in response.headers


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _detail(exc: BaseException) -> str:
    return clip_masked(str(exc) or type(exc).__name__, 200).replace("\n", " ")

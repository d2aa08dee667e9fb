"""One boto3 SQS client per face, and botocore's exceptions translated into tqadmin's error tree.

boto3's own credential chain and retries apply (``standard`` mode: throttling and 5xx answers are retried
with backoff), within ``--timeout``: every call waits at most ``--timeout`` for an answer, a receive its long
poll's wait on top of it (:class:`TimedClient`: two botocore clients of one session, one per read timeout),
an attempt that timed out is never retried (the time it may take is spent), and no retry starts once the
call has run ``--timeout`` (plus its wait): a black-holed endpoint fails a call in ``--timeout``, where
botocore's own retries of ``--timeout + 20 s`` reads took 1 min 51 s with ``--timeout 2``. A botocore
client is thread-safe, so a worker's I/O thread, its settling thread and its job threads share one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.exceptions
from botocore.config import Config

from tqadmin.errors import (
    BadResponse,
    BrokerError,
    ConfigError,
    ConnectTimeout,
    NotAuthorized,
    QueueNotFound,
    TqadminError,
    Unreachable,
)
from tqadmin.plugin.base import BrokerConfig
from tqadmin.show.masking import mask_text

LONG_POLL_S = 20  # the longest wait SQS allows a receive
RETRY_ATTEMPTS = 4
POOL = 16  # connections: the I/O thread, the settler and job threads copying retries and dead letters

AUTH_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSecurity",
        "MissingAuthenticationToken",
    }
)
MISSING_QUEUE_CODES = frozenset({"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"})
THROTTLING_CODES = frozenset(
    {"Throttling", "ThrottlingException", "RequestThrottled", "AWS.SimpleQueueService.RequestThrottled"}
)


def region_of(url: str) -> str | None:
    """The region of ``sqs://REGION``; ``None`` for ``sqs://`` (boto3's configured default applies)."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "sqs":
        raise ConfigError(f"not an SQS URL: {mask_text(url)!r} (expected sqs://REGION, e.g. sqs://us-east-1)")
    return parts.hostname or None


class TimedClient:
    """An SQS client whose calls wait ``--timeout`` for their answer, and a receive with a long poll its
    wait on top: ``receive_message`` with a wait goes to a client with the longer read timeout, every other
    call (attributes included) to the one with ``--timeout``."""

    def __init__(self, short: Any, long: Any) -> None:
        self._short = short
        self._long = long

    def receive_message(self, **kwargs: Any) -> Any:
        waits = int(kwargs.get("WaitTimeSeconds") or 0) > 0
        return (self._long if waits else self._short).receive_message(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._short, name)


def make_client(config: BrokerConfig) -> Any:
    """A client for the URL's region and the ``endpoint_url`` option (``AWS_ENDPOINT_URL``)."""
    region = region_of(config.url)
    endpoint = config.option("endpoint_url")
    try:
        session = boto3.session.Session()
        short, long = (
            session.client(
                "sqs", region_name=region, endpoint_url=endpoint, config=_settings(config.timeout_s, wait_s)
            )
            for wait_s in (0, LONG_POLL_S)
        )
    except botocore.exceptions.NoRegionError:
        raise ConfigError(
            "no AWS region: name it in the broker URL (sqs://us-east-1) or set AWS_DEFAULT_REGION"
        ) from None
    except (ValueError, botocore.exceptions.BotoCoreError) as exc:
        raise ConfigError(f"cannot set up an SQS client: {mask_text(str(exc))}") from None
    for client in (short, long):
        _retry_within(client, config.timeout_s)
    return TimedClient(short, long)


def _settings(timeout_s: float, wait_s: float) -> Config:
    return Config(
        connect_timeout=timeout_s,
        read_timeout=timeout_s + wait_s,
        retries={"mode": "standard", "max_attempts": RETRY_ATTEMPTS},
        max_pool_connections=POOL,
    )


STARTED = "tqadmin_started"  # the call's start and budget, kept in botocore's per-call context
BUDGET = "tqadmin_budget_s"
TIMEOUTS = (botocore.exceptions.ConnectTimeoutError, botocore.exceptions.ReadTimeoutError)


def _retry_within(client: Any, timeout_s: float) -> None:
    """botocore's retries kept within the call's budget: ``--timeout``, and a receive's wait on top.

    Each call notes its start and budget in botocore's per-call context; the retry decision asks first, and
    a ``False`` from it (botocore takes the first answer that is not ``None``) ends the retries: after an
    attempt that timed out, or once the budget is spent. Otherwise botocore's ``standard`` mode decides."""

    def started(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[STARTED] = time.monotonic()
        context[BUDGET] = timeout_s + max(int(params.get("WaitTimeSeconds") or 0), 0)

    def within(request_dict: dict[str, Any], caught_exception: Exception | None = None, **_: Any) -> Any:
        context = request_dict.get("context") or {}
        if STARTED not in context:
            return None
        if isinstance(caught_exception, TIMEOUTS):
            return False
        return False if time.monotonic() - context[STARTED] >= context[BUDGET] else None

    client.meta.events.register("before-parameter-build.sqs", started)
    client.meta.events.register_first("needs-retry.sqs", within)


def where(config: BrokerConfig) -> str:
    """How errors name the service: the endpoint when one is set, else the region."""
    endpoint = config.option("endpoint_url")
    return f"SQS at {endpoint}" if endpoint else f"SQS in {region_of(config.url) or 'the default region'}"


def error_code(exc: botocore.exceptions.ClientError) -> str:
    error = exc.response.get("Error", {})
    return str(error.get("QueryErrorCode") or error.get("Code") or "")


def codes(exc: botocore.exceptions.ClientError) -> set[str]:
    """Every code the error is known by (the JSON protocol's and the older query protocol's)."""
    error = exc.response.get("Error", {})
    return {str(error.get(key)) for key in ("Code", "QueryErrorCode") if error.get(key)}


def status_of(exc: botocore.exceptions.ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def translate(exc: Exception, place: str, queue: str | None = None) -> TqadminError:
    """The tqadmin error for a botocore exception, in one line naming what failed and what to check."""
    if isinstance(exc, TqadminError):
        return exc
    if isinstance(exc, botocore.exceptions.NoCredentialsError | botocore.exceptions.PartialCredentialsError):
        return NotAuthorized(
            f"{place}: no usable AWS credentials (boto3 looks in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the"
            " shared credentials and config files, SSO and instance roles; a local SQS takes any values)"
        )
    if isinstance(exc, botocore.exceptions.ConnectTimeoutError | botocore.exceptions.ReadTimeoutError):
        return ConnectTimeout(f"{place} did not answer in time: check the endpoint and the network")
    if isinstance(
        exc, botocore.exceptions.EndpointConnectionError | botocore.exceptions.ConnectionClosedError
    ):
        return Unreachable(f"{place} cannot be reached: is it running, and is --endpoint-url right?")
    if isinstance(exc, botocore.exceptions.ClientError):
        return _client_error(exc, place, queue)
    if isinstance(exc, botocore.exceptions.BotoCoreError):
        return BrokerError(f"{place}: {mask_text(str(exc))}")
    raise exc


def _client_error(exc: botocore.exceptions.ClientError, place: str, queue: str | None) -> TqadminError:
    found = codes(exc)
    message = mask_text(str(exc.response.get("Error", {}).get("Message") or exc))
    if found & MISSING_QUEUE_CODES:
        return QueueNotFound(f"{place}: no queue named {queue!r}" if queue else f"{place}: {message}")
    if found & AUTH_CODES:
        return NotAuthorized(f"{place} refused the credentials or the permission: {message}")
    if found & THROTTLING_CODES:
        return BrokerError(
            f"{place} throttled the calls (still after retries): {message}; slow down or retry"
        )
    if status_of(exc) >= 500:
        return BadResponse(f"{place} answered with an error ({status_of(exc)}): {message[:200]}")
    return BrokerError(f"{place} refused the call ({error_code(exc)}): {message}")


@contextlib.contextmanager
def translated(place: str, queue: str | None = None) -> Iterator[None]:
    """Raise botocore's exceptions as tqadmin's (exit 3 or 4) inside the block."""
    try:
        yield
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise translate(exc, place, queue) from None

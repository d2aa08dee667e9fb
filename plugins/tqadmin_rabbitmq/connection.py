"""Open pika connections with the user's URL options and translate pika's failures into our error tree.

One connection per thread (pika's BlockingConnection is not thread-safe). Every error message names the
endpoint with its credentials masked and says what to check. Only the driver's own failures (pika's, the
socket's) are translated: a TypeError or a KeyError is a bug in tqadmin and goes up as it is (exit 1, its
traceback under ``-v``), never dressed up as a broker error with its cause lost.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import pika
import pika.adapters.utils.connection_workflow as cw
import pika.exceptions as pe

from tqadmin.errors import (
    Blocked,
    BrokerError,
    ConfigError,
    ConnectError,
    ConnectTimeout,
    Nacked,
    NotAuthorized,
    QueueNotFound,
    TqadminError,
    Unreachable,
    Unroutable,
)
from tqadmin.show.masking import mask_text, mask_url
from tqadmin_rabbitmq.urls import vhost_of


def connection_parameters(url: str, timeout_s: float) -> pika.URLParameters:
    """pika parameters from the URL (so ``?heartbeat=5`` and the like apply), our timeouts as defaults."""
    try:
        params = pika.URLParameters(url)
    except ValueError as exc:  # a port or URL option pika cannot read
        raise ConfigError(f"broker URL {mask_url(url)} cannot be used: {mask_text(str(exc))}") from None
    query = url.partition("?")[2]
    if "socket_timeout" not in query:
        params.socket_timeout = timeout_s
    if "connection_attempts" not in query:
        params.connection_attempts = 1
    if "blocked_connection_timeout" not in query:
        params.blocked_connection_timeout = timeout_s
    params.stack_timeout = timeout_s
    params.client_properties = {"connection_name": "tqadmin"}
    return params


# What the driver raises when the broker or the network fails; anything else is a bug of ours.
DRIVER_ERRORS = (pe.AMQPError, pe.ChannelError, cw.AMQPConnectorException, OSError)


def connect(url: str, timeout_s: float) -> pika.BlockingConnection:
    """A blocking connection, or a :class:`ConnectError` that names the masked endpoint."""
    params = connection_parameters(url, timeout_s)
    try:
        return pika.BlockingConnection(params)
    except DRIVER_ERRORS as exc:
        raise_translated(exc, url)
    except ValueError as exc:
        raise_translated(reset_while_connecting(exc), url)


def reset_while_connecting(exc: ValueError) -> ConnectionResetError:
    """pika checks a new socket with ``getpeername()`` and raises ValueError when the peer reset it in the
    meantime (a broker or proxy going down as we connect): that is a reset, not a bug. Any other ValueError
    is raised again as it is."""
    if "getpeername" not in str(exc):
        raise exc
    return ConnectionResetError(f"connection reset while connecting ({exc})")


@contextmanager
def translated(url: str, queue: str | None = None) -> Iterator[None]:
    """Run a block, turning pika and socket errors into :mod:`tqadmin.errors`."""
    try:
        yield
    except DRIVER_ERRORS as exc:
        raise_translated(exc, url, queue)


def raise_translated(exc: BaseException, url: str, queue: str | None = None) -> NoReturn:
    """Raise :func:`translate`'s error; only one without words of its own keeps the driver's error as its
    cause (for ``-v``), the others say all there is."""
    error = translate(exc, url, queue)
    raise error from error.__cause__


def broker_said_no(exc: BaseException) -> bool:
    """Whether a refusal pika reports during the handshake came from the broker (a ``Connection.Close`` with
    403 or 530), not from a socket that merely closed. pika calls both a "probable" denial and keeps only the
    repr of what it saw, so that text is the one place the difference survives."""
    return "ConnectionClosedByBroker" in str(exc)


def translate(exc: BaseException, url: str, queue: str | None = None) -> TqadminError:
    """Map one pika (or socket) exception to the error whose exit code docs/interface.md gives it."""
    where = f"RabbitMQ at {mask_url(url)}"
    guessed = pe.ProbableAccessDeniedError | pe.ProbableAuthenticationError
    if isinstance(exc, guessed) and not broker_said_no(
        exc
    ):  # dropped mid-handshake: going down, or overloaded
        return Unreachable(
            f"{where} closed the connection during the handshake without saying why: is it starting, "
            "stopping or overloaded? (A refused login or vhost would have said so.)"
        )
    if isinstance(exc, pe.ProbableAccessDeniedError):
        return NotAuthorized(
            f"{where} refused access to vhost {vhost_of(url)!r}: check that it exists and that the user "
            "has permissions on it"
        )
    if isinstance(exc, pe.ProbableAuthenticationError | pe.AuthenticationError):
        return NotAuthorized(f"{where} refused the login: check the user and password in the broker URL")
    if isinstance(exc, pe.ConnectionBlockedTimeout):
        return Blocked(f"{where} blocks publishers (a memory or disk alarm): see `tqadmin queues` for alarms")
    if isinstance(exc, pe.UnroutableError):
        return Unroutable(f"{where} returned a message as unroutable: no queue is bound for its routing key")
    if isinstance(exc, pe.NackError):
        return Nacked(f"{where} nacked a message: it was not stored (queue full or broker error)")
    if isinstance(exc, pe.ChannelClosedByBroker):
        if exc.reply_code == 404:
            name = f"queue {queue!r}" if queue else "the queue or exchange"
            return QueueNotFound(f"{name} does not exist on {where} ({exc.reply_text})")
        if exc.reply_code == 403:
            return NotAuthorized(f"{where} denied access: {exc.reply_text}; check the user's permissions")
        return BrokerError(f"{where} closed the channel: {exc.reply_code} {exc.reply_text}")
    if isinstance(exc, pe.ConnectionClosedByBroker):
        if exc.reply_code in (403, 530):
            return NotAuthorized(
                f"{where} refused access: {exc.reply_text}; check the user, password and vhost"
            )
        return ConnectError(f"{where} closed the connection: {exc.reply_code} {exc.reply_text}")
    return _connect_failure(exc, where) or _unexpected(exc, where)


def _unexpected(exc: BaseException, where: str) -> BrokerError:
    """A driver failure we have no words for: named and masked, its cause kept for ``-v``."""
    error = BrokerError(f"{where}: unexpected {type(exc).__name__}: {mask_text(str(exc))}")
    error.__cause__ = exc
    return error


def _connect_failure(exc: BaseException, where: str) -> TqadminError | None:
    """Failures to open a connection, told apart by their root cause (pika wraps it two or three deep)."""
    chain = _chain(exc)
    root = chain[-1]
    detail = mask_text(str(root) or type(root).__name__)
    if isinstance(root, cw.AMQPConnectorStackTimeout):  # connected, but no AMQP handshake came back
        return ConnectTimeout(
            f"{where} accepted the connection but did not speak AMQP in time: is that the AMQP port"
            " (5672, or 5671 for amqps) and not, say, the management API's? Check the port and the load"
        )
    if isinstance(root, socket.timeout | TimeoutError | pe.AMQPHeartbeatTimeout):
        return ConnectTimeout(f"{where} did not answer in time ({detail}): check the host, port and firewall")
    if any(isinstance(e, ssl.SSLError | cw.AMQPConnectorTransportSetupError) for e in chain):
        return Unreachable(f"TLS with {where} failed ({detail}): check the certificate, CA and amqp vs amqps")
    if isinstance(root, socket.gaierror):
        return Unreachable(f"cannot resolve the host of {where} ({detail}): check the host name")
    if isinstance(root, pe.IncompatibleProtocolError):
        return Unreachable(f"{where} does not speak AMQP 0-9-1 ({detail}): check the port (5672 or 5671)")
    if isinstance(root, OSError | pe.AMQPConnectionError | cw.AMQPConnectorException):
        return Unreachable(
            f"cannot connect to {where} ({detail}): is it running, and are host and port right?"
        )
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the errors it wraps, outermost first: pika nests the real cause in workflow errors."""
    chain = [exc]
    for _ in range(8):
        if isinstance(exc, cw.AMQPConnectionWorkflowFailed) and exc.exceptions:
            exc = exc.exceptions[-1]
        elif isinstance(exc, cw.AMQPConnectorPhaseErrorBase):
            exc = exc.exception
        elif type(exc) is pe.AMQPConnectionError and exc.args and isinstance(exc.args[0], BaseException):
            exc = exc.args[0]
        else:
            break
        chain.append(exc)
    return chain

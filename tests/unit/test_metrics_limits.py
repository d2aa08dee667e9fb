"""The /metrics server holds no thread per connection, gives each connection a deadline, refuses what is past
its cap at once and listens on IPv6 as well: a client, however slow or hostile, cannot pin the process."""

from __future__ import annotations

import errno
import logging
import select
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from prometheus_client.core import GaugeMetricFamily, Metric

from tqadmin.telemetry.endpoint import MetricsServer

DEADLINE_S = 60.0  # for conditions: generous, so a loaded machine only makes a test slower


def small() -> list[Metric]:
    return [GaugeMetricFamily("tq_depth", "depth", value=1.0)]


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=DEADLINE_S) as response:
        return str(response.read().decode())


def eventually(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def answered(port: int) -> bool:
    """Whether a scrape gets the small families; retried by ``eventually`` where the server may still be
    busy, or a loaded machine may take a short deadline's worth of time over a scrape."""
    try:
        return "tq_depth 1.0" in scrape(f"http://127.0.0.1:{port}/metrics").splitlines()
    except (urllib.error.URLError, ConnectionError):
        return False


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed or reset this connection, read without blocking."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def connected(port: int, host: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection((host, port), timeout=DEADLINE_S)


@pytest.fixture
def sockets() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def test_300_idle_connections_hold_no_thread_and_a_scrape_is_still_answered(sockets: ExitStack) -> None:
    with MetricsServer("127.0.0.1", 0, small) as server:
        url = f"http://127.0.0.1:{server.port}/metrics"
        scrape(url)
        threads = threading.active_count()
        for i in range(300):  # half say nothing, half the start of a request line
            idle = sockets.enter_context(connected(server.port))
            if i % 2:
                idle.sendall(b"GET /metr")
        text = scrape(url)  # accepted after the 300: the server has taken every one of them
        assert "tq_depth 1.0" in text.splitlines()
        assert threading.active_count() <= threads + 2, "a thread per idle connection"


def test_a_request_trickled_byte_by_byte_is_cut_off_at_the_deadline(sockets: ExitStack) -> None:
    """The deadline is for the whole request, not each read: a byte now and then does not extend it."""
    with MetricsServer("127.0.0.1", 0, small, timeout_s=1) as server:
        loris = sockets.enter_context(connected(server.port))
        trickle = iter(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4000)
        deadline = time.monotonic() + DEADLINE_S
        while not closed_by_server(loris):
            assert time.monotonic() < deadline, "the slow client was never cut off"
            try:
                loris.send(bytes([next(trickle)]))
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.05)
        eventually("a scrape answered after the slow client", lambda: answered(server.port))


def test_a_client_that_stops_reading_is_cut_off_and_pins_no_thread(sockets: ExitStack) -> None:
    """A body far larger than both sockets' buffers, to a client that reads none of it: the server resets
    the connection at its deadline instead of waiting on it for ever."""
    big = GaugeMetricFamily("tq_big", "big", labels=["pad"])
    big.add_metric(["x" * 32_000_000], 1.0)
    bodies = iter([[big]])  # the first scrape only: the ones after it are small
    with MetricsServer("127.0.0.1", 0, lambda: next(bodies, small()), timeout_s=1) as server:
        threads = threading.active_count()
        stalled = socket.socket()
        sockets.enter_context(stalled)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", server.port))
        stalled.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        eventually(
            "the stalled connection reset by the server",
            lambda: stalled.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNRESET,
        )
        assert threading.active_count() <= threads + 1
        eventually("a scrape answered after the stalled one", lambda: answered(server.port))


def test_connections_past_the_cap_are_closed_at_once_and_served_again_when_some_close(
    sockets: ExitStack, caplog: pytest.LogCaptureFixture
) -> None:
    """With the server's own deadline far away, only a refusal can end the third connection in time."""
    with MetricsServer("127.0.0.1", 0, small, timeout_s=600, max_connections=2) as server:
        held = [sockets.enter_context(connected(server.port)) for _ in range(2)]
        with caplog.at_level(logging.WARNING, logger="tqadmin.metrics"):
            for _ in range(3):
                refused = connected(server.port)
                try:
                    assert refused.recv(1) == b"", "a refused connection is closed without an answer"
                except ConnectionResetError:
                    pass
                finally:
                    refused.close()
        said = [r.getMessage() for r in caplog.records if r.name == "tqadmin.metrics"]
        assert len(said) == 1 and "2 connections" in said[0], said
        for sock in held:
            sock.close()
        eventually("a scrape answered once the held connections closed", lambda: answered(server.port))


def ipv6_loopback() -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"this machine has no IPv6 loopback (::1): {exc}")


def test_an_ipv6_address_is_served() -> None:
    ipv6_loopback()
    with MetricsServer("::1", 0, small) as server:
        assert "tq_depth 1.0" in scrape(f"http://[::1]:{server.port}/metrics").splitlines()


def test_every_ipv6_address_takes_ipv4_scrapers_too() -> None:
    ipv6_loopback()
    with MetricsServer("::", 0, small) as server:
        assert "tq_depth 1.0" in scrape(f"http://[::1]:{server.port}/metrics").splitlines()
        assert "tq_depth 1.0" in scrape(f"http://127.0.0.1:{server.port}/metrics").splitlines()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST /metrics HTTP/1.1\r\n\r\n", b"405"),
        (b"nonsense\r\n\r\n", b"400"),
    ],
)
def test_requests_other_than_a_get_are_answered_with_their_status(
    request_bytes: bytes, status: bytes
) -> None:
    with MetricsServer("127.0.0.1", 0, small) as server, connected(server.port) as client:
        client.sendall(request_bytes)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    assert answer.split(b" ", 2)[1] == status, answer


def test_a_request_head_past_the_limit_is_dropped_before_the_deadline(sockets: ExitStack) -> None:
    with MetricsServer("127.0.0.1", 0, small, timeout_s=600) as server:
        client = sockets.enter_context(connected(server.port))
        client.sendall(b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 20_000)
        eventually("the oversized request dropped", lambda: closed_by_server(client))

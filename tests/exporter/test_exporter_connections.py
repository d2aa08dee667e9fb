"""`tqadmin exporter` as a process facing hostile or broken clients: idle connections cost it no thread, and
it serves on IPv6 when `--listen` names an IPv6 address."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

DEADLINE_S = 60.0


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str

    def threads(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE).group(1))  # type: ignore[union-attr]

    def scrape(self) -> str:
        with urllib.request.urlopen(self.url, timeout=DEADLINE_S) as response:
            return str(response.read().decode())


@pytest.fixture
def serve(isolated_env: Path) -> Iterator[Callable[[str], Served]]:
    """Start the exporter on the embedded broker at ``--listen`` (port 0: the one it prints); stopped at the
    end if a test has not."""
    started: list[subprocess.Popen[str]] = []

    def start(listen: str) -> Served:
        command = [sys.executable, "-m", "tqadmin.cli", "--broker", f"sqlite:///{isolated_env / 'tq.db'}"]
        process = subprocess.Popen(
            [*command, "exporter", "--listen", listen, "--interval", "1"],
            env=os.environ.copy(),
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stderr is not None
        for line in process.stderr:
            found = re.search(r"serving (http://\S+/metrics)", line)
            if found:
                return Served(process, found.group(1))
        raise AssertionError(f"the exporter ended without serving (exit {process.wait()})")

    yield start
    for process in started:
        stop(process)


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM ends the exporter with exit 0 and no traceback (once: a test may have stopped it already)."""
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        _, said = process.communicate(timeout=DEADLINE_S)
        assert process.returncode == 0, said
        assert "Traceback" not in said


def test_300_idle_connections_leave_the_exporters_threads_as_they_were(
    serve: Callable[[str], Served],
) -> None:
    served = serve("127.0.0.1:0")
    assert "tqadmin_up" in served.scrape()
    threads = served.threads()
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    with ExitStack() as held:
        for i in range(300):  # half say nothing, half the start of a request line
            idle = held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S))
            if i % 2:
                idle.sendall(b"GET /metr")
        assert "tqadmin_up" in served.scrape(), "a real scrape is answered while they wait"
        assert served.threads() <= threads + 2, "a thread per idle connection"
        stop(served.process)  # with all of them still connected


def test_an_ipv6_listen_address_serves_scrapes(serve: Callable[[str], Served]) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"this machine has no IPv6 loopback (::1): {exc}")
    served = serve("[::1]:0")
    assert served.url.startswith("http://[::1]:")
    assert "tqadmin_up" in served.scrape()

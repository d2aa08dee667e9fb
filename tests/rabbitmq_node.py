"""A RabbitMQ node of a test's own, on loopback ports, that the test may stop and start again.

A real broker restart (``rabbitmqctl stop``, then ``rabbitmq-server`` on the same data directory: durable
queues and persistent messages survive) without touching the node on 5672 that every other test uses. The
node has no plugins, its own name, AMQP port, distribution port and directory; it is started as the machine's
own RabbitMQ is (the packaged ``rabbitmq-server``, which runs as the ``rabbitmq`` user).
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

START_TIMEOUT_S = 90.0


def fixed_port() -> int:
    """A free loopback port below the kernel's ephemeral range: while the node is down, no outgoing
    connection of another test can be given it, so the node can listen on it again when it boots."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        port = random.randint(10000, low - 1)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free loopback port below the ephemeral range")


class RabbitMQNode:
    def __init__(self) -> None:
        self.name = f"tq{uuid.uuid4().hex[:8]}@localhost"
        self.port = fixed_port()
        self.directory = Path(tempfile.mkdtemp(prefix="tq-rabbit-"))
        (self.directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\nloopback_users = none\n"
        )
        (self.directory / "enabled_plugins").write_text("[].\n")
        for sub in ("mnesia", "log"):
            (self.directory / sub).mkdir()
        self._hand_to_the_rabbitmq_user()
        self.env = {
            **os.environ,
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_DIST_PORT": str(fixed_port()),
            "RABBITMQ_CONFIG_FILE": str(self.directory / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.directory / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(self.directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.directory / "log"),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def start(self) -> float:
        """Boot the node; returns the ``time.monotonic()`` at which its AMQP port first accepted."""
        log = (self.directory / "server.out").open("ab")
        self.process = subprocess.Popen(
            ["rabbitmq-server"], env=self.env, stdout=log, stderr=log, cwd=self.directory
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"rabbitmq-server ended: {self.output()}")
            try:
                socket.create_connection(self.address, timeout=1).close()
                return time.monotonic()
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"rabbitmq-server not up within {START_TIMEOUT_S:g} s: {self.output()}")

    def stop(self) -> None:
        """Stop the node as an operator does (``rabbitmqctl stop``): every connection closed, port shut."""
        if self.process is None:
            return
        subprocess.run(
            ["rabbitmqctl", "-n", self.name, "stop"],
            check=False,
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def output(self) -> str:
        return (self.directory / "server.out").read_text(errors="replace")[-2000:]

    def _hand_to_the_rabbitmq_user(self) -> None:
        """The packaged server drops root for the ``rabbitmq`` user, which must own its directory."""
        try:
            user = pwd.getpwnam("rabbitmq")
        except KeyError:
            return
        for path in [self.directory, *self.directory.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)

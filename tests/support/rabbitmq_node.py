"""A RabbitMQ node of a test's own, on loopback ports, that the test may stop and start again.

A real broker restart (``rabbitmqctl stop``, then ``rabbitmq-server`` on the same data directory: durable
queues and persistent messages survive; or the application alone, ``stop_app`` / ``start_app``) without
touching the node on 5672 that every other test uses. The node has no plugins unless asked for its
management API (``management=True``, on a port of its own, statistics every 250 ms), its own name, AMQP
port, distribution port and directory; it is started as the machine's own RabbitMQ is (the packaged
``rabbitmq-server``, which runs as the ``rabbitmq`` user).
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
    def __init__(self, *, management: bool = False) -> None:
        self.name = f"tq{uuid.uuid4().hex[:8]}@localhost"
        self.port = fixed_port()
        self.management_port = fixed_port() if management else None
        self.directory = Path(tempfile.mkdtemp(prefix="tq-rabbit-"))
        config = f"listeners.tcp.1 = 127.0.0.1:{self.port}\nloopback_users = none\n"
        if self.management_port is not None:
            config += f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {self.management_port}\n"
            config += "collect_statistics_interval = 250\n"
        (self.directory / "rabbitmq.conf").write_text(config)
        plugins = "[rabbitmq_management]" if management else "[]"
        (self.directory / "enabled_plugins").write_text(f"{plugins}.\n")
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
        return self._accepting()

    def _accepting(self) -> float:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"rabbitmq-server ended: {self.output()}")
            try:
                socket.create_connection(self.address, timeout=1).close()
                return time.monotonic()
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"rabbitmq-server not up within {START_TIMEOUT_S:g} s: {self.output()}")

    def management_url(self) -> str:
        assert self.management_port is not None, "a node made without management=True"
        return f"http://127.0.0.1:{self.management_port}/api"

    def stop_app(self) -> None:
        """Stop the RabbitMQ application, the Erlang node staying up (``rabbitmqctl stop_app``): every
        connection closed, the port shut, unacked deliveries requeued."""
        self._ctl("stop_app")

    def start_app(self) -> float:
        """Start the application again; returns the ``time.monotonic()`` at which its AMQP port accepted."""
        self._ctl("start_app")
        return self._accepting()

    def _ctl(self, command: str) -> None:
        subprocess.run(
            ["rabbitmqctl", "-n", self.name, command],
            check=True,
            env=self.env,
            capture_output=True,
            timeout=120,
        )

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

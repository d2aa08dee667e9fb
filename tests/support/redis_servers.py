"""Redis servers of a test's own, on free loopback ports in a temporary directory: a three-master cluster,
or one server with an append-only file that a test may restart. Never the shared Redis on 6379.

Each pytest process (each xdist worker) starts its own, so parallel workers never share or stop each
other's servers; everything is stopped and its directory deleted when the fixture ends.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

CLUSTER_SIZE = 3
READY_TIMEOUT_S = 30.0


def free_port() -> int:
    """A loopback port that is free, and whose cluster bus port (+10000) is free too."""
    for _ in range(200):
        port = random.randint(20000, 45000)
        if all(_free(p) for p in (port, port + 10000)):
            return port
    raise RuntimeError("no free loopback port pair found")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class RedisServer:
    """One redis-server process; ``restart`` stops it (SHUTDOWN: the AOF is written out) and starts it
    again on the same port and directory."""

    def __init__(self, directory: Path, port: int | None = None, *options: str) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.options = options
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = (self.directory / f"redis-{self.port}.log").open("ab")
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
        ]
        command += ["--save", "", *self.options]
        self.process = subprocess.Popen(command, stdout=log, stderr=log)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                if client.ping():
                    break
            except (redis.ConnectionError, redis.BusyLoadingError):
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server on {self.port} did not start") from None
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # No retries: redis-py would reconnect to the server it just stopped for seconds before giving up.
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis(port=self.port, retry=Retry(NoBackoff(), 0)).shutdown(nosave=False)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


class PersistentRedis:
    """One server with ``appendonly yes`` (fsync every write), so a restart keeps every acknowledged write."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tq-redis-"))
        self.server = RedisServer(self.directory, None, "--appendonly", "yes", "--appendfsync", "always")

    @property
    def url(self) -> str:
        return self.server.url

    def close(self) -> None:
        self.server.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


_shared: list[RedisCluster] = []


def shared_cluster() -> RedisCluster:
    """One cluster for this test process, started on first use and stopped when the process exits."""
    if not _shared:
        import atexit

        _shared.append(RedisCluster())
        atexit.register(_shared[0].close)
    return _shared[0]


class RedisCluster:
    """Three masters, no replicas, every slot assigned; ``url`` names one of them (a client finds the
    others)."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tq-cluster-"))
        self.servers = []
        try:
            for _ in range(CLUSTER_SIZE):
                port = free_port()
                self.servers.append(
                    RedisServer(
                        self.directory,
                        port,
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        f"nodes-{port}.conf",
                        "--appendonly",
                        "no",
                    )
                )
            nodes = [f"127.0.0.1:{s.port}" for s in self.servers]
            subprocess.run(
                ["redis-cli", "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"],
                check=True,
                capture_output=True,
                timeout=60,
            )
            self._wait_until_ok()
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        return self.servers[0].url

    def _wait_until_ok(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        clients = [redis.Redis(port=s.port) for s in self.servers]
        while not all(c.cluster("INFO").get("cluster_state") == "ok" for c in clients):
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        for client in clients:
            client.close()

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

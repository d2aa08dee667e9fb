"""Test helpers: look at and clean up the queues a transport test created (all named by one prefix)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
import pika
import pytest

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
API = "http://127.0.0.1:15672/api"
AUTH = ("guest", "guest")


def api(path: str) -> Any:
    response = httpx.get(f"{API}/{path}", auth=AUTH, timeout=60)  # a deadline on a loaded broker
    response.raise_for_status()
    return response.json()


def queue_info(name: str) -> Any:
    return api(f"queues/%2F/{quote(name, safe='')}")


def queues_named(prefix: str) -> list[str]:
    return [q["name"] for q in api("queues/%2F?columns=name") if q["name"].startswith(prefix)]


def delete_queues(prefix: str) -> None:
    """Delete every queue whose name starts with ``prefix`` (the test's unique name)."""
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        channel = connection.channel()
        for name in queues_named(prefix):
            channel.queue_delete(name)
    finally:
        connection.close()


def drain(queue: str) -> list[tuple[Any, bytes]]:
    """Take every message of ``queue`` (properties, body)."""
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    taken = []
    try:
        channel = connection.channel()
        while True:
            method, properties, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append((properties, body))
    finally:
        connection.close()


def depth(queue: str, url: str = AMQP_URL) -> int:
    """Ready messages in ``queue``, straight from AMQP (the management figures lag)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return int(connection.channel().queue_declare(queue, passive=True).method.message_count)
    finally:
        connection.close()


@pytest.fixture(name="queue")
def queue_fixture(unique: str) -> Iterator[str]:
    """A unique queue name; every queue starting with it is deleted afterwards."""
    name = f"tqt_{unique}"
    yield name
    delete_queues(name)


@contextmanager
def vhost_of_its_own() -> Iterator[str]:
    """A vhost for one test, guest allowed everything in it, deleted afterwards with all it holds: what the
    test lists stays small and quick however many queues the shared broker's "/" holds (a benchmark's 5,000
    made a listing of "/" outlast a 10 s timeout on a loaded machine)."""
    vhost = f"tqt-{uuid.uuid4().hex[:10]}"
    httpx.put(f"{API}/vhosts/{vhost}", auth=AUTH, timeout=60).raise_for_status()
    permissions = {"configure": ".*", "write": ".*", "read": ".*"}
    httpx.put(f"{API}/permissions/{vhost}/guest", json=permissions, auth=AUTH, timeout=60).raise_for_status()
    try:
        yield vhost
    finally:
        httpx.delete(f"{API}/vhosts/{vhost}", auth=AUTH, timeout=60)


def amqp_url(vhost: str) -> str:
    """The AMQP URL of ``vhost`` on the local broker, as guest."""
    return f"amqp://guest:guest@127.0.0.1:5672/{quote(vhost, safe='')}"

"""Test helpers: look at and clean up the queues a transport test created (all named by one prefix)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pika
import pytest

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
API = "http://127.0.0.1:15672/api"
AUTH = ("guest", "guest")


def api(path: str) -> Any:
    response = httpx.get(f"{API}/{path}", auth=AUTH, timeout=10)
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


def depth(queue: str) -> int:
    """Ready messages in ``queue``, straight from AMQP (the management figures lag)."""
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
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

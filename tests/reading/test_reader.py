"""The read service on real brokers (the embedded SQLite file, Redis, RabbitMQ): one reading of a profile
holds its queues with their drain estimates, tqadmin's workers judged, cron and the pauses; a part that
cannot be read is unread with why while the others are read; a fresh machine reads empty with its note;
history is recorded once per reading; the judges see every reading in order."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.conftest import AMQP_URL, REDIS_URL, AmqpQueues
from tqadmin.config import Overrides, Settings, resolve
from tqadmin.errors import ConnectError, NoDatabase
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.reading.reader import Connections, ProfileReader
from tqadmin.reading.reading import EVERY_PART, Part, ProfileReading
from tqadmin.reading.recording import SPANS
from tqadmin.store import open_store
from tqadmin.store.factory import open_pauses
from tqadmin.store.pauses.base import Target
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.snapshot import WorkerSnapshot

JOB = b'{"task_type": "noop", "id": "j%d"}'


@dataclass
class Profile:
    settings: Settings
    queue: str


def publish(url: str, queue: str, count: int) -> None:
    transport = plugin_for_url(url).transport(BrokerConfig(url=url))
    try:
        transport.declare(queue)
        assert transport.publish([(queue, Message(JOB % i)) for i in range(count)]).all_confirmed
    finally:
        transport.close()


def settings_of(broker: str, store: str, *, read_only: bool = False) -> Settings:
    return resolve(Overrides(broker_url=broker, store_url=store, read_only=read_only, timeout_s=2.0))


@pytest.fixture(params=["sqlite", "redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def profile(
    request: pytest.FixtureRequest, unique: str, tmp_path: Path, isolated_env: Path
) -> Iterator[Profile]:
    """A profile on each broker, three jobs in one queue, tqadmin's state store beside it."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'tq.db'}"
        publish(url, "orders", 3)
        yield Profile(settings_of(url, url), "orders")
    elif request.param == "redis":
        broker, store = f"{REDIS_URL}?prefix=rdb{unique}", f"{REDIS_URL}?prefix=rds{unique}"
        publish(broker, f"orders-{unique}", 3)
        yield Profile(settings_of(broker, store), f"orders-{unique}")
        client = redis.Redis.from_url(REDIS_URL)
        for prefix in (f"rdb{unique}", f"rds{unique}"):
            keys = list(client.scan_iter(f"*{prefix}*"))
            if keys:
                client.delete(*keys)
        client.close()
    else:
        queues: AmqpQueues = request.getfixturevalue("amqp_queues")
        queue = queues.declare("orders")
        for i in range(3):
            queues.publish(queue, JOB % i)
        url = f"sqlite:///{tmp_path / 'store.db'}"
        yield Profile(settings_of(AMQP_URL, url), queue)


def beat(store_url: str, worker: str) -> None:
    store: Any = open_store(store_url)
    try:
        telemetry = Telemetry()
        telemetry.finished("orders", "charge", 0.1, ok=True)
        now = time.time()
        store.beat(
            WorkerSnapshot(worker, "box", 7, ("orders",), now - 60, now, (), telemetry.read()), ttl_s=30
        )
    finally:
        store.close()


def wait_for_depth(reader: ProfileReader, queue: str, depth: int) -> ProfileReading:
    """RabbitMQ's management API counts a published message a few seconds later: read until it does."""
    deadline = time.monotonic() + 30
    while True:
        reading = reader.read(EVERY_PART)
        found = {q.name: q.messages for q in (reading.listing.queues if reading.listing else ())}
        if found.get(queue) == depth or time.monotonic() > deadline:
            return reading
        time.sleep(0.5)


def test_one_reading_holds_the_queues_the_workers_judged_the_cron_and_the_pauses(profile: Profile) -> None:
    settings = profile.settings
    beat(settings.store_url, "w-1")
    pauses = open_pauses(settings.store_url)
    pauses.pause(Target(queue=profile.queue), reason="deploy", who="ops", for_s=600)
    pauses.close()
    reader = ProfileReader(settings)
    try:
        reading = wait_for_depth(reader, profile.queue, 3)
    finally:
        reader.close()

    assert reading.unread == {}, reading.unread
    assert reading.complete and reading.note is None
    assert reading.listing is not None and reading.capabilities is not None
    (orders,) = [q for q in reading.listing.queues if q.name == profile.queue]
    assert orders.messages == 3
    assert reading.workers is not None and [r.snapshot.worker_id for r in reading.workers] == ["w-1"]
    assert [v.wedged is True for v in reading.verdicts] == [False]  # judged: one verdict per worker
    assert reading.tasks["charge"].done == 1
    assert reading.telemetry is not None and reading.telemetry.workers == 1
    # Other frameworks' registries were read (what they hold is the shared server's: other tests' Celery).
    assert reading.frameworks is not None and reading.frameworks.unreadable == ()
    assert reading.cron is not None and reading.cron.leader is None
    assert reading.pauses is not None
    assert [p.target.queue for p in reading.pauses.standing] == [profile.queue]


def test_a_part_that_cannot_be_read_is_unread_with_why_and_the_others_are_still_read(
    tmp_path: Path, isolated_env: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'tq.db'}"
    publish(url, "orders", 2)
    reader = ProfileReader(settings_of(url, "redis://:hunter2@127.0.0.1:1/0"))
    try:
        reading = reader.read()
    finally:
        reader.close()

    assert reading.listing is not None
    assert {q.name: q.messages for q in reading.listing.queues}["orders"] == 2
    assert set(reading.unread) == {Part.WORKERS, Part.TELEMETRY, Part.CRON, Part.PAUSES}
    assert (reading.workers, reading.cron, reading.pauses) == (None, None, None)
    for unread in reading.unread.values():
        assert "hunter2" not in unread.why and "127.0.0.1:1" in unread.why
        assert isinstance(unread.error, ConnectError)
    with pytest.raises(ConnectError):
        reading.raise_for(Part.CRON)


def test_a_fresh_machine_reads_empty_with_its_note_and_creates_nothing(isolated_env: Path) -> None:
    reader = ProfileReader(resolve(Overrides()), record=True)
    try:
        reading = reader.read()
    finally:
        reader.close()

    assert reading.unread == {}
    assert reading.note is not None and "nothing here yet" in reading.note
    assert reading.listing is not None and reading.listing.queues == ()
    assert (reading.workers, reading.frameworks.workers if reading.frameworks else None) == ((), ())
    assert reading.cron is None  # no cron has written anything
    assert list(isolated_env.rglob("*.db")) == []


def test_a_file_the_user_named_that_does_not_exist_is_unread_not_a_note(
    tmp_path: Path, isolated_env: Path
) -> None:
    typo = f"sqlite:///{tmp_path / 'typo.db'}"
    reader = ProfileReader(settings_of(typo, typo))
    try:
        reading = reader.read({Part.QUEUES, Part.WORKERS})
    finally:
        reader.close()

    assert reading.note is None
    assert set(reading.unread) == {Part.QUEUES, Part.WORKERS}
    assert isinstance(reading.failure(Part.QUEUES), NoDatabase)
    assert not (tmp_path / "typo.db").exists()


class DownBroker:
    """An admin connection that never comes: counted, to show a down broker is waited for once."""

    def __init__(self) -> None:
        self.attempts = 0

    def __call__(self) -> BrokerAdmin:
        self.attempts += 1
        raise ConnectError("cannot connect to the broker at amqp://guest:***@127.0.0.1:1/")


def test_a_broker_that_is_down_is_waited_for_once_and_its_registries_are_unread_for_the_same_reason(
    tmp_path: Path, isolated_env: Path
) -> None:
    down = DownBroker()
    url = f"sqlite:///{tmp_path / 'tq.db'}"
    open_store(url).close()
    reader = ProfileReader(settings_of(url, url), connect=Connections(admin=down))
    try:
        reading = reader.read()
    finally:
        reader.close()

    assert down.attempts == 1
    assert set(reading.unread) == {Part.QUEUES, Part.FRAMEWORKS}
    assert reading.unread[Part.FRAMEWORKS] == reading.unread[Part.QUEUES]
    assert reading.workers == ()  # the store was read all the same


def test_history_is_recorded_once_per_reading_unless_the_profile_is_read_only(
    tmp_path: Path, isolated_env: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'tq.db'}"
    publish(url, "orders", 4)
    beat(url, "w-1")
    read_only = ProfileReader(settings_of(url, url, read_only=True), record=True)
    assert read_only.recorder is None
    read_only.close()

    reader = ProfileReader(settings_of(url, url), record=True)
    try:
        reading = reader.read()
        span = reader.read_span(SPANS[1], ["orders"], 12)
    finally:
        reader.close()

    assert reading.tasks["charge"].done == 1
    assert span is not None
    assert max(d for d in span.depths["orders"] if d is not None) == 4
    assert reader.recorder is not None and reader.recorder.refused == 0


class SeenDepths:
    """A judge over successive readings: it keeps every depth of ``orders`` it saw, in order."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def judge(self, reading: ProfileReading) -> ProfileReading:
        queues = reading.listing.queues if reading.listing else ()
        self.seen += [q.messages for q in queues if q.name == "orders"]
        return ProfileReading(**{**_fields(reading), "judged": {**reading.judged, "seen": list(self.seen)}})


def _fields(reading: ProfileReading) -> dict[str, Any]:
    return {name: getattr(reading, name) for name in reading.__dataclass_fields__}


def test_the_judges_see_every_reading_in_order_after_the_drain_window(
    tmp_path: Path, isolated_env: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'tq.db'}"
    publish(url, "orders", 1)
    judge = SeenDepths()
    reader = ProfileReader(settings_of(url, url), judges=[judge])
    try:
        first = reader.read({Part.QUEUES})
        publish(url, "orders", 2)
        second = reader.read({Part.QUEUES})
    finally:
        reader.close()

    assert first.judged["seen"] == [1]
    assert second.judged["seen"] == [1, 3]
    assert second.listing is not None and second.listing.queues[0].drain_s is None  # rising: no estimate

"""The pause set's contract, on Redis and on SQLite alike (the ``stores`` fixture of this folder)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from storekit import StoreFactory

from tqadmin.errors import UsageError
from tqadmin.files.access import Access
from tqadmin.store.factory import open_pauses
from tqadmin.store.pauses.base import Pause, PauseStore, Target, parse_duration
from tqadmin.store.pauses.redis import pause_keys


@pytest.fixture
def pauses(stores: StoreFactory) -> Iterator[PauseStore]:
    stores.make()  # the state store first: an SQLite file exists before a reader opens it
    opened = open_pauses(stores.url)
    yield opened
    opened.close()


def _targets(found: list[Pause]) -> list[Target]:
    return [p.target for p in found]


def test_a_pause_stands_until_resumed(pauses: PauseStore) -> None:
    whole = Target(queue="orders")
    one_type = Target(queue="orders", task_type="resize_image")
    schedule = Target(schedule="nightly")
    before = pauses.now()
    written = pauses.pause(whole, reason="db down", who="alice", for_s=None)
    assert written.until is None and written.who == "alice" and written.reason == "db down"
    assert before - 1 <= written.since <= before + 5
    pauses.pause(one_type, reason="vendor 503", who="bob", for_s=600)
    pauses.pause(schedule, reason="", who="carol", for_s=30)
    now, standing = pauses.standing()
    assert set(_targets(standing)) == {whole, one_type, schedule}
    assert [p.since for p in standing] == sorted(p.since for p in standing)  # oldest first
    by_target = {p.target: p for p in standing}
    typed = by_target[one_type]
    assert typed.until is not None and 590 <= typed.until - typed.since <= 610
    assert typed.left_s(now) is not None and typed.covers("orders", "resize_image")
    assert not typed.covers("orders", "send_email") and by_target[whole].covers("orders", "send_email")
    assert not by_target[whole].covers("other", "resize_image")

    resumed = pauses.resume(one_type)
    assert resumed is not None and resumed.reason == "vendor 503" and not resumed.expired(pauses.now())
    assert pauses.resume(one_type) is None
    assert set(_targets(pauses.standing()[1])) == {whole, schedule}


def test_pausing_again_replaces_the_pause(pauses: PauseStore) -> None:
    target = Target(queue="q", task_type="t")
    pauses.pause(target, reason="first", who="a", for_s=60)
    pauses.pause(target, reason="second", who="b", for_s=None)
    [only] = pauses.standing()[1]
    assert (only.reason, only.who, only.until) == ("second", "b", None)


def test_an_expired_pause_reads_as_gone_and_is_reaped_once(pauses: PauseStore, stores: StoreFactory) -> None:
    short = Target(queue="q", task_type="t")
    pauses.pause(short, reason="brief", who="a", for_s=0.2)
    pauses.pause(Target(queue="q"), reason="long", who="a", for_s=3600)
    deadline = time.monotonic() + 10
    while short in _targets(pauses.standing()[1]):
        assert time.monotonic() < deadline, "the pause never expired"
        time.sleep(0.05)
    other = open_pauses(stores.url)  # a second reader: the expiry goes to one of them only
    try:
        reaped = pauses.reap() + other.reap()
    finally:
        other.close()
    assert [(p.target, p.reason) for p in reaped] == [(short, "brief")]
    assert pauses.reap() == []
    assert _targets(pauses.standing()[1]) == [Target(queue="q")]


def test_any_text_names_a_target(pauses: PauseStore) -> None:
    odd = Target(queue='a "queue"\n{with}:all', task_type="ünïcode ✓")
    pauses.pause(odd, reason='quotes " and \\ backslashes', who="x", for_s=None)
    [found] = pauses.standing()[1]
    assert found.target == odd and found.reason == 'quotes " and \\ backslashes'


def test_a_reader_sees_the_pauses(pauses: PauseStore, stores: StoreFactory) -> None:
    pauses.pause(Target(queue="q"), reason="r", who="w", for_s=None)
    reader = open_pauses(stores.url, access=Access.READ)
    try:
        assert _targets(reader.standing()[1]) == [Target(queue="q")]
    finally:
        reader.close()


def test_the_json_record_names_every_field(pauses: PauseStore) -> None:
    written = pauses.pause(Target(queue="q", task_type="t"), reason="r", who="w", for_s=60)
    document = written.to_json()
    assert set(document) == {"target", "queue", "task_type", "schedule", "reason", "who", "since", "until"}
    assert document["since"].endswith("Z") and document["until"].endswith("Z")


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("10m", 600), ("2h", 7200), ("1d", 86400)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_forever_is_said_and_nonsense_refused() -> None:
    assert parse_duration("forever") is None
    for bad in ("", "10", "-5m", "0s", "soon", "1w"):
        with pytest.raises(UsageError, match="30s, 10m, 2h"):
            parse_duration(bad)


def test_a_record_no_tqadmin_wrote_is_skipped(pauses: PauseStore, stores: StoreFactory) -> None:
    pauses.pause(Target(queue="q"), reason="r", who="w", for_s=None)
    prefix = stores.url.rpartition("prefix=")[2]
    if stores.kind == "sqlite":
        path = stores.url.partition(":///")[2].partition("?")[0]
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("INSERT INTO tq_pauses VALUES (?, 'not json', '', '', 0, NULL)", (prefix,))
            db.execute("INSERT INTO tq_pauses VALUES (?, '[1]', '', '', 0, NULL)", (prefix,))
    else:
        server = stores.url.partition("?")[0]
        cluster = stores.kind == "redis-cluster"
        client: Any = redis.RedisCluster.from_url(server) if cluster else redis.Redis.from_url(server)
        client.hset(pause_keys(prefix)[0], mapping={"garbage": "{", '["x", null, null]': "[]"})
        client.close()
    assert [p.target for p in pauses.standing()[1]] == [Target(queue="q")]


def test_a_pause_unless_paused_writes_nothing_over_a_standing_pause(pauses: PauseStore) -> None:
    charge = Target("orders", "charge")
    first = pauses.pause_unless_paused(charge, reason="breaker", who="w1", for_s=60)
    assert first is not None and first.who == "w1"
    assert pauses.pause_unless_paused(charge, reason="breaker", who="w2", for_s=60) is None
    pauses.resume(charge)
    pauses.pause(Target("orders"), reason="migration", who="alice", for_s=None)  # the whole queue
    assert pauses.pause_unless_paused(charge, reason="breaker", who="w2", for_s=60) is None
    assert [(p.target, p.who) for p in pauses.standing()[1]] == [(Target("orders"), "alice")]
    pauses.resume(Target("orders"))
    pauses.pause(charge, reason="old", who="w0", for_s=0.05)  # one that ran out does not stand in the way
    time.sleep(0.2)
    again = pauses.pause_unless_paused(charge, reason="breaker", who="w3", for_s=60)
    assert again is not None and again.who == "w3"

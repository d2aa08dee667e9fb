"""A fuzz of field types and values over every decoder of other frameworks' data: the worker registries of RQ,
Sidekiq and Dramatiq, Celery's events, the four frameworks' messages and the foreign queues' oldest-job times.

Each field of a real entry is replaced, one at a time and then several at once (seeded), by every value in
:data:`HOSTILE`: ``None``, text, lists, objects, huge integers, numbers of 401 digits, NaN, the infinities,
negatives, bytes that are not UTF-8, empties. Whatever they hold, a decoder either gives a value that every
face can show (every number finite and in range, every time a time ``datetime`` can print, the whole as
strict JSON) or, for a registry entry, says it is malformed naming the field; nothing else is raised.
(hypothesis is not among the project's dependencies: the generator is seeded and parametrized instead.)
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tqadmin_redis.foreign_figures import sidekiq_enqueued_at

from tests.support.framework_samples import celery_message, dramatiq_message
from tests.support.hostile_values import DIGITS_401, HOSTILE, as_json_text, strict_json
from tqadmin.frameworks import dramatiq_workers, rq_workers, sidekiq_workers, summarise
from tqadmin.frameworks.celery_events import CeleryEvents
from tqadmin.frameworks.decoding import MAX_COUNT, epoch_seconds
from tqadmin.plugin.models import Message
from tqadmin.plugin.workers import MAX_NAMED_SKIPS, MAX_SKIP_CHARS, ForeignWorker, MalformedEntry, Skipped
from tqadmin.show.finite import finite, finite_json

NOW = 1_780_000_000.0
SEEDS = range(6)
COMBINATIONS = 150  # entries with several fields hostile at once, per seed


def assert_showable(value: Any) -> None:
    """Every number finite and within what Redis, Prometheus and JSON readers hold; as strict JSON."""
    for number in numbers_in(value):
        assert finite(number) is not None and abs(number) <= MAX_COUNT, number
    strict_json(json.dumps(dataclasses.asdict(value), allow_nan=False, default=repr))


def numbers_in(value: Any) -> Iterator[float]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from numbers_in(getattr(value, field.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from numbers_in(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield value


def assert_times_printable(worker: ForeignWorker) -> None:
    """Every time a worker carries is one ``datetime`` can print (what ``tqadmin workers`` does)."""
    for moment in [worker.started_at, *(job.started_at for job in worker.current_jobs)]:
        if moment is not None:
            datetime.datetime.fromtimestamp(moment, datetime.UTC).isoformat()
    assert worker.heartbeat_age_s is None or worker.heartbeat_age_s >= 0


# -- entries as the frameworks write them, and the paths of their fields ------------------------------------

Path = tuple[str, ...]


def rq_entry() -> dict[str, Any]:
    now = "2026-05-28T20:20:00.000000Z"
    return {
        "fields": {
            "birth": now.encode(),
            "last_heartbeat": now.encode(),
            "queues": b"a,b",
            "pid": b"41",
            "hostname": b"h1",
            "state": b"busy",
            "current_job": b"j0",
        },
        "jobs": {
            "j1": {"description": b"billing.charge('o-1', 10)", "origin": b"a", "started_at": now.encode()}
        },
    }


def decode_rq(entry: dict[str, Any]) -> ForeignWorker:
    rq_workers.current_job_ids(entry["fields"], list(entry["fields"].values()))
    return rq_workers.worker("rq:worker:w1", entry["fields"], 400.0, entry["jobs"], NOW)


RQ_PATHS: list[Path] = [("fields", f) for f in rq_entry()["fields"]] + [
    ("jobs", "j1", f) for f in ("description", "origin", "started_at")
]


def sidekiq_entry() -> dict[str, Any]:
    return {
        "info": {
            "hostname": "web-1",
            "started_at": NOW - 60,
            "pid": 4242,
            "tag": "app",
            "concurrency": 5,
            "queues": ["default", "mailers"],
            "labels": [],
            "version": "7.3.2",
        },
        "fields": {"busy": b"1", "beat": str(NOW - 2).encode(), "quiet": b"false", "rss": b"123456"},
        "work": {"queue": "default", "run_at": int(NOW) - 3},
        "payload": {
            "class": "HardWorker",
            "wrapped": "ChargeJob",
            "args": [1],
            "jid": "j-1",
            "queue": "default",
        },
    }


def decode_sidekiq(entry: dict[str, Any]) -> ForeignWorker:
    work = {**entry["work"], "payload": as_json_text(entry["payload"])}
    fields = {**entry["fields"], "info": as_json_text(entry["info"]).encode()}
    return sidekiq_workers.process("web-1:12:ab", fields, {b"tid-1": as_json_text(work).encode()}, NOW)


SIDEKIQ_PATHS: list[Path] = [(part, f) for part, fields in sidekiq_entry().items() for f in fields]


def dramatiq_entry() -> dict[str, Any]:
    return {
        "beat": {"ms": (NOW - 1) * 1000},
        "message": {
            "queue_name": "orders",
            "actor_name": "charge",
            "args": ["o-1"],
            "kwargs": {},
            "options": {},
            "message_id": "m-1",
            "message_timestamp": NOW * 1000,
        },
    }


def decode_dramatiq(entry: dict[str, Any]) -> ForeignWorker:
    body = as_json_text(entry["message"]).encode()
    return dramatiq_workers.worker("dramatiq", "w-1", entry["beat"]["ms"], {"orders": {"h-1": body}}, NOW)


DRAMATIQ_PATHS: list[Path] = [("beat", "ms")] + [("message", f) for f in dramatiq_entry()["message"]]


def replaced(entry: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(entry)
    inner = changed
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return changed


REGISTRIES: dict[
    str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], ForeignWorker], list[Path]]
] = {
    "rq": (rq_entry, decode_rq, RQ_PATHS),
    "sidekiq": (sidekiq_entry, decode_sidekiq, SIDEKIQ_PATHS),
    "dramatiq": (dramatiq_entry, decode_dramatiq, DRAMATIQ_PATHS),
}


def decoded_or_named(decode: Callable[[Any], ForeignWorker], entry: Any) -> str | None:
    """Decode ``entry``: a showable worker (``None``), or the malformed field's message. Anything else
    raised fails the test."""
    try:
        worker = decode(entry)
    except MalformedEntry as exc:
        return str(exc)
    assert_showable(worker)
    assert_times_printable(worker)
    return None


@pytest.mark.parametrize("framework", REGISTRIES)
def test_each_registry_entry_as_written_is_read_whole(framework: str) -> None:
    make, decode, _paths = REGISTRIES[framework]
    assert decoded_or_named(decode, make()) is None
    worker = decode(make())
    assert worker.alive and worker.current_jobs


@pytest.mark.parametrize("framework", REGISTRIES)
def test_one_hostile_field_of_a_registry_entry_is_read_or_named_never_raised(framework: str) -> None:
    make, decode, paths = REGISTRIES[framework]
    named: set[str] = set()
    for path in paths:
        for value in HOSTILE:
            why = decoded_or_named(decode, replaced(make(), path, value))
            if why is not None:
                assert path[-1] in why or (path == ("beat", "ms") and "heartbeat" in why), (path, value, why)
                named.add(why)
    assert named  # the fuzz did reach the checks


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("framework", REGISTRIES)
def test_several_hostile_fields_at_once_are_read_or_named_never_raised(framework: str, seed: int) -> None:
    make, decode, paths = REGISTRIES[framework]
    rng = random.Random(f"{framework}-{seed}")
    for _ in range(COMBINATIONS):
        entry = make()
        for path in rng.sample(paths, rng.randint(2, min(5, len(paths)))):
            entry = replaced(entry, path, rng.choice(HOSTILE))
        decoded_or_named(decode, entry)


def test_a_whole_registry_value_of_any_type_is_read_or_named_never_raised() -> None:
    """The hash, ``info``, a ``:work`` entry, its payload and a held body as a whole of any type."""
    for value in HOSTILE:
        for fields in ({"info": value}, {"info": as_json_text(value)}, {"beat": value}):
            decoded_or_named(lambda f: sidekiq_workers.process("p", f, {}, NOW), fields)
        for entry in (value, as_json_text(value), as_json_text({"payload": value})):
            decoded_or_named(lambda e: sidekiq_workers.process("p", {"beat": b"1"}, {b"t": e}, NOW), entry)
        decoded_or_named(
            lambda b: dramatiq_workers.worker("ns", "w", NOW * 1000, {"q": {"h": b}}, NOW), value
        )
        decoded_or_named(lambda b: dramatiq_workers.worker("ns", "w", b, {}, NOW), value)
        job = dict.fromkeys(("description", "origin", "started_at"), value)
        decoded_or_named(
            lambda j: rq_workers.worker("rq:worker:w", {"queues": b"a"}, None, {"j": j}, NOW), job
        )
        decoded_or_named(lambda f: rq_workers.worker("rq:worker:w", f, None, {}, NOW), {"death": value})
        assert isinstance(rq_workers.current_job_ids({"current_job": value}, [value]), tuple)


# -- Celery's events -----------------------------------------------------------------------------------------

CELERY_EVENTS: list[dict[str, Any]] = [
    {"type": "worker-online", "hostname": "celery@a", "timestamp": NOW - 5, "freq": 2.0, "pid": 7},
    {"type": "worker-heartbeat", "hostname": "celery@a", "timestamp": NOW - 1, "freq": 2.0, "active": 1},
    {
        "type": "task-sent",
        "uuid": "u1",
        "hostname": "p@b",
        "timestamp": NOW - 4,
        "name": "t",
        "routing_key": "q",
    },
    {"type": "task-received", "uuid": "u1", "hostname": "celery@a", "timestamp": NOW - 3, "name": "t"},
    {"type": "task-started", "uuid": "u1", "hostname": "celery@a", "timestamp": NOW - 2},
    {"type": "task-succeeded", "uuid": "u1", "hostname": "celery@a", "timestamp": NOW - 1, "runtime": 1.0},
    {"type": "task-started", "uuid": "u2", "hostname": "celery@a", "timestamp": NOW - 2, "name": "t"},
    {"type": "task-failed", "uuid": "u2", "hostname": "celery@a", "timestamp": NOW - 1},
    {"type": "task-retried", "uuid": "u3", "hostname": "celery@a", "timestamp": NOW - 1, "name": "t"},
]
EVENT_FIELDS = sorted({key for event in CELERY_EVENTS for key in event} | {"queue", "runtime", "active"})


def assert_events_showable(events: CeleryEvents) -> None:
    for worker in events.workers(NOW):
        assert_showable(worker)
        assert_times_printable(worker)
    for stats in events.task_stats().values():
        document = stats.to_json() | {"p": [stats.wait.percentiles(), stats.run.percentiles()]}
        strict_json(json.dumps(document, allow_nan=False))


def test_every_hostile_value_of_every_celery_event_field_is_applied_or_skipped_never_raised() -> None:
    for index, event in enumerate(CELERY_EVENTS):
        for field in EVENT_FIELDS:
            for value in HOSTILE:
                events = CeleryEvents()
                for earlier in CELERY_EVENTS[:index]:
                    events.apply(earlier)
                events.apply(dict(event, **{field: value}))
                assert events.events + events.skipped == index + 1
                assert_events_showable(events)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_stream_of_celery_events_with_hostile_fields_stays_showable(seed: int) -> None:
    rng = random.Random(seed)
    events = CeleryEvents()
    for _ in range(COMBINATIONS * 4):
        event = dict(rng.choice(CELERY_EVENTS))
        for field in rng.sample(EVENT_FIELDS, rng.randint(0, 3)):
            event[field] = rng.choice(HOSTILE)
        events.apply(event)
    assert events.skipped and events.events
    assert_events_showable(events)


def test_a_hostile_celery_field_changes_nothing() -> None:
    """Skipped before it changes anything: a worker is not moved, nor a task started."""
    events = CeleryEvents()
    events.apply(CELERY_EVENTS[0])
    before = events.workers(NOW)
    events.apply(dict(CELERY_EVENTS[1], freq=float("inf")))
    events.apply(dict(CELERY_EVENTS[1], pid=DIGITS_401))
    events.apply(dict(CELERY_EVENTS[4], timestamp=1e300))
    events.apply(dict(CELERY_EVENTS[5], runtime=-1))
    assert (events.workers(NOW), events.task_stats(), events.skipped) == (before, {}, 4)


# -- the frameworks' messages --------------------------------------------------------------------------------


def message_seeds() -> dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], Message]]]:
    """Each format as a dict of fields and how it becomes a message."""
    celery = celery_message()
    dramatiq = json.loads(dramatiq_message(retries=1, traceback="T\nE: x").body)
    sidekiq = {"class": "C", "wrapped": "W", "jid": "j", "args": [1, {"arguments": [2]}], "queue": "default",
               "retry_count": 2, "enqueued_at": NOW, "created_at": NOW, "error_class": "E",
               "error_message": "m"}  # fmt: skip
    rq = {"origin": "q", "created_at": "2026-01-01T00:00:00Z", "status": "failed", "enqueued_at": "x",
          "description": "m.f(1)", "number_of_retries": "1", "exc_info": "T\nE: x"}  # fmt: skip
    protocol1 = {"task": "t", "id": "i", "args": [1], "kwargs": {}, "retries": 1}
    return {
        "celery headers": (dict(celery.headers), lambda h: Message(body=celery.body, headers=h)),
        "celery protocol 1": (protocol1, lambda b: Message(body=as_json_text(b).encode())),
        "dramatiq": (dramatiq, lambda b: Message(body=as_json_text(b).encode())),
        "sidekiq": (sidekiq, lambda b: Message(body=as_json_text(b).encode())),
        "rq": (rq, lambda h: Message(body=b"\x80pickled", headers=h, id="job-1")),
    }


def assert_summary_showable(message: Message) -> None:
    summary = summarise(message)
    strict_json(json.dumps(summary.to_json(), allow_nan=False))
    assert summary.retries is None or 0 <= summary.retries <= MAX_COUNT
    assert summary.sent_at is None or finite(summary.sent_at) is not None


@pytest.mark.parametrize("framework", list(message_seeds()))
def test_one_hostile_field_of_a_message_is_read_or_left_unknown_never_raised(framework: str) -> None:
    fields, build = message_seeds()[framework]
    assert summarise(build(fields)).recognised
    for field in fields:
        for value in HOSTILE:
            assert_summary_showable(build(dict(fields, **{field: value})))


@pytest.mark.parametrize("seed", SEEDS)
def test_several_hostile_fields_of_a_message_are_read_or_left_unknown_never_raised(seed: int) -> None:
    rng = random.Random(seed)
    seeds = list(message_seeds().values())
    for _ in range(COMBINATIONS * 2):
        fields, build = rng.choice(seeds)
        changed = dict(fields)
        for field in rng.sample(list(fields), rng.randint(2, min(4, len(fields)))):
            changed[field] = rng.choice(HOSTILE)
        assert_summary_showable(build(changed))


# -- the foreign queues' oldest jobs -------------------------------------------------------------------------


def test_a_sidekiq_jobs_enqueued_at_of_any_value_is_a_time_or_none() -> None:
    assert sidekiq_enqueued_at(as_json_text({"enqueued_at": NOW}).encode()) == NOW
    assert sidekiq_enqueued_at(as_json_text({"enqueued_at": int(NOW * 1000)}).encode()) == NOW  # Sidekiq 8
    for value in HOSTILE:
        for raw in (as_json_text({"enqueued_at": value}).encode(), as_json_text(value).encode()):
            at = sidekiq_enqueued_at(raw)
            assert at is None or 0 <= at <= 253_402_300_799.0, (value, at)
    assert sidekiq_enqueued_at(b"\xff\xfe") is None
    assert sidekiq_enqueued_at(b'{"enqueued_at": 1' + b"0" * 400 + b"}") is None


def test_an_rq_jobs_enqueued_at_of_any_value_is_a_time_or_none() -> None:
    assert epoch_seconds(b"2026-05-28T20:26:40.000000Z") == NOW
    for value in HOSTILE:
        at = epoch_seconds(value)
        assert at is None or 0 <= at <= 253_402_300_799.0, (value, at)


# -- the shared helpers --------------------------------------------------------------------------------------


def test_a_finite_number_is_kept_and_anything_else_is_none() -> None:
    assert [finite(v) for v in (0, -1, 1.5, 2**64, 1e308)] == [0, -1, 1.5, 2**64, 1e308]
    assert [finite(v) for v in (None, True, "1", float("nan"), float("inf"), -math.inf, 10**400)] == [
        None
    ] * 7


def test_a_document_with_numbers_that_are_not_finite_prints_as_strict_json() -> None:
    document = {"a": [float("nan"), (1, float("-inf"))], "b": {"c": 10**400, "d": True, "e": "NaN"}, "f": 2.5}
    assert strict_json(json.dumps(finite_json(document), allow_nan=False)) == {
        "a": [None, [1, None]],
        "b": {"c": None, "d": True, "e": "NaN"},
        "f": 2.5,
    }


def test_skipped_entries_are_named_up_to_a_cap_then_counted_escaped_and_clipped() -> None:
    skipped = Skipped()
    for n in range(MAX_NAMED_SKIPS + 5):
        entry = f"p{n}\x1b[2J"
        assert (
            skipped.decoded("sidekiq process", entry, sidekiq_workers.process, "p", {"busy": "x"}, {}, NOW)
            is None
        )
    skipped.add("rq worker", "w1", "pid is not a process id")
    lines = skipped.lines()
    assert lines[0] == "sidekiq process p0\\x1b[2J: busy is not a count" and len(lines) == MAX_NAMED_SKIPS + 2
    assert lines[MAX_NAMED_SKIPS:] == (
        "sidekiq process: 5 more entries skipped",
        "rq worker: 1 more entries skipped",
    )
    clipped = Skipped()
    clipped.add("rq worker", "w" * 1000, "pid is not a process id")
    (line,) = clipped.lines()
    assert line.startswith("rq worker www") and len(line) == MAX_SKIP_CHARS


def test_an_entry_whose_decoder_fails_in_a_way_no_check_foresaw_is_named_with_the_error() -> None:
    skipped = Skipped()
    assert skipped.decoded("rq worker", "w1", lambda: 1 / 0) is None
    assert skipped.lines() == ("rq worker w1: ZeroDivisionError: division by zero",)

"""tqadmin.frameworks as a specification: which framework a message is, what is read from it, and that no
input, however hostile, makes it raise. Seeds are made by the libraries themselves (offline); the messages
they write to the real brokers are covered in tests/frameworks."""

from __future__ import annotations

import base64
import json
import random
import zlib
from typing import Any

import pytest

from tests.support.framework_samples import celery_message, dramatiq_message
from tqadmin.admin.dead_letters import group_dead_letters, group_key
from tqadmin.admin.filters import parse_filter
from tqadmin.frameworks import summarise
from tqadmin.frameworks.decoding import MAX_PARSED_BYTES
from tqadmin.frameworks.preview import MAX_PREVIEW_CHARS
from tqadmin.plugin.models import Message


def job(**fields: Any) -> Message:
    return Message(body=json.dumps(fields).encode(), id=fields.get("id"))


# -- which framework ---------------------------------------------------------------------------------------


def test_tqadmins_own_jobs_stay_the_default() -> None:
    s = summarise(job(task_type="resize", id="j1", retry_count=2, timestamp="2025-01-01T00:00:00Z", size=3))
    assert (s.framework, s.id, s.task, s.args, s.retries) == ("tqadmin", "j1", "resize", "size=3", 2)
    assert s.to_json()["sent_at"] == "2025-01-01T00:00:00.000Z"


def test_our_workers_retry_count_header_wins_over_the_producers_body() -> None:
    retried = Message(body=b'{"task_type": "t", "retry_count": 0}', headers={"x-tq-retry-count": 3})
    assert summarise(retried).retries == 3
    garbled = Message(body=b'{"task_type": "t", "retry_count": 1}', headers={"x-tq-retry-count": "many"})
    assert summarise(garbled).retries == 1


def test_a_job_of_ours_whose_fields_look_like_sidekiqs_is_still_ours() -> None:
    assert summarise(job(task_type="t", **{"class": "X", "jid": "j", "args": []})).framework == "tqadmin"


def test_an_unknown_message_shows_as_before_by_its_broker_id() -> None:
    s = summarise(Message(body=b"plain text", id="m-1"))
    assert (s.framework, s.id, s.task, s.args, s.error) == ("unknown", "m-1", None, None, None)
    assert not s.recognised


def test_celery_protocol_2_is_read_from_headers_and_body() -> None:
    s = summarise(celery_message("capp.add", "t-9", 2, 3, z="x"))
    assert (s.framework, s.id, s.task, s.args, s.retries) == ("celery", "t-9", "capp.add", '2, 3, z="x"', 0)


def test_dramatiq_reads_retries_and_the_last_line_of_the_stored_traceback() -> None:
    traceback = 'Traceback (most recent call last):\n  File "x.py"\nValueError: card declined\n'
    s = summarise(dramatiq_message(retries=3, traceback=traceback))
    assert (s.framework, s.task, s.retries, s.error) == ("dramatiq", "charge", 3, "ValueError: card declined")
    assert s.sent_to == "orders"


def test_tqadmins_error_header_wins_whatever_the_format() -> None:
    poison = Message(body=b"\xff\xfe", headers={"x-tq-reason": "malformed", "x-tq-error": "not JSON"})
    assert summarise(poison).error == "not JSON"
    celery = celery_message()
    marked = Message(body=celery.body, headers={**celery.headers, "x-tq-error": b"KeyError: k"})
    assert summarise(marked).error == "KeyError: k"


# -- what the commands do with it ------------------------------------------------------------------------


def test_filters_select_other_frameworks_jobs_by_their_own_names_ids_and_errors() -> None:
    celery, dramatiq_dead = celery_message("capp.add", "t-7"), dramatiq_message(traceback="E\nKeyError: k")
    assert parse_filter("task_type=capp.add,id=t-7,framework=celery")(celery)
    assert not parse_filter("task_type=capp.mul")(celery)
    assert parse_filter("task_type=charge,error~keyerror")(dramatiq_dead)
    assert parse_filter("lang=py")(celery)  # any other name is still a header (or a job field)


def test_dead_letter_groups_and_the_tui_filter_of_a_group_select_the_same_messages() -> None:
    dead = [dramatiq_message(retries=1, traceback="T\nValueError: no") for _ in range(2)] + [celery_message()]
    assert [group_key(m, "task_type") for m in dead] == ["charge", "charge", "capp.add"]
    assert group_key(dead[0], "error") == "ValueError: no"
    groups = group_dead_letters(dead)
    assert (groups[0].task_type, groups[0].error, groups[0].count) == ("charge", "ValueError: no", 2)
    chosen = parse_filter(groups[0].filter_expression())
    assert [chosen(m) for m in dead] == [True, True, False]


# -- previews ---------------------------------------------------------------------------------------------


def test_the_arguments_preview_is_short_whatever_the_arguments() -> None:
    s = summarise(celery_message("capp.sum", "t", *range(100_000)))
    assert s.args is not None and len(s.args) == MAX_PREVIEW_CHARS + 1 and s.args.endswith("…")


@pytest.mark.parametrize("hostile", ["\x1b[2J", "\x9b31m", "\u202eevil", "\x7f", "a\nb"])
def test_the_arguments_preview_escapes_what_a_terminal_would_act_on(hostile: str) -> None:
    s = summarise(celery_message("capp.echo", "t", hostile))
    assert s.args is not None and s.args.isprintable()


# -- hostile input ----------------------------------------------------------------------------------------


def test_a_body_too_large_to_parse_is_read_from_its_headers_alone() -> None:
    celery = celery_message("capp.add", "t-big")
    huge = Message(body=b"[" + b" " * MAX_PARSED_BYTES + b"]", headers=celery.headers)
    s = summarise(huge)
    assert (s.framework, s.id, s.args) == ("celery", "t-big", "2, 3")  # from Celery's argsrepr header
    assert summarise(Message(body=dramatiq_message().body + b" " * MAX_PARSED_BYTES)).framework == "unknown"


def test_a_pickled_body_is_never_unpickled() -> None:
    celery = celery_message()
    pickled = b"\x80\x04\x95cos\nsystem\n(S'echo owned'\ntR."  # would run a command if unpickled
    s = summarise(Message(body=pickled, headers=celery.headers))
    assert (s.framework, s.args) == ("celery", "2, 3")


ZLIB_BOMB = zlib.compress(b"\0" * 50_000_000, 9)


@pytest.mark.parametrize(
    "message",
    [
        Message(body=b"[" * 100_000),
        Message(body=b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
        Message(body=b'{"task_type": NaN, "id": NaN}'),
        Message(body=b'{"actor_name": "a", "message_id": "m", "options": {"retries": NaN}, "args": NaN}'),
        Message(body=b'{"actor_name": "a", "message_id": "m", "message_timestamp": 1e400, "options": []}'),
        Message(body=b'{"class": "C", "jid": "j", "args": [], "enqueued_at": 99999999999999999999999}'),
        Message(body=b'{"class": "C", "jid": "j", "args": [], "retry_count": "-1", "error_class": 5}'),
        Message(body=b"\xff\xfe\x00garbage", headers={"task": "t", "id": "i", "retries": float("nan")}),
        Message(body=b"[1, 2]", headers={"task": ["not", "text"], "id": {"x": 1}}),
        Message(body=b"", headers={"task": b"\xff\xfe", "id": b"\xc3\x28", "argsrepr": 12}),
        Message(body=b'{"body": "%%%", "headers": {}, "properties": {"body_encoding": "base64"}}'),
        Message(body=b'{"body": 5, "headers": [], "properties": {}}'),
        Message(body=b'{"body": "W10=", "headers": {"task": "t", "id": "i"}, "properties": 3}'),
        Message(
            body=b"x", headers={"origin": "q", "created_at": "2025-13-45", "status": 1, "exc_info": ZLIB_BOMB}
        ),
        Message(
            body=b"x",
            headers={b"origin": b"q", b"created_at": b"x", b"status": b"failed", b"exc_string": b"!"},
        ),
        Message(
            body=b"x", headers={"origin": "q", "created_at": "x", "status": "f", "description": "(" * 100_000}
        ),
        Message(body=b'{"task_type": "t", "timestamp": "9999-12-31T23:59:59-23:59", "retry_count": 1e308}'),
    ],
)
def test_hostile_messages_are_unknown_or_partly_read_and_never_raise(message: Message) -> None:
    s = summarise(message)
    json.dumps(s.to_json(), allow_nan=False)  # every fact is plain, finite JSON


def test_mangled_real_messages_never_raise() -> None:
    """Seeds from every format, cut and with bytes flipped at random (seeded): never an exception."""
    envelope = {
        "body": base64.b64encode(celery_message().body).decode(),
        "headers": dict(celery_message().headers),
        "properties": {"body_encoding": "base64"},
        "content-type": "application/json",
    }
    seeds = [
        celery_message().body,
        dramatiq_message(retries=1, traceback="T\nE: x").body,
        json.dumps(envelope).encode(),
        json.dumps({"class": "C", "jid": "j", "args": [1, {"a": [2]}], "enqueued_at": 1.5e12}).encode(),
        json.dumps({"task_type": "t", "id": "i", "timestamp": "2025-01-01T00:00:00Z"}).encode(),
    ]
    rng = random.Random(13)
    for _ in range(3000):
        body = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        cut = bytes(body[: rng.randint(0, len(body))] if rng.random() < 0.3 else body)
        summarise(Message(body=cut, headers=celery_message().headers if rng.random() < 0.2 else {}))

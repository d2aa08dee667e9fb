"""The one reading of a body (``Message.read_job``): whatever a body holds, it is a job's object or a
:class:`MalformedJob` saying why not; nothing else is ever raised, on the worker side or the admin side."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest
from tqadmin_sqs.codec import BODY_ENCODING, encode, to_message

from tqadmin.admin.jsonl import read_messages
from tqadmin.errors import UsageError
from tqadmin.pipeline.job import decode_message
from tqadmin.plugin.bodies import MalformedJob, load_json
from tqadmin.plugin.models import Message

DEEP = [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    b"[" * 524_288 + b"]" * 524_288,  # the whole default --max-payload-bytes
]


@pytest.mark.parametrize("body", DEEP, ids=["array", "object", "1-MiB"])
def test_a_body_nested_100000_deep_is_malformed_not_a_recursion_error(body: bytes) -> None:
    with pytest.raises(MalformedJob) as info:
        Message(body).read_job()
    assert info.value.reason == "malformed" and "nests deeper" in str(info.value)
    assert Message(body).job() is None
    with pytest.raises(ValueError, match="nests deeper"):
        load_json(body)


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_a_body_is_a_job_up_to_32_levels_deep_and_malformed_past_them(opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    for levels, ok in ((30, True), (31, False)):  # the job's object and the innermost value: 2 levels more
        body = f'{{"task_type": "t", "x": {opening * levels}1{closing * levels}}}'.encode()
        if ok:
            assert Message(body).read_job()["task_type"] == "t"
        else:
            with pytest.raises(MalformedJob, match="nests deeper than 32 levels"):
                Message(body).read_job()


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    body = ('{"task_type": "t", "s": "' + "[{" * 40 + '"}').encode()
    assert Message(body).read_job()["s"] == "[{" * 40


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_body_with_a_non_finite_number_is_malformed(constant: str) -> None:
    body = f'{{"task_type": "t", "x": {constant}}}'.encode()
    with pytest.raises(MalformedJob, match=f"{constant} is not valid JSON"):
        Message(body).read_job()
    assert load_json(body.decode())["x"] != 0  # JSON a plugin stores beside a body may hold them


def test_an_import_file_whose_line_nests_100000_deep_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"body": "{}"}\n' + DEEP[0] + b"\n")
    with pytest.raises(UsageError, match="line 2: nests deeper"):
        read_messages(path)


def test_size_is_refused_before_anything_is_parsed() -> None:
    with pytest.raises(MalformedJob) as info:
        Message(DEEP[0]).read_job(max_bytes=1000)
    assert info.value.reason == "too_large"


def test_a_message_its_plugin_could_not_decode_is_no_job_whatever_its_body() -> None:
    message = Message(
        b'{"task_type": "count"}', undecodable="content-encoding 'gzip' is not one tqadmin decodes"
    )
    assert message.job() is None
    with pytest.raises(MalformedJob, match="gzip") as info:
        decode_message(message)
    assert info.value.reason == "malformed"


def bodies(count: int) -> list[bytes]:
    """Random bytes, and random text of JSON's punctuation (much of it nested, some of it valid)."""
    rng = random.Random(16)
    made = [rng.randbytes(rng.randrange(2000)) for _ in range(count)]
    made += ["".join(rng.choices('[]{}":,1a ', k=rng.randrange(3000))).encode() for _ in range(count)]
    return made


def test_any_bytes_are_read_as_a_job_or_refused_as_malformed() -> None:
    for body in bodies(300):
        try:
            job = Message(body).read_job()
        except MalformedJob as exc:
            assert exc.reason == "malformed"
            assert Message(body).job() is None
        else:
            assert isinstance(job, dict) and Message(body).job() == job


def sqs(body: str, encoding: str | None) -> dict[str, object]:
    attributes = {"origin": {"DataType": "String", "StringValue": "hand"}}
    if encoding is not None:
        attributes[BODY_ENCODING] = {"DataType": "String", "StringValue": encoding}
    return {"Body": body, "MessageAttributes": attributes, "MessageId": "m-1"}


def test_an_sqs_message_is_received_whatever_its_body_and_encoding_and_sent_back_as_it_came() -> None:
    rng = random.Random(16)
    texts = ["".join(rng.choices("AQab+/=={}x ", k=rng.randrange(1, 40))) for _ in range(300)]
    texts += [base64.b64encode(rng.randbytes(rng.randrange(1, 30))).decode() for _ in range(100)]
    for body in texts:
        for encoding in (None, "base64", "gzip", "Base64"):
            message = to_message(sqs(body, encoding))
            text, attributes = encode(message, 262_144)
            again = to_message({"Body": text, "MessageAttributes": attributes, "MessageId": "m-1"})
            assert again == message  # sent on (a dead letter, a move), it is received the same
            assert attributes["origin"]["StringValue"] == "hand"
            if encoding == "base64" and is_b64(body):
                assert message.undecodable is None and message.body == base64.b64decode(body)
            else:  # the text as it came, with what it said: never a decoding that was not there
                assert text == body and message.body == body.encode()
                assert attributes.get(BODY_ENCODING, {}).get("StringValue") == encoding
                assert (message.undecodable is None) == (encoding is None)


def is_b64(text: str) -> bool:
    try:
        return base64.b64encode(base64.b64decode(text, validate=True)).decode() == text
    except ValueError:
        return False


def test_an_sqs_body_that_is_not_the_base64_it_says_is_delivered_as_its_text_and_malformed() -> None:
    message = to_message(sqs('{"task_type": "count", "id": "j"}', "base64"))
    assert message.body == b'{"task_type": "count", "id": "j"}'
    assert message.headers[BODY_ENCODING] == "base64" and message.id == "m-1"
    with pytest.raises(MalformedJob, match="not base64"):
        decode_message(message)


def test_an_sqs_body_that_is_base64_comes_back_as_its_bytes() -> None:
    message = to_message(sqs(base64.b64encode(b"\x00\xff").decode(), "base64"))
    assert (
        message.body == b"\x00\xff" and message.undecodable is None and BODY_ENCODING not in message.headers
    )

import json

import pytest

from tqadmin.pipeline.job import MalformedJob, decode_job, new_job


def test_a_published_job_has_an_id_a_timestamp_and_no_retries() -> None:
    job = new_job("resize_image", {"image_url": "https://example.com/a.png", "id": "ignored-here"})
    data = json.loads(job.encode())
    assert data["task_type"] == "resize_image"
    assert data["retry_count"] == 0
    assert data["timestamp"].endswith("Z")
    assert data["image_url"] == "https://example.com/a.png"
    assert data["id"] == job.id != "ignored-here"


def test_decode_round_trips_the_seed_example() -> None:
    body = (
        b'{"task_type": "resize_image", "id": "5f2c", "timestamp": "2026-01-01T00:00:00Z",'
        b' "retry_count": 2, "image_url": "https://x/y.png", "sizes": [64, 128]}'
    )
    job = decode_job(body)
    assert (job.task_type, job.id, job.retry_count) == ("resize_image", "5f2c", 2)
    assert job.fields == {"image_url": "https://x/y.png", "sizes": [64, 128]}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "malformed"),
        (b"\xff\xfe{}", "malformed"),
        (b"[1, 2]", "malformed"),
        (b'{"id": "x"}', "malformed"),
        (b'{"task_type": 7}', "malformed"),
        (b'{"task_type": "a", "v": NaN}', "malformed"),
        (b'{"task_type": "a", "v": Infinity}', "malformed"),
        (b'{"task_type": "a", "retry_count": -1}', "malformed"),
        (b'{"task_type": "a", "deep": ' + b"[" * 100 + b"]" * 100 + b"}", "malformed"),
        (b'{"task_type": "a", "pad": "' + b"x" * 2000 + b'"}', "too_large"),
    ],
)
def test_hostile_bodies_are_refused_with_their_dead_letter_reason(body: bytes, reason: str) -> None:
    with pytest.raises(MalformedJob) as info:
        decode_job(body, max_bytes=1000, max_depth=32)
    assert info.value.reason == reason


def test_size_is_checked_before_parsing() -> None:
    with pytest.raises(MalformedJob, match="over the 10-byte limit"):
        decode_job(b"[" * 10_000_000, max_bytes=10)


def test_the_retry_count_header_wins_over_the_bodys_and_bad_values_are_ignored() -> None:
    from tqadmin.pipeline.job import with_header_retries

    job = decode_job(b'{"task_type": "t", "id": "a", "retry_count": 0}')
    assert with_header_retries(job, {"x-tq-retry-count": 2}).retry_count == 2
    assert with_header_retries(job, {"x-tq-retry-count": b"3"}).retry_count == 3
    for bad in (-1, "x", True, None, 1.5):
        assert with_header_retries(job, {"x-tq-retry-count": bad}).retry_count == 0

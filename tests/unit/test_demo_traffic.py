"""The demo's publisher: what it sends, how it counts, how it survives a failing broker."""

import itertools
import json
import threading
from collections.abc import Sequence

from tqadmin.demo.layout import plan
from tqadmin.demo.traffic import MALFORMED_KINDS, Kind, Traffic, TrafficCounts, TrafficMessage, kind_at
from tqadmin.errors import Unreachable
from tqadmin.pipeline.job import MalformedJob, decode_job


class RecordingSink:
    """Confirms everything, or refuses every batch while ``down``."""

    def __init__(self) -> None:
        self.batches: list[list[TrafficMessage]] = []
        self.down = False
        self.closed = False

    def publish(self, messages: Sequence[TrafficMessage], rate: float) -> tuple[list[bool], str]:
        self.batches.append(list(messages))
        if self.down:
            return [False] * len(messages), "cannot connect to RabbitMQ"
        return [True] * len(messages), ""

    def close(self) -> None:
        self.closed = True


def fast_clock() -> object:
    """A clock that jumps a minute per reading, so pacing never waits in a test."""
    ticks = itertools.count(step=60.0)
    return lambda: next(ticks)


def run(sink: RecordingSink, count: int, rate: float = 10.0) -> Traffic:
    traffic = Traffic(plan("t", 4), lambda: sink, rate=rate, seed=1, clock=fast_clock())  # type: ignore[arg-type]
    traffic.run(threading.Event(), limit=count)
    return traffic


def test_every_kind_of_hostile_message_appears_within_the_first_hundred() -> None:
    kinds = {kind_at(i) for i in range(100)}
    assert set(MALFORMED_KINDS) <= kinds
    assert Kind.DUPLICATE in kinds


def test_jobs_go_to_their_task_types_queue_and_decode_as_jobs() -> None:
    sink = RecordingSink()
    run(sink, 60)
    sent = [m for batch in sink.batches for m in batch]
    assert len(sent) == 60
    jobs = [m for m in sent if m.kind is Kind.JOB]
    for message in jobs:
        job = decode_job(message.body)
        assert job.id == message.job_id
        assert message.queue == plan("t", 4).queue_of[job.task_type]
    assert {decode_job(m.body).task_type for m in jobs} == {
        "resize_image",
        "send_email",
        "generate_report",
        "charge_card",
    }


def test_malformed_bodies_are_refused_by_the_codec_and_unknown_tasks_are_not() -> None:
    sink = RecordingSink()
    run(sink, 100)
    for message in (m for batch in sink.batches for m in batch):
        if message.kind in (Kind.INVALID_JSON, Kind.INVALID_UTF8, Kind.MISSING_TASK_TYPE):
            try:
                decode_job(message.body)
            except MalformedJob as exc:
                assert exc.reason == "malformed"
            else:
                raise AssertionError(f"{message.kind} decoded")
        if message.kind is Kind.UNKNOWN_TASK:
            assert json.loads(message.body)["task_type"] == "transcode_video"


def test_a_duplicate_repeats_an_earlier_job_byte_for_byte() -> None:
    sink = RecordingSink()
    run(sink, 40)
    sent = [m for batch in sink.batches for m in batch]
    duplicate = next(m for m in sent if m.kind is Kind.DUPLICATE)
    assert any(m.kind is Kind.JOB and m.body == duplicate.body for m in sent)


def test_the_counts_add_up_to_what_was_confirmed() -> None:
    sink = RecordingSink()
    counts = run(sink, 100).counts()
    assert counts.published == 100
    assert sum(counts.malformed.values()) == 4
    assert counts.duplicates == 3
    assert sum(counts.by_task_type().values()) == len(counts.jobs) == 93
    assert sink.closed


def test_refused_batches_are_counted_as_failed_and_the_stream_goes_on() -> None:
    sink = RecordingSink()
    sink.down = True
    traffic = Traffic(plan("t", 4), lambda: sink, rate=5.0, seed=1, clock=fast_clock())  # type: ignore[arg-type]
    stop = threading.Event()
    original = sink.publish

    def publish_then_recover(messages: Sequence[TrafficMessage], rate: float) -> tuple[list[bool], str]:
        result = original(messages, rate)
        sink.down = False
        stop.wait(0)
        return result

    sink.publish = publish_then_recover  # type: ignore[method-assign]
    traffic.run(stop, limit=10)
    counts = traffic.counts()
    assert counts.failed == 5
    assert counts.published == 5
    assert "cannot connect" in counts.last_error


def test_batches_hold_about_a_second_of_traffic() -> None:
    sink = RecordingSink()
    run(sink, 50, rate=20.0)
    assert [len(b) for b in sink.batches] == [20, 20, 10]


def test_empty_counts_publish_nothing() -> None:
    assert TrafficCounts().published == 0


def test_a_sink_that_cannot_even_try_fails_its_batch_without_killing_the_publisher() -> None:
    class BrokenSink(RecordingSink):
        def publish(self, messages: Sequence[TrafficMessage], rate: float) -> tuple[list[bool], str]:
            raise Unreachable("cannot connect to RabbitMQ")

    sink = BrokenSink()
    traffic = Traffic(plan("t", 4), lambda: sink, rate=100.0, seed=1, clock=fast_clock())  # type: ignore[arg-type]
    traffic.run(threading.Event(), limit=5)
    assert traffic.counts().failed == 5

import pytest

from tqadmin.admin.filters import parse_filter
from tqadmin.errors import UsageError
from tqadmin.plugin.models import Message

DEAD = Message(
    body=b'{"task_type": "resize_image", "id": "j1", "size": 3}',
    headers={"x-tq-reason": "max_retries", "x-tq-error": "TimeoutError: upstream slow"},
)


def test_no_filter_matches_everything() -> None:
    assert parse_filter(None)(DEAD)
    assert parse_filter("")(Message(body=b"\xff"))


def test_terms_match_job_fields_and_header_aliases() -> None:
    assert parse_filter("task_type=resize_image,reason=max_retries,error~timeout")(DEAD)
    assert not parse_filter("task_type=send_email")(DEAD)
    assert parse_filter("size=3")(DEAD)


def test_negated_terms() -> None:
    assert parse_filter("reason!=fatal")(DEAD)
    assert not parse_filter("error!~Timeout")(DEAD)


def test_a_malformed_body_matches_only_on_headers() -> None:
    poison = Message(body=b"\xff\xfe", headers={"x-tq-reason": "malformed"})
    assert parse_filter("reason=malformed")(poison)
    assert not parse_filter("task_type=resize_image")(poison)


def test_a_bad_term_is_a_usage_error_with_an_example() -> None:
    with pytest.raises(UsageError, match="task_type=resize_image"):
        parse_filter("task_type")

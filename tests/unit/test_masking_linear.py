"""Masking costs what its input is long, whatever the input: a megabyte of one character, of URLs, of secret
names, of quotes left open; and what is shown of a long text is cut before it is masked, never leaving half a
secret at the cut.

Time is bounded against a reference measured in the same test, never in seconds: the regular expression
engine stepping once through every character of the same text (one match and one replacement each), in a
process of its own, as masking is run. A quadratic pattern needs hours on a megabyte (seconds on 40,000
characters); masking is allowed :data:`FACTOR` times the reference, and its process is stopped there.
"""

from __future__ import annotations

import multiprocessing
import re
import time
from collections.abc import Callable

import pytest

from tqadmin.show.masking import CLIP_MARGIN, MASK, clip_masked, mask_text, shown

MEGABYTE = 1_000_000
FACTOR = 50  # masking measured 0.1 to 3.2 times the reference on every text below
_EVERY_CHARACTER = re.compile(".", re.DOTALL)


def _step_through(text: str) -> None:
    _EVERY_CHARACTER.sub("", text)


def _seconds_in_a_child(work: Callable[[str], object], text: str, limit_s: float) -> float | None:
    """How long ``work(text)`` took in a forked process (fork and join included), or ``None`` when it was
    still running after ``limit_s`` (it is killed)."""
    child = multiprocessing.get_context("fork").Process(target=work, args=(text,), daemon=True)
    started = time.perf_counter()
    child.start()
    child.join(limit_s)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    assert child.exitcode == 0
    return time.perf_counter() - started


def _megabyte_of(unit: str) -> str:
    return (unit * (MEGABYTE // len(unit) + 1))[:MEGABYTE]


MIXED = (
    "failed to reach amqp://bob:hunter2@rabbit.internal:5672/vh (refused); retried with password=s3cret, "
    '{"token": "abc\\"def", "queue": "orders"} GET https://ghp_tok@api.example/x?email=a@b.c '
    "redis://:pw@127.0.0.1:6379/0 client_secret='x y' http://host:8080/users?email=bob@example.com\n"
)


MEGABYTES_OF = {
    "letters": "x",
    "digits": "7",
    "a word of dashes": "a-",
    "a word of secret names": "tokenkey-",
    "colons and ats": ":@",
    "colons slashes and ats": "a:/@",
    "schemes": "a://",
    "user parts without an at": "a://b:",
    "token users": "a://b@",
    "password= repeated": "password=",
    "secret names without a value": "password ",
    "quotes left open": 'token="\\',
    "words of one letter": "x ",
    "mixed URLs and secrets": MIXED,
}


@pytest.mark.parametrize("unit", MEGABYTES_OF.values(), ids=MEGABYTES_OF.keys())
def test_masking_a_megabyte_takes_time_in_proportion_to_its_length(unit: str) -> None:
    text = _megabyte_of(unit)
    reference = _seconds_in_a_child(_step_through, text, 600)
    assert reference is not None
    took = _seconds_in_a_child(mask_text, text, FACTOR * reference)
    assert took is not None, f"masking a megabyte took over {FACTOR} times the reference ({reference:.2f} s)"


def test_a_long_text_is_cut_to_the_limit_with_what_is_kept_masked() -> None:
    text = "login amqp://bob:hunter2@db/ failed; " + "x" * MEGABYTE
    clipped = clip_masked(text, 200)
    assert len(clipped) == 200 and clipped.endswith("...")
    assert clipped.startswith("login amqp://bob:***@db/ failed; xxx")


def test_a_text_within_the_limit_is_masked_and_not_cut() -> None:
    text = "login amqp://bob:hunter2@db/ failed"
    assert clip_masked(text, 200) == mask_text(text) == "login amqp://bob:***@db/ failed"
    assert shown(text) == mask_text(text)


AT_THE_CUT = {
    "url password": "amqp://bob:{secret}@db.internal/vh",
    "url token": "https://{secret}@api.example/x",
    "key=value": "password={secret}",
    "json value": '{{"token": "{secret}"}}',
    "python value": "client_secret='{secret}'",
}


@pytest.mark.parametrize("secret_at_the_cut", AT_THE_CUT.values(), ids=AT_THE_CUT.keys())
@pytest.mark.parametrize("secret_length", [50, 3 * CLIP_MARGIN])  # ends within the margin, and past it
def test_a_secret_straddling_the_cut_is_never_shown_in_part(
    secret_at_the_cut: str, secret_length: int
) -> None:
    secret = "S3cr" * (secret_length // 4)
    for before in range(180, 200):  # the secret starts just before the limit of 200
        text = "x" * before + " " + secret_at_the_cut.format(secret=secret) + " and the rest " + "y" * 5000
        clipped = clip_masked(text, 200)
        assert len(clipped) <= 200
        assert "S3cr" not in clipped and "3cr" not in clipped, clipped[-40:]


def test_a_quoted_secret_left_open_is_masked_to_the_end() -> None:
    assert mask_text('cannot log in: {"password": "hunter2') == 'cannot log in: {"password": "***'
    assert mask_text("passwd='hunter2 and more") == "passwd='***"


def test_an_open_url_cut_past_the_margin_is_masked_from_its_scheme() -> None:
    text = "see amqp://bob:" + "p" * (5 * CLIP_MARGIN) + "@db/"
    assert clip_masked(text, 100) == f"see amqp://{MASK}..."

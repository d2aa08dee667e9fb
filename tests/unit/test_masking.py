"""Secrets never survive masking: URL passwords of any characters, secret fields of JSON and key=value text,
and tracebacks that no log handler formats (a dying thread, an uncaught exception)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tqadmin.show.masking import MASK, mask_text, mask_url


def test_a_url_password_is_replaced_by_stars() -> None:
    assert mask_url("amqp://user:s3cret@host:5672/vh") == "amqp://user:***@host:5672/vh"


def test_a_url_without_password_is_unchanged() -> None:
    assert mask_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_passwords_inside_free_text_are_masked() -> None:
    text = "failed to connect to amqp://bob:hunter2@rabbit/ and password=hunter2"
    masked = mask_text(text)
    assert "hunter2" not in masked
    assert "amqp://bob:***@rabbit/" in masked


def test_literal_secrets_are_masked_anywhere() -> None:
    assert mask_text("token abcdef leaked", secrets=("abcdef",)) == "token *** leaked"


# A canary password with each character a URL parser stops at: found nowhere, not even in part, once masked.
CANARY = "Cn@ry:7/Qx?9#"
PIECES = ("Cn@", "@ry", ":7/", "Qx?9")


def leaks(text: str) -> list[str]:
    return [piece for piece in (CANARY, *PIECES) if piece in text]


@pytest.mark.parametrize("password", [CANARY, "p@ss", "p:ss", "p/ss", "@:/", "a@b@c"])
def test_a_password_holding_at_colon_or_slash_is_masked_whole_in_free_text_and_in_urls(password: str) -> None:
    url = f"amqp://bob:{password}@rabbit.internal:5672/vh"
    said = mask_text(f"failed to connect to {url} (refused)")
    assert said == "failed to connect to amqp://bob:***@rabbit.internal:5672/vh (refused)"
    assert mask_url(url) == "amqp://bob:***@rabbit.internal:5672/vh"


def test_a_token_user_part_holding_an_at_is_masked_whole() -> None:
    assert mask_text("GET https://tok@en@api.example/x failed") == "GET https://***@api.example/x failed"


def test_a_url_without_credentials_keeps_its_port_path_and_query() -> None:
    text = "GET http://host:8080/users?email=bob@example.com failed; see https://docs.example/a@b"
    assert mask_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        f'{{"password": "{CANARY}", "queue": "orders"}}',
        f'{{"token":"{CANARY}"}}',
        f"{{'client_secret': '{CANARY}'}}",
        f'{{"api_key": "a \\" quote {CANARY}"}}',
        f'{{"db_password" : "{CANARY}"}}',
    ],
)
def test_secret_fields_of_json_and_python_dicts_are_masked(text: str) -> None:
    masked = mask_text(f"broker said: {text}")
    assert leaks(masked) == [] and MASK in masked
    assert "orders" in mask_text(f'{{"password": "{CANARY}", "queue": "orders"}}')


@pytest.mark.parametrize(
    "text",
    [
        f"password={CANARY}",
        f"aws_secret_access_key={CANARY}",
        f"X-Amz-Security-Token: {CANARY}",
        f'auth_token="{CANARY}"',
        f"api-key={CANARY}",
        f"connect(user=bob, passwd='{CANARY}')",
    ],
)
def test_key_value_secret_fields_are_masked(text: str) -> None:
    masked = mask_text(f"cannot log in: {text}; retrying")
    assert leaks(masked) == [] and MASK in masked and masked.endswith("; retrying")


HOOKED = """
import sys, threading
from tqadmin.show import logs
logs.setup(verbose=False)
def boom():
    raise RuntimeError("cannot reach amqp://bob:{canary}@db.internal/ with password={canary}")
thread = threading.Thread(target=boom, name="tq-settler")
thread.start()
thread.join()
print("main goes on", flush=True)
boom()
"""


def test_a_thread_that_dies_and_an_uncaught_exception_print_masked_tracebacks(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", HOOKED.format(canary=CANARY)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    said = result.stdout + result.stderr
    assert result.returncode == 1 and "main goes on" in result.stdout
    assert "tq-settler" in said and said.count("RuntimeError: cannot reach amqp://bob:***@db.internal/") == 2
    assert leaks(said) == [] and list(tmp_path.iterdir()) == []


def test_a_password_of_digits_is_masked_like_any_other() -> None:
    assert mask_text("amqp://bob:1234@host/") == "amqp://bob:***@host/"

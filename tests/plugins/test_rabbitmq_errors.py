"""Every way the management API or the broker can fail gives the interface's exit code and one useful line.

The management side is driven through ``tqadmin queues`` against a local fake server that injects each
failure; the AMQP side through ``connection.connect`` against the real RabbitMQ.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika.exceptions as pe
import pika.frame
import pika.spec
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from tqadmin_rabbitmq.connection import connect, reset_while_connecting, translate, translated

from tests.support.management_api import (
    Answer,
    FakeManagementAPI,
    dropped,
    garbage,
    huge,
    shape,
    slow,
    status,
    trickle,
    truncated,
)
from tqadmin.cli import main
from tqadmin.errors import BrokerError, ConnectTimeout, ExitCode, NotAuthorized, Unreachable

SECRET = "s3cret-Pw"
BROKER = f"amqp://guest:{SECRET}@127.0.0.1:5672/%2F"
CONNECT = ExitCode.CONNECTION
BROKER_ERROR = ExitCode.BROKER
MiB = 1024 * 1024


@pytest.fixture
def api() -> Iterator[FakeManagementAPI]:
    with FakeManagementAPI(password=SECRET) as fake:
        fake.seed(3, ready=1)
        yield fake


def run_queues(capsys: pytest.CaptureFixture[str], management_url: str, *extra: str) -> tuple[int, str]:
    """Run ``tqadmin queues --json``; check stdout stays empty, stderr is one masked line; return both."""
    code = main(["queues", "--json", "--broker", BROKER, "--management-url", management_url, *extra])
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tqadmin: ") and err.count("\n") == 1, err
    assert SECRET not in err
    assert "Traceback" not in err
    return code, err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_fake_answers_like_the_management_api_when_nothing_is_injected(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "--json", "--broker", BROKER, "--management-url", api.url]) == 0
    assert "q00002" in capsys.readouterr().out


def test_nothing_listening_is_exit_3_naming_the_endpoint(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    code, err = run_queues(capsys, url)
    assert code == CONNECT
    assert url in err and "is RabbitMQ running" in err


def test_an_unknown_host_is_exit_3_saying_to_check_the_host_name(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_queues(capsys, "http://no-such-host.invalid:15672/")
    assert code == CONNECT
    assert "no-such-host.invalid" in err and "host name" in err


def test_tls_against_a_plain_http_server_is_exit_3_pointing_at_tls(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_queues(capsys, api.url.replace("http://", "https://"))
    assert code == CONNECT
    assert "TLS" in err


def test_an_answer_slower_than_timeout_is_exit_3(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", slow(10))
    code, err = run_queues(capsys, api.url, "--timeout", "0.5")
    assert code == CONNECT
    assert "0.5s" in err and "--timeout" in err


def test_a_body_trickling_in_past_the_timeout_is_exit_3(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", trickle(chunks=40, every_s=0.1))
    code, err = run_queues(capsys, api.url, "--timeout", "1")
    assert code == CONNECT
    assert "--timeout" in err


def test_wrong_credentials_are_exit_3_naming_the_user_not_the_password(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeManagementAPI(password="another-password") as other:
        code, err = run_queues(capsys, other.url)
    assert code == CONNECT
    assert "401" in err and "'guest'" in err and "credentials" in err


def test_credentials_in_the_management_url_win_and_stay_masked(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeManagementAPI(username="ops", password="wrong-one") as other:
        url = other.url.replace("http://", f"http://ops:{SECRET}@")
        code, err = run_queues(capsys, url)
    assert code == CONNECT
    assert "'ops'" in err


def test_a_403_is_exit_3_saying_what_permission_is_missing(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", status(403, "Not management user"))
    code, err = run_queues(capsys, api.url)
    assert code == CONNECT
    assert "403" in err and "Not management user" in err and "tag" in err


def test_an_unknown_vhost_is_exit_4_naming_it(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["queues", "--broker", BROKER.replace("%2F", "billing"), "--management-url", api.url, "--json"]
    )
    out, err = capsys.readouterr()
    assert code == BROKER_ERROR and out == ""
    assert "vhost 'billing' does not exist" in err


@pytest.mark.parametrize("code_", [500, 502, 503])
def test_a_server_error_is_exit_4_saying_to_check_the_broker(
    code_: int, isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", status(code_, "internal_server_error"))
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert str(code_) in err and "logs" in err


def test_an_answer_that_is_not_json_is_exit_4(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", garbage())
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert "not JSON" in err and "<html>" in err


WRONG_SHAPES: dict[str, Answer] = {
    "a list where the page object belongs": shape([{"name": "a"}]),
    "a page without items": shape({"page_count": 1}),
    "a queue without a name": shape({"items": [{"messages": 1}], "page_count": 1}),
    "a count given as a string": shape({"items": [{"name": "a", "messages": "12"}], "page_count": 1}),
    "a rate given as a string": shape(
        {"items": [{"name": "a", "message_stats": {"ack_details": {"rate": "fast"}}}], "page_count": 1}
    ),
    "arguments given as a list of strings": shape(
        {"items": [{"name": "a", "arguments": ["x"]}], "page_count": 1}
    ),
    "a negative count": shape({"items": [{"name": "a", "consumers": -1}], "page_count": 1}),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES))
def test_a_wrongly_shaped_queue_page_is_exit_4(
    case: str, isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", WRONG_SHAPES[case])
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert api.url in err


def test_a_wrongly_shaped_node_list_is_exit_4(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/nodes", shape({"name": "rabbit@x"}))
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert "node list" in err


def test_a_truncated_body_is_exit_4(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", truncated())
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert "short" in err


def test_a_connection_reset_while_the_answer_is_sent_is_exit_3(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was exit 4, "cut its answer short", as for a body cut by an orderly close; a reset is exit 3."""
    api.fail("/api/queues", truncated(reset=True))
    code, err = run_queues(capsys, api.url)
    assert code == CONNECT
    assert "reset" in err and api.url in err


def test_a_connection_dropped_before_any_answer_is_exit_3(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", dropped())
    code, err = run_queues(capsys, api.url)
    assert code == CONNECT
    assert api.url in err


def test_a_huge_announced_body_is_refused_before_reading_it(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", huge(10 * 1024 * MiB, announce=True))
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert "10737418240 bytes" in err and "limit" in err


def test_a_huge_streamed_body_is_cut_off_at_the_limit(
    isolated_env: Path, api: FakeManagementAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.fail("/api/queues", huge(64 * MiB))
    code, err = run_queues(capsys, api.url)
    assert code == BROKER_ERROR
    assert "limit" in err


def test_a_wrong_amqp_password_against_the_real_broker_is_not_authorized(isolated_env: Path) -> None:
    with pytest.raises(NotAuthorized) as info:
        connect(BROKER, timeout_s=5)
    assert info.value.exit_code == CONNECT
    assert SECRET not in str(info.value) and "password" in str(info.value)


def test_nothing_listening_on_the_amqp_port_is_unreachable(isolated_env: Path) -> None:
    with pytest.raises(Unreachable) as info:
        connect(f"amqp://guest:{SECRET}@127.0.0.1:{free_port()}/%2F", timeout_s=5)
    assert info.value.exit_code == CONNECT
    assert SECRET not in str(info.value) and "is it running" in str(info.value)


def test_an_unknown_amqp_vhost_is_not_authorized_naming_the_vhost(isolated_env: Path) -> None:
    with pytest.raises(NotAuthorized) as info:
        connect("amqp://guest:guest@127.0.0.1:5672/no-such-vhost", timeout_s=5)
    assert "vhost 'no-such-vhost'" in str(info.value)


def test_a_broker_that_drops_the_socket_mid_handshake_is_unreachable_not_a_refused_login(
    isolated_env: Path,
) -> None:
    """pika reports it as a "probable authentication error"; a broker booting or going down does it, and
    telling the user to check a password that is right would send them the wrong way."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def start_then_hang_up() -> None:
            client, _ = server.accept()
            client.recv(8)  # the protocol header
            start = pika.spec.Connection.Start(server_properties={}, mechanisms=b"PLAIN", locales=b"en_US")
            client.sendall(pika.frame.Method(0, start).marshal())
            client.close()

        threading.Thread(target=start_then_hang_up, daemon=True).start()
        with pytest.raises(Unreachable) as info:
            connect(f"amqp://guest:{SECRET}@127.0.0.1:{port}/%2F", timeout_s=5)
    assert not isinstance(info.value, NotAuthorized)
    assert "during the handshake" in str(info.value) and SECRET not in str(info.value)


def test_a_listener_that_never_speaks_amqp_is_a_timeout(isolated_env: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(ConnectTimeout) as info:
            connect(f"amqp://guest:{SECRET}@127.0.0.1:{port}/%2F", timeout_s=0.5)
    assert info.value.exit_code == CONNECT and SECRET not in str(info.value)


def test_amqps_against_the_plain_amqp_port_is_a_tls_failure(isolated_env: Path) -> None:
    with pytest.raises(Unreachable) as info:
        connect(f"amqps://guest:{SECRET}@127.0.0.1:5672/%2F", timeout_s=5)
    assert "TLS" in str(info.value) and SECRET not in str(info.value)


def test_an_unknown_amqp_host_says_to_check_the_host_name(isolated_env: Path) -> None:
    with pytest.raises(Unreachable) as info:
        connect(f"amqp://guest:{SECRET}@no-such-host.invalid:5672/%2F", timeout_s=5)
    assert "host name" in str(info.value)


def test_the_plugin_translates_driver_failures_and_lets_its_own_bugs_through() -> None:
    """Any exception used to become "broker error" (exit 4) with the cause dropped, a TypeError included."""
    with pytest.raises(TypeError), translated(BROKER):
        raise TypeError("a bug of ours")
    with pytest.raises(BrokerError) as info, translated(BROKER):
        raise pe.MethodNotImplemented(f"no such method on {BROKER}")
    assert "MethodNotImplemented" in str(info.value) and SECRET not in str(info.value)
    assert isinstance(info.value.__cause__, pe.MethodNotImplemented)


@pytest.mark.rabbitmq
def test_a_bug_under_the_plugin_is_exit_1_with_its_masked_traceback_under_v(
    isolated_env: Path,
    amqp_queues: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue = amqp_queues.declare("bug")

    def broken(*_args: object, **_kwargs: object) -> None:
        raise TypeError(f"basic_get got a bad argument talking to {BROKER}")

    monkeypatch.setattr(BlockingChannel, "basic_get", broken)
    assert main(["-v", "peek", queue, "--broker", BROKER.replace(SECRET, "guest")]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "TypeError: basic_get got a bad argument" in err
    assert SECRET not in err and "amqp://guest:***@" in err


def test_a_socket_reset_as_pika_connects_is_a_connection_failure_not_a_bug() -> None:
    """pika raises ValueError out of its I/O loop when the peer resets a socket it just connected (seen
    in the broker-outage test: a worker exited 1, "internal error"); any other ValueError stays a bug."""
    raced = ValueError("Expected connected socket, but getpeername() failed: error=OSError(107, ...)")
    error = translate(reset_while_connecting(raced), BROKER)
    assert isinstance(error, Unreachable) and error.exit_code == CONNECT and SECRET not in str(error)
    with pytest.raises(ValueError, match="something else"):
        reset_while_connecting(ValueError("something else"))

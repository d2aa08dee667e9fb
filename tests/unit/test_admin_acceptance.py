"""What an on-call engineer ran into on first use, specified without a broker (acceptance of issue 2)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from tqadmin.admin.reports import describe_report
from tqadmin.admin.transfer import TransferPlan, to_queue, transfer
from tqadmin.cli import main
from tqadmin.commands.purge import confirm
from tqadmin.errors import ConfirmationRefused, ExitCode
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.models import ActionReport, Message
from tqadmin.show.tables import table


class InterruptedSession(TransferSession):
    """A queue of ``n`` messages whose second publish is cut short by Ctrl-C."""

    def __init__(self, n: int) -> None:
        self.messages = [Message(body=b"{}", id=str(i)) for i in range(n)]
        self.next = 0
        self.publishes = 0
        self.acked: list[Message] = []
        self.closed = False

    def count_at_start(self) -> int:
        return len(self.messages)

    def fetch(self, limit: int) -> Sequence[Delivery]:
        taken = self.messages[self.next : self.next + limit]
        self.next += len(taken)
        return [Delivery(m, m) for m in taken]

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        self.publishes += 1
        if self.publishes == 2:
            raise KeyboardInterrupt

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.acked.extend(d.message for d in deliveries)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_ctrl_c_mid_move_reports_what_moved_and_exits_partial() -> None:
    session = InterruptedSession(30)
    plan = TransferPlan(action="move", source="a", target="b", route=to_queue("b"), window=10)
    outcome = transfer(session, plan)
    assert session.closed
    assert len(session.acked) == 10
    assert (outcome.report.moved, outcome.report.matched) == (10, 20)
    assert any("interrupted" in line for line in outcome.report.not_done)
    assert outcome.error is not None and outcome.error.exit_code == ExitCode.PARTIAL
    assert "rerun" in str(outcome.error)


def test_a_reader_that_stops_reading_is_not_an_internal_error(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def closed_pipe(args: argparse.Namespace, ctx: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("tqadmin.commands.queues.run", closed_pipe)
    assert main(["queues"]) == 141
    assert capsys.readouterr().err == ""


def test_purge_confirmation_wants_the_exact_name(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty(" jobs\n"))
    with pytest.raises(ConfirmationRefused):
        confirm("jobs")
    monkeypatch.setattr("sys.stdin", Tty("jobs \n"))
    confirm("jobs ")


def test_tables_and_reports_escape_control_characters_from_the_broker() -> None:
    rendered = table(["REASON", "COUNT"], [["fatal\x1b[2J", 1]])
    assert "\x1b" not in rendered and "\\x1b[2J" in rendered
    line = describe_report(ActionReport(action="move", source="a\x1b[31m", target="b\x07", matched=1))
    assert "\x1b" not in line and "\x07" not in line


def test_an_import_line_with_a_property_of_the_wrong_type_names_the_line(tmp_path: Path) -> None:
    from tqadmin.admin.jsonl import read_messages
    from tqadmin.errors import UsageError

    path = tmp_path / "in.jsonl"
    path.write_text('{"body": "a"}\n{"body": "b", "properties": {"priority": "high"}}\n')
    with pytest.raises(UsageError, match=r"line 2: .*priority"):
        read_messages(path)


def test_every_argument_of_the_admin_commands_says_what_it_is_in_help() -> None:
    from tqadmin.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name in ("peek", "dead-letters", "move", "replay", "purge", "export", "import", "delete"):
        for action in commands[name]._actions:
            assert action.help, f"{name} {action.dest} has no help"


def test_ctrl_c_during_a_server_side_move_says_the_broker_goes_on_and_exits_partial() -> None:
    from tqadmin.admin.paths import run_server_side
    from tqadmin.errors import PartialFailure
    from tqadmin.plugin.capabilities import Capabilities, Operation

    class InterruptedAdmin:
        capabilities = Capabilities(supported=frozenset(Operation))

        def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport:
            raise KeyboardInterrupt

    with pytest.raises(PartialFailure, match="keeps moving the messages inside the broker"):
        run_server_side(InterruptedAdmin(), print, "move", "a", "b", limit=None)  # type: ignore[arg-type]


def test_a_deleted_message_is_reported_as_deleted() -> None:
    line = describe_report(ActionReport(action="delete", source="q", target="q", matched=1, moved=1))
    assert "deleted 1" in line and "moved" not in line


def test_ctrl_c_mid_purge_with_backup_reports_what_was_purged(tmp_path: Path) -> None:
    from tqadmin.admin.purge import purge_with_backup

    class InterruptedAck(InterruptedSession):
        def ack(self, deliveries: Sequence[Delivery]) -> None:
            if self.acked:
                raise KeyboardInterrupt
            super().ack(deliveries)

    session = InterruptedAck(30)
    outcome = purge_with_backup(session, "q", tmp_path / "backup.jsonl", batch=10)
    assert outcome.report.purged == 10 and outcome.report.not_done
    assert outcome.error is not None and outcome.error.exit_code == ExitCode.PARTIAL
    assert len((tmp_path / "backup.jsonl").read_text().splitlines()) == 20  # written before any ack


def test_ctrl_c_mid_import_reports_what_was_confirmed() -> None:
    from tqadmin.admin.importer import import_messages

    session = InterruptedSession(0)
    messages = [Message(body=b"{}") for _ in range(30)]
    outcome = import_messages(session, "q", messages, "in.jsonl", batch=10)
    assert (outcome.report.moved, outcome.report.failed) == (10, 20)
    assert outcome.error is not None and outcome.error.exit_code == ExitCode.PARTIAL


def test_a_filter_matches_json_booleans_and_binary_headers_as_written() -> None:
    from tqadmin.admin.filters import parse_filter

    message = Message(body=b'{"task_type": "t", "urgent": true}', headers={"x-src": b"billing"})
    assert parse_filter("urgent=true")(message)
    assert not parse_filter("urgent=false")(message)
    assert parse_filter("x-src=billing")(message)

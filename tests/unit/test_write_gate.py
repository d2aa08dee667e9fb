"""Every write command asks the broker's declared capabilities before it sends anything, as the dashboard
does, and refuses with the plugin's reason (exit 4): a command never finds a way around a declaration (the
broker's own move, for instance), and the read-only and audit checks come first, before connecting."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tqadmin_memory import MemoryPlugin
from tqadmin_memory.broker import MemoryBroker, shared

from tqadmin.admin import gate
from tqadmin.config import Settings
from tqadmin.errors import ConfigError, NotSupported, ReadOnly
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import Message

TqJson = Callable[..., tuple[int, Any, str]]
WRITES = (Operation.MOVE, Operation.REPLAY, Operation.PURGE, Operation.IMPORT, Operation.DELETE)


def withholding(*operations: Operation) -> Capabilities:
    return Capabilities(
        supported=frozenset(Operation) - set(operations),
        reasons=tuple((op, f"this broker keeps its {op.value} to itself") for op in operations),
    )


@pytest.fixture
def url(unique: str, isolated_env: Path) -> Iterator[str]:
    """A memory broker that withholds every write but keeps its server-side move, with ``q`` holding 3."""
    url = f"memory://gate-{unique}"
    with shared(url, MemoryBroker(capabilities=withholding(*WRITES))) as broker:
        broker.declare("q")
        broker.declare("other")
        broker.publish([("q", Message(b'{"task_type": "t", "id": "%d"}' % n, id=str(n))) for n in range(3)])
        yield url


@pytest.mark.parametrize(
    ("argv", "operation"),
    [
        (("move", "q", "other"), Operation.MOVE),
        (("replay", "q", "--to", "other"), Operation.REPLAY),
        (("purge", "q", "--yes"), Operation.PURGE),
        (("delete", "q", "--id", "1"), Operation.DELETE),
    ],
    ids=["move", "replay", "purge", "delete"],
)
def test_a_write_the_broker_withholds_is_refused_with_its_reason_and_changes_nothing(
    url: str, tq_json: TqJson, argv: tuple[str, ...], operation: Operation
) -> None:
    code, _, err = tq_json("--broker", url, *argv)
    assert code == 4 and f"this broker keeps its {operation.value} to itself" in err
    listed = {q["name"]: q["messages"] for q in tq_json("--broker", url, "queues")[1]["queues"]}
    assert (listed["q"], listed["other"]) == (3, 0)


def test_an_import_the_broker_withholds_is_refused_with_its_reason(
    url: str, tq_json: TqJson, tmp_path: Path
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text('{"body": "{}"}\n')
    code, _, err = tq_json("--broker", url, "import", str(path), "other")
    assert code == 4 and "this broker keeps its import to itself" in err


def test_a_publish_the_plugin_withholds_is_refused_with_its_reason(
    url: str, tq_json: TqJson, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MemoryPlugin, "capabilities", withholding(Operation.PUBLISH))
    code, _, err = tq_json("--broker", url, "publish", "--queue", "q", "--job", '{"task_type": "t"}')
    assert code == 4 and "this broker keeps its publish to itself" in err


def test_the_profile_is_asked_first_read_only_then_the_audit_log_then_the_broker(tmp_path: Path) -> None:
    nothing = withholding(*Operation)
    with pytest.raises(ReadOnly):
        gate.check_before(Settings(read_only=True, audit_log=tmp_path / "a"), nothing, "move")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="audit log"):
        gate.check_before(Settings(audit_log=tmp_path / "file" / "a"), nothing, "move")
    with pytest.raises(NotSupported, match="keeps its move"):
        gate.check_before(Settings(audit_log=tmp_path / "a"), nothing, "move")
    gate.check_before(Settings(read_only=True, audit_log=tmp_path / "file" / "a"), withholding(), "export")

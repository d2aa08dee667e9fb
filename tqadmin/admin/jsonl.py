"""JSONL files of messages (export, purge backups, import): one :meth:`Message.to_json` object a line."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tqadmin.errors import UsageError
from tqadmin.files.private_file import cannot_write, open_private
from tqadmin.plugin.bodies import load_json
from tqadmin.plugin.models import Message

INTEGER_PROPERTIES = frozenset({"delivery_mode", "priority", "timestamp"})


class MessageWriter:
    """Appends messages to a JSONL file; :meth:`sync` makes what was written durable. Use with ``closing``.

    A purge acks a batch only after ``sync`` returned, so a crash never loses a message that was not on
    disk yet.
    """

    def __init__(self, path: Path, *, force: bool = False) -> None:
        """A new private file (:mod:`tqadmin.files.private_file`), replacing an existing one only with
        ``force``."""
        self.path = path
        self._file = open_private(path, force=force)

    def write(self, messages: Iterable[Message]) -> None:
        try:
            for message in messages:
                self._file.write(json.dumps(message.to_json(), ensure_ascii=False) + "\n")
        except OSError as exc:
            raise self._failed(exc) from None

    def sync(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise self._failed(exc) from None

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self.sync()
        finally:
            with contextlib.suppress(OSError):  # what failed to flush was reported by sync
                self._file.close()

    def _failed(self, exc: OSError) -> UsageError:
        return cannot_write(self.path, exc)


def read_messages(path: Path) -> list[Message]:
    """Every message of a JSONL file, or a :class:`UsageError` naming the first bad line: all or nothing."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text; expected JSONL written by `tqadmin export`") from None
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            message = Message.from_json(load_json(line))
            _check_properties(message.properties)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"{path}, line {number}: {exc}; nothing was sent") from None
        messages.append(message)
    return messages


def _check_properties(properties: Mapping[str, Any]) -> None:
    """Properties are flat: numbers where export writes numbers, text elsewhere, so a hand-edited file
    fails here with its line number rather than half-way through the publish."""
    for name, value in properties.items():
        if value is None:
            continue
        wanted = int if name in INTEGER_PROPERTIES else str
        if not isinstance(value, wanted) or isinstance(value, bool):
            raise ValueError(
                f"property {name!r} must be {'an integer' if wanted is int else 'text'}, not {value!r}"
            )

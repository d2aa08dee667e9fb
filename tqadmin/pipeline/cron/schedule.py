"""Schedule files: ``[[schedule]]`` tables (interface.md), validated up front with one clear line per mistake.

Every check happens when the file is loaded, not when a tick comes due at 03:00: a bad cron expression, an
unknown time zone or a typo in a key is a usage error naming the file, the schedule and the key, so
``tqadmin cron`` refuses to start rather than silently never firing.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from tqadmin.errors import UsageError
from tqadmin.pipeline.job import RESERVED
from tqadmin.telemetry.task_names import MAX_TASK_TYPE_CHARS

MAX_NAME_CHARS = 200
"""A schedule's longest name: each tick's job id is ``cron:<name>:<epoch>``, at most 255 characters."""

CRON_FIELDS = ("scheduled", "fencing_token", "instance")
DEFAULT_MISFIRE_GRACE_S = 60.0
KNOWN_KEYS = {"name", "cron", "queue", "task_type", "job", "splay", "misfire_grace", "timezone"}


class ScheduleError(UsageError):
    """A schedule file or table that cannot be used as written."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """One named schedule. ``cron`` has 5 fields, or 6 with seconds first; times are in ``timezone``."""

    name: str
    cron: str
    queue: str
    task_type: str
    job: Mapping[str, Any] = field(default_factory=dict)
    splay: float = 0.0
    misfire_grace: float = DEFAULT_MISFIRE_GRACE_S
    timezone: str = "UTC"

    @property
    def has_seconds(self) -> bool:
        return len(self.cron.split()) == 6

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cron": self.cron,
            "queue": self.queue,
            "task_type": self.task_type,
            "job": dict(self.job),
            "splay": self.splay,
            "misfire_grace": self.misfire_grace,
            "timezone": self.timezone,
        }


def load_schedules(path: Path) -> tuple[Schedule, ...]:
    """Read and validate a schedule file."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ScheduleError(f"schedule file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScheduleError(f"schedule file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ScheduleError(f"cannot read schedule file {path}: {exc.strerror}") from None
    return parse_schedules(data, str(path))


def parse_schedules(data: Mapping[str, Any], source: str) -> tuple[Schedule, ...]:
    """Validate the parsed TOML document ``data``; ``source`` names it in errors."""
    extra = set(data) - {"schedule"}
    if extra:
        raise ScheduleError(f"{source}: unknown top-level key(s) {sorted(extra)}; only [[schedule]] tables")
    tables = data.get("schedule")
    if not isinstance(tables, list) or not tables:
        raise ScheduleError(f"{source}: no [[schedule]] tables")
    schedules = tuple(schedule_from_mapping(t, f"{source}: schedule #{i + 1}") for i, t in enumerate(tables))
    seen: set[str] = set()
    for schedule in schedules:
        if schedule.name in seen:
            raise ScheduleError(f"{source}: schedule name {schedule.name!r} is used twice")
        seen.add(schedule.name)
    return schedules


def schedule_from_mapping(table: Any, where: str) -> Schedule:
    """One schedule from a TOML table or a stored JSON object; ``where`` prefixes every error."""
    if not isinstance(table, Mapping):
        raise ScheduleError(f"{where} is not a table")
    name = _text(table, "name", where)
    if len(name) > MAX_NAME_CHARS:  # every tick's job id would be too long to be a job's
        raise ScheduleError(f"{where}: name is longer than {MAX_NAME_CHARS} characters")
    where = f"{where} ({name!r})"
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ScheduleError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(KNOWN_KEYS)}")
    if ":" in name or any(c.isspace() for c in name) or "{" in name or "}" in name:
        raise ScheduleError(
            f"{where}: name may not contain ':', '{{', '}}' or spaces (it is part of job ids)"
        )
    cron = " ".join(_text(table, "cron", where).split())
    fields = len(cron.split())
    if fields not in (5, 6):
        raise ScheduleError(
            f"{where}: cron {cron!r} has {fields} fields; use 5 (minute first) or 6 (seconds first)"
        )
    if not croniter.is_valid(cron, second_at_beginning=True):
        raise ScheduleError(f"{where}: cron {cron!r} is not a valid cron expression")
    timezone = table.get("timezone", "UTC")
    if not isinstance(timezone, str):
        raise ScheduleError(f"{where}: timezone must be a string such as 'UTC' or 'Europe/Paris'")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"{where}: unknown timezone {timezone!r} (use an IANA name such as 'UTC')"
        ) from None
    job = table.get("job", {})
    if not isinstance(job, Mapping):
        raise ScheduleError(f"{where}: job must be a table of fields")
    clash = sorted(set(job) & {*RESERVED, *CRON_FIELDS})
    if clash:
        raise ScheduleError(f"{where}: job may not set {clash}; tqadmin fills them for each tick")
    try:
        json.dumps(dict(job), allow_nan=False)
    except ValueError as exc:
        raise ScheduleError(f"{where}: job fields must be JSON values: {exc}") from None
    task_type = _text(table, "task_type", where)
    if len(task_type) > MAX_TASK_TYPE_CHARS:  # every tick's job would be dead-lettered as malformed
        raise ScheduleError(f"{where}: task_type is longer than {MAX_TASK_TYPE_CHARS} characters")
    return Schedule(
        name=name,
        cron=cron,
        queue=_text(table, "queue", where),
        task_type=task_type,
        job=dict(job),
        splay=_seconds(table, "splay", 0.0, where),
        misfire_grace=_seconds(table, "misfire_grace", DEFAULT_MISFIRE_GRACE_S, where),
        timezone=timezone,
    )


def _text(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ScheduleError(f"{where}: {key} is required and must be a non-empty string")
    return value.strip()


def _seconds(table: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ScheduleError(f"{where}: {key} must be a number of seconds, 0 or more")
    return float(value)

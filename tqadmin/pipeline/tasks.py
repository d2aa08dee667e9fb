"""The user's side of the worker: ``@task`` registration, the exceptions that steer retries, and ``ctx``.

A task module is plain Python that imports nothing but ``tqadmin``::

    from tqadmin import task, TransientError, FatalError

    @task("resize_image", max_retries=5)
    def resize_image(ctx, job): ...

``job`` is the job's JSON object as a dict (``task_type``, ``id``, ``timestamp``, ``retry_count`` and the
task's own fields). ``ctx.once(fn)`` does not run ``fn`` at once: it is run by the worker when the task
returns, as ``fn(tx)`` inside the same transaction that marks the job done, guarded by the claim's fencing
token. A task that raises after calling ``once`` therefore commits nothing, and a retry starts afresh.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqadmin.errors import UsageError
from tqadmin.store.completion.base import Effect, Transaction
from tqadmin.store.pauses.base import parse_duration
from tqadmin.telemetry.task_names import LABELS, MAX_TASK_TYPE_CHARS

TaskFn = Callable[["TaskContext", dict[str, Any]], object]


class TransientError(Exception):
    """The run failed for a reason that may pass (a timeout, a 503): retry with backoff."""


class FatalError(Exception):
    """Retrying cannot help (bad input, a 404): dead-letter the job now with reason ``fatal``."""


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A registered task; ``max_retries`` None means "use the worker's --max-retries"."""

    name: str
    fn: TaskFn
    max_retries: int | None = None
    break_after: int | None = None  # the breaker's failures in a row (0: none; None: the worker's)
    break_for_s: float | None = None  # how long it pauses the type (None: the worker's --break-for)


class TaskRegistry:
    """Task name -> :class:`TaskSpec`. The decorator fills :data:`REGISTRY`; tests may build their own."""

    def __init__(self) -> None:
        self._tasks: dict[str, TaskSpec] = {}

    def register(self, spec: TaskSpec) -> None:
        """Add ``spec``; a name no job could carry (past the task type limit) or that is one of telemetry's
        labels is a usage error, as is a second handler for a name."""
        if len(spec.name) > MAX_TASK_TYPE_CHARS:
            raise UsageError(
                f"task {spec.name[:40]!r}... is named in {len(spec.name)} characters; "
                f"a task type has at most {MAX_TASK_TYPE_CHARS}"
            )
        if spec.name in LABELS:
            raise UsageError(f"task {spec.name!r}: that name is reserved for jobs of no task; choose another")
        existing = self._tasks.get(spec.name)
        if existing is not None and _qualname(existing.fn) != _qualname(spec.fn):
            raise UsageError(
                f"task {spec.name!r} is registered twice ({_qualname(existing.fn)} and {_qualname(spec.fn)})"
            )
        self._tasks[spec.name] = spec

    def get(self, name: str) -> TaskSpec | None:
        return self._tasks.get(name)

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def __iter__(self) -> Iterator[TaskSpec]:
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, name: object) -> bool:
        return name in self._tasks


REGISTRY = TaskRegistry()


def task(
    name: str,
    *,
    max_retries: int | None = None,
    break_after: int | None = None,
    break_for: float | str | None = None,
) -> Callable[[TaskFn], TaskFn]:
    """Register ``fn`` as the handler of jobs whose ``task_type`` is ``name``; returns ``fn`` unchanged.

    ``break_after`` N and ``break_for`` (seconds, or ``30s``, ``10m``, ``2h``, ``1d``): N failed runs in a row
    of this task in one worker pause it for that long (:mod:`tqadmin.pipeline.breaker`); they win over the
    worker's ``--break-after`` and ``--break-for``; ``break_after=0`` keeps the task out of the breaker."""
    if not name:
        raise UsageError("@task needs a non-empty name")
    if max_retries is not None and max_retries < 0:
        raise UsageError(f"@task({name!r}): max_retries must not be negative")
    if break_after is not None and (isinstance(break_after, bool) or break_after < 0):
        raise UsageError(f"@task({name!r}): break_after must be a count of failures, 0 for no breaker")
    break_for_s = _break_seconds(name, break_for)

    def register(fn: TaskFn) -> TaskFn:
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise UsageError(f"@task({name!r}): async functions are not supported; use a plain def")
        REGISTRY.register(TaskSpec(name, fn, max_retries, break_after, break_for_s))
        return fn

    return register


def _break_seconds(name: str, given: float | str | None) -> float | None:
    """``break_for`` in seconds: a positive number, or a duration as ``--for`` takes one (never forever: a
    breaker's pause ends by itself)."""
    if given is None:
        return None
    try:
        seconds = float(given) if isinstance(given, int | float) else parse_duration(given)
    except UsageError:
        seconds = None
    if seconds is None or not 0 < seconds < float("inf") or isinstance(given, bool):
        raise UsageError(
            f"@task({name!r}): break_for {given!r} is not a duration: seconds, or 30s, 10m, 2h, 1d"
        )
    return seconds


def load_tasks(module: str, registry: TaskRegistry = REGISTRY) -> TaskRegistry:
    """Import the ``--tasks`` module (a dotted name, or a path to a ``.py`` file) and return the registry.

    Any error while importing the user's module is a usage error naming the module, never a traceback.
    """
    try:
        if module.endswith(".py") or "/" in module:
            _import_file(Path(module))
        else:
            importlib.import_module(module)
    except UsageError:
        raise
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"cannot import task module {module!r}: {exc}; check --tasks and PYTHONPATH"
        ) from None
    except (Exception, SystemExit) as exc:  # SystemExit: its code would pass for one of ours
        raise UsageError(f"task module {module!r} failed to import: {type(exc).__name__}: {exc}") from None
    if not len(registry):
        raise UsageError(f"task module {module!r} registers no task; decorate handlers with @task(name)")
    return registry


def _import_file(path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"task module file {path} does not exist")
    name = f"tqadmin_tasks_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load task module file {path}")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    spec.loader.exec_module(loaded)


def _qualname(fn: Callable[..., object]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


@dataclass(slots=True)
class TaskContext:
    """What a task sees of its run. Built by the worker, one per run."""

    job_id: str
    attempt: int
    task_type: str
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger] = field(
        default_factory=lambda: logging.getLogger("tqadmin.task")
    )
    queue: str = ""
    _effects: list[Effect] = field(default_factory=list)

    def once(self, fn: Effect) -> None:
        """Commit ``fn(tx)`` exactly once, atomically with this job's completion mark (see the module doc)."""
        self._effects.append(fn)

    @property
    def effects(self) -> tuple[Effect, ...]:
        return tuple(self._effects)

    def combined_effect(self) -> Effect | None:
        """One effect running every ``once`` effect in order, or None when the task registered none."""
        effects = self.effects
        if not effects:
            return None

        def run_all(tx: Transaction) -> None:
            for effect in effects:
                effect(tx)

        return run_all


def job_logger(base: logging.Logger, job_id: str, task_type: str) -> logging.LoggerAdapter[logging.Logger]:
    """A logger that tags every record with the job, for ``ctx.logger``."""
    return logging.LoggerAdapter(base, {"job_id": job_id, "task_type": task_type})

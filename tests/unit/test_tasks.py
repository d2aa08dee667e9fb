"""Task modules: registration by decorator, loading by --tasks, ctx.once deferring effects."""

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tqadmin import FatalError, TransientError, task
from tqadmin.errors import UsageError
from tqadmin.pipeline.tasks import REGISTRY, TaskContext, TaskRegistry, TaskSpec, load_tasks


def _name() -> str:
    return f"t_{uuid.uuid4().hex[:8]}"


def test_the_decorator_registers_the_handler_with_its_retry_budget_and_returns_it_unchanged() -> None:
    name = _name()

    def handler(ctx: TaskContext, job: dict[str, object]) -> None: ...

    assert task(name, max_retries=5)(handler) is handler
    spec = REGISTRY.get(name)
    assert spec == TaskSpec(name, handler, 5)
    assert name in REGISTRY.names()


def test_two_different_handlers_for_one_name_are_a_usage_error() -> None:
    registry = TaskRegistry()
    registry.register(TaskSpec("a", lambda ctx, job: None))
    with pytest.raises(UsageError, match="registered twice"):
        registry.register(TaskSpec("a", print))  # type: ignore[arg-type]


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(UsageError):
        task("x", max_retries=-1)


def test_a_task_module_is_loaded_from_a_file_path(tmp_path: Path) -> None:
    name = _name()
    module = tmp_path / f"{name}.py"
    module.write_text(
        textwrap.dedent(f"""
        from tqadmin import task

        @task({name!r}, max_retries=2)
        def handler(ctx, job):
            return job["n"] * 2
        """)
    )
    registry = load_tasks(str(module))
    spec = registry.get(name)
    assert spec is not None
    assert spec.max_retries == 2
    assert spec.fn(TaskContext("j", 1, name), {"n": 21}) == 42


def test_a_missing_or_broken_task_module_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no_such_module_xyz"):
        load_tasks("no_such_module_xyz")
    broken = tmp_path / "broken_tasks.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(UsageError, match=r"broken_tasks.*RuntimeError: boom"):
        load_tasks(str(broken))
    with pytest.raises(UsageError, match="does not exist"):
        load_tasks(str(tmp_path / "absent.py"))


def test_a_module_that_registers_nothing_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty_tasks.py"
    empty.write_text("X = 1\n")
    with pytest.raises(UsageError, match="registers no task"):
        load_tasks(str(empty), registry=TaskRegistry())


def test_once_defers_effects_and_runs_them_in_order_in_one_transaction() -> None:
    ctx = TaskContext("job-1", 1, "t")
    assert ctx.combined_effect() is None
    ctx.once(lambda tx: tx.append("first"))
    ctx.once(lambda tx: tx.append("second"))
    tx: list[str] = []
    effect = ctx.combined_effect()
    assert tx == []  # nothing ran yet: effects wait for the completion transaction
    assert effect is not None
    effect(tx)
    assert tx == ["first", "second"]


def test_the_user_exceptions_are_plain_exceptions() -> None:
    assert issubclass(TransientError, Exception)
    assert issubclass(FatalError, Exception)
    assert not issubclass(FatalError, TransientError)


def test_importing_tqadmin_for_a_task_module_loads_no_driver_and_no_textual() -> None:
    code = (
        "import sys; from tqadmin import task, TransientError, FatalError; "
        "print(','.join(m for m in ('redis','pika','textual','boto3','httpx','sqlite3') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == ""


def test_an_async_handler_is_refused_at_registration_rather_than_never_awaited() -> None:
    """Calling it would only create a coroutine: the job would be acked as done with nothing run."""

    async def handler(ctx: TaskContext, job: dict[str, object]) -> None: ...

    with pytest.raises(UsageError, match="async"):
        task(_name())(handler)  # type: ignore[arg-type]


def test_a_task_module_that_calls_sys_exit_on_import_is_a_usage_error_not_that_exit_code(
    tmp_path: Path,
) -> None:
    exiting = tmp_path / "exiting_tasks.py"
    exiting.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(UsageError, match=r"exiting_tasks.*SystemExit"):
        load_tasks(str(exiting), registry=TaskRegistry())

"""The architecture as a test: the floors, and which layers may load Textual or a driver.

The floors (the project's design, "Floors"), from the ground up; a module imports only from its own floor and
those below it:

    errors, masking, backoff
    -> the plugin contract, telemetry, audit, logs and the small files beside them (sqlite_file...)
    -> store, config, frameworks
    -> pipeline, admin and the broker plugins: one floor of islands, none importing another
    -> reading (the one read service: a profile's reading for every face)
    -> tui, exporter -> demo -> commands -> cli

Read from the source (AST), not from ``sys.modules``: every import statement counts, those inside functions
(lazy imports) and under ``if TYPE_CHECKING:`` too. A type-only import still ties the importer's meaning to a
higher floor (change the pipeline and the store's annotations change with it), and it is one edit away from a
run-time import; a layer that needs a type from above is missing a type of its own.

The one import that is not charged to the module that writes it is the package root's lazy re-export
(``from tqadmin import task``, PEP 562): ``tqadmin/__init__.py`` names :mod:`tqadmin.pipeline.tasks` in its
``LAZY_EXPORTS`` and imports it only when a name is asked for, so the import is charged to whoever asks
(``from tqadmin import task`` in a module counts as importing ``tqadmin.pipeline.tasks``), and the root itself
sits on the ground floor.

Every module of ``tqadmin/`` and ``plugins/`` must sit on a floor: a package in the table places its modules
(a new module of ``tqadmin/store/`` is on the store's floor), while a new top-level module, package or plugin
fails until it is placed.

Which modules may load Textual or a driver is checked by importing each in a process of its own (forked from a
bare interpreter, so what it pulls in is exactly what ``sys.modules`` shows).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import tqadmin

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ("tqadmin_memory", "tqadmin_rabbitmq", "tqadmin_redis", "tqadmin_sqlite", "tqadmin_sqs")
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "errors, masking, backoff",
        ("tqadmin", "tqadmin.errors", "tqadmin.masking", "tqadmin.backoff"),
    ),
    (
        "plugin contract, telemetry, audit, logs, sqlite_file",
        (
            "tqadmin.plugin",
            "tqadmin.telemetry",
            "tqadmin.audit",
            "tqadmin.logs",
            "tqadmin.sqlite_file",
            "tqadmin.sqlite_readonly",
            "tqadmin.file_access",
            # Small files every upper floor shares: the Redis plumbing (client, scripts, errors) of the store
            # and the Redis plugin, private files and folders, the URL prefix rule, plain text tables, the
            # finite-number check.
            "tqadmin.redis_client",
            "tqadmin.private",
            "tqadmin.private_file",
            "tqadmin.prefixes",
            "tqadmin.tables",
            "tqadmin.finite",
        ),
    ),
    (
        "store, config, frameworks, alerting",
        ("tqadmin.store", "tqadmin.config", "tqadmin.frameworks", "tqadmin.alerting"),
    ),
    ("pipeline, admin, plugins", ("tqadmin.pipeline", "tqadmin.admin", *PLUGINS)),
    # The one read service: a profile's broker, store and cron read once for every face above it.
    ("reading", ("tqadmin.reading",)),
    ("tui, exporter", ("tqadmin.tui", "tqadmin.exporter")),
    ("demo", ("tqadmin.demo",)),
    ("commands", ("tqadmin.commands",)),
    ("cli", ("tqadmin.cli",)),
)
# One floor, separate islands: the pipeline and the admin actions are two users of the contract, and a plugin
# is found through its entry point, never imported by another (nor by the pipeline or the admin actions).
# The dashboard and the exporter are two readers of the same floors below, on one floor of their own.
ISLANDS = ("tqadmin.pipeline", "tqadmin.admin", *PLUGINS, "tqadmin.tui", "tqadmin.exporter")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT / ("plugins" if path.is_relative_to(ROOT / "plugins") else "")).parts)
    parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    files = [*(ROOT / "tqadmin").rglob("*.py"), *(ROOT / "plugins").glob("*/**/*.py")]
    return {_module_name(path): path for path in sorted(files)}


SOURCES = _sources()
MODULES = sorted(SOURCES)


def _place(module: str) -> str | None:
    """The table entry that places ``module``: itself or its nearest package (the root only itself)."""
    names = {name for _, names in FLOORS for name in names}
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in names and (candidate != "tqadmin" or module == "tqadmin"):
            return candidate
    return None


def floor_of(module: str) -> int | None:
    place = _place(module)
    return next((i for i, (_, names) in enumerate(FLOORS) if place in names), None)


def _island(module: str) -> str | None:
    return next((i for i in ISLANDS if module == i or module.startswith(f"{i}.")), None)


def _ours(module: str) -> bool:
    return module.split(".", maxsplit=1)[0] in ("tqadmin", *PLUGINS) or module.startswith("tqadmin_")


def imported_by(module: str) -> set[str]:
    """The modules of ours ``module`` imports, anywhere in its source (``from P import name`` is the module
    ``P.name`` when there is one, else ``P``; a name of the root's ``LAZY_EXPORTS``, the module it comes
    from)."""
    tree = ast.parse(SOURCES[module].read_text())
    package = module if SOURCES[module].name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in SOURCES:
                    found.add(f"{base}.{alias.name}")
                elif base == "tqadmin" and alias.name in tqadmin.LAZY_EXPORTS:
                    found.add(tqadmin.LAZY_EXPORTS[alias.name])
                else:
                    found.add(base)
    if module == "tqadmin":  # the lazy re-exports are charged to whoever asks for them (see above)
        found -= set(tqadmin.LAZY_EXPORTS.values())
    return {name for name in found if _ours(name) and name != module}


def _describe(module: str) -> str:
    floor = floor_of(module)
    return f"{module} (floor {floor}: {FLOORS[floor][0]})" if floor is not None else f"{module} (no floor)"


def wrong_imports(module: str) -> Iterator[str]:
    """Each import of ``module`` that goes up a floor or across to another island, as a sentence."""
    floor, island = floor_of(module), _island(module)
    assert floor is not None, f"{module} sits on no floor: place it in FLOORS"
    for name in sorted(imported_by(module)):
        other = floor_of(name)
        if other is None:
            yield f"{_describe(module)} imports {name}, which sits on no floor: place it in FLOORS"
        elif other > floor:
            yield f"{_describe(module)} imports {_describe(name)}, a floor above its own"
        elif island is not None and other == floor and _island(name) not in (None, island):
            yield (
                f"{_describe(module)} imports {name}, across the floor: {island} and {_island(name)} must"
                " not import each other"
            )


def test_every_module_sits_on_a_floor() -> None:
    assert [m for m in MODULES if floor_of(m) is None] == [], "place these modules in FLOORS"
    assert [n for _, names in FLOORS for n in names if n not in SOURCES] == [], "FLOORS names a module gone"
    plugins = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").exists())
    assert plugins == list(PLUGINS), "place a new plugin in PLUGINS"


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_from_a_floor_above_its_own(module: str) -> None:
    wrong = list(wrong_imports(module))
    assert wrong == [], "\n".join(wrong)


def test_importing_the_package_loads_no_pipeline_but_its_task_api_still_imports() -> None:
    code = (
        "import sys, tqadmin; before = sorted(m for m in sys.modules if m.startswith('tqadmin.')); "
        "from tqadmin import task, TransientError, FatalError; import tqadmin.pipeline.tasks as t; "
        "assert (task, TransientError, FatalError) == (t.task, t.TransientError, t.FatalError); "
        "assert {'task', 'TransientError', 'FatalError'} <= set(dir(tqadmin)); print(before)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", "import tqadmin loaded " + result.stdout
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = tqadmin.nothing_here


DRIVERS = ["pika", "redis", "boto3", "botocore", "httpx"]
# Layers that must work without any driver installed; plugins and store implementations import theirs lazily.
DRIVER_FREE = (
    "tqadmin.plugin",
    "tqadmin.frameworks",
    "tqadmin.pipeline",
    "tqadmin.telemetry",
    "tqadmin.admin",
    "tqadmin.reading",
    "tqadmin.commands",
    "tqadmin.tui",
)
DRIVER_FREE_MODULES = {"tqadmin", "tqadmin.cli", "tqadmin.config", "tqadmin.errors", "tqadmin.store.base"}
# A plugin's faces may load its own driver when imported (the RabbitMQ and SQS ones do; the Redis plugin loads
# redis-py only when it connects); never another plugin's. The module that defines the plugin class, and its
# declarations, load none: the CLI reads every installed plugin's class to build its flags.
DRIVERS_OF = {
    "tqadmin_memory": [],
    "tqadmin_rabbitmq": ["pika", "httpx"],
    "tqadmin_redis": ["redis"],
    "tqadmin_sqlite": [],
    "tqadmin_sqs": ["boto3", "botocore"],
}
_FORK_EACH = """
import importlib, json, os, sys
modules, candidates = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for module in modules:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(module)
        except BaseException as exc:  # said in the failure, so a failed import is diagnosable
            os.write(write, json.dumps([f"<import failed: {exc!r}>"]).encode())
            os._exit(0)
        os.write(write, json.dumps([c for c in candidates if c in sys.modules]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        loaded = pipe.read()
    _, status = os.waitpid(pid, 0)
    print(json.dumps([module, json.loads(loaded) if status == 0 else [f"<import failed: status {status}>"]]))
"""
WATCHED = ["textual", *DRIVERS, "pickle", "_pickle", "shelve", "dill", "cloudpickle"]


@cache
def _loaded() -> dict[str, list[str]]:
    """For every module: which of ``WATCHED`` importing it alone loads (one process, one fork each)."""
    result = subprocess.run(
        [sys.executable, "-c", _FORK_EACH, json.dumps(MODULES), json.dumps(WATCHED)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(line) for line in result.stdout.splitlines())


def loaded_after_import(module: str, candidates: list[str]) -> list[str]:
    """Which of ``candidates`` importing ``module`` alone loads (and ``<import failed>`` when it fails)."""
    return [name for name in _loaded()[module] if name in candidates or name.startswith("<")]


def forbidden_for(module: str) -> list[str]:
    top = module.split(".", maxsplit=1)[0]
    if top in DRIVERS_OF:
        declarations = module in (top, f"{top}.capabilities")
        return ["textual", *(d for d in DRIVERS if declarations or d not in DRIVERS_OF[top])]
    driver_free = module in DRIVER_FREE_MODULES or module.startswith(DRIVER_FREE)
    return [*([] if module.startswith("tqadmin.tui") else ["textual"]), *(DRIVERS if driver_free else [])]


@pytest.mark.parametrize("module", MODULES)
def test_only_the_tui_imports_textual_and_pure_layers_import_no_driver(module: str) -> None:
    loaded = loaded_after_import(module, forbidden_for(module))
    assert loaded == [], f"{module} imports what its layer must not"


FRAMEWORKS = [name for name in MODULES if name.startswith("tqadmin.frameworks")]
# Reading other frameworks' messages sits just above the contract, below the admin actions that use it.
# The telemetry beside the contract: other frameworks' latencies go into tqadmin's own mergeable histograms.
FRAMEWORKS_MAY_IMPORT = (
    "tqadmin.frameworks",
    "tqadmin.plugin",
    "tqadmin.telemetry",
    "tqadmin.errors",
    "tqadmin.finite",
)
DESERIALISERS = ["pickle", "_pickle", "shelve", "dill", "cloudpickle"]


@pytest.mark.parametrize("module", FRAMEWORKS)
def test_the_framework_readers_sit_below_the_admin_layer_and_never_unpickle(module: str) -> None:
    higher = {n for n in imported_by(module) if not n.startswith(FRAMEWORKS_MAY_IMPORT)}
    assert higher == set(), f"{module} imports a layer above it"
    assert loaded_after_import(module, DESERIALISERS) == [], f"{module} loads a deserialiser"

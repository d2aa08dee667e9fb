"""The architecture as a test: the floors, and which layers may load Textual or a driver.

The floors (the project's design, "Floors"; drawn in docs/architecture.md, which a test below keeps equal to
this table, and ``python tests/unit/test_layering.py`` prints), from the ground up:

    errors and show/ (masking, broker strings, tables...): the leaves that import nothing of ours
    -> the plugin contract and its kit, telemetry, files/ (private files, audit, SQLite), connect/ (backoff,
       prefixes, the Redis plumbing)
    -> store, config, frameworks
    -> pipeline, admin, alerting and the broker plugins: one floor of islands, none importing another
    -> reading (the one read service: a profile's reading for every face)
    -> tui -> demo -> commands and the exporter -> cli

A module imports from its own room (its entry of ``FLOORS``) and from the floors below. An import across its
own floor, into another room of it, must be declared in ``SAME_FLOOR`` with its reason: one undeclared is how
a loop begins (a store/config loop would otherwise pass).

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
    # The leaves every floor shares: the error tree, and show/ (broker strings as data, masking, finite
    # numbers, plain tables, log lines), which imports nothing of ours but itself.
    ("errors, show", ("tqadmin", "tqadmin.errors", "tqadmin.show")),
    (
        "plugin contract and kit, telemetry, files, connect",
        (
            "tqadmin.plugin",
            # The kit a plugin may reuse (leased consumer, sessions, settles, retrying...), built on the
            # contract beside it.
            "tqadmin.plugin.kit",
            "tqadmin.telemetry",
            # The files tqadmin keeps: private folders and files, the audit log, SQLite files opened, shared.
            "tqadmin.files",
            # What connections share: the capped backoff, the URL's ?prefix=, the Redis plumbing of the store
            # and the Redis plugin.
            "tqadmin.connect",
        ),
    ),
    ("store, config, frameworks", ("tqadmin.store", "tqadmin.config", "tqadmin.frameworks")),
    # Alerting judges what the read side shows (DESIGN: verdicts are computed beside admin/, once), so it sits
    # with the admin actions, above the config whose thresholds it reads, below the dashboard that paints it.
    (
        "pipeline, admin, alerting, plugins",
        ("tqadmin.pipeline", "tqadmin.admin", "tqadmin.alerting", *PLUGINS),
    ),
    # The one read service: a profile's broker, store and cron read once for every face above it.
    ("reading", ("tqadmin.reading",)),
    ("tui", ("tqadmin.tui",)),
    ("demo", ("tqadmin.demo",)),
    # DESIGN: "an exporter sits with the commands": a face of its own, started by a command.
    ("commands, exporter", ("tqadmin.commands", "tqadmin.exporter")),
    ("cli", ("tqadmin.cli",)),
)
# Every entry of FLOORS is a room: it imports its own modules and anything on a floor below. An import across
# the floor, from one room into another on the same floor, is refused unless it is declared here, importer
# first, with the reason it does not make a loop (the other way round stays refused). The pipeline, the admin
# actions, alerting and the plugins declare none: they are islands, and a plugin is found through its entry
# point, never imported by another.
SAME_FLOOR: dict[tuple[str, str], str] = {
    ("tqadmin.plugin", "tqadmin.telemetry"): (
        "other frameworks' workers (plugin.workers) carry their task counts as telemetry's TaskStats, the"
        " value every face merges; telemetry knows nothing of plugins"
    ),
    ("tqadmin.plugin.kit", "tqadmin.plugin"): (
        "the kit (leased consumer, sessions, settles) is built on the contract's faces and values; the"
        " contract names what a plugin implements and never imports the kit"
    ),
    ("tqadmin.plugin.kit", "tqadmin.connect"): (
        "the kit's retry loop and listener wait the one capped backoff; connect knows nothing of plugins"
    ),
    ("tqadmin.commands", "tqadmin.exporter"): (
        "tqadmin exporter and tqadmin demo start the exporter; the exporter is a face that imports no command"
    ),
}


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
    """Each import of ``module`` that goes up a floor, or across its floor into another room without a line in
    ``SAME_FLOOR``, as a sentence."""
    floor, place = floor_of(module), _place(module)
    assert floor is not None, f"{module} sits on no floor: place it in FLOORS"
    for name in sorted(imported_by(module)):
        other = floor_of(name)
        if other is None:
            yield f"{_describe(module)} imports {name}, which sits on no floor: place it in FLOORS"
        elif other > floor:
            yield f"{_describe(module)} imports {_describe(name)}, a floor above its own"
        elif other == floor and _place(name) != place and (place, _place(name)) not in SAME_FLOOR:
            yield (
                f"{_describe(module)} imports {name}, across its floor: {place} -> {_place(name)} is not"
                " declared in SAME_FLOOR (declare it with the reason it makes no loop, or move one of them)"
            )


def test_every_module_sits_on_a_floor() -> None:
    assert [m for m in MODULES if floor_of(m) is None] == [], "place these modules in FLOORS"
    assert [n for _, names in FLOORS for n in names if n not in SOURCES] == [], "FLOORS names a module gone"
    plugins = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").exists())
    assert plugins == list(PLUGINS), "place a new plugin in PLUGINS"


def test_every_declared_same_floor_import_is_across_one_floor_and_still_made() -> None:
    made = {(_place(m), _place(n)) for m in MODULES for n in imported_by(m)}
    for (importer, imported), reason in SAME_FLOOR.items():
        pair = f"{importer} -> {imported}"
        assert floor_of(importer) == floor_of(imported) is not None, f"{pair}: not on one floor"
        assert (imported, importer) not in SAME_FLOOR, f"{pair}: declared both ways, a loop"
        assert (importer, imported) in made, f"{pair} is made no more: drop it from SAME_FLOOR"
        assert reason.strip(), f"{pair}: say why it makes no loop"


def _short(place: str) -> str:
    return "tqadmin (root)" if place == "tqadmin" else place.removeprefix("tqadmin.")


def floors_picture() -> str:
    """The floors as docs/architecture.md draws them, top floor first: each floor's rooms, then its declared
    imports across it (``─▶``)."""
    lines = []
    for number in reversed(range(len(FLOORS))):
        lines.append(f"{number}  " + " · ".join(_short(place) for place in FLOORS[number][1]))
        lines.extend(
            f"     {_short(importer)} ─▶ {_short(imported)}"
            for importer, imported in SAME_FLOOR
            if floor_of(importer) == number
        )
    return "\n".join(lines) + "\n"


def test_docs_architecture_draws_the_floors_of_this_table() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("<!-- floors: python tests/unit/test_layering.py -->\n```\n", 1)[-1].split("```", 1)[0]
    assert block == floors_picture(), "docs/architecture.md's floors differ from FLOORS:\n" + floors_picture()


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_from_a_floor_above_its_own(module: str) -> None:
    wrong = list(wrong_imports(module))
    assert wrong == [], "\n".join(wrong)


def _store_implementation(module: str) -> bool:
    """A Redis or SQLite implementation of a store contract, or plumbing only they use (``tqadmin/store/``
    holds a folder per contract: its ``base``, and ``redis``/``sqlite`` modules beside it)."""
    return module.startswith("tqadmin.store.") and module.rpartition(".")[2].startswith(("redis", "sqlite"))


def test_no_store_contract_imports_an_implementation_and_one_opener_picks_them() -> None:
    pickers = {
        module: sorted(name for name in imported_by(module) if _store_implementation(name))
        for module in MODULES
        if not _store_implementation(module)
    }
    assert {module: names for module, names in pickers.items() if names} == {
        "tqadmin.store.factory": [
            "tqadmin.store.completion.redis",
            "tqadmin.store.completion.sqlite",
            "tqadmin.store.cron.redis",
            "tqadmin.store.cron.sqlite",
            "tqadmin.store.history.redis",
            "tqadmin.store.history.sqlite",
            "tqadmin.store.pauses.redis",
            "tqadmin.store.pauses.sqlite",
            "tqadmin.store.triggers.redis",
            "tqadmin.store.triggers.sqlite",
        ]
    }, "open a store through tqadmin.store.factory, by the URL's scheme"


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
DRIVER_FREE_MODULES = {
    "tqadmin",
    "tqadmin.cli",
    "tqadmin.config",
    "tqadmin.errors",
    "tqadmin.store.completion.base",
}
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
    found = json.loads(loaded) if status == 0 else [f"<import failed: status {status}>"]
    print(json.dumps([module, found]))
    if not found:  # it loads nothing watched: imported here once, it spares the next forks its cost
        importlib.import_module(module)
"""
WATCHED = ["textual", *DRIVERS, "pickle", "_pickle", "shelve", "dill", "cloudpickle"]


@cache
def _loaded() -> dict[str, list[str]]:
    """For every module: which of ``WATCHED`` importing it alone loads (one process, one fork each). A module
    found to load none of them is then imported by the forking process too: every later fork starts with it
    loaded, which changes no answer (it brings nothing watched) and spares each fork its import."""
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
    "tqadmin.show.finite",
    "tqadmin.show.broker_text",
)
DESERIALISERS = ["pickle", "_pickle", "shelve", "dill", "cloudpickle"]


@pytest.mark.parametrize("module", FRAMEWORKS)
def test_the_framework_readers_sit_below_the_admin_layer_and_never_unpickle(module: str) -> None:
    higher = {n for n in imported_by(module) if not n.startswith(FRAMEWORKS_MAY_IMPORT)}
    assert higher == set(), f"{module} imports a layer above it"
    assert loaded_after_import(module, DESERIALISERS) == [], f"{module} loads a deserialiser"


if __name__ == "__main__":
    print(floors_picture(), end="")

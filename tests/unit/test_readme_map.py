"""README's map of the code is the code's: "How it is built" names every package, plugin and root module,
and the broker sentence every scheme a plugin registers (docs/architecture.md draws the floors)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _section(heading: str) -> str:
    return README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _packages(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if (p / "__init__.py").exists())


def test_how_it_is_built_names_every_package_plugin_and_root_module() -> None:
    built = _section("How it is built")
    packages = [f"tqadmin/{p.name}/" for p in _packages(ROOT / "tqadmin")]
    plugins = [f"plugins/{p.name}/" for p in _packages(ROOT / "plugins")]
    modules = [f"`{p.stem}`" for p in sorted((ROOT / "tqadmin").glob("*.py")) if p.name != "__init__.py"]
    assert [name for name in [*packages, *plugins, *modules] if name not in built] == []


def test_the_broker_sentence_names_every_registered_scheme() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    schemes = project["project"]["entry-points"]["tqadmin.brokers"]
    sentence = re.search(r"A broker is a URL: (.+?)\.\s", _section("Configuration"), re.S)
    assert sentence is not None
    assert [s for s in sorted(schemes) if f"`{s}://" not in sentence.group(1)] == []

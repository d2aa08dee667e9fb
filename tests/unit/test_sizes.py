"""The house's sizes: no module of the product over 400 lines and no class over 300 (DESIGN: small modules,
one job each). One that grows past them is split by job, as the worker was; the test names each, with its
size."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 300


def _product() -> list[Path]:
    files = [*(ROOT / "tqadmin").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]
    return sorted(files)


def oversized() -> list[str]:
    """Each module over ``MAX_MODULE_LINES`` and class over ``MAX_CLASS_LINES`` (its decorators to its last
    line), as ``path: N lines`` or ``path: Class N lines``."""
    found = []
    for path in _product():
        text = path.read_text()
        name = path.relative_to(ROOT).as_posix()
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (length := node.end_lineno - first + 1) > MAX_CLASS_LINES:
                    found.append(f"{name}: {node.name} {length} lines")
    return found


def test_no_module_over_400_lines_and_no_class_over_300() -> None:
    assert oversized() == [], "split these by job"

"""Run one bench over two commits in one session, taking turns, so the machine's load falls on both alike.

    python bench/before_after.py --before main --after HEAD --rounds 3 tui.py --sizes 10000 --minutes 0.2

Each commit is exported (``git archive``) into a folder of its own and the bench runs there with this
interpreter, the exported tree first on ``sys.path`` (and on ``PYTHONPATH`` for what the bench starts, such
as ``tqadmin exporter``), so both runs share every installed dependency and differ only by the code. The
rounds alternate before, after, before, after...; each run's own output is printed under its label.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export(rev: str, into: Path) -> Path:
    """The tree of ``rev`` in ``into``; its commit named in ``into/REV``."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    )
    (into / "REV").write_text(commit.stdout.strip())
    return into


def run(tree: Path, label: str, bench: str, arguments: list[str]) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "plugins"), str(tree / "bench")]),
    }
    print(f"== {label} ({(tree / 'REV').read_text()}): {bench} {' '.join(arguments)}", flush=True)
    subprocess.run([sys.executable, str(tree / "bench" / bench), *arguments], cwd=tree, env=env, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", required=True, help="the commit measured first in each round")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("bench", help="a script of bench/, e.g. tui.py")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the bench's own options")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tq-before-after-") as folder:
        trees = {
            "before": export(args.before, Path(folder) / "before"),
            "after": export(args.after, Path(folder) / "after"),
        }
        for round_ in range(1, args.rounds + 1):
            for label, tree in trees.items():
                run(tree, f"round {round_}, {label}", args.bench, args.arguments)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""tree/ is the git adapter: it imports nothing from the layers built on it."""

from __future__ import annotations

import ast
from pathlib import Path

import git_forge.tree

ABOVE = ("backlog", "loop", "reconcile", "recovery", "runner", "cli", "supervisor", "demo")


def imported_modules(source: Path) -> list[str]:
    """Every module ``source`` imports, at the top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def test_tree_imports_nothing_above_it() -> None:
    package = Path(git_forge.tree.__file__).parent
    modules = sorted(package.glob("*.py"))
    assert len(modules) > 10
    crossing = [f"{source.name}: {name}" for source in modules
                for name in imported_modules(source)
                if any(name == f"git_forge.{layer}" or name.startswith(f"git_forge.{layer}.")
                       for layer in ABOVE)]
    assert crossing == []


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    source = tmp_path / "bad.py"
    source.write_text("def f():\n    from git_forge.loop.state import read_state\n"
                      "from git_forge import reconcile\n")
    assert sorted(imported_modules(source)) == ["git_forge", "git_forge.loop.state",
                                                "git_forge.loop.state.read_state",
                                                "git_forge.reconcile"]

"""ARCHITECTURE.md's layer table is the law: every import in git_forge obeys it.

The table is read from ARCHITECTURE.md itself (between its ``layers`` markers), so
the map and the check cannot drift apart. Imports are found with ``ast``,
including those inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "git_forge"
MAP = ROOT / "ARCHITECTURE.md"


@dataclass(frozen=True)
class Unit:
    name: str
    modules: tuple[str, ...]  # "tree/" = a package and everything in it; "loop.state" = one module
    may_import: frozenset[str]


def parse_units(text: str) -> list[Unit]:
    """The rows of the table between ``<!-- layers:begin -->`` and ``<!-- layers:end -->``."""
    block = text.split("<!-- layers:begin -->", 1)[1].split("<!-- layers:end -->", 1)[0]
    units = []
    for line in block.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("Unit", "") or set(cells[0]) <= {"-"}:
            continue
        modules = tuple(re.findall(r"`([^`]+)`", cells[1]))
        units.append(Unit(cells[0], modules, frozenset(cells[2].split())))
    return units


@cache
def units() -> tuple[Unit, ...]:
    return tuple(parse_units(MAP.read_text(encoding="utf-8")))


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (``git_forge.tree.stash``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def unit_of(module: str) -> Unit | None:
    """The most specific unit naming ``module`` (a single module beats its package)."""
    relative = module.removeprefix("git_forge").lstrip(".") or "git_forge"
    best: tuple[int, Unit] | None = None
    for unit in units():
        for pattern in unit.modules:
            if pattern.endswith("/"):
                package = pattern[:-1].replace("/", ".")
                hit = relative == package or relative.startswith(package + ".")
                score = len(package)
            else:
                hit, score = relative == pattern, 10_000 + len(pattern)
            if hit and (best is None or score > best[0]):
                best = (score, unit)
    return best[1] if best else None


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The git_forge modules (and outside packages) a file imports, anywhere in it.
    ``from git_forge.reconcile import messages`` names the submodule when it is one."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found.update(submodules or {node.module})
    return found


def test_the_map_names_every_module():
    unmapped = [name for name in module_names() if unit_of(name) is None]
    assert unmapped == [], f"modules ARCHITECTURE.md does not place: {unmapped}"


def test_the_map_names_only_units_it_defines():
    names = {unit.name for unit in units()}
    assert len(names) == len(units()), "a unit is defined twice"
    for unit in units():
        assert unit.may_import <= names, f"{unit.name} may import unknown units"


def test_no_import_crosses_a_layer():
    modules = module_names()
    known = set(modules)
    crossings = []
    for name, path in modules.items():
        own = unit_of(name)
        assert own is not None
        for target in sorted(imports_of(path, known)):
            if not target.startswith("git_forge"):
                continue
            # ``git_forge.x.y`` where only ``git_forge.x`` is a module: a name in it
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            other = unit_of(target)
            assert other is not None, f"{name} imports {target}, which the map does not place"
            if other.name != own.name and other.name not in own.may_import:
                crossings.append(f"{name} ({own.name}) imports {target} ({other.name})")
    assert crossings == []


def _modules_in(*units_named: str) -> list[tuple[str, Path]]:
    return [(name, path) for name, path in module_names().items()
            if (unit := unit_of(name)) is not None and unit.name in units_named]


def test_only_tree_talks_to_git():
    known = set(module_names())
    offenders = []
    for name, path in module_names().items():
        if name.startswith("git_forge.tree"):
            continue
        if any(target == "pygit2" or target.startswith("pygit2.")
               for target in imports_of(path, known)):
            offenders.append(f"{name} imports pygit2")
        if re.search(r"""\[\s*["']git["']\s*,""", path.read_text(encoding="utf-8")):
            offenders.append(f"{name} runs git")
    assert offenders == []


def test_only_the_cli_knows_the_command_line():
    known = set(module_names())
    offenders = []
    for name, path in module_names().items():
        if name.startswith("git_forge.cli") or name == "git_forge.__main__":
            continue
        if "argparse" in imports_of(path, known):
            offenders.append(f"{name} imports argparse")
        if name == "git_forge.demo.agent":  # a program of its own: it prints as agents do
            continue
        calls = [node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                 and node.func.id == "print"]
        if calls:
            offenders.append(f"{name} prints")
    assert offenders == []


def test_the_watchdog_stands_alone():
    """It runs as ``python -I -S`` beside a supervisor that may be dead."""
    known = set(module_names())
    imported = imports_of(PACKAGE / "supervisor" / "watchdog_process.py", known)
    ours = {target for target in imported if target.startswith("git_forge")}
    assert ours <= {"git_forge.lockprobe"}
    probe = imports_of(PACKAGE / "lockprobe.py", known)
    assert not any(target.startswith("git_forge") for target in probe)
    assert not any(target.split(".")[0] in {"pygit2", "psutil", "yaml", "portalocker"}
                   for target in imported | probe)


@pytest.mark.parametrize("source, forbidden", [
    ("from git_forge.loop.session import run\n", "tree"),
    ("def f():\n    from git_forge.recovery import steps\n", "loop"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from git_forge.backlog.model import Item\n", "tree"),
])
def test_the_check_sees_a_crossing(tmp_path, source, forbidden):
    """The checker itself: an upward import, a lazy one and a type-only one are all found."""
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    known = set(module_names())
    targets = [target for target in imports_of(probe, known) if target.startswith("git_forge")]
    assert targets
    unit = next(unit for unit in units() if unit.name == forbidden)
    assert any((other := unit_of(target)) is not None and other.name != unit.name
               and other.name not in unit.may_import for target in targets)


#: The classes that write out equality or a repr themselves, each for a reason no
#: record has; every other record is a ``typing.NamedTuple``, the one record idiom.
HAND_WRITTEN = {
    "git_forge.backlog.item.Item": "a read-only mapping equal to its JSON object",
    "git_forge.config.Config": "a mutable mapping built layer by layer",
    "git_forge.supervisor.lifecycle.ProcessError": "an error, equal to another of its code",
}


def test_records_are_named_tuples():
    """No class subclasses ``tuple`` by hand or writes its own ``__eq__``, ``__hash__``
    or ``__repr__`` outside ``HAND_WRITTEN``."""
    offenders = []
    for name, path in module_names().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(base) for base in node.bases]
            written = {target.id if isinstance(target, ast.Name) else target.name
                       for statement in node.body
                       for target in ([statement] if isinstance(statement, ast.FunctionDef)
                                      else getattr(statement, "targets", []))
                       if isinstance(target, ast.Name | ast.FunctionDef)}
            by_hand = written & {"__eq__", "__hash__", "__repr__"}
            if any(base == "tuple" or base.startswith("tuple[") for base in bases):
                by_hand.add("a tuple subclass")
            if by_hand and f"{name}.{node.name}" not in HAND_WRITTEN:
                offenders.append(f"{name}.{node.name}: {sorted(by_hand)}")
    assert offenders == []

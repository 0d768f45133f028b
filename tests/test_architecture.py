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


def _resolved(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute name of the module a ``from`` import reads, relative ones included
    (``from . import x`` in ``git_forge.tree.repo`` reads ``git_forge.tree``)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = parts[:len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path, known: set[str], module: str = "") -> set[str]:
    """The git_forge modules (and outside packages) a file imports, anywhere in it.
    ``from git_forge.reconcile import messages`` names the submodule when it is one."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _resolved(node, module, path.name == "__init__.py")
            submodules = {f"{source}.{alias.name}" for alias in node.names} & known
            found.update(submodules or {source})
    return found


def _module_of(target: str, known: set[str]) -> str:
    """``git_forge.x.y`` where only ``git_forge.x`` is a module: a name in it."""
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def import_graph() -> dict[str, set[str]]:
    """Module → the git_forge modules it imports: at the top, inside functions and
    under ``TYPE_CHECKING`` alike, so that no lazy or type-only import hides a cycle.
    A package's ``__init__`` run before its submodule is not an edge."""
    modules = module_names()
    known = set(modules)
    return {name: {module for target in imports_of(path, known, name)
                   if target.startswith("git_forge")
                   and (module := _module_of(target, known)) != name}
            for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the modules along it, the first repeated at the end;
    ``None`` when there is none. An iterative depth-first search, in name order."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        pending = [iter(sorted(graph[start]))]
        while pending:
            following = next(pending[-1], None)
            if following is None:
                done.add(path.pop())
                pending.pop()
            elif following in path:
                return path[path.index(following):] + [following]
            elif following not in done:
                path.append(following)
                pending.append(iter(sorted(graph[following])))
    return None


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
        for target in sorted(imports_of(path, known, name)):
            if not target.startswith("git_forge"):
                continue
            target = _module_of(target, known)
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


def test_no_import_cycle():
    """No module imports, however indirectly, a module that imports it back: a cycle
    is broken by moving what both need below both, not by importing lazily."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or ())


@pytest.mark.parametrize("modules, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b", "c"}, "b": set(), "c": {"d"}, "d": {"c"}}, ["c", "d", "c"]),
])
def test_the_check_finds_a_cycle(modules, cycle):
    assert find_cycle(modules) == cycle


def test_the_graph_resolves_relative_and_lazy_imports(tmp_path):
    """A relative import inside a function is an edge like any other."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..backlog import topology\n    from . import model\n",
                     encoding="utf-8")
    found = imports_of(probe, set(module_names()), "git_forge.backlog.item")
    assert found == {"git_forge.backlog.topology", "git_forge.backlog.model"}


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

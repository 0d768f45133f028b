"""ARCHITECTURE.md's layer table is the law: every import in git_forge obeys it.

The table is read from ARCHITECTURE.md itself (between its ``layers`` markers), so
the map and the check cannot drift apart. Imports are found with ``ast``,
including those inside functions and under ``TYPE_CHECKING``. The same imports may
form no cycle, and one inside a function is kept only at a measured boundary
(``LAZY_IMPORTS``, ARCHITECTURE.md's "What is measured, and where").
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeGuard

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


def _postpones_annotations(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
               and any(alias.name == "annotations" for alias in node.names)
               for node in tree.body)


@cache
def _module_trees() -> dict[str, ast.Module]:
    """Every module of the package, parsed, by dotted name."""
    return {name: ast.parse(path.read_text("utf-8")) for name, path in module_names().items()}


def _record_names() -> frozenset[str]:
    """The names of the package's record classes, and ``TypedDict`` and ``NamedTuple``:
    a class derived from a record (``BranchJSON(ItemTreeJSON)``) is a record too."""
    classes = [node for tree in _module_trees().values() for node in tree.body
               if isinstance(node, ast.ClassDef)]
    names = {"TypedDict", "NamedTuple"}
    while grown := {node.name for node in classes if node.name not in names
                    and any(ast.unparse(base).rsplit(".", 1)[-1] in names
                            for base in node.bases)}:
        names |= grown
    return frozenset(names)


RECORDS = _record_names()


def _is_record(node: ast.stmt) -> TypeGuard[ast.ClassDef]:
    """Whether ``node``, a statement at a module's top, makes a record class (one
    defined under ``if TYPE_CHECKING:`` exists for the checker alone)."""
    return isinstance(node, ast.ClassDef) and any(
        ast.unparse(base).rsplit(".", 1)[-1] in RECORDS for base in node.bases)


def test_a_module_that_defines_records_keeps_its_field_types():
    """A record's field types are types, not text: with ``from __future__ import
    annotations`` ``typing`` compiles each one as the record is made, which every
    command pays at import (ARCHITECTURE.md, "What is measured, and where")."""
    records = {name: tree for name, tree in _module_trees().items()
               if any(_is_record(node) for node in tree.body)}
    assert "git_forge.status_report" in records and "git_forge.capture" in records
    assert [name for name, tree in records.items() if _postpones_annotations(tree)] == []


def _text_in(annotation: ast.expr) -> list[str]:
    """The text parts of an annotation, outside ``Literal[...]`` (whose strings are values)."""
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value).endswith("Literal"):
        return []
    if isinstance(annotation, ast.Constant):
        return [annotation.value] if isinstance(annotation.value, str) else []
    return [text for child in ast.iter_child_nodes(annotation) if isinstance(child, ast.expr)
            for text in _text_in(child)]


def test_no_record_field_is_typed_by_text():
    """A field typed ``"Operation | None"`` is compiled by ``typing`` when the record is
    made, and a process's first ``compile`` costs as much as a dozen modules' import
    (ARCHITECTURE.md, "What is measured, and where"): a record names its field types."""
    offenders = [f"{name}.{node.name}.{statement.target.id}: {texts}"
                 for name, tree in _module_trees().items()
                 for node in tree.body if _is_record(node)
                 for statement in node.body
                 if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                 and (texts := _text_in(statement.annotation))]
    assert offenders == []


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


#: The imports kept inside functions, and why: each sits at one of the boundaries
#: ARCHITECTURE.md's "What is measured, and where" lists, and saves what its figure
#: says (valgrind instructions of the budgeted command that would pay for it
#: otherwise, from an installed copy). Every other import is at its module's top.
LAZY_IMPORTS: dict[tuple[str, str], tuple[str, str]] = {
    # pygit2: imported where an index or a tree is written
    ("git_forge.tree.worktrees", "git_forge.tree.repo"): (
        "pygit2", "keeping a worktree's work; status lists worktrees with git (+293 M)"),
    ("git_forge.tree.worktrees", "git_forge.tree.worktree"): ("pygit2", "as above"),
    ("git_forge.tree.worktrees", "git_forge.tree.discard"): ("pygit2", "as above"),
    # the parser tree: a command loads its own module and parser, no other's
    ("git_forge.cli.main", "git_forge.cli.parser"): (
        "parser-tree", "--version builds no parser, a TAB neither (+51 M of --version)"),
    ("git_forge.cli.main", "git_forge.cli.output"): (
        "parser-tree", "--version wraps no stream (+50 M)"),
    ("git_forge.cli.main", "git_forge.cli.plain"): ("parser-tree", "as above (+26 M)"),
    ("git_forge.cli.main", "git_forge.reconcile.launch_probe"): (
        "parser-tree", "the hook's line alone looks at the tree first (+68 M of --version)"),
    ("git_forge.cli.main", "git_forge.cli.args"): (
        "parser-tree", "--version reads no command line (+3 M, 8% of --version)"),
    ("git_forge.cli.main", "git_forge.cli.completion"): (
        "parser-tree", "the TAB's own module (+79 M of --version)"),
    ("git_forge.cli.parser", "difflib"): (
        "parser-tree", "a mistyped command alone (+3 M, 2% of the pre-launch check)"),
    ("git_forge.cli.backlog", "git_forge.runner"): (
        "parser-tree", "backlog topology reads a runner, backlog list none (+3 M)"),
    ("git_forge.cli.decision", "git_forge.recovery.revoke"): (
        "parser-tree", "decision revoke's git (pygit2), not decision list's (+645 M)"),
    ("git_forge.cli.decision", "git_forge.runner"): ("parser-tree", "as above (+18 M)"),
    ("git_forge.cli.decision", "git_forge.loop.control"): ("parser-tree", "as above (+4 M)"),
    ("git_forge.cli.proc", "git_forge.supervisor.follow"): (
        "parser-tree", "proc output's reader, not proc list's or show's (+3 M)"),
    ("git_forge.cli.watch", "git_forge.cli.watch_app"): (
        "parser-tree", "the live view's Textual, not watch --once's (~260 ms: ~1,000 M)"),
    ("git_forge.cli.backlog", "git_forge.cli.ask"): (
        "parser-tree", "backlog drop's question, not backlog list's or show's (+2.3 ms)"),
    ("git_forge.cli.proc", "git_forge.supervisor.retention"): (
        "parser-tree", "proc prune's sweep, not proc list's or show's"),
    # the common case: what a budgeted command reads only in a state the benchmark's
    # common case is not in
    ("git_forge.capture", "subprocess"): (
        "common-case", "the clean pre-launch check spawns git alone (+10 M, 7%)"),
    ("git_forge.layout", "pathlib"): (
        "common-case", "the clean pre-launch check reads the str finders (+16 M, 11%)"),
    ("git_forge.layout", "platformdirs"): (
        "common-case", "where the XDG rule does not answer (+12 M of status)"),
    ("git_forge.loop.control", "pathlib"): ("common-case", "as layout's"),
    ("git_forge.loop.control", "git_forge.atomic"): (
        "common-case", "the clean pre-launch check writes nothing (+27 M, 19%)"),
    ("git_forge.loop.control", "git_forge.supervisor.liveness"): (
        "common-case", "only with an agent tree alive (+59 M of the pre-launch check)"),
    ("git_forge.loop.control", "git_forge.supervisor.paths"): ("common-case", "as above"),
    ("git_forge.loop.control", "git_forge.supervisor.manifest"): ("common-case", "as above"),
    ("git_forge.loop.control", "git_forge.supervisor.view"): (
        "common-case", "only while a run is live (+152 M of status)"),
    ("git_forge.cli.preflight", "git_forge.cli.stop"): (
        "common-case", "the verdict on a tree that is not clean (+139 M of the check)"),
    ("git_forge.cli.preflight", "git_forge.workspace"): (
        "common-case", "the configuration, for a location named (+25 M of the check)"),
    ("git_forge.config", "git_forge.yamlfile"): (
        "common-case", "PyYAML for a file with settings (+93 M of every read command)"),
    ("git_forge.clock", "datetime"): (
        "common-case", "a timestamp made or read (+4 M: 2% of status, 3% of decision list)"),
    ("git_forge.jsonfile", "git_forge.atomic"): (
        "common-case", "a read command writes nothing (+8 M of backlog list, +17 M of a TAB)"),
    ("git_forge.jsonfile", "git_forge.locks"): ("common-case", "as above (+2 M of a TAB)"),
    ("git_forge.atomic", "tempfile"): (
        "common-case", "a read command writes nothing (+2.4 ms of backlog list)"),
    ("git_forge.reconcile.item_trees", "git_forge.tree.worktrees"): (
        "common-case", "only with items' worktrees or branches (+8 M of status)"),
    ("git_forge.reconcile.item_trees", "git_forge.reconcile.conflicts"): (
        "common-case", "as above (+62 M of status)"),
    ("git_forge.runner", "git_forge.runner.external"): (
        "common-case", "a runner named by loopRunner.bin (+9 M of status)"),
    ("git_forge.runner.embedded", "git_forge.backlog.cache"): (
        "common-case", "only a command that derives (status) (+12 M of backlog topology)"),
    ("git_forge.cli.proc", "git_forge.backlog.model"): (
        "common-case", "an item id, not a handle (+11 M of proc show)"),
    ("git_forge.cli.proc", "git_forge.loop.control"): (
        "common-case", "only while a run is live (+4 M of proc list)"),
    ("git_forge.cli.output", "git_forge.tree.gitconfig"): (
        "common-case", "git's colour only when something is painted (+18 M, 15% of a TAB)"),
    ("git_forge.cli.output", "git_forge.tree.errors"): ("common-case", "as above"),
    ("git_forge.cli.completion", "importlib.resources"): (
        "common-case", "a TAB prints no script (+16 M, 13% of it)"),
    ("git_forge.completion_values", "git_forge.workspace"): (
        "common-case", "a config file that moves the backlog (+6 M, 4% of a TAB)"),
    ("git_forge.completion_values", "git_forge.backlog.topology"): (
        "common-case", "clusters, not a TAB on an item id (+10 M, 8% of it)"),
    ("git_forge.completion_values", "git_forge.backlog.item"): ("common-case", "as above"),
    ("git_forge.completion_values", "git_forge.backlog.errors"): ("common-case", "as above"),
    ("git_forge.supervisor.liveness", "psutil"): (
        "common-case", "ending an orphaned tree (+60 M, 18% of proc list)"),
    ("git_forge.supervisor.liveness", "git_forge.supervisor.process"): (
        "common-case", "as above"),
    # not a measured boundary: a program of its own
    ("git_forge.supervisor.watchdog_process", "git_forge.lockprobe"): (
        "watchdog", "python -I -S finds the package once main has put it on sys.path"),
}

#: The measured boundaries (ARCHITECTURE.md); an import kept for one says which in a
#: comment on its line or just above it (``# common-case boundary: …``).
BOUNDARIES = ("pygit2", "parser-tree", "common-case")


def function_imports(path: Path, module: str, known: set[str]
                     ) -> list[tuple[str, int, list[str]]]:
    """(imported module, line, the comment lines on and just above it) of every
    import inside a function of the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom) and inside:
                if isinstance(child, ast.Import):
                    targets = [alias.name for alias in child.names]
                else:
                    source = _resolved(child, module, path.name == "__init__.py")
                    targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known
                               else source for alias in child.names]
                above = child.lineno - 1  # the comments and imports just above it
                while above > 0 and (not lines[above - 1].strip() or lines[above - 1].strip()
                                     .startswith(("#", "from ", "import "))):
                    above -= 1
                comments = [line for line in lines[above:child.end_lineno] if "#" in line]
                found.extend((target, child.lineno, comments) for target in dict.fromkeys(targets))
            visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse("\n".join(lines)), False)
    return found


def test_imports_are_at_the_top_but_at_the_measured_boundaries():
    """An import inside a function is one ``LAZY_IMPORTS`` allows, and says the boundary
    it is kept for; and every entry there is still needed."""
    modules = module_names()
    known = set(modules)
    offenders, seen = [], set()
    for name, path in modules.items():
        for target, line, comments in function_imports(path, name, known):
            key = (name, target)
            seen.add(key)
            if key not in LAZY_IMPORTS:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {target} inside "
                                 "a function: import it at the top of the module")
                continue
            boundary = LAZY_IMPORTS[key][0]
            if boundary in BOUNDARIES and not any(f"{boundary} boundary" in comment
                                                  for comment in comments):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: no comment names the "
                                 f"{boundary} boundary")
    assert offenders == []
    assert sorted(set(LAZY_IMPORTS) - seen) == [], "entries no import needs any more"


def test_the_check_finds_an_import_inside_a_function(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\n\ndef f():\n    # common-case boundary: why\n"
                     "    from git_forge.backlog import topology\n    import json\n",
                     encoding="utf-8")
    found = function_imports(probe, "git_forge.probe", set(module_names()))
    assert [(target, line) for target, line, _ in found] == [
        ("git_forge.backlog.topology", 6), ("json", 7)]
    assert any("common-case boundary" in comment for comment in found[0][2])

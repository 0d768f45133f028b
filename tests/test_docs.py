"""The reference pages in docs/ say what the code does, and nothing it does not.

Each check reads a page and the code it describes, and fails when they disagree:
every journal event type the code writes, with its fields; every exit code with its
value; every property of each JSON Schema the package ships; the fields of the
documents git-forge writes; every link. A page marks the tables these checks read
with an HTML comment just above them (GitHub does not show it):
``<!-- fields: NAME -->`` (the first column names the fields of ``NAME``, see
``FIELDS``), ``<!-- schema: FILE#POINTER -->`` (the properties of a schema object)
and ``<!-- constants: exit_codes -->``. Event types are the ``#### `type``` headings
of docs/events.md, each with its table of fields.

The journal's events are found by reading the source with ``ast``: the
``….journal.append("type", field=…)`` calls (fields given as ``**mapping`` are
followed to the dict literals that mapping is built from) and the lifecycle events of
``loop/process_events.py``.
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from helpers import run_forge

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "git_forge"
SCHEMAS = PACKAGE / "schemas"
MAP = ROOT / "ARCHITECTURE.md"
README = ROOT / "README.md"


# --- reading the pages -------------------------------------------------------------------------


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prose_lines(text: str) -> Iterator[str]:
    """The lines of a Markdown text outside its fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)


def table_rows(lines: Iterator[str]) -> list[list[str]]:
    """The body rows of the Markdown table the lines start with (header and rule
    skipped), each as its cells."""
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return [row for row in rows[2:]]


def marked_tables(kind: str) -> dict[str, list[list[str]]]:
    """Every table marked ``<!-- kind: NAME -->`` in docs/, by NAME (each NAME once)."""
    found: dict[str, list[list[str]]] = {}
    for path in pages():
        lines = iter(text_of(path).splitlines())
        for line in lines:
            marker = re.fullmatch(rf"<!-- {kind}: (.+) -->", line.strip())
            if marker is not None:
                name = marker.group(1)
                assert name not in found, f"two tables marked {kind}: {name}"
                found[name] = table_rows(lines)
                assert found[name], f"{path.name}: no table after <!-- {kind}: {name} -->"
    return found


def named(cell: str) -> str:
    """The field a table's first cell names: its code span."""
    match = re.fullmatch(r"`([^`]+)`", cell)
    assert match is not None, f"a field table's first cell is not one `name`: {cell!r}"
    return match.group(1)


def names(rows: list[list[str]]) -> set[str]:
    return {named(row[0]) for row in rows}


# --- the documents the code writes -------------------------------------------------------------


def _manifest() -> dict[str, Any]:
    """A manifest with every field set, as it is written."""
    from git_forge.supervisor.manifest import (
        Command,
        EventIds,
        Manifest,
        Origin,
        Owner,
        Result,
    )

    stamp = "2026-12-04T03:15:12.107Z"
    return Manifest(handle="zVKjhIWQBnwt1HNRifjdIQ", owner=Owner("run"),
                    origin=Origin.of({"item_id": "001", "iteration": 1}),
                    command=Command(("agent",), "/", {"kind": "bwrap", "writable": ["/"],
                                                     "network": True}),
                    state="exited", created_at=stamp,
                    started_at=stamp, finished_at=stamp, deadline=stamp,
                    result=Result(0, "exited"), events=EventIds.mint(),
                    receipt={}, sandbox_removed=("/x/.git/commondir",)).to_dict()


def _receipt() -> dict[str, Any]:
    from git_forge.agents.receipt import Receipt

    return Receipt(agent="claude").to_json()  # with its conditional field


def _totals() -> dict[str, Any]:
    from git_forge.agents.receipt import Totals

    return Totals(checks=1).to_json()  # with its conditional field (a gate ran)


def _backlog_document() -> dict[str, Any]:
    from git_forge.backlog.store import new_document

    return new_document("project")


def _item_fields() -> set[str]:
    from git_forge.backlog.item import WIRE_NAMES

    return set(WIRE_NAMES.values())


def _state() -> dict[str, Any]:
    from git_forge.loop.state import RunState

    return RunState().to_json()


def _envelope() -> set[str]:
    from git_forge.loop.journal import _RESERVED

    return set(_RESERVED)


#: Each ``<!-- fields: NAME -->`` table's fields, as the code writes them.
FIELDS: dict[str, Callable[[], set[str]]] = {
    "backlog.json": lambda: set(_backlog_document()),
    "backlog item": _item_fields,
    "state.json": lambda: set(_state()),
    "event": _envelope,
    "receipt": lambda: set(_receipt()),
    "receipt.tokens": lambda: set(_receipt()["tokens"]),
    "totals": lambda: set(_totals()),
    "manifest": lambda: set(_manifest()),
    **{f"manifest.{part}": (lambda part=part: set(_manifest()[part]))
       for part in ("owner", "command", "cursors", "result", "events")},
}


def test_every_field_table_names_the_fields_the_code_writes() -> None:
    tables = marked_tables("fields")
    assert set(tables) == set(FIELDS) | {"status --json"}, (
        "a <!-- fields: NAME --> table the check does not know, or one missing")
    for name, fields in FIELDS.items():
        assert names(tables[name]) == fields(), name


def test_status_json_fields_are_the_ones_status_prints(git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    result = run_forge("status", "--json", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    assert names(marked_tables("fields")["status --json"]) == set(json.loads(result.stdout))


# --- the journal's events ----------------------------------------------------------------------


def _is_journal(node: ast.expr) -> bool:
    """``journal``, ``run.journal``, ``self.journal`` …, or ``Journal(…)``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "Journal"
    return ast.unparse(node).split(".")[-1] == "journal"


def _keys(node: ast.expr, scope: ast.AST) -> set[str]:
    """The keys a mapping expression can hold: a dict literal's, either branch of a
    conditional's, or — for a name — those of every dict literal assigned to it in
    ``scope`` and every ``name["key"] = …``."""
    if isinstance(node, ast.Dict):
        return {key.value for key in node.keys
                if isinstance(key, ast.Constant) and isinstance(key.value, str)}
    if isinstance(node, ast.IfExp):
        return _keys(node.body, scope) | _keys(node.orelse, scope)
    if not isinstance(node, ast.Name):
        raise AssertionError(f"cannot tell the fields of {ast.unparse(node)}")
    keys: set[str] = set()
    for statement in ast.walk(scope):
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [
                statement.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == node.id:
                    keys |= _keys(statement.value, scope)
                elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                      and target.value.id == node.id and isinstance(target.slice, ast.Constant)):
                    keys.add(target.slice.value)
    return keys


def _call_fields(call: ast.Call, scope: ast.AST) -> set[str]:
    fields = set()
    for keyword in call.keywords:
        if keyword.arg is None:
            fields |= _keys(keyword.value, scope)
        elif keyword.arg != "event_id":
            fields.add(keyword.arg)
    return fields


@cache
def code_events() -> dict[str, frozenset[str]]:
    """Every event type the code appends to a journal, with every field it gives it."""
    events: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for scope in ast.walk(tree):
            if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in ast.walk(scope):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "append" and _is_journal(call.func.value)
                        and call.args and isinstance(call.args[0], ast.Constant)):
                    events[call.args[0].value] |= _call_fields(call, scope)
            if path.name == "process_events.py" and scope.name == "event_fields":
                # the supervisor's lifecycle events: ``return "llm_exited", fields``
                for node in ast.walk(scope):
                    if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
                        kind, fields = node.value.elts
                        assert isinstance(kind, ast.Constant)
                        events[kind.value] |= _keys(fields, scope)
    return {kind: frozenset(fields) for kind, fields in events.items()}


@cache
def documented_events() -> dict[str, frozenset[str]]:
    """docs/events.md's event types (``#### `type```) and the fields each one's table names."""
    sections: dict[str, list[str]] = {}
    section: list[str] = []
    for line in prose_lines(text_of(DOCS / "events.md")):
        heading = re.fullmatch(r"(#+) (.*)", line)
        if heading is not None:
            section = []
            kind = re.fullmatch(r"`([a-z_]+)`", heading.group(2))
            if len(heading.group(1)) == 4 and kind is not None:
                assert kind.group(1) not in sections, f"{kind.group(1)} is documented twice"
                sections[kind.group(1)] = section
        else:
            section.append(line)
    return {kind: frozenset(names(table_rows(line for line in lines if line.startswith("|"))))
            for kind, lines in sections.items()}


def test_the_scan_finds_the_journal_events() -> None:
    """The scan itself: it must see events appended in each way the code appends them."""
    found = code_events()
    assert found["loop_started"] >= {"runId", "agent"}  # run.journal / journal
    assert found["loop_error"] == {"error"}  # Journal(…).append too
    assert "receipt" in found["llm_exited"]  # process_events: fields["receipt"] = …
    assert found["loop_cancelled"] >= {"itemId", "reason", "running"}  # **told
    assert "leftInTree" in found["needs_human"]  # **extra


def test_every_event_type_the_code_writes_is_documented_and_no_other() -> None:
    code, documented = code_events(), documented_events()
    assert sorted(set(code) - set(documented)) == [], "written but not in docs/events.md"
    assert sorted(set(documented) - set(code)) == [], "in docs/events.md but never written"


def test_each_event_type_documents_exactly_the_fields_the_code_gives_it() -> None:
    code, documented = code_events(), documented_events()
    for kind in sorted(code):
        assert documented[kind] == code[kind], kind


def test_the_journal_example_holds_only_documented_events_and_fields() -> None:
    documented = documented_events()
    envelope = _envelope()
    (block,) = code_blocks(text_of(DOCS / "events.md"), "ndjson")
    for line in block.splitlines():
        event = json.loads(line)
        assert envelope <= set(event), line
        assert set(event) - envelope <= documented[event["type"]], line


# --- exit codes, schemas, examples -------------------------------------------------------------


def test_every_exit_code_is_documented_with_its_value() -> None:
    from git_forge import exit_codes

    constants = {name: value for name, value in vars(exit_codes).items()
                 if name.isupper() and isinstance(value, int)}
    rows = marked_tables("constants")["exit_codes"]
    assert {named(row[0]): row[1] for row in rows} == {
        name: str(value) for name, value in constants.items()}
    text = text_of(DOCS / "exit-codes.md")
    for name in re.findall(r"`([A-Z][A-Z_]+)`", text):  # the per-command table's too
        assert name in constants, name


def schema_objects(node: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ``properties`` object of a schema, with its JSON pointer (those inside
    ``oneOf`` and its kind constrain properties declared elsewhere)."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in ("oneOf", "anyOf", "allOf", "not", "if", "then", "else"):
            continue
        if key == "properties" and isinstance(value, dict):
            yield f"{pointer}/properties", value
        yield from schema_objects(value, f"{pointer}/{key}")


def test_every_schema_property_is_documented_and_no_other() -> None:
    tables = marked_tables("schema")
    expected = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        for pointer, properties in schema_objects(json.loads(path.read_text("utf-8"))):
            expected[f"{path.name}{pointer}"] = set(properties)
    assert expected, "no schema found"
    assert set(tables) == set(expected), "a schema object without its table, or the reverse"
    for location, properties in expected.items():
        assert names(tables[location]) == properties, location


def test_every_json_example_parses_and_the_decision_record_meets_its_schema() -> None:
    for path in pages():
        for block in code_blocks(text_of(path), "json"):
            json.loads(block)
        for block in code_blocks(text_of(path), "ndjson"):
            for line in block.splitlines():
                json.loads(line)
    schema = json.loads((SCHEMAS / "forge-decisions.schema.json").read_text("utf-8"))
    records = [json.loads(block) for block in code_blocks(text_of(DOCS / "decisions.md"), "json")]
    assert records
    for record in records:
        jsonschema.Draft7Validator(schema).validate(record)


# --- links -------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(match.group(1)) for line in prose_lines(text_of(path))
            if (match := re.fullmatch(r"#+ (.*)", line))}


def links(path: Path) -> list[str]:
    text = "\n".join(prose_lines(text_of(path)))
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text)


def test_every_link_in_the_docs_and_to_them_resolves() -> None:
    checked = [(path, target) for path in pages() for target in links(path)]
    checked += [(path, target) for path in (MAP, README) for target in links(path)
                if target.startswith("docs/")]
    assert checked
    for path, target in checked:
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        assert resolved.exists(), f"{path.name}: {target} names no file"
        if anchor:
            assert anchor in anchors(resolved), f"{path.name}: {target} names no heading"


def test_the_index_and_the_architecture_link_every_page() -> None:
    index = set(links(DOCS / "README.md"))
    mapped = set(links(MAP))
    for path in pages():
        if path.name != "README.md":
            assert path.name in index, f"docs/README.md does not link {path.name}"
        assert f"docs/{path.name}" in mapped, f"ARCHITECTURE.md does not link {path.name}"


def test_the_docs_say_ctrl_c_at_recovers_prompt_is_no_130() -> None:
    """Ctrl-C at recover's prompt records the answers confirmed and defers the rest
    (tests/test_recover.py: exit 3); where the docs promise 130 to every interrupted
    command, they name that exception instead of contradicting it."""
    readme = " ".join(text_of(README).split())
    assert "130 when interrupted — except `Ctrl-C` at `recover`'s prompt" in readme
    rows = {line.split("|")[1].strip(): line for line in
            text_of(DOCS / "exit-codes.md").splitlines() if line.startswith("| ")}
    assert "not at `recover`'s prompt" in rows["every command"]
    assert "at its prompt is cancel-early, not 130" in rows["`recover`"]
    assert "otherwise 3 while a deferred needs-human question remains" in rows["`recover`"]

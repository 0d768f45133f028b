"""Each of git-forge's own documents has one type, a TypedDict beside the code that
writes it. mypy holds a document built as one literal to its type; these tests hold
the rest — a document assembled key by key, or read back through a validator's cast —
to the files a real run writes and to the decision record's JSON Schema."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

from builders import backlog_repo
from helpers import run_forge

from git_forge.agents.receipt import ReceiptJSON, TotalsJSON
from git_forge.backlog.item import WIRE_NAMES, BacklogItemJSON
from git_forge.backlog.store import BacklogJSON
from git_forge.decisions import DecisionJSON, DecisionRecordJSON
from git_forge.loop.journal import EventJSON
from git_forge.loop.process_events import LlmExitedJSON, LlmSpawnedJSON
from git_forge.loop.receipts import RunReceiptsJSON
from git_forge.loop.state import StateJSON
from git_forge.status_report import StatusJSON
from git_forge.supervisor.manifest import (
    CommandJSON,
    CursorsJSON,
    EventIdsJSON,
    ManifestJSON,
    OwnerJSON,
    ResultJSON,
)

AGENT = "import sys\nsys.stdin.read()\nprint('FORGE_DONE', flush=True)\n"


def names(kind: type) -> list[str]:
    """The keys a TypedDict names, in the order it names them."""
    return list(kind.__annotations__)


def required(kind: type) -> set[str]:
    """The keys a TypedDict requires (a module that defines records keeps its field
    types evaluated, so ``NotRequired[...]`` is seen)."""
    return set(kind.__required_keys__)  # type: ignore[attr-defined]


def assert_of(document: object, kind: type) -> None:
    """``document`` holds every key ``kind`` requires and none it does not name."""
    assert isinstance(document, dict), document
    assert required(kind) <= document.keys() <= set(names(kind)), (kind.__name__, list(document))


def test_a_run_writes_each_document_as_its_type_names_it(tmp_path: Path) -> None:
    root = backlog_repo(tmp_path / "repo", "One", ("--title", "Two", "--depends-on", "001"))
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    run = run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", cwd=root)
    assert run.returncode == 0, run.stderr
    forge = root / ".forge"

    state = json.loads((forge / "state.json").read_text())
    assert list(state) == names(StateJSON)  # every key, in the file's order

    backlog = json.loads((forge / "backlog.json").read_text())
    assert_of(backlog, BacklogJSON)
    assert [item["status"] for item in backlog["items"]] == ["done", "done"]
    for item in backlog["items"]:
        assert_of(item, BacklogItemJSON)

    events = [json.loads(line) for line in (forge / "events.ndjson").read_text().splitlines()]
    for event in events:  # the envelope first, then the fields of the event's type
        assert list(event)[:len(names(EventJSON))] == names(EventJSON)
    fields = {event["type"]: list(event)[len(names(EventJSON)):] for event in events}
    assert fields["llm_spawned"] == names(LlmSpawnedJSON)[:-1]  # no gate ran: no `gate`
    assert fields["llm_exited"] == names(LlmExitedJSON)[:-1]  # nor here

    manifests = sorted((forge / "proc").glob("*.manifest.json"))
    assert len(manifests) == 2
    for path in manifests:
        manifest = json.loads(path.read_text())
        assert_of(manifest, ManifestJSON)
        for key, kind in (("owner", OwnerJSON), ("cursors", CursorsJSON),
                          ("result", ResultJSON), ("events", EventIdsJSON)):
            assert list(manifest[key]) == names(kind)
        assert list(manifest["command"]) == names(CommandJSON)[:-1]  # not sandboxed
        assert list(manifest["receipt"]) == names(ReceiptJSON)[:-1]  # no fallback: no agent

    receipts = json.loads((forge / "run" / "receipts.json").read_text())
    assert list(receipts) == names(RunReceiptsJSON)
    assert list(receipts["totals"]) == names(TotalsJSON)[:-1]  # nor `verify`

    status = run_forge("status", "--json", cwd=root)
    assert status.returncode == 0, status.stderr
    assert list(json.loads(status.stdout)) == names(StatusJSON)


def test_an_item_type_names_the_fields_the_item_table_reads() -> None:
    assert set(names(BacklogItemJSON)) == set(WIRE_NAMES.values())


def test_the_decision_record_types_are_its_json_schema() -> None:
    schema = json.loads(resources.files("git_forge").joinpath(
        "schemas/forge-decisions.schema.json").read_text())
    assert set(names(DecisionRecordJSON)) == set(schema["properties"])
    assert required(DecisionRecordJSON) == set(schema["required"])
    entry = schema["definitions"]["entry"]
    assert names(DecisionJSON) == list(entry["properties"])  # the order entries are written in
    assert required(DecisionJSON) == set(entry["required"])

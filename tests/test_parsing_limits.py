"""Documents nested 100 000 deep and integers of 5001 digits, in every file git-forge
reads: one line ``Error: <file>: too deeply nested`` / ``… number too large``, exit 2,
nothing written — or, where a reader tolerates bad input by design, the same clear
words where it reports it. Real files, real child processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import git, run_forge, snapshot
from templates import Templates

from git_forge.exit_codes import RECOVER_FAILED_READ
from git_forge.parsing import MAX_DEPTH, DocumentTooComplex, load_json
from git_forge.yamlfile import load_yaml

DEPTH = 100_000
DEEP_ARRAY = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a":' * DEPTH + "1" + "}" * DEPTH
#: PyYAML's scanner is quadratic in flow nesting: a thousand levels (past the
#: recursion limit) already take a second to fail, so the helper's own test reads
#: that once and the commands read a document just past MAX_DEPTH, which the same
#: helper refuses the same way.
YAML_DEPTH = MAX_DEPTH + 50
DEEP_YAML = "[" * YAML_DEPTH + "]" * YAML_DEPTH
HUGE = "9" * 5001
HANDLE = "AbCdEfGhIjKlMnOpQrStUw"


def _build(base: Path) -> None:
    """One small project: a committed backlog of one item."""
    base.mkdir()
    git("init", "-q", "-b", "main", cwd=base)
    assert run_forge("init", cwd=base).returncode == 0
    run_forge("backlog", "add", "--title", "one", cwd=base)
    git("add", "-A", cwd=base)
    git("commit", "-qm", "backlog", cwd=base)


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("parsing-limits", _build, tmp_path / "repo")


def files(root: Path) -> dict[str, bytes]:
    """Every file's bytes, sidecar lock files aside (a writer takes its lock, then
    reads and refuses: the lock is no data)."""
    return {name: data for name, data in snapshot(root, skip_git=False).items()
            if not name.endswith(".lock")}


def refused(root: Path, problem: str, file: str, *args: str) -> None:
    """``git forge ARGS`` refuses in one line naming ``file``; no file changes."""
    before = files(root)
    result = run_forge(*args, cwd=root)
    assert result.returncode == 2, (args, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert lines[0].endswith(f"{file}: {problem}"), lines[0]
    assert files(root) == before


def test_the_helper_measures_any_depth_and_leaves_syntax_errors_to_readers() -> None:
    for text in (DEEP_ARRAY, DEEP_OBJECT, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        with pytest.raises(DocumentTooComplex, match="f.json: too deeply nested"):
            load_json(text, "f.json")
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.json")
    with pytest.raises(DocumentTooComplex, match="number too large"):
        load_json(f'{{"n": -{HUGE}}}', "f.json")
    assert load_json("9" * 4300, "f.json") == int("9" * 4300)
    with pytest.raises(json.JSONDecodeError):
        load_json("{", "f.json")
    for text in ("[" * 1000 + "]" * 1000, DEEP_YAML):  # a RecursionError; the depth check
        with pytest.raises(DocumentTooComplex, match="c.yaml: too deeply nested"):
            load_yaml(text, "c.yaml")
    with pytest.raises(DocumentTooComplex, match="number too large"):
        load_yaml(f"n: {HUGE}\n", "c.yaml")


@pytest.mark.parametrize("content,problem", [
    (DEEP_OBJECT, "too deeply nested"),
    ('{"schemaVersion": "1", "project": "p", "items": [{"id": "001", "priority": '
     + HUGE + "}]}", "number too large"),
])
def test_backlog_json(project: Path, content: str, problem: str) -> None:
    (project / ".forge" / "backlog.json").write_text(content)
    refused(project, problem, ".forge/backlog.json", "backlog", "list")
    refused(project, problem, ".forge/backlog.json", "backlog", "add", "--title", "two")


def test_state_json_is_reported_in_the_status_error_field(project: Path) -> None:
    (project / ".forge" / "state.json").write_text(DEEP_ARRAY)
    status = run_forge("status", "--json", cwd=project)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["error"].endswith("state.json: too deeply nested")


def test_decision_record(project: Path) -> None:
    record = project / ".forge" / "forge-decisions.json"
    for content, problem in ((DEEP_ARRAY, "too deeply nested"),
                             ('{"decisions": [], "n": ' + HUGE + "}", "number too large")):
        record.write_text(content)
        refused(project, problem, "forge-decisions.json", "decision", "list",
                "--backlog-dir", ".forge")
        refused(project, problem, "forge-decisions.json", "decision", "record",
                "--backlog-dir", ".forge", "--item", "001", "--question", "q",
                "--answer", "a")


def _entry(item: str, n: int, applied: bool = False, **extra: object) -> dict[str, object]:
    stamp = "2026-11-01T10:00:00Z"
    return {"itemId": item, "question": f"Question {n}?", "answer": f"answer {n}",
            "deferred": False, "decidedAt": stamp, "recordedBy": "test@host",
            "appliedAt": stamp if applied else None,
            "appliedBy": "test@host" if applied else None, **extra}


def test_unapplied_walks_only_the_entries_it_prints(project: Path) -> None:
    """``decision list --unapplied`` checks the depth of the entries it prints: a
    superseded or applied entry nested past the limit is never walked, so the
    answer is the one the record without it gives; a deep entry it would print is
    refused in one line, as the whole record is by every reader that walks it all
    (``decision list``, ``decision record``)."""
    deep: object = "bottom"
    for _ in range(MAX_DEPTH + 5):
        deep = {"down": [deep]}
    record = project / ".forge" / "forge-decisions.json"
    args = ("decision", "list", "--backlog-dir", ".forge", "--unapplied", "--json")

    def write(entries: list[dict[str, object]]) -> None:
        record.write_text(json.dumps({"schemaVersion": "1", "feature": ".forge",
                                      "createdAt": "2026-11-01T10:00:00Z",
                                      "decisions": entries}, indent=2) + "\n")

    latest = [_entry("001", 3), _entry("002", 4, applied=True), _entry("003", 5)]
    write(latest)
    plain = run_forge(*args, cwd=project)
    assert plain.returncode == 0, plain.stderr
    assert [entry["itemId"] for entry in json.loads(plain.stdout)["unapplied"]] == \
        ["001", "003"]
    write([_entry("001", 1, note=deep), _entry("003", 2, note=deep), *latest[:1],
           _entry("002", 4, applied=True, note=deep), *latest[2:]])
    answered = run_forge(*args, cwd=project)
    assert (answered.returncode, answered.stdout, answered.stderr) == (0, plain.stdout, "")
    refused(project, "too deeply nested", "forge-decisions.json", "decision", "list",
            "--backlog-dir", ".forge")
    refused(project, "too deeply nested", "forge-decisions.json", "decision", "record",
            "--backlog-dir", ".forge", "--item", "004", "--question", "q", "--answer", "a")
    before = files(project)  # recover appends to the record later: it checks it all first
    plan = run_forge("recover", "--plan", cwd=project)
    assert plan.returncode == RECOVER_FAILED_READ, plan.stderr
    assert plan.stderr.count("\n") == 1 and plan.stderr.startswith("Error: ")
    assert plan.stderr.endswith("forge-decisions.json: too deeply nested\n")
    assert files(project) == before
    write([*latest, _entry("001", 6, note=deep)])
    refused(project, "too deeply nested", "forge-decisions.json", *args)
    write([*latest[:2], _entry("003", 6, note=[deep])])  # without --json too
    refused(project, "too deeply nested", "forge-decisions.json", *args[:-1])


def test_a_deep_journal_line_is_skipped_like_any_bad_line(project: Path) -> None:
    events = project / ".forge" / "events.ndjson"
    events.write_text(DEEP_ARRAY + "\n" + json.dumps(
        {"seq": 1, "type": "item_selected", "itemId": "001"}) + "\n")
    (project / ".forge" / "state.json").write_text(json.dumps({"runId": "r"}))
    (project / "work.txt").write_text("stranded\n")
    result = run_forge("reconcile", "--json", cwd=project)
    assert result.returncode == 6 and "Traceback" not in result.stderr, result.stderr
    groups = json.loads(result.stdout)["groups"]
    assert [group["itemId"] for group in groups] == ["001"]  # the next line still counts


def test_a_manifest(project: Path) -> None:
    proc = project / ".forge" / "proc"
    proc.mkdir()
    (proc / f"{HANDLE}.manifest.json").write_text(DEEP_OBJECT)
    refused(project, "too deeply nested", f"{HANDLE}.manifest.json", "proc", "show", HANDLE)
    listed = run_forge("proc", "list", cwd=project)
    assert listed.returncode == 2 and "too deeply nested" in listed.stderr
    assert "Traceback" not in listed.stderr


def test_an_answers_file(project: Path) -> None:
    answers = project / "answers.json"
    for content, problem in ((DEEP_ARRAY, "too deeply nested"),
                             (f'{{"001": {HUGE}}}', "number too large"),  # YAML: text
                             ("- " * YAML_DEPTH + "x\n", "too deeply nested")):
        answers.write_text(content)
        refused(project, problem, "answers.json", "recover", "--answers", "answers.json")


@pytest.mark.parametrize("name", [".forge.yaml", "forge.config.json"])
def test_the_configuration(project: Path, name: str) -> None:
    config = project / name
    config.write_text(DEEP_ARRAY if name.endswith("json") else DEEP_YAML)
    refused(project, "too deeply nested", name, "config")
    config.write_text(f'{{"loopRunner": {{"x": {HUGE}}}}}' if name.endswith("json")
                      else f"loop:\n  iterations: {HUGE}\n")
    refused(project, "number too large", name, "config")


def test_the_user_configuration(project: Path, isolated_env: Path) -> None:
    user = isolated_env / ".config" / "git-forge"
    user.mkdir(parents=True)
    (user / "config.yaml").write_text(DEEP_YAML)
    refused(project, "too deeply nested", "config.yaml", "status")


def test_an_items_json_file(project: Path, tmp_path: Path) -> None:
    items = tmp_path / "items.json"
    items.write_text(DEEP_ARRAY)
    result = run_forge("backlog", "topology", "--items-json", str(items), cwd=project)
    assert result.returncode == 2 and "too deeply nested" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1

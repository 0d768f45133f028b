"""git forge decision revoke ITEM: an answer taken back — a superseding entry in the
append-only record, the item waiting for a decision again as it was before it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from builders import blocked, blocked_backlog, item, set_items
from helpers import git, run_forge, snapshot

RECORD = Path(".forge") / "forge-decisions.json"


def assert_schema_valid(path: Path) -> dict:
    """The record as the shipped schema (feature-forge's format) has it."""
    schema = json.loads(resources.files("git_forge").joinpath(
        "schemas/forge-decisions.schema.json").read_text())
    document = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(document)
    return document


@pytest.fixture
def answered(git_repo: Path) -> Path:
    """001 needed a human, 002 was plainly blocked, 004 deferred by the runner; recover
    answered them, applied and committed the answers; 003 is pending."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    set_items(git_repo / ".forge" / "backlog.json", [
        blocked("001", "Which database engine should we use?",
                blockedAt="2026-01-02T03:04:05Z"),
        item("002", "blocked", blockedReason="the staging server is down", needsHuman=False,
             deferred=False, blockedAt="2026-01-01T00:00:00Z"),
        item("003"),
        item("004", "blocked", blockedReason="the tests kept failing (deferred after 3 tries)",
             needsHuman=False, deferred=True)])
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    result = run_forge("recover", "--answer", "001=Use SQLite", "--answer", "002=it is up again",
                       "--answer", "004=skip the flaky test", cwd=git_repo)
    assert result.returncode == 0, result.stdout + result.stderr
    return git_repo


def items_of(root: Path) -> dict[str, dict]:
    return {i["id"]: i for i in json.loads((root / ".forge" / "backlog.json").read_text())[
        "items"]}


def test_revoke_supersedes_the_answer_and_the_item_waits_again(answered: Path) -> None:
    before = (answered / RECORD).read_text()
    result = run_forge("decision", "revoke", "001", cwd=answered)
    assert (result.returncode, result.stderr) == (0, ""), result.stdout
    assert result.stdout.splitlines()[:2] == [
        "revoked the answer to item 001: 'Use SQLite'",
        "  item 001 waits for a decision again (needs a human): Which database engine should "
        "we use?"]
    item_001 = items_of(answered)["001"]
    assert not {"humanAnswer", "answeredReason", "answeredKind"} & set(item_001)
    assert (item_001["status"], item_001["needsHuman"], item_001["blockedReason"]) == (
        "blocked", True, "Which database engine should we use?")
    assert item_001["blockedAt"] > "2026-01-02T03:04:05Z"  # it waits again since now
    # Append-only: every entry before is as it was; the new one is a deferral of the
    # same question, which supersedes the answer for 001 only.
    document = assert_schema_valid(answered / RECORD)
    old = json.loads(before)["decisions"]
    assert document["decisions"][:len(old)] == old
    new = document["decisions"][len(old):]
    assert [(e["itemId"], e["question"], e["answer"], e["deferred"], e["appliedAt"])
            for e in new] == [("001", "Which database engine should we use?", None, True, None)]
    unapplied = json.loads(run_forge("decision", "list", "--backlog-dir", ".forge",
                                     "--unapplied", "--json", cwd=answered).stdout)
    assert [(e["itemId"], e["deferred"]) for e in unapplied["unapplied"]] == [("001", True)]
    # recover asks it again; the other answer stands.
    plan = json.loads(run_forge("recover", "--plan", "--json", cwd=answered).stdout)
    assert [q["itemIds"] for q in plan["questions"]] == [["001"]]
    assert items_of(answered)["002"]["humanAnswer"] == "it is up again"


def test_a_blocked_or_deferred_item_goes_back_as_it_was_before_its_answer(
        answered: Path) -> None:
    result = run_forge("decision", "revoke", "2", "--json", cwd=answered)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert {k: shown[k] for k in ("itemId", "revokedAnswer", "status", "needsHuman",
                                  "deferred", "putBack")} == {
        "itemId": "002", "revokedAnswer": "it is up again", "status": "blocked",
        "needsHuman": False, "deferred": False, "putBack": True}
    assert shown["decision"]["answer"] is None and shown["decision"]["itemId"] == "002"
    item_002 = items_of(answered)["002"]
    assert not {"humanAnswer", "answeredReason", "answeredKind"} & set(item_002)
    assert (item_002["status"], item_002["needsHuman"], item_002["deferred"],
            item_002["blockedReason"]) == ("blocked", False, False,
                                           "the staging server is down")
    assert run_forge("decision", "revoke", "004", cwd=answered).returncode == 0
    item_004 = items_of(answered)["004"]
    assert (item_004["status"], item_004["needsHuman"], item_004["deferred"],
            item_004["blockedReason"]) == ("blocked", False, True,
                                           "the tests kept failing (deferred after 3 tries)")


def test_an_answer_recorded_but_not_yet_applied_is_revoked_in_the_record(
        git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    set_items(git_repo / ".forge" / "backlog.json", [blocked("001", "Which engine?")])
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    recorded = run_forge("decision", "record", "--backlog-dir", ".forge", "--item", "001",
                         "--question", "Which engine?", "--answer", "Use SQLite", cwd=git_repo)
    assert recorded.returncode == 0, recorded.stderr
    backlog = (git_repo / ".forge" / "backlog.json").read_bytes()
    result = run_forge("decision", "revoke", "001", "--json", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["putBack"] is False
    assert (git_repo / ".forge" / "backlog.json").read_bytes() == backlog
    # recover applies no answer for it: it asks again.
    report = json.loads(run_forge("recover", "--non-interactive", "--json", cwd=git_repo).stdout)
    assert report["applied"] == [] and items_of(git_repo)["001"]["status"] == "blocked"


def test_an_answer_given_with_backlog_answer_is_revoked_and_the_revoke_recorded(
        git_repo: Path) -> None:
    """The record never saw it, yet the item holds it for its next attempt."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    set_items(git_repo / ".forge" / "backlog.json", [
        blocked("001", "Which database engine do we deploy on?")])
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    assert run_forge("backlog", "answer", "1", "Use Postgres", cwd=git_repo).returncode == 0
    result = run_forge("decision", "revoke", "1", "--json", cwd=git_repo)
    assert (result.returncode, result.stderr) == (0, ""), result.stdout
    shown = json.loads(result.stdout)
    assert (shown["revokedAnswer"], shown["status"], shown["needsHuman"], shown["putBack"]) == (
        "Use Postgres", "blocked", True, True)
    item_001 = items_of(git_repo)["001"]
    assert not {"humanAnswer", "answeredReason", "answeredKind"} & set(item_001)
    assert item_001["blockedReason"] == "Which database engine do we deploy on?"
    document = assert_schema_valid(git_repo / RECORD)
    assert [(e["itemId"], e["question"], e["answer"], e["deferred"])
            for e in document["decisions"]] == [
        ("001", "Which database engine do we deploy on?", None, True)]


@pytest.mark.parametrize(("args", "message"), [
    (["009"], "no item 009 in the backlog"),
    (["003"], "item 003 has no answer to revoke (nothing is recorded for it)"),
    (["001", "001"], "item 001 has no answer to revoke (its latest decision is a deferral: "
                     "it is waiting for one already)"),
    (["ran"], "item 002 has run with that answer already (it is done): there is nothing to "
              "take back"),
])
def test_what_cannot_be_revoked_is_refused_and_changes_nothing(
        answered: Path, args: list[str], message: str) -> None:
    if args == ["001", "001"]:  # revoked once already
        assert run_forge("decision", "revoke", "001", cwd=answered).returncode == 0
        args = ["001"]
    if args == ["ran"]:  # its agent took the answer and finished
        document = json.loads((answered / ".forge" / "backlog.json").read_text())
        for entry in document["items"]:
            if entry["id"] == "002":
                entry.update(status="done", completedAt="2026-01-03T00:00:00Z")
                entry.pop("humanAnswer")
        (answered / ".forge" / "backlog.json").write_text(json.dumps(document, indent=2))
        args = ["002"]
    before = snapshot(answered, skip_git=False)
    result = run_forge("decision", "revoke", *args, cwd=answered)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"Error: {message}\n")
    after = snapshot(answered, skip_git=False)
    assert after == before


def test_revoking_an_answer_given_to_a_whole_question_names_the_items_that_keep_it(
        git_repo: Path) -> None:
    """An answer to a question of several items is one entry per item (one clusterId):
    a revoke takes it back from the item named, and says which items keep it."""
    root = blocked_backlog(git_repo, {"001": "Which database should we use?",
                                      "002": "Which database should we use?",
                                      "003": "Which database should we use?"})
    result = run_forge("recover", "--answer", "c001=Use SQLite", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    revoked = run_forge("decision", "revoke", "2", cwd=root)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.splitlines()[-1] == (
        "  items 001, 003 keep the same answer, given with it: git forge decision revoke 001 "
        "takes it back there")
    again = json.loads(run_forge("decision", "revoke", "3", "--json", cwd=root).stdout)
    assert again["sharedWith"] == ["001"]
    assert items_of(root)["001"]["humanAnswer"] == "Use SQLite"

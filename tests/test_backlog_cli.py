"""``git forge backlog …`` through the installed CLI in real repositories: the rauf
contract's outputs, positional forms, and refusals that write nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import write_backlog
from helpers import run_forge, snapshot

ITEMS = [
    {"id": "001", "type": "feature", "priority": 2, "title": "Done thing", "description": "",
     "acceptanceCriteria": [], "status": "done", "completedAt": "2026-01-01T00:00:00Z",
     "dependsOn": []},
    {"id": "002", "type": "bug", "priority": 1, "title": "Needs a decision", "description": "d",
     "acceptanceCriteria": ["works"], "status": "blocked", "completedAt": None,
     "dependsOn": ["001"], "blockedReason": "Which database?", "needsHuman": True,
     "deferred": False, "custom": "kept"},
    {"id": "003", "type": "chore", "priority": 3, "title": "Timed out", "status": "blocked",
     "blockedReason": "No signal after 3 attempts (deferred by runner)", "deferred": True},
    {"id": "004", "type": "test", "priority": 4, "title": "Plain block", "status": "blocked",
     "blockedReason": "flaky CI"},
    {"id": "005", "type": "refactor", "priority": 2, "title": "Later", "status": "pending",
     "dependsOn": ["002"]},
]


@pytest.fixture
def repo(git_repo: Path) -> Path:
    write_backlog(git_repo / ".forge", ITEMS, project="repo", extraTop={"k": 1})
    return git_repo


def backlog_items(repo: Path, backlog: str = ".forge") -> list[dict]:
    return json.loads((repo / backlog / "backlog.json").read_text())["items"]


def ok(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = run_forge("backlog", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


def refused(*args: str, cwd: Path, root: Path | None = None) -> str:
    """Run a command that must be refused; return the message after ``Error: ``."""
    before = snapshot(root or cwd)
    result = run_forge("backlog", *args, cwd=cwd)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert snapshot(root or cwd) == before
    return lines[0][len("Error: "):]


# --- list and show ------------------------------------------------------------------------


def test_list_json_is_a_bare_array_of_the_stored_items(repo: Path) -> None:
    listed = json.loads(ok("list", "--json", cwd=repo).stdout)
    assert listed == ITEMS
    assert json.loads(ok("list", ".", "--backlog", ".forge", "--json", cwd=repo).stdout) == ITEMS


@pytest.mark.parametrize(("status", "ids"), [
    ("blocked", ["002", "003", "004"]), ("needs-human", ["002"]), ("deferred", ["003"]),
    ("pending", ["005"]), ("done", ["001"]), ("in_progress", []),
])
def test_list_status_filter(repo: Path, status: str, ids: list[str]) -> None:
    listed = json.loads(ok("list", "--status", status, "--json", cwd=repo).stdout)
    assert [item["id"] for item in listed] == ids


def test_list_human_output(repo: Path) -> None:
    lines = ok("list", cwd=repo).stdout.splitlines()
    assert lines[1] == "002  needs-human  P1  bug       Needs a decision"
    assert lines[2].startswith("003  deferred     P3  chore")
    assert len(lines) == 5 and "\x1b[" not in ok("list", cwd=repo).stdout


def test_a_title_a_file_gives_over_several_lines_is_listed_on_one(git_repo: Path) -> None:
    """backlog.json may come from anywhere: its title's line break is shown escaped,
    so no title can draw a row of its own."""
    forged = "x\n003  done         P1  feature   FAKE"
    write_backlog(git_repo / ".forge", [{"id": "001", "type": "feature", "priority": 1,
                                         "title": forged, "status": "pending"}])
    listed = ok("list", cwd=git_repo).stdout.splitlines()
    assert len(listed) == 1 and listed[0].endswith("x\\n003  done         P1  feature   FAKE")
    assert ok("show", "001", cwd=git_repo).stdout.splitlines()[0] == (
        "001  x\\n003  done         P1  feature   FAKE")
    assert json.loads(ok("list", "--json", cwd=git_repo).stdout)[0]["title"] == forged


def test_a_sequence_a_title_leaves_open_takes_no_line_after_it(git_repo: Path) -> None:
    """The listing is printed in one write, but each title is made safe text alone,
    as when every line was printed by itself: an OSC string runs to its BEL, and one
    left open at the end of a title ends with that title, not lines later."""
    write_backlog(git_repo / ".forge", [
        {"id": "001", "type": "feature", "priority": 1, "title": "open \x1b]0;x",
         "status": "pending"},
        {"id": "002", "type": "bug", "priority": 2, "title": "next \x07 one",
         "status": "pending"}])
    assert ok("list", cwd=git_repo).stdout.splitlines() == [
        "001  pending      P1  feature   open ", "002  pending      P2  bug       next  one"]


def test_show(repo: Path) -> None:
    assert json.loads(ok("show", "002", "--json", cwd=repo).stdout) == ITEMS[1]
    assert json.loads(ok("show", ".", "002", "--json", cwd=repo).stdout) == ITEMS[1]
    text = ok("show", "002", cwd=repo).stdout
    assert text.startswith("002  Needs a decision\n")
    assert "status:     blocked (needs-human)" in text and "reason:     Which database?" in text
    assert "  - works" in text
    assert refused("show", "404", cwd=repo) == "Item not found: 404"


# --- answer -------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ['"; touch pwned #', "$(touch pwned)", "`touch pwned`",
                                    "Use Postgres — ünïcode, 'quotes' and \"more\""])
def test_answer_is_stored_literally(repo: Path, answer: str) -> None:
    result = ok("answer", ".", "002", answer, "--json", cwd=repo)
    assert json.loads(result.stdout) == {"answered": "002", "status": "pending"}
    item = backlog_items(repo)[1]
    assert item["humanAnswer"] == answer
    assert (item["status"], item["needsHuman"], item["deferred"]) == ("pending", False, False)
    assert "blockedReason" not in item and item["custom"] == "kept"
    assert not list(repo.rglob("pwned"))


def test_answer_without_path_and_from_a_subdirectory(repo: Path) -> None:
    assert ok("answer", "003", "retry with a longer timeout", cwd=repo).stdout == (
        "answered 003 (now pending)\n")
    sub = repo / "src"
    sub.mkdir()
    ok("answer", "004", "quarantine the flaky test", "--backlog", ".forge", cwd=sub)
    assert [i["status"] for i in backlog_items(repo)] == ["done", "blocked", "pending",
                                                          "pending", "pending"]
    document = json.loads((repo / ".forge" / "backlog.json").read_text())
    assert document["extraTop"] == {"k": 1} and list(document)[-1] == "extraTop"


@pytest.mark.parametrize(("args", "message"), [
    (["answer", "404", "x"], "Item not found: 404"),
    (["answer", ".", "005", "x"], "Item 005 is not blocked (status: pending)"),
    (["answer", "001", "x", "--json"], "Item 001 is not blocked (status: done)"),
    (["unblock", "404"], "Item not found: 404"),
    (["unblock", ".", "001", "--json"], "Item 001 is not blocked (status: done)"),
])
def test_contract_refusals_are_exact_and_write_nothing(
    repo: Path, args: list[str], message: str
) -> None:
    assert refused(*args, cwd=repo) == message


@pytest.mark.parametrize(("args", "fragment"), [
    (["answer", "002", "token ghp_abcdefghijklmnopqrstuvwxyz0123"], "looks like a credential"),
    (["answer", "002", "  "], "may not be empty"),
    (["add", "--title", "x", "--priority", "9"], "invalid priority 9"),
    (["add", "--title", "x", "--type", "epic"], 'invalid type "epic"'),
    (["add", "--title", "x", "--depends-on", "001,404"], "depends on unknown item 404"),
    (["add", "--title", "x", "--depends-on", "7"], "depends on unknown item 007"),
    (["add", "--title", "x", "--depends-on", "006"], "item 006: depends on itself"),
    (["add", "--title", "  "], "invalid title"),
    (["add", "--title", "x", "--priority", "high"], "invalid int value"),
    (["edit", "001", "--depends-on", "005"], "dependency cycle 001 → 005 → 002 → 001"),
    (["edit", "005", "--status", "done"], "illegal status transition pending → done"),
    (["edit", "001", "--status", "blocked"], "illegal status transition done → blocked"),
    (["edit", "001", "--status", "open"], 'invalid status "open"'),
    (["edit", "001"], "nothing to change"),
    (["edit", "404", "--title", "x"], "Item not found: 404"),
    (["list", "--status", "open"], "unknown status 'open'"),
    (["list", "--backlog", "nowhere"], "no backlog at"),
    (["answer", "002", "x", "--backlog", "nowhere"], "no backlog at"),
    (["list", "missing-dir"], "not a directory: missing-dir"),
    # a title is one line: a line break would forge a listing row or a commit trailer
    (["add", "--title", "x\nSigned-off-by: Mallory <m@example.com>"], "--title must be one line"),
    (["edit", "005", "--title", "a\rb"], "--title must be one line"),
    (["add", "--title", "x", "--depends-on", "001,002,001"], "names 001 more than once"),
])
def test_refusals(repo: Path, args: list[str], fragment: str) -> None:
    assert fragment in refused(*args, cwd=repo)


# --- unblock ------------------------------------------------------------------------------


def test_unblock_one_then_all_then_none(repo: Path) -> None:
    result = ok("unblock", "003", "--json", cwd=repo)
    assert json.loads(result.stdout) == {"unblockedCount": 1, "unblockedIds": ["003"]}
    item = backlog_items(repo)[2]
    assert (item["status"], item["deferred"], "blockedReason" in item) == ("pending", False,
                                                                           False)
    result = ok("unblock", ".", "--json", cwd=repo)
    assert json.loads(result.stdout) == {"unblockedCount": 2, "unblockedIds": ["002", "004"]}
    assert backlog_items(repo)[1]["needsHuman"] is False
    before = snapshot(repo)
    result = ok("unblock", "--json", cwd=repo)
    assert json.loads(result.stdout) == {"unblockedCount": 0, "unblockedIds": []}
    assert snapshot(repo) == before
    assert ok("unblock", cwd=repo).stdout == "nothing to unblock\n"


# --- add and edit -------------------------------------------------------------------------


def test_add_and_edit(repo: Path) -> None:
    assert ok("add", "--title", "New thing", "--type", "bug", "--priority", "1", "--ac", "one",
              "--ac", "two", "--depends-on", "001, 005", "--description", "why",
              "--notes", "n", cwd=repo).stdout == "006\n"
    added = backlog_items(repo)[-1]
    assert added == {"id": "006", "type": "bug", "priority": 1, "title": "New thing",
                     "description": "why", "acceptanceCriteria": ["one", "two"],
                     "status": "pending", "completedAt": None, "dependsOn": ["001", "005"],
                     "notes": "n"}
    edited = json.loads(ok("edit", "006", "--ac", "only", "--depends-on", "", "--title",
                           "Renamed", "--status", "in_progress", "--json", cwd=repo).stdout)
    assert (edited["acceptanceCriteria"], edited["dependsOn"], edited["title"],
            edited["status"]) == (["only"], [], "Renamed", "in_progress")
    assert ok("edit", ".", "006", "--status", "done", cwd=repo).stdout == ""
    done = backlog_items(repo)[-1]
    assert done["status"] == "done" and done["completedAt"].endswith("Z")
    ok("edit", "006", "--status", "pending", cwd=repo)
    assert backlog_items(repo)[-1]["completedAt"] is None
    added = json.loads(ok("add", "--title", "json", "--json", cwd=repo).stdout)
    assert (added["id"], added["type"], added["priority"]) == ("007", "feature", 2)


def test_corrupt_backlog_is_refused_everywhere(repo: Path) -> None:
    path = repo / ".forge" / "backlog.json"
    path.write_text('{"items": [')
    for args in (["list"], ["show", "001"], ["answer", "002", "x"], ["unblock"],
                 ["add", "--title", "x"], ["edit", "001", "--title", "x"]):
        message = refused(*args, cwd=repo)
        assert message.startswith(f"{path} is corrupt (not valid JSON")
    assert path.read_text() == '{"items": ['


def test_invalid_backlog_is_refused_with_the_problem(repo: Path) -> None:
    path = repo / ".forge" / "backlog.json"
    document = json.loads(path.read_text())
    document["items"][0]["status"] = "wip"
    path.write_text(json.dumps(document))
    message = refused("unblock", cwd=repo)
    assert message == (f'{path} is invalid (item 001: invalid status "wip" (expected one of '
                       "pending, in_progress, done, blocked)); refusing to touch it")


# --- topology -----------------------------------------------------------------------------


def test_topology_from_the_runner_and_from_files(repo: Path, tmp_path: Path) -> None:
    from git_forge.backlog.item import Item
    from git_forge.backlog.topology import topology_report
    from git_forge.cli.render_topology import render_text

    items = [Item(entry) for entry in ITEMS]
    expected = topology_report(items, cluster=True)
    from_runner = json.loads(ok("topology", "--cluster", "--json", cwd=repo).stdout)
    assert from_runner == expected
    assert expected["roots"][0]["id"] == "001" and expected["clusters"]
    items_file = tmp_path / "items.json"
    items_file.write_text(json.dumps({"items": ITEMS}))
    assert json.loads(ok("topology", "--items-json", str(items_file), "--cluster", "--json",
                         cwd=repo).stdout) == expected
    piped = run_forge("backlog", "topology", "--items-stdin", "--json", cwd=tmp_path,
                      input=json.dumps(ITEMS))
    assert json.loads(piped.stdout) == topology_report(items, cluster=False)
    assert ok("topology", cwd=repo).stdout.splitlines() == render_text(
        topology_report(items, cluster=False))


def test_topology_verbose_explains_feature_forges_lines(tmp_path: Path) -> None:
    items = [{"id": "1", "status": "done"},
             {"id": "2", "status": "blocked", "blockedReason": "staging down", "dependsOn": ["1"]},
             {"id": "3", "status": "pending", "dependsOn": ["2"]}]
    plain = run_forge("backlog", "topology", "--items-stdin", "--cluster", cwd=tmp_path,
                      input=json.dumps(items))
    verbose = run_forge("backlog", "topology", "--items-stdin", "--cluster", "-v",
                        cwd=tmp_path, input=json.dumps(items))
    assert plain.returncode == verbose.returncode == 0
    assert "  starved: no selectable item; blocking roots: \n" in plain.stdout
    assert "  cluster c2: members 2 (gates 1 item(s))\n" in plain.stdout
    lines = verbose.stdout.splitlines()
    assert [line for line in lines if not line.startswith("    ")] == plain.stdout.splitlines()
    assert lines[lines.index("  starved: no selectable item; blocking roots: ") + 1] == (
        "    waiting on 2 (blocked) gating 3")


def test_topology_asks_the_configured_runner_not_backlog_json(repo: Path) -> None:
    tools = repo / "tools"
    tools.mkdir()
    runner = tools / "runner"
    canned = [{"id": "1", "status": "pending"}, {"id": "2", "status": "pending",
                                                 "dependsOn": ["1"]}]
    runner.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(canned))})\n")
    runner.chmod(0o755)
    (repo / ".forge.yaml").write_text("loopRunner:\n  bin: tools/runner\n")
    payload = json.loads(ok("topology", "--json", cwd=repo).stdout)
    assert (payload["itemCount"], payload["maxChainDepth"]) == (2, 2)


def test_topology_takes_a_feature_forge_config_as_feature_forge_does(repo: Path) -> None:
    """``--config PATH``: the forge.config.json whose runner is asked; no file there
    is the defaults (feature-forge's callers pass one that may not exist), a file that
    is there and not valid is refused whatever the source."""
    plain = ok("topology", "--json", cwd=repo).stdout
    assert ok("topology", "--config", "absent.json", "--json", cwd=repo).stdout == plain
    runner = repo / "runner"
    runner.write_text(f"#!{sys.executable}\nprint('[{{\"id\": \"1\", \"status\": "
                      "\"pending\"}]')\n")
    runner.chmod(0o755)
    (repo / "forge.config.json").write_text(json.dumps({"loopRunner": {"bin": str(runner)}}))
    (repo / "other.json").write_text("{}")
    assert json.loads(ok("topology", "--json", cwd=repo).stdout)["itemCount"] == 1
    # the named file replaces the project's: its runner (none: the embedded one) is asked
    assert ok("topology", "--config", "other.json", "--json", cwd=repo).stdout == plain
    (repo / "items.json").write_text(json.dumps(ITEMS))
    (repo / "corrupt.json").write_text('{"loopRunner": ')
    for source in ([], ["--items-json", "items.json"]):
        message = refused("topology", "--config", "corrupt.json", *source, cwd=repo)
        assert message.startswith("corrupt.json is not valid JSON"), source


@pytest.mark.parametrize(("args", "stdin", "fragment"), [
    (["topology", "--items-json", "items.json", "--items-stdin"], None, "not allowed with"),
    (["topology", "--items-json", "missing.json"], None, "cannot read missing.json"),
    (["topology", "--items-json", "garbage.json"], None, "invalid items JSON"),
    (["topology", "--items-json", "shape.json"], None, "must be an array or an object"),
    (["topology", "--items-stdin"], "{not json", "invalid items JSON"),
    (["topology", "--items-stdin"], '[{"title": "no id"}]', "has no id"),
    (["topology", "--backlog", "nowhere"], None, "no backlog at"),
])
def test_topology_refusals(
    repo: Path, args: list[str], stdin: str | None, fragment: str
) -> None:
    (repo / "items.json").write_text(json.dumps(ITEMS))
    (repo / "garbage.json").write_text("[{")
    (repo / "shape.json").write_text('{"items": 3}')
    before = snapshot(repo)
    result = run_forge("backlog", *args, cwd=repo, input=stdin)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and fragment in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert snapshot(repo) == before


def test_topology_without_a_backlog_names_it(git_repo: Path) -> None:
    result = run_forge("backlog", "topology", cwd=git_repo)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"Error: no backlog at {git_repo.resolve()}/.forge/backlog.json "
                             "(git forge init sets one up)\n")

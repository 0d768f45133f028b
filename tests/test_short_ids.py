"""An item named by its number: ``3`` is ``003`` for every command that takes an item
id, as ``recover`` takes it — and a number two ids share is refused, naming both.

Real repositories, the installed CLI, real worktrees and branches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import backlog_repo, blocked, item, write_backlog
from helpers import git, run_forge, snapshot
from tree_helpers import commit_edits

from git_forge.layout import item_worktree
from git_forge.tree.worktrees import add_worktree


@pytest.fixture
def project(git_repo: Path) -> Path:
    write_backlog(git_repo / ".forge", [
        item("001", title="One"), item("002", title="Two"),
        blocked("003", "Which database?", title="Three"),
        item("010", title="Ten")])
    return git_repo


def ok(*args: str, cwd: Path) -> str:
    result = run_forge(*args, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def refused(*args: str, cwd: Path) -> str:
    """The one ``Error:`` line of a refusal (exit 2) that changed no file, not even
    recover's lock, which ``decision revoke`` takes."""
    before = snapshot(cwd)
    result = run_forge(*args, cwd=cwd)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    after = snapshot(cwd)
    assert after == before
    return lines[0]


def items(project: Path) -> dict[str, dict]:
    document = json.loads((project / ".forge" / "backlog.json").read_text())
    return {entry["id"]: entry for entry in document["items"]}


def test_the_backlog_verbs_take_an_items_number(project: Path) -> None:
    assert json.loads(ok("backlog", "show", "1", "--json", cwd=project))["id"] == "001"
    assert ok("backlog", "show", "10", cwd=project).startswith("010  Ten\n")
    ok("backlog", "edit", "2", "--priority", "1", "--depends-on", "1,10", cwd=project)
    assert (items(project)["002"]["priority"], items(project)["002"]["dependsOn"]) == (
        1, ["001", "010"])
    assert ok("backlog", "answer", "3", "Use SQLite", cwd=project) == (
        "answered 003 (now pending)\n")
    added = json.loads(ok("backlog", "add", "--title", "Eleven", "--depends-on", "3",
                          "--json", cwd=project))
    assert added["dependsOn"] == ["003"]
    # the same item twice, once by its number: named once is all a dependency may be
    assert refused("backlog", "edit", "2", "--depends-on", "1,001", cwd=project) == (
        "Error: dependsOn names 001 more than once")
    assert refused("backlog", "show", "4", cwd=project) == "Error: Item not found: 4"
    # white space around an id is no part of it, as --depends-on takes it
    assert json.loads(ok("backlog", "show", " 001 ", "--json", cwd=project))["id"] == "001"


def test_a_number_two_ids_share_is_refused_naming_both(git_repo: Path) -> None:
    write_backlog(git_repo / ".forge", [item("003", title="Three"),
                                        item("0003", title="Also three")])
    for argv in (["backlog", "show", "3"], ["backlog", "edit", "3", "--priority", "1"],
                 ["backlog", "done", "3"], ["backlog", "drop", "3", "--yes"],
                 ["backlog", "edit", "0003", "--depends-on", "3"], ["decision", "revoke", "3"]):
        assert refused(*argv, cwd=git_repo) == (
            "Error: 3 could be any of 0003, 003: write the id in full"), argv
    # an id written in full is that id, whatever else shares its number
    assert json.loads(ok("backlog", "show", "003", "--json", cwd=git_repo))["title"] == "Three"


def test_reconcile_integrates_an_item_named_by_its_number(tmp_path: Path) -> None:
    git_repo = backlog_repo(tmp_path / "repo", "One")
    tree = add_worktree(git_repo, item_worktree(git_repo / ".forge", "001"), "forge/001",
                        "main")
    commit_edits(tree, {"one.txt": "1\n"}, "[forge] 001: One")
    done = json.loads(ok("reconcile", "--integrate", "1", "--json", cwd=git_repo))
    assert [(i["itemId"], i["outcome"]) for i in done["integrations"]] == [
        ("001", "integrated")]
    assert (git_repo / "one.txt").read_text() == "1\n"
    assert git("branch", "--list", "forge/*", cwd=git_repo) == ""

"""Items' worktrees and branches: the launch blocker, reconcile, recover and status see
them all, and the merge queue integrates them.

Real repositories through ``git forge`` itself, real worktrees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import backlog_repo
from helpers import git, run_forge, snapshot
from templates import Templates
from tree_helpers import commit_edits, replace_line

from git_forge.layout import item_worktree
from git_forge.loop.state import RunState, write_state
from git_forge.reconcile.merge_queue import Conflicted, Integrated, MergeQueue
from git_forge.tree.worktrees import add_worktree, worktrees

STARTED = "2026-03-01T09:00:00Z"
LINES = "".join(f"line {n}\n" for n in range(1, 11))


def build_project(root: Path) -> None:
    backlog_repo(root, "One", "Two", "Three")
    (root / "shared.txt").write_text(LINES)
    git("add", "shared.txt", cwd=root)
    git("commit", "-qm", "shared", cwd=root)


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    root = templates.copy("item-trees-project", build_project, tmp_path / "repo")
    base = git("rev-parse", "HEAD", cwd=root).strip()
    write_state(root / ".forge", RunState(status="stopped", started_at=STARTED, run_id="r7",
                                          base_commit_hash=base))
    return root


def tree_of(project: Path, item: str) -> Path:
    return add_worktree(project, item_worktree(project / ".forge", item), f"forge/{item}",
                        "main")


def finish(tree: Path, edits: dict[str, str], item: str) -> str:
    return commit_edits(tree, edits, f"[forge] {item}: item {item}")


def line(number: int, text: str) -> str:
    return replace_line(LINES, number, text)


def everything(project: Path) -> tuple:
    """Refs, the main checkout, and every worktree's files: what a refusal must keep."""
    trees = sorted(str(t.path) for t in worktrees(project))
    return (git("for-each-ref", cwd=project), git("status", "--porcelain", "-uall", cwd=project),
            {tree: snapshot(tree) for tree in trees},
            git("stash", "list", cwd=project))


# --- the launch blocker ----------------------------------------------------------------------


def test_clean_and_integrated_worktrees_stop_nothing(project: Path) -> None:
    tree = tree_of(project, "001")
    finish(tree, {"one.txt": "1\n"}, "001")
    git("merge", "-q", "--ff-only", "forge/001", cwd=project)
    result = run_forge("preflight", cwd=project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    status = json.loads(run_forge("status", "--json", cwd=project).stdout)
    assert [(t["itemId"], t["state"], t["worktree"]) for t in status["worktrees"]] == [
        ("001", "integrated", str(tree))]


def test_a_dirty_worktree_stops_the_launch(project: Path) -> None:
    tree = tree_of(project, "002")
    (tree / "shared.txt").write_text("half done\n")
    (tree / "new file.txt").write_text("x\n")
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    err = result.stderr
    assert "STOP: a previous git-forge run left work in its items' worktrees" in err
    assert "item 002  worktree .forge/worktrees/002 (branch forge/002): uncommitted" in err
    assert " M shared.txt" in err and '?? "new file.txt"' in err
    assert f"git -C {tree} status" in err
    document = json.loads(run_forge("preflight", "--json", cwd=project).stdout)
    assert document["status"] == "stop" and document["paths"] == []
    assert document["worktrees"][0]["dirty"] == [{"path": "shared.txt", "xy": " M"},
                                                 {"path": "new file.txt", "xy": "??"}]
    loop = run_forge("loop", "run", "--agent", "true", cwd=project)
    assert loop.returncode == 2 and "item 002" in loop.stderr


def test_an_unintegrated_branch_stops_the_launch_without_a_state_file(project: Path) -> None:
    tree = tree_of(project, "003")
    finish(tree, {"three.txt": "3\n"}, "003")
    git("worktree", "remove", str(tree), cwd=project)  # the operator removed the tree only
    (project / ".forge" / "state.json").unlink()
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1
    assert "item 003  branch forge/003: commits at" in result.stderr
    assert "git log -p main..forge/003" in result.stderr
    assert "git forge reconcile --integrate 003" in result.stderr
    assert "git branch -D forge/003   (drops this work)" in result.stderr


# --- reconcile -------------------------------------------------------------------------------


def test_reconcile_commits_in_the_worktree_then_integrates(project: Path) -> None:
    tree = tree_of(project, "001")
    (tree / "one.txt").write_text("stranded\n")
    code_json = run_forge("reconcile", "--json", cwd=project)
    assert code_json.returncode == 6
    document = json.loads(code_json.stdout)
    group = document["groups"][0]
    assert (group["id"], group["worktree"], group["paths"]) == (
        "item-001", str(tree), [{"path": "one.txt", "xy": "??"}])
    main_before = git("rev-parse", "main", cwd=project)
    committed = run_forge("reconcile", "--commit", "item-001", cwd=project)
    assert committed.returncode == 6, committed.stderr  # now an unintegrated branch
    assert git("rev-parse", "main", cwd=project) == main_before
    assert git("log", "-1", "--format=%s", "forge/001", cwd=project).strip() == (
        "[forge] 001: stranded work (reconciled)")
    assert "still holding work not on main" in committed.stdout
    assert "git forge reconcile --integrate 001" in committed.stdout
    done = run_forge("reconcile", "--integrate", "001", "--json", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    integration = json.loads(done.stdout)["integrations"][0]
    assert integration["outcome"] == "integrated" and integration["kept"] is None
    assert (project / "one.txt").read_text() == "stranded\n"
    assert not tree.exists() and git("branch", "--list", "forge/*", cwd=project) == ""
    assert run_forge("preflight", cwd=project).returncode == 0


def test_integrate_refuses_an_unknown_item_and_changes_nothing(project: Path) -> None:
    tree_of(project, "001")
    before = everything(project)
    result = run_forge("reconcile", "--integrate", "009", cwd=project)
    assert result.returncode == 2
    assert result.stderr == ("Error: no branch forge/009 to integrate (items with a branch: "
                             "001)\n")
    assert everything(project) == before


def test_a_refused_integration_keeps_the_worktree_its_branch_and_ignored_files(
        project: Path) -> None:
    tree = tree_of(project, "002")
    commit = finish(tree, {"shared.txt": line(4, "two says four")}, "002")
    with (project / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("*.log\n")
    (tree / "build.log").write_text("the agent's build output: ignored, not committed\n")
    # the operator's own change to the path the item's commit touches: in the way
    (project / "shared.txt").write_text(line(4, "the operator's own four"))
    before = everything(project)
    assert "build.log" in before[2][str(tree)]
    result = run_forge("reconcile", "--integrate", "002", "--json", cwd=project)
    integration = json.loads(result.stdout)["integrations"][0]
    assert result.returncode == 6, result.stderr  # forge/002 is still not on main
    assert integration["outcome"] == "refused" and "shared.txt" in integration["reason"]
    assert (tree / "build.log").is_file()
    assert everything(project) == before
    assert git("rev-parse", "forge/002", cwd=project).strip() == commit
    assert "item-002" not in git("stash", "list", cwd=project)


def test_a_conflict_is_named_and_nothing_is_lost(project: Path) -> None:
    one, two = tree_of(project, "001"), tree_of(project, "002")
    finish(one, {"shared.txt": line(4, "one says four")}, "001")
    finish(two, {"shared.txt": line(4, "two says four")}, "002")
    first = run_forge("reconcile", "--integrate", "001", cwd=project)
    assert first.returncode == 6  # forge/002 is still not on main
    assert "item 001: integrated: 1 commit," in first.stdout
    before = everything(project)
    result = run_forge("reconcile", "--integrate", "002", "--json", cwd=project)
    assert result.returncode == 6
    outcome = json.loads(result.stdout)["integrations"][0]
    assert outcome["outcome"] == "conflict" and outcome["paths"] == ["shared.txt"]
    assert outcome["collidedWith"] == ["001"]
    assert outcome["reason"] == ("merge conflict in shared.txt with item 001: its work is kept "
                                 "on branch forge/002")
    assert everything(project) == before
    assert "one says four" in (project / "shared.txt").read_text()
    assert "two says four" in git("show", "forge/002:shared.txt", cwd=project)
    assert two.is_dir()


def test_reconcile_stashes_in_a_worktree_into_the_shared_stash_list(project: Path) -> None:
    tree = tree_of(project, "002")
    (tree / "shared.txt").write_text("unfinished\n")
    result = run_forge("reconcile", "--stash", "item-002", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["actions"] == [
        {"group": "item-002", "action": "stash", "ref": "stash@{0}",
         "commit": git("rev-parse", "stash@{0}", cwd=project).strip(),
         "worktree": str(tree)}]
    assert git("stash", "list", cwd=project).startswith(
        "stash@{0}: On forge/002: forge: stranded work from item 002 (reconciled)")
    assert (tree / "shared.txt").read_text() == LINES
    assert git("status", "--porcelain", cwd=project) == ""


def test_recover_sees_the_worktrees(project: Path) -> None:
    tree = tree_of(project, "001")
    (tree / "one.txt").write_text("x\n")
    result = run_forge("recover", "--non-interactive", "--json", cwd=project)
    document = json.loads(result.stdout)
    assert result.returncode == 6 and document["next"] == "git forge reconcile"
    assert [(g["id"], g.get("worktree")) for g in document["tree"]["groups"]] == [
        ("item-001", str(tree))]


# --- the merge queue -------------------------------------------------------------------------


def test_the_queue_integrates_in_completion_order(project: Path) -> None:
    trees = {item: tree_of(project, item) for item in ("001", "002", "003")}
    finish(trees["003"], {"three.txt": "3\n"}, "003")
    finish(trees["001"], {"shared.txt": line(1, "one")}, "001")
    finish(trees["002"], {"shared.txt": line(1, "two"), "two.txt": "2\n"}, "002")
    (trees["001"] / "left over.txt").write_text("after the commit\n")
    queue = MergeQueue(project, project / ".forge", "main")
    for item in ("003", "001", "002"):  # the order they finished in
        queue.push(item)
    assert queue.waiting == ("003", "001", "002")
    outcomes = queue.drain()
    assert [type(o) for o in outcomes] == [Integrated, Integrated, Conflicted]
    assert isinstance(outcomes[1], Integrated) and "left over.txt" in str(outcomes[1].kept)
    assert outcomes[0].kept is None and not trees["003"].exists()
    assert trees["001"].is_dir() and (trees["001"] / "left over.txt").exists()
    conflict = outcomes[2]
    assert isinstance(conflict, Conflicted) and conflict.collided_with == ("001",)
    assert git("log", "--format=%s", "main", "-3", cwd=project).split("\n")[:2] == [
        "[forge] 001: item 001", "[forge] 003: item 003"]
    assert git("rev-list", "--merges", "main", cwd=project) == ""
    assert queue.next() is None
    status = json.loads(run_forge("status", "--json", cwd=project).stdout)
    assert {t["itemId"]: t["state"] for t in status["worktrees"]} == {
        "001": "dirty", "002": "unintegrated"}

"""git forge reconcile: attribution as candidates, and nothing changes without a decision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from builders import backlog_repo
from helpers import PtySession, git, run_forge, snapshot
from templates import Templates

from git_forge.loop.state import RunState, write_state


def build_project(root: Path) -> None:
    """Three items, item 001's commit, and a stopped run that was on 002."""
    backlog_repo(root, "One", "Two", "Three")
    base = git("rev-parse", "HEAD", cwd=root).strip()
    (root / "a.txt").write_text("item one\n")
    git("add", "a.txt", cwd=root)
    git("commit", "-qm", "[forge] 001: One", cwd=root)
    write_state(root / ".forge", RunState(status="stopped", started_at="2026-01-01T00:00:00Z",
                                          current_item="002", base_commit_hash=base, run_id="r1"))


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("reconcile-project", build_project, tmp_path / "repo")


def dirty(project: Path) -> None:
    (project / "a.txt").write_text("item one, more\n")  # touched by item 001's commit
    (project / "b dir").mkdir()
    (project / "b dir" / "new.txt").write_text("in flight\n")  # → item in flight (002)


def report(project: Path, *args: str) -> tuple[int, dict]:
    result = run_forge("reconcile", "--json", *args, cwd=project)
    return result.returncode, json.loads(result.stdout) if result.stdout else {}


def test_clean_tree_is_silent(project: Path) -> None:
    result = run_forge("reconcile", cwd=project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert report(project) == (0, {"groups": [], "stashes": [], "actions": []})


def test_abandoned_work_is_listed_on_a_clean_tree(project: Path) -> None:
    """An item's abandoned work is listed, with the commands to see, apply and drop
    it, whether or not the tree holds anything else."""
    (project / "a.txt").write_text("left by item 001\n")
    kept = git("stash", "create", "forge: abandoned work from item 001", cwd=project).strip()
    git("update-ref", "refs/forge/abandoned/001/20260101T000000Z", kept, cwd=project)
    git("checkout", "--", "a.txt", cwd=project)
    before = snapshot(project)
    result = run_forge("reconcile", cwd=project)
    assert (result.returncode, result.stderr) == (0, ""), result.stdout + result.stderr
    assert "refs/forge/abandoned/001/20260101T000000Z  item 001" in result.stdout
    assert "git stash show --include-untracked -p refs/forge/abandoned/001/" in result.stdout
    assert "git update-ref -d refs/forge/abandoned/001/20260101T000000Z" in result.stdout
    assert snapshot(project) == before


def test_attribution_is_candidates_and_nothing_changes(project: Path) -> None:
    dirty(project)
    before = snapshot(project)
    code, document = report(project)
    assert code == 6
    groups = {g["id"]: g for g in document["groups"]}
    assert list(groups) == ["item-001", "item-002"]
    assert groups["item-001"]["paths"] == [{"path": "a.txt", "xy": " M"}]
    assert groups["item-001"]["candidate"] is True
    assert any("touched by item 001's commit" in e for e in groups["item-001"]["evidence"])
    assert groups["item-002"]["paths"] == [{"path": "b dir/new.txt", "xy": "??"}]
    assert any("in flight" in e for e in groups["item-002"]["evidence"])
    assert document["actions"] == []
    human = run_forge("reconcile", cwd=project)
    assert human.returncode == 6 and "candidate of item 001" in human.stdout
    assert "Nothing was changed" in human.stderr
    assert snapshot(project) == before


@pytest.mark.parametrize("state", [None, "{torn"])
def test_missing_or_corrupt_evidence_is_one_unattributed_group(project: Path,
                                                               state: str | None) -> None:
    state_file = project / ".forge" / "state.json"
    if state is None:
        state_file.unlink()
    else:
        state_file.write_text(state)
    dirty(project)
    code, document = report(project)
    assert code == 6
    assert [(g["id"], len(g["paths"])) for g in document["groups"]] == [("unattributed", 2)]


def test_commit_a_group_touches_only_its_paths(project: Path) -> None:
    dirty(project)
    (project / "README.md").write_text("operator edit\n")  # also a candidate of 002
    before = snapshot(project)
    code, document = report(project, "--commit", "item-001")
    assert code == 6
    assert [a["group"] for a in document["actions"]] == ["item-001"]
    assert git("log", "-1", "--format=%s", cwd=project).strip() == (
        "[forge] 001: stranded work (reconciled)")
    assert git("show", "--name-only", "--format=", "HEAD", cwd=project) == "a.txt\n"
    assert snapshot(project) == before  # the working tree itself is unchanged
    assert git("status", "--porcelain", "-uall", cwd=project) == (
        ' M README.md\n?? "b dir/new.txt"\n')


def test_stash_a_group(project: Path) -> None:
    dirty(project)
    code, document = report(project, "--stash", "item-001", "--leave", "item-002")
    assert code == 6
    assert (project / "a.txt").read_text() == "item one\n"
    assert (project / "b dir" / "new.txt").exists()
    assert "stranded work from item 001" in git("stash", "list", cwd=project)
    assert document["actions"][0]["ref"] == "stash@{0}"
    code, document = report(project)
    assert [s["itemId"] for s in document["stashes"]] == ["001"]


def test_discard_needs_confirmation_and_is_recoverable(project: Path) -> None:
    dirty(project)
    before = snapshot(project)
    result = run_forge("reconcile", "--discard", "item-002", cwd=project)
    assert result.returncode == 2 and result.stderr.startswith("Error: --discard needs")
    assert snapshot(project) == before
    code, document = report(project, "--discard", "item-002", "--confirm-discard",
                            "--commit", "item-001")
    assert code == 0
    ref = next(a["ref"] for a in document["actions"] if a["action"] == "discard")
    assert ref.startswith("refs/forge/discarded/")
    assert not (project / "b dir" / "new.txt").exists()
    assert git("show", f"{ref}:b dir/new.txt", cwd=project) == "in flight\n"
    assert git("status", "--porcelain", cwd=project) == ""
    restored = run_forge("reconcile", "--restore", ref, cwd=project)
    assert restored.returncode == 0
    assert (project / "b dir" / "new.txt").read_text() == "in flight\n"


def test_unknown_group_is_refused_before_anything_runs(project: Path) -> None:
    dirty(project)
    before = snapshot(project)
    result = run_forge("reconcile", "--commit", "item-001", "--stash", "item-999", cwd=project)
    assert result.returncode == 2 and "no group item-999" in result.stderr
    assert snapshot(project) == before


def test_one_service_decides_once_and_reports_what_the_cli_prints(project: Path,
                                                                   tmp_path: Path) -> None:
    """``reconcile_tree`` asks ``decide`` once with the plan; its report is the
    ``--json`` document; a decision for a group that does not exist is refused."""
    from git_forge.reconcile.errors import ReconcileError
    from git_forge.reconcile.execution import Decision, TreeAction
    from git_forge.reconcile.service import reconcile_tree
    from git_forge.workspace import locate

    twin = tmp_path / "twin"
    shutil.copytree(project, twin, symlinks=True)
    dirty(project)
    dirty(twin)
    seen: list[list[str]] = []

    def decide(plan):
        seen.append([group.id for group in plan.groups])
        return {"item-001": Decision(TreeAction.COMMIT)}

    result = reconcile_tree(locate(project), decide)
    assert seen == [["item-001", "item-002"]]
    assert [entry.path for entry in result.remaining] == ["b dir/new.txt"]
    assert not result.clean
    code, document = report(twin, "--commit", "item-001")
    assert code == 6
    commit = git("rev-parse", "HEAD", cwd=project).strip()
    assert result.to_json()["actions"] == [{"group": "item-001", "action": "commit",
                                             "commit": commit}]
    assert {k: v for k, v in result.to_json().items() if k != "actions"} == {
        k: v for k, v in document.items() if k != "actions"}

    git("stash", "-u", "-q", cwd=project)
    with pytest.raises(ReconcileError, match=r"no group item-001 to reconcile \(groups: none\)"):
        reconcile_tree(locate(project), decide)
    assert seen[-1] == []


def test_interactive_discard_is_confirmed_twice(project: Path) -> None:
    dirty(project)
    session = PtySession("reconcile", cwd=project)
    session.expect("item-001:")
    session.send("c")
    session.expect("item-002:")
    session.send("d")
    text = session.expect("Discard exactly these paths?")
    assert "?? \"b dir/new.txt\"" in text
    session.send("y")
    assert session.finish() == 0, session.text
    assert git("status", "--porcelain", cwd=project) == ""
    assert git("for-each-ref", "refs/forge/discarded", cwd=project).strip()


@pytest.mark.parametrize(("cancel", "at"), [
    ("interrupt", "item-001:"), ("end_input", "item-002:"),
    ("interrupt", "Discard exactly these paths?"), ("end_input", "Discard exactly these paths?")])
def test_ctrl_c_or_end_of_input_at_a_prompt_cancels_and_says_so(
        project: Path, cancel: str, at: str) -> None:
    """Every prompt comes before any action: cancelling at one (even after earlier
    answers) does nothing, says so, and exits 130 — never a prompt's default."""
    dirty(project)
    before = snapshot(project, skip_git=False)
    session = PtySession("reconcile", cwd=project)
    session.expect("item-001:")
    if at != "item-001:":
        session.send("c")
        session.expect("item-002:")
    if at == "Discard exactly these paths?":
        session.send("d")
        session.expect(at)
    getattr(session, cancel)()
    assert session.finish() == 130, session.text
    assert "cancelled: the tree is left as it is" in session.text
    assert snapshot(project, skip_git=False) == before


def test_interactive_discard_declined_leaves_the_group(project: Path) -> None:
    dirty(project)
    session = PtySession("reconcile", cwd=project)
    session.expect("item-001:")
    session.send("")
    session.expect("item-002:")
    session.send("discard")
    session.expect("Discard exactly these paths?")
    session.send("n")
    assert session.finish() == 6, session.text
    assert (project / "b dir" / "new.txt").exists() and (project / "a.txt").exists()
    assert not git("for-each-ref", "refs/forge/discarded", cwd=project).strip()

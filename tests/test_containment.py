"""Containment: an agent that writes outside its worktree — into the main checkout or a
sibling's worktree — is caught, named when it ran alone, and its change left alone; a
commit on the loop's branch is the new tip, nobody's escape.

Real repositories, real worktrees, real agent processes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo
from helpers import git
from templates import Templates

from git_forge.layout import item_worktree
from git_forge.loop.containment import Window, escaped, foreign, take_baseline
from git_forge.tree.porcelain import StatusEntry
from git_forge.tree.worktrees import add_worktree


def build_project(root: Path) -> None:
    backlog_repo(root, "One", "Two", "Three")
    (root / "shared.txt").write_text("shared\n")
    git("add", "shared.txt", cwd=root)
    git("commit", "-qm", "shared", cwd=root)


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("containment-project", build_project, tmp_path / "repo")


def tree_of(project: Path, item: str) -> Path:
    return add_worktree(project, item_worktree(project / ".forge", item), f"forge/{item}",
                        "main")


def running(*items: str) -> list[Window]:
    """Agents of ``items`` running all along."""
    return [Window(item, 0.0) for item in items]


def agent(cwd: Path, code: str) -> None:
    """A real agent process, run to its end."""
    waiting.run([sys.executable, "-c", code], cwd=cwd, check=True)


def test_an_agent_writing_outside_its_worktree_is_caught(project: Path) -> None:
    state_dir, backlog = project / ".forge", project / ".forge" / "backlog.json"
    one, two = tree_of(project, "001"), tree_of(project, "002")
    (project / "operator.txt").write_text("the operator's own, before the run\n")
    before = take_baseline(project, state_dir, backlog)
    agent(one, "open('mine.txt', 'w').write('in my worktree')")
    assert escaped(before, project, state_dir, backlog, running("001")) is None
    agent(two, f"open({str(project / 'shared.txt')!r}, 'a').write('escaped')")
    found = escaped(before, project, state_dir, backlog, running("002"))
    assert found is not None and found.item_id == "002"
    assert found.reason == "an agent wrote outside its worktree (item 002):  M shared.txt"
    agent(two, f"open({str(project / 'operator.txt')!r}, 'a').write('again')")
    several = escaped(before, project, state_dir, backlog, running("001", "002"))
    assert several is not None and several.item_id is None
    assert [e.path for e in several.entries] == ["shared.txt", "operator.txt"]
    assert "(one of items 001, 002)" in several.reason
    # nothing was committed or put back: the changes wait for reconcile
    assert "escaped" in (project / "shared.txt").read_text()


def test_a_commit_on_the_branch_is_the_new_tip_not_an_escape(project: Path) -> None:
    state_dir, backlog = project / ".forge", project / ".forge" / "backlog.json"
    before = take_baseline(project, state_dir, backlog)
    agent(project, "import subprocess; subprocess.run(['git', 'commit', '-q', "
                   "'--allow-empty', '-m', 'the user s own'], check=True)")
    assert escaped(before, project, state_dir, backlog, running("003")) is None


def test_a_write_into_a_siblings_worktree_is_told_by_when_it_was_made(project: Path) -> None:
    one, two = tree_of(project, "001"), tree_of(project, "002")
    planting = time.time()
    agent(one, "open('../002/planted.txt', 'w').write('not mine')")  # before 002 started
    time.sleep(0.1)  # clear of the slack a start is given (the kernel's clock lags by a tick)
    started = time.time()
    agent(two, "open('mine.txt', 'w').write('mine')")
    windows = [Window("001", planting, started), Window("003", started - 60, planting - 1),
               Window("002", started, time.time())]
    entries = [StatusEntry("mine.txt", "??"), StatusEntry("planted.txt", "??")]
    found = foreign(two, "002", entries, windows)
    assert found is not None and [e.path for e in found.entries] == ["planted.txt"]
    assert found.item_id == "001" and found.into == "002"
    assert found.reason == ("an agent wrote outside its worktree (item 001), into item 002's "
                            "worktree: ?? planted.txt")
    assert foreign(two, "002", entries[:1], windows) is None

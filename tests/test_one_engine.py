"""One loop engine: what a serial run gets right, a run of three agents at once gets
right too. Each test is a case a user met, run with one slot (``--parallel 1``, the
serial loop) and with three, where it applies.

Real repositories, the real installed ``git forge``, real agent processes: a
small Python program doing what its item's plan says (write, run git, wait for the
test to say go), every wait with a deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo
from helpers import forge_argv, git, run_forge
from templates import Templates

#: The agent: its item's plan is a list of steps, then the signal it prints.
AGENT = r'''
import json, os, pathlib, subprocess, sys, time
item = os.environ["FORGE_ITEM_ID"]
marks = pathlib.Path(os.environ["ENGINE_MARKS"])
plan = json.loads(pathlib.Path(os.environ["ENGINE_PLAN"]).read_text())
steps = plan.get(item, [["write", f"item-{item}.txt"]])
for kind, arg in steps:
    if kind == "write":
        path = pathlib.Path(arg)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"work of item {item}\n")
    elif kind == "git":
        subprocess.run(["git", *arg], check=True, capture_output=True)
    elif kind == "mark":
        (marks / f"{item}-{arg}").write_text(json.dumps(sorted(os.listdir("."))))
    elif kind == "wait":
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(marks, arg) if "/" not in arg else arg):
            if time.monotonic() > deadline:
                sys.exit(f"waited in vain for {arg}")
            time.sleep(0.02)
    elif kind == "sleep":
        time.sleep(arg)
print("FORGE_DONE", flush=True)
'''

SLOTS = pytest.mark.parametrize("slots", [1, 3], ids=["serial", "three"])


class Project:
    """A repository with four items, the agent, and the plan it follows."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root = root
        self.agent = tmp / "agent.py"
        self.agent.write_text(AGENT)
        self.marks = tmp / "marks"
        self.marks.mkdir()
        self.plan_file = tmp / "plan.json"
        self.plan({})
        self.spawned: list[subprocess.Popen] = []

    def plan(self, plan: dict) -> None:
        self.plan_file.write_text(json.dumps(plan))

    @property
    def env(self) -> dict[str, str]:
        return {"ENGINE_MARKS": str(self.marks), "ENGINE_PLAN": str(self.plan_file)}

    def argv(self, slots: int, *extra: str) -> list[str]:
        return ["loop", "run", "--agent", f"{sys.executable} {self.agent}", "--parallel",
                str(slots), *extra]

    def run(self, slots: int, *extra: str) -> subprocess.CompletedProcess:
        return run_forge(*self.argv(slots, *extra), cwd=self.root, env=self.env, timeout=120)

    def spawn(self, slots: int) -> subprocess.Popen:
        loop = subprocess.Popen(forge_argv() + self.argv(slots), cwd=self.root,
                                env={**os.environ, **self.env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.spawned.append(loop)
        return loop

    def finish(self, loop: subprocess.Popen) -> tuple[str, str]:
        return waiting.communicate(loop, timeout=120)

    def mark(self, name: str) -> Path:
        return self.marks / name

    def wait_for(self, *names: str) -> None:
        waiting.wait_for(lambda: all(self.mark(name).exists() for name in names), 60,
                         what=", ".join(names))

    def go(self) -> None:
        self.mark("go").write_text("go\n")

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {item["id"]: item for item in document["items"]}

    def statuses(self) -> list[str]:
        return [item["status"] for item in self.items().values()]

    def on_branch(self, path: str, branch: str = "main") -> str | None:
        shown = git("show", f"{branch}:{path}", cwd=self.root, check=False)
        return shown or None

    def worktrees(self) -> list[str]:
        listed = git("worktree", "list", "--porcelain", cwd=self.root)
        return [line.split(" ", 1)[1] for line in listed.splitlines()
                if line.startswith("worktree ")][1:]

    def committed_paths(self) -> set[str]:
        return set(git("log", "--all", "--format=", "--name-only", cwd=self.root).split())


def build_four(root: Path) -> None:
    backlog_repo(root, "One", "Two", "Three", "Four")


def build_seven(root: Path) -> None:
    backlog_repo(root, "One", "Two", "Three", "Four", "Five", "Six", "Seven")


def _project(made: Project) -> Iterator[Project]:
    yield made
    for loop in made.spawned:
        if loop.poll() is None:
            waiting.kill_tree(loop.pid)
            waiting.communicate(loop, timeout=10)


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Iterator[Project]:
    yield from _project(Project(templates.copy("engine-four", build_four, tmp_path / "repo"),
                                tmp_path))


@pytest.fixture
def seven(templates: Templates, tmp_path: Path) -> Iterator[Project]:
    yield from _project(Project(templates.copy("engine-seven", build_seven, tmp_path / "repo"),
                                tmp_path))


def tip(project: Project, rev: str = "main") -> str:
    return git("rev-parse", rev, cwd=project.root).strip()


@SLOTS
def test_done_without_a_change_or_with_the_agents_own_commit_is_done(
        project: Project, slots: int) -> None:
    project.plan({
        "001": [],  # signals done having changed nothing
        "002": [["write", "item-002.txt"], ["git", ["add", "item-002.txt"]],
                ["git", ["commit", "-q", "-m", "the agent's own commit"]]],
    })
    result = project.run(slots)
    assert result.returncode == 0, result.stdout + result.stderr
    assert project.statuses() == ["done"] * 4
    assert "the agent's own commit" in git("log", "--format=%s", cwd=project.root)
    for item in ("002", "003", "004"):
        assert project.on_branch(f"item-{item}.txt") == f"work of item {item}\n"
    assert git("status", "--porcelain", cwd=project.root) == ""
    assert project.worktrees() == []
    assert git("branch", "--list", "forge/*", cwd=project.root) == ""


def test_an_agent_leaving_its_worktrees_branch_has_its_work_on_the_loops_branch(
        project: Project) -> None:
    base = tip(project)
    project.plan({
        "001": [["git", ["checkout", "-q", "--detach"]], ["write", "item-001.txt"]],
        "002": [["git", ["switch", "-q", "-c", "its-own"]], ["write", "item-002.txt"],
                ["git", ["add", "item-002.txt"]], ["git", ["commit", "-q", "-m", "on its own"]]],
        "003": [["write", "item-003.txt"], ["git", ["add", "item-003.txt"]],
                ["git", ["commit", "-q", "--amend", "--no-edit"]]],
    })
    result = project.run(3)
    assert result.returncode == 0, result.stdout + result.stderr
    assert project.statuses() == ["done"] * 4
    for item in ("001", "002", "003", "004"):
        assert project.on_branch(f"item-{item}.txt") == f"work of item {item}\n", item
    # the amend rewrote only the worktree's commit: the loop's branch keeps its history
    git("merge-base", "--is-ancestor", base, "main", cwd=project.root)
    assert project.worktrees() == []
    assert git("status", "--porcelain", cwd=project.root) == ""


def test_an_agent_switching_the_main_checkout_stops_a_serial_run(project: Project) -> None:
    base = tip(project)
    project.plan({"001": [["git", ["checkout", "-q", "--detach"]], ["write", "item-001.txt"]]})
    result = project.run(1)
    assert result.returncode == 130, result.stdout + result.stderr
    assert (f"stopped: the main checkout was switched to a detached HEAD at {base[:12]} while "
            "the loop ran on main; nothing was committed") in result.stderr
    assert "git checkout main, then git forge loop run" in result.stderr
    assert tip(project) == base and tip(project, "HEAD") == base  # nothing committed anywhere
    assert project.statuses() == ["pending"] * 4
    assert (project.root / "item-001.txt").exists()  # left for reconcile


@SLOTS
def test_a_users_commit_on_the_branch_is_the_new_tip(project: Project, slots: int) -> None:
    project.plan({item: [["mark", "started"], ["wait", "go"], ["write", f"item-{item}.txt"]]
                  for item in ("001", "002", "003", "004")})
    loop = project.spawn(slots)
    project.wait_for(*(f"{item}-started" for item in ("001", "002", "003")[:slots]))
    (project.root / "user.txt").write_text("the user's own\n")
    git("add", "user.txt", cwd=project.root)
    git("commit", "-q", "-m", "the user's own commit", cwd=project.root)
    project.go()
    out, err = project.finish(loop)
    assert loop.returncode == 0, out + err
    assert "outside its worktree" not in out + err
    assert project.statuses() == ["done"] * 4
    assert "the user's own commit" in git("log", "--format=%s", cwd=project.root)
    for item in ("001", "002", "003", "004"):
        assert project.on_branch(f"item-{item}.txt") == f"work of item {item}\n", item
    assert git("stash", "list", cwd=project.root) == ""
    assert git("status", "--porcelain", cwd=project.root) == ""


@SLOTS
def test_a_switch_of_the_main_checkout_stops_the_run_cleanly(project: Project,
                                                            slots: int) -> None:
    base = tip(project)
    project.plan({item: [["write", f"item-{item}.txt"], ["mark", "started"], ["wait", "go"]]
                  for item in ("001", "002", "003", "004")})
    loop = project.spawn(slots)
    started = [f"{item}-started" for item in ("001", "002", "003")[:slots]]
    project.wait_for(*started)
    git("switch", "-q", "-c", "elsewhere", cwd=project.root)
    out, err = project.finish(loop)
    assert loop.returncode == 130, out + err
    kept = ("the agent's work is left in the tree" if slots == 1 else
            "the agents' worktrees are kept")
    assert [line for line in err.splitlines() if "switched" in line] == [
        "stopped: the main checkout was switched to branch elsewhere while the loop ran on "
        f"main; nothing was committed, and {kept} for git forge reconcile; to go on: "
        "git checkout main, then git forge loop run"], err
    # nothing committed anywhere, the agents ended, their work kept
    assert tip(project) == base and tip(project, "elsewhere") == base
    assert not project.mark("go").exists()
    assert project.statuses() == ["pending"] * 4
    if slots == 1:
        assert (project.root / "item-001.txt").exists()
    else:
        trees = project.root / ".forge" / "worktrees"
        assert all((trees / item / f"item-{item}.txt").exists() for item in ("001", "002", "003"))


@SLOTS
def test_a_dependency_added_during_the_run_is_read_when_the_item_starts(
        project: Project, slots: int) -> None:
    project.plan({
        **{item: [["mark", "started"], ["wait", "go"], ["write", f"item-{item}.txt"]]
           for item in ("001", "002", "003")},
        "004": [["mark", "started"], ["write", "item-004.txt"]],
    })
    loop = project.spawn(slots)
    project.wait_for("001-started")
    if slots > 1:  # all slots taken: the next item's worktree is made ahead
        project.wait_for("002-started", "003-started")
        waiting.wait_for(lambda: (project.root / ".forge" / "worktrees" / "004").is_dir(), 30,
                         what="004's worktree made ahead")
    edited = run_forge("backlog", "edit", "004", "--depends-on", "003", cwd=project.root)
    assert edited.returncode == 0, edited.stderr
    project.go()
    out, err = project.finish(loop)
    assert loop.returncode == 0, out + err
    assert project.statuses() == ["done"] * 4
    seen = json.loads(project.mark("004-started").read_text())
    assert "item-003.txt" in seen, seen


def test_while_the_slots_are_taken_each_slots_next_worktree_is_made_ahead(
        seven: Project) -> None:
    project = seven
    project.plan({item: [["mark", "started"], ["wait", "go"], ["write", f"item-{item}.txt"]]
                  for item in ("001", "002", "003")})
    loop = project.spawn(3)
    project.wait_for("001-started", "002-started", "003-started")
    trees = project.root / ".forge" / "worktrees"
    # when the three agents end at once, each slot's next item starts in a worktree there
    waiting.wait_for(lambda: all((trees / item / "README.md").exists()
                                 for item in ("004", "005", "006")), 30,
                     what="the next three items' worktrees made ahead")
    assert not (trees / "007").exists()  # as many as there are slots
    project.go()
    out, err = project.finish(loop)
    assert loop.returncode == 0, out + err
    assert project.statuses() == ["done"] * 7
    for number in range(1, 8):
        assert project.on_branch(f"item-{number:03d}.txt") == f"work of item {number:03d}\n"
    assert project.worktrees() == []
    assert git("branch", "--list", "forge/*", cwd=project.root) == ""


def test_a_write_into_a_siblings_worktree_is_caught_and_never_committed(
        project: Project) -> None:
    project.plan({
        "001": [["wait", "../004"], ["write", "../004/planted.txt"], ["mark", "planted"],
                ["sleep", 0.3], ["write", "item-001.txt"]],
        # a write within the inode clock's slack of 004's start would be its own (a
        # kernel tick cannot be told apart): the slots free well after the plant
        "002": [["mark", "started"], ["wait", "001-planted"], ["sleep", 0.2],
                ["write", "item-002.txt"]],
        "003": [["mark", "started"], ["wait", "001-planted"], ["sleep", 0.2],
                ["write", "item-003.txt"]],
    })
    result = project.run(3)
    out = result.stdout + result.stderr
    assert "planted.txt" not in project.committed_paths(), out
    assert project.on_branch("planted.txt") is None
    for item in ("001", "002", "003", "004"):
        assert project.on_branch(f"item-{item}.txt") == f"work of item {item}\n", (item, out)
    reported = [line for line in out.splitlines() if "wrote outside its worktree" in line]
    assert len(reported) == 1, out
    assert reported[0] in (
        "  note: an agent wrote outside its worktree (item 001), into item 004's worktree: "
        "?? planted.txt — left there for git forge reconcile",
        "  note: an agent wrote outside its worktree (one of items 001, 002, 003), into item "
        "004's worktree: ?? planted.txt — left there for git forge reconcile"), out
    # left where it was written, for reconcile: the next launch stops on it
    planted = project.root / ".forge" / "worktrees" / "004" / "planted.txt"
    assert planted.read_text() == "work of item 001\n"
    stop = run_forge("preflight", "--json", cwd=project.root)
    assert stop.returncode == 1
    dirty = {t["itemId"]: t["dirty"] for t in json.loads(stop.stdout)["worktrees"]}
    assert dirty == {"004": [{"path": "planted.txt", "xy": "??"}]}

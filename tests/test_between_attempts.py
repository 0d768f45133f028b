"""An item between its attempts: a retry starts on a clean tree (the attempt before
kept as the item's abandoned work) unless it resumes the agent's session, which then
finds its changes where it left them — the prompt says which — and every way a run
can end there leaves that work kept under the item's ref, never in the tree for
nobody. Abandoned work stays off the user's stash list.

Real repositories, the real ``git forge``, real agent processes: a plain agent (the
generic profile) and the faithful Claude Code fake (``fake_agents``), with one slot
and with three (``--parallel 3``: the item runs in its own worktree).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo, one_item_backlog
from fake_agents import FakeAgents
from helpers import PtySession, abandoned, forge_argv, git, run_forge
from templates import Templates

#: A plain agent: its item's steps, one per attempt (the last repeating); each
#: appends to files, then prints its signal. Every prompt is logged.
PLAIN = r'''
import json, os, pathlib, sys
item = os.environ["FORGE_ITEM_ID"]
log = pathlib.Path(os.environ["PLAIN_LOG"])
log.mkdir(exist_ok=True)
attempt = len(list(log.glob(f"{item}-*.txt")))
(log / f"{item}-{attempt}.txt").write_text(sys.stdin.read())
steps = json.loads(pathlib.Path(os.environ["PLAIN_PLAN"]).read_text()).get(item, [{}])
step = steps[min(attempt, len(steps) - 1)]
for name, text in step.get("append", {}).items():
    with open(name, "a") as appended:
        appended.write(text)
print(step.get("signal", "FORGE_DONE"), flush=True)
'''

SLOTS = pytest.mark.parametrize("slots", ["1", "3"], ids=["serial", "three"])


class Project:
    def __init__(self, root: Path, tmp: Path) -> None:
        self.root = root
        self.fakes = FakeAgents(tmp)
        self.plain = tmp / "plain.py"
        self.plain.write_text(PLAIN)
        self.plan_file = tmp / "plain-plan.json"
        self.log = tmp / "plain-log"
        self.spawned: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        return {**self.fakes.env, "PLAIN_PLAN": str(self.plan_file), "PLAIN_LOG": str(self.log)}

    def plan_plain(self, plan: dict) -> None:
        self.plan_file.write_text(json.dumps(plan))

    @property
    def plain_agent(self) -> str:
        return f"{sys.executable} {self.plain}"

    def prompts(self, item_id: str) -> list[str]:
        found = sorted(self.log.glob(f"{item_id}-*.txt"),
                       key=lambda path: int(path.stem.rsplit("-", 1)[1]))
        return [path.read_text() for path in found]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return run_forge("loop", "run", *args, cwd=self.root, env=self.env, timeout=120)

    def spawn(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(forge_argv() + ["loop", "run", *args], cwd=self.root,
                                env={**os.environ, **self.env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.spawned.append(proc)
        return proc

    def forge(self, *args: str) -> subprocess.CompletedProcess:
        return run_forge(*args, cwd=self.root, env=self.env)

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {item["id"]: item for item in document["items"]}

    def events(self, kind: str) -> list[dict]:
        lines = (self.root / ".forge" / "events.ndjson").read_text().splitlines()
        return [event for event in map(json.loads, lines) if event["type"] == kind]

    def state(self) -> dict:
        return json.loads((self.root / ".forge" / "state.json").read_text())

    def kept_text(self, ref: str, path: str) -> str:
        """``path`` as the kept work holds it (a tracked change, or an untracked file)."""
        shown = git("show", f"{ref}:{path}", cwd=self.root, check=False)
        return shown or git("show", f"{ref}^3:{path}", cwd=self.root)

    def worktrees(self) -> list[str]:
        listed = git("worktree", "list", "--porcelain", cwd=self.root)
        return [line.split(" ", 1)[1] for line in listed.splitlines()
                if line.startswith("worktree ")][1:]

    def assert_nothing_left(self) -> None:
        """The tree is clean, no item's worktree holds anything, and the next launch goes."""
        assert git("status", "--porcelain", cwd=self.root) == ""
        assert self.worktrees() == []
        assert git("stash", "list", cwd=self.root) == ""
        preflight = self.forge("preflight")
        assert preflight.returncode == 0, preflight.stdout + preflight.stderr


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Iterator[Project]:
    made = Project(templates.copy("one-item", one_item_backlog, tmp_path / "repo"), tmp_path)
    yield made
    for proc in made.spawned:
        if proc.poll() is None:
            waiting.kill_tree(proc.pid)
            waiting.communicate(proc, timeout=10)


# --- point 8: retries --------------------------------------------------------------------------


@SLOTS
def test_a_retry_starts_clean_and_is_told_where_the_attempt_before_is_kept(
        project: Project, slots: str) -> None:
    project.plan_plain({"001": [{"append": {"notes.txt": "a line\n"}, "signal": "not yet"},
                                {"append": {"notes.txt": "a line\n"}}]})
    result = project.run("--agent", project.plain_agent, "--parallel", slots)
    assert result.returncode == 0, result.stderr
    assert project.items()["001"]["status"] == "done"
    # The retry ran on a clean tree: one line committed, not one per attempt.
    assert git("show", "HEAD:notes.txt", cwd=project.root) == "a line\n"
    [kept] = abandoned(project.root, "001")
    assert project.kept_text(kept, "notes.txt") == "a line\n"
    first, second = project.prompts("001")
    assert "earlier changes" not in first
    assert f"Your earlier changes are kept at {kept} (notes.txt)" in second
    assert f"restore with: git stash apply {kept}" in second
    assert f"git stash show --include-untracked -p {kept}" in second
    assert "still in the working tree" not in second
    assert f"kept at {kept}" in result.stdout
    project.assert_nothing_left()


@SLOTS
def test_a_retry_that_resumes_the_session_finds_its_changes_and_is_told_so(
        project: Project, slots: str) -> None:
    project.fakes.plan({"001": [{"do": "done", "signal": "not yet",
                                 "append": {"notes.txt": "first\n"}},
                                {"do": "done", "append": {"notes.txt": "second\n"}}]})
    result = project.run("--agent", "claude", "--parallel", slots)
    assert result.returncode == 0, result.stderr
    first, second = project.fakes.starts("001")
    assert second["argv"][-1] == "--resume=sess-001-0"
    assert "still in the working tree" not in first["prompt"]
    assert ("This attempt resumes your previous session, and the changes your previous "
            "attempt made are still in the working tree, uncommitted: carry on from them."
            in second["prompt"])
    # The resumed session carried on from its own changes: both lines committed.
    assert git("show", "HEAD:notes.txt", cwd=project.root) == "first\nsecond\n"
    assert abandoned(project.root, "001") == []
    project.assert_nothing_left()


# --- point 9: every way a run ends between attempts --------------------------------------------

WORK = {"notes.txt": "work of 001\n"}
#: Each ending: the Claude Code fake's plan for 001, the loop's flags, its exit code.
ENDINGS = {
    # the budget runs out with a retry (that would resume the session) to come
    "budget": ([{"do": "done", "signal": "not yet", "append": WORK}],
               ("--iterations", "1"), 0),
    "on-limit stop": ([{"do": "rejected", "resets_in": 3600, "append": WORK}],
                      ("--on-limit", "stop"), 4),
    "breaker": ([{"do": "not_logged_in", "append": WORK}], ("--retries", "5"), 1),
    "max-cost": ([{"do": "done", "signal": "not yet", "cost": 1.0, "append": WORK}],
                 ("--max-cost", "0.5"), 4),
    # loop stop while a usage limit is waited out after the attempt
    "stop": ([{"do": "rejected", "resets_in": 3600, "append": WORK}], (), 130),
}


@SLOTS
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_run_ending_between_attempts_keeps_the_item_s_work(
        project: Project, ending: str, slots: str) -> None:
    plan, flags, code = ENDINGS[ending]
    project.fakes.plan({"001": plan})
    args = ("--agent", "claude", "--parallel", slots, *flags)
    if ending == "stop":
        loop = project.spawn(*args)
        state = project.root / ".forge" / "state.json"
        waiting.wait_for(lambda: state.exists() and
                         json.loads(state.read_text()).get("waitingUntil"),
                         timeout=30, what="the run to wait out the limit")
        assert project.forge("loop", "stop").returncode == 0
        _, stderr = waiting.communicate(loop, timeout=30)
        assert loop.returncode == code, stderr
        assert len(project.events("llm_spawned")) == 1  # the stop started no other agent
        # the work was set aside and said so: the last line points at no tree
        assert "in the tree for git forge reconcile" not in stderr, stderr
    else:
        result = project.run(*args)
        assert result.returncode == code, result.stderr
    assert project.items()["001"]["status"] == "pending"
    # Nothing is left behind for nobody: the next launch goes …
    project.assert_nothing_left()
    # … and the attempts' work is kept as the item's own, whole.
    kept = abandoned(project.root, "001")
    assert kept, "the work was kept"
    lines = project.kept_text(kept[-1], "notes.txt").splitlines()
    assert lines and set(lines) == {"work of 001"}


def test_a_stopped_wait_s_countdown_leaves_the_terminal_before_the_kept_note(
        project: Project) -> None:
    """On a terminal the wait's countdown is a live line: once the wait is stopped,
    the note that the work is kept (and the run's last line) come without it."""
    project.fakes.plan({"001": [{"do": "rejected", "resets_in": 3600, "append": WORK}]})
    session = PtySession("loop", "run", "--agent", "claude", cwd=project.root, env=project.env)
    session.expect("waiting for the usage limit to lift")
    assert project.forge("loop", "stop").returncode == 0
    assert session.finish(timeout=30) == 130, session.text
    text = session.text
    [kept] = abandoned(project.root, "001")
    assert f"kept at {kept}" in text, text
    assert text.rfind("to lift —") < text.index(f"kept at {kept}"), text


@SLOTS
def test_kill_9_between_a_failed_attempt_and_its_resumed_retry_keeps_the_work_the_item_s(
        project: Project, slots: str) -> None:
    """The first attempt gives no signal and leaves its changes for the retry, which
    resumes the session (no usage limit in between); the loop is killed while that
    retry runs. Its changes are the item's for the next launch and for reconcile —
    never changes "the last run did not make"."""
    project.fakes.plan({"001": [{"do": "done", "signal": "not yet", "append": WORK},
                                {"do": "hang", "seconds": 60,
                                 "append": {"notes.txt": "more of 001\n"}}]})
    loop = project.spawn("--agent", "claude", "--parallel", slots)
    waiting.wait_for(lambda: len(project.fakes.starts("001")) == 2, timeout=30,
                     what="the resumed retry to start")
    assert project.fakes.starts("001")[1]["argv"][-1] == "--resume=sess-001-0"
    os.kill(loop.pid, signal.SIGKILL)
    waiting.communicate(loop, timeout=30)
    waiting.wait_for(lambda: "in progress" not in project.forge("preflight").stderr,
                     timeout=30, what="the killed run's agent to end")
    stopped = project.forge("preflight")
    assert stopped.returncode == 1, stopped.stderr
    assert "did not make" not in stopped.stderr, stopped.stderr
    if slots == "1":
        assert stopped.stderr.startswith("STOP: a previous git-forge run left work in the "
                                         "tree."), stopped.stderr
        document = json.loads(project.forge("reconcile", "--json").stdout)
        [group] = document["groups"]
        assert (group["kind"], group["itemId"]) == ("item", "001")
        assert [entry["path"] for entry in group["paths"]] == ["notes.txt"]
        held = (project.root / "notes.txt").read_text()
    else:
        assert "item 001" in stopped.stderr, stopped.stderr
        held = (project.root / ".forge" / "worktrees" / "001" / "notes.txt").read_text()
    assert held == "work of 001\nmore of 001\n"


def test_the_next_run_tells_the_agent_where_the_work_of_a_run_before_is_kept(
        project: Project) -> None:
    project.fakes.plan({"001": [{"do": "done", "signal": "not yet", "append": WORK},
                                {"do": "done", "append": {"notes.txt": "again\n"}}]})
    assert project.run("--agent", "claude", "--iterations", "1").returncode == 0
    [kept] = abandoned(project.root, "001")
    assert project.run("--agent", "claude").returncode == 0
    second = project.fakes.starts("001")[1]
    assert not any(arg.startswith("--resume") for arg in second["argv"])  # a new run's session
    assert f"Your earlier changes are kept at {kept} (notes.txt)" in second["prompt"]
    assert "still in the working tree" not in second["prompt"]
    assert git("show", "HEAD:notes.txt", cwd=project.root) == "again\n"


# --- point 15: abandoned work is kept off the user's stash list -------------------------------


def two_items(root: Path) -> None:
    backlog_repo(root, ("--title", "First", "--priority", "1"),
                 ("--title", "Second", "--priority", "2"))


@SLOTS
def test_abandoned_work_is_kept_under_the_item_s_ref_never_on_the_stash_list(
        templates: Templates, tmp_path: Path, slots: str) -> None:
    project = Project(templates.copy("two-items", two_items, tmp_path / "repo"), tmp_path)
    root = project.root
    # The user's own stash, and one an earlier git-forge left on the stash list.
    (root / "README.md").write_text("the user's own change\n")
    git("stash", "push", "-q", "-m", "mine", cwd=root)
    (root / "old.txt").write_text("an older run's leftovers\n")
    git("stash", "push", "-q", "-u", "-m", "forge: abandoned work from item 002", cwd=root)
    listed = git("stash", "list", cwd=root)
    project.plan_plain({"001": [{"append": {"half.py": "half\n"},
                                 "signal": "FORGE_NEEDS_HUMAN: which database?"},
                                {"append": {"db.py": "sqlite\n"}}]})
    result = project.run("--agent", project.plain_agent, "--parallel", slots)
    assert result.returncode == 5, result.stderr
    assert git("stash", "list", cwd=root) == listed  # as the user left it
    [kept] = abandoned(root, "001")
    assert kept.startswith("refs/forge/abandoned/001/")
    assert project.kept_text(kept, "half.py") == "half\n"
    assert not (root / "half.py").exists()
    git("stash", "apply", "-q", kept, cwd=root)  # git reads it as a stash
    assert (root / "half.py").read_text() == "half\n"
    (root / "half.py").unlink()
    document = json.loads(project.forge("reconcile", "--json").stdout)
    assert [(s["ref"], s["itemId"]) for s in document["stashes"]] == [
        (kept, "001"), ("stash@{0}", "002")]
    assert document["stashes"][0]["hints"] == [
        f"git stash show --include-untracked -p {kept}", f"git stash apply {kept}",
        f"git update-ref -d {kept}"]
    # The next prompt of that item says where its work is.
    assert project.forge("backlog", "answer", "001", "SQLite").returncode == 0
    git("commit", "-qam", "answer", cwd=root)
    assert project.run("--agent", project.plain_agent, "--parallel", slots).returncode == 0
    prompt = project.prompts("001")[-1]
    assert f"Your earlier changes are kept at {kept} (half.py)" in prompt
    assert git("stash", "list", cwd=root) == listed
    git("stash", "pop", "-q", "stash@{1}", cwd=root)  # the user's own, where they left it
    assert (root / "README.md").read_text() == "the user's own change\n"

"""``git forge backlog done`` and ``drop``: an item marked done or taken out by hand,
all the named items or none, left uncommitted as every backlog edit is — through the
installed CLI in real repositories, a real terminal for drop's question.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import blocked, item, write_backlog
from helpers import PtySession, forge_argv, git, run_forge, snapshot


@pytest.fixture
def project(git_repo: Path) -> Path:
    """Committed: 001 done, 002 needs a human (answered once before), 003 blocked, 004
    pending on 002, 005 pending on 002 and 003, 006 left in progress by a crashed run."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    write_backlog(git_repo / ".forge", [
        item("001", "done", title="Done", completedAt="2026-01-01T00:00:00Z"),
        blocked("002", "Which database?", title="Store", deferred=False,
                blockedAt="2026-01-02T00:00:00Z"),
        item("003", "blocked", title="Flaky", blockedReason="CI is flaky"),
        item("004", title="Use the store", dependsOn=["002"]),
        item("005", title="Both", dependsOn=["002", "003"]),
        item("006", "in_progress", title="Crashed")])
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    return git_repo


def items(project: Path) -> dict[str, dict]:
    document = json.loads((project / ".forge" / "backlog.json").read_text())
    return {entry["id"]: entry for entry in document["items"]}


def ok(*args: str, cwd: Path) -> str:
    result = run_forge("backlog", *args, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def refused(*args: str, cwd: Path) -> str:
    before = snapshot(cwd)
    result = run_forge("backlog", *args, cwd=cwd)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert snapshot(cwd) == before
    return lines[0][len("Error: "):]


def test_done_marks_items_done_as_the_loop_does(project: Path) -> None:
    assert ok("done", "2", "003", "006", cwd=project) == "done: 002, 003, 006\n"
    after = items(project)
    for item_id in ("002", "003", "006"):
        done = after[item_id]
        assert done["status"] == "done" and done["completedAt"], item_id
        assert not {"blockedReason", "blockedAt", "humanAnswer"} & set(done), item_id
        assert not done.get("needsHuman") and not done.get("deferred"), item_id
    # what waited on them may now be selected
    topology = json.loads(run_forge("backlog", "topology", "--json", cwd=project).stdout)
    assert topology["selectable"] == 2
    # left uncommitted, as every backlog edit: the next run commits it ([forge] backlog: …)
    assert git("status", "--porcelain", cwd=project) == " M .forge/backlog.json\n"
    assert run_forge("preflight", cwd=project).returncode == 0
    assert json.loads(ok("done", "4", "--json", cwd=project)) == {"doneCount": 1,
                                                                 "doneIds": ["004"]}


def test_done_is_all_or_nothing(project: Path) -> None:
    assert refused("done", "002", "001", cwd=project) == "item 001 is done already"
    assert refused("done", "002", "404", cwd=project) == "Item not found: 404"


def test_drop_takes_items_out_and_refuses_while_others_depend_on_them(project: Path) -> None:
    assert refused("drop", "003", "--yes", cwd=project) == (
        "item 005 depends on 003: drop 005 too, or keep it without that dependency "
        "(--keep-dependents)")
    assert refused("drop", "2", "--yes", cwd=project) == (
        "items 004, 005 depend on 002: drop them too, or keep them without that "
        "dependency (--keep-dependents)")
    assert ok("drop", "3", "5", "--yes", cwd=project) == "dropped: 003, 005\n"
    assert list(items(project)) == ["001", "002", "004", "006"]
    dropped = json.loads(ok("drop", "002", "--keep-dependents", "--yes", "--json", cwd=project))
    assert dropped == {"droppedCount": 1, "droppedIds": ["002"], "detachedIds": ["004"]}
    assert items(project)["004"]["dependsOn"] == []
    assert git("status", "--porcelain", cwd=project) == " M .forge/backlog.json\n"
    assert run_forge("preflight", cwd=project).returncode == 0


def test_drop_asks_on_a_terminal_and_is_refused_without_one(project: Path) -> None:
    assert refused("drop", "001", cwd=project) == (
        "dropping takes items out of the backlog: give --yes to drop without a terminal "
        "to ask on")
    before = snapshot(project)
    session = PtySession("backlog", "drop", "1", cwd=project)
    session.expect("001  Done")
    session.expect("Drop this item? [y/N]")
    session.send("")  # the default is no
    assert session.finish() == 1
    assert "nothing dropped" in session.text
    assert snapshot(project) == before
    for stop in ("interrupt", "end_input"):  # Ctrl-C, Ctrl-D: interrupted, and says so
        session = PtySession("backlog", "drop", "1", cwd=project)
        session.expect("Drop this item? [y/N]")
        session.wait_reading()
        getattr(session, stop)()
        assert session.finish() == 130
        assert session.text.rstrip().endswith("nothing dropped"), session.text
        assert snapshot(project) == before
    session = PtySession("backlog", "drop", "1", "002", "--keep-dependents", cwd=project)
    session.expect("(004, 005 will no longer depend on them)")
    session.expect("Drop these items? [y/N]")
    session.send("y")
    assert session.finish() == 0
    assert "dropped: 001, 002" in session.text
    assert list(items(project)) == ["003", "004", "005", "006"]
    assert items(project)["005"]["dependsOn"] == ["003"]


def test_an_edit_during_a_run_is_committed_apart_from_the_items(git_repo: Path) -> None:
    """``backlog done`` and ``backlog add`` from another process while an item runs:
    each lands as its own ``[forge] backlog: …`` commit before the running item's
    commit (done or blocked), which holds only that item's own change."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    for title in ("A", "B", "C"):
        assert run_forge("backlog", "add", "--title", title, cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    forge = " ".join(f"'{part}'" for part in forge_argv())
    agent = git_repo.parent / "agent.sh"
    agent.write_text(f"""#!/bin/sh
cat >/dev/null
case $FORGE_ITEM_ID in
001) {forge} backlog done 2 >/dev/null && echo a > a.txt && echo FORGE_DONE;;
003) {forge} backlog add --title D >/dev/null && echo "FORGE_NEEDS_HUMAN: which one?";;
*) echo FORGE_DONE;;
esac
""")
    agent.chmod(0o755)
    result = run_forge("loop", "run", "--agent", str(agent), cwd=git_repo)
    assert result.returncode == 5, result.stdout + result.stderr  # 003 waits on a human
    assert "complete: this run 2 done, 1 needs a human, 0 blocked" in result.stdout
    subjects = git("log", "--format=%s", "HEAD~5..", cwd=git_repo).splitlines()[::-1]
    assert subjects == ["[forge] backlog: change 002", "[forge] 001: A",
                        "[forge] backlog: add 004", "[forge] 003: blocked — which one?",
                        "[forge] 004: D"]
    changed = {subject: git("show", "--format=", "--name-only", f"HEAD~{4 - at}",
                            cwd=git_repo).split()
               for at, subject in enumerate(subjects)}
    assert changed["[forge] 001: A"] == [".forge/backlog.json", "a.txt"]

    def statuses(rev: str) -> dict[str, str]:
        document = json.loads(git("show", f"{rev}:.forge/backlog.json", cwd=git_repo))
        return {entry["id"]: entry["status"] for entry in document["items"]}

    assert statuses("HEAD~4") == {"001": "pending", "002": "done", "003": "pending"}
    assert statuses("HEAD~3") == {"001": "done", "002": "done", "003": "pending"}
    assert statuses("HEAD~2") == {"001": "done", "002": "done", "003": "pending",
                                  "004": "pending"}
    assert statuses("HEAD~1")["003"] == "blocked"
    assert git("status", "--porcelain", cwd=git_repo) == ""

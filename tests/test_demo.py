"""git forge demo: the newcomer's first run, scripted and on a real terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import PtySession, abandoned, git, run_forge


def statuses(root: Path) -> dict[str, str]:
    items = json.loads((root / ".forge" / "backlog.json").read_text())["items"]
    return {item["id"]: item["status"] for item in items}


def test_demo_without_a_terminal_walks_the_whole_lifecycle(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    result = run_forge("demo", str(root))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for marker in ("1. A project with a backlog", "needs-human", "Recovery: resolved",
                   "answer threaded into the next prompt", "NEXT-STEPS", "6. Where things stand"):
        assert marker in out
    assert statuses(root) == {"001": "done", "002": "done", "003": "done", "004": "done",
                              "005": "done", "006": "blocked"}
    assert "The human decided: Use SQLite" in (root / "notes/003-store-greetings.md").read_text()
    assert git("status", "--porcelain", cwd=root) == ""
    [kept] = abandoned(root, "006")  # off the user's stash list, under git-forge's own ref
    assert "abandoned work from item 006" in git("log", "-1", "--format=%s", kept, cwd=root)
    assert git("stash", "list", cwd=root) == ""
    # Refuses a directory that is not empty, and changes nothing in it.
    again = run_forge("demo", str(root))
    assert again.returncode == 2 and again.stderr.startswith("Error:")
    # What the demo says to do next works there as typed: recover 006, then the
    # NEXT-STEPS command (its .forge.yaml names the scripted agent).
    assert "$ git forge loop run\n" in out
    # a run that ends with blocked items exits 5: not called complete
    assert "loop ended: nothing more can run while blocked items remain (exit 5)" in out
    assert "complete (exit 5)" not in out
    recovered = run_forge("recover", "--answer", "006=Publish to the test index first",
                          cwd=root)
    assert recovered.returncode == 0, recovered.stderr
    next_steps = recovered.stdout.split("NEXT-STEPS\n", 1)[1].strip()
    assert next_steps == "git forge loop run"
    resumed = run_forge(*next_steps.split()[2:], cwd=root)
    assert resumed.returncode == 0, resumed.stderr
    assert statuses(root)["006"] == "done"


def test_demo_on_a_terminal_asks_the_question(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    session = PtySession("demo", str(root), cwd=tmp_path)
    session.expect("Merge questions that share a cause?")
    session.send("")
    text = session.expect("Your decision")
    assert "Items 003 and 004 are blocked on the same decision" in text
    session.send("PostgreSQL, the team runs it already")
    session.expect("Record it?")
    session.send("y")
    session.expect("Your decision")
    session.send("")  # defer 006
    session.expect("recovery:")
    session.send("")
    assert session.finish() == 0, session.text
    assert "The human decided: PostgreSQL" in (root / "notes/004-remember-each-user-s-language.md"
                                               ).read_text()


@pytest.mark.parametrize("cancel", ["interrupt", "end_input"])
@pytest.mark.parametrize("prompt", ["merge", "question", "tree"])
def test_ctrl_c_at_any_prompt_stops_the_demo_the_same_way(tmp_path: Path, prompt: str,
                                                          cancel: str) -> None:
    """Ctrl-C, or end of input (Ctrl-D), at any of recover's prompts."""
    root = tmp_path / "demo"
    session = PtySession("demo", str(root), cwd=tmp_path)
    session.expect("Merge questions that share a cause?")
    if prompt != "merge":
        session.send("")
        session.expect("Your decision")
        if prompt == "tree":
            session.send("PostgreSQL")  # one answer given, applied: the tree changed
            session.expect("Record it?")
            session.send("y")
            session.expect("Your decision")
            session.send("")
            session.expect("recovery:")
    getattr(session, cancel)()
    assert session.finish() == 130, session.text
    text = session.text
    after = text[text.rindex("cancelled: "):]
    # the same ending wherever Ctrl-C was typed: no further question, no further step
    assert "5. The loop resumes" not in text and "Your decision" not in after
    assert "recovery:" not in after
    assert after.rstrip().splitlines()[-2:] == [
        f"\x1b[1mdemo stopped\x1b[0m: the repository stays as it is at {root}",
        f"  cd {root} && git forge status    # where it stands; git forge recover goes on"]
    # what recover's cancel-early promises: every question recorded, none lost
    record = json.loads((root / ".forge" / "forge-decisions.json").read_text())
    recorded = {entry["itemId"]: entry["answer"] for entry in record["decisions"]}
    assert set(recorded) == {"003", "004", "006"}
    answered = {"003": "PostgreSQL", "004": "PostgreSQL"} if prompt == "tree" else {}
    assert {k: v for k, v in recorded.items() if v is not None} == answered

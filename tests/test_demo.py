"""git forge demo: the newcomer's first run, scripted and on a real terminal."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import PtySession, git, run_forge


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
    assert "abandoned work from item 006" in git("stash", "list", cwd=root)
    # Refuses a directory that is not empty, and changes nothing in it.
    again = run_forge("demo", str(root))
    assert again.returncode == 2 and again.stderr.startswith("Error:")


def test_demo_on_a_terminal_asks_the_question(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    session = PtySession("demo", str(root), cwd=tmp_path)
    session.expect("Merge questions that share a cause?")
    session.send("")
    text = session.expect("Your decision")
    assert "Items 003 and 004 are blocked on the same decision" in text
    session.send("PostgreSQL, the team runs it already")
    session.expect("Your decision")
    session.send("")  # defer 006
    session.expect("recovery:")
    session.send("")
    assert session.finish() == 0, session.text
    assert "The human decided: PostgreSQL" in (root / "notes/004-remember-each-user-s-language.md"
                                               ).read_text()

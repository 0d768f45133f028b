"""recover's prompt and answers, as a person types and pastes them on a real terminal,
and as an answers file writes them: nothing is recorded that was not meant."""

from __future__ import annotations

import json
from pathlib import Path

from builders import blocked_backlog
from helpers import run_forge, snapshot

# --- 1. an answers file's ids are the text written ---------------------------------------------

def test_an_answers_file_names_items_by_the_text_written(git_repo: Path, tmp_path: Path) -> None:
    """YAML 1.1 reads an unquoted 010 as the octal 8: the answer went to item 008 and
    010 was deferred; 012 (10) answered 010. Now 010 is 010, and 012, which names no
    open question, is refused before anything is recorded."""
    root = blocked_backlog(git_repo, {"008": "Which package index should releases go to?",
                                      "010": "Which database engine should we use?"})
    answers = tmp_path / "answers.yaml"
    answers.write_text("012: Use SQLite\n")
    before = snapshot(root, skip_git=False)
    refused = run_forge("recover", "--answers", str(answers), cwd=root)
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
    assert refused.stderr == ("Error: no open question for 012 (questions: c008, c010; "
                              "items: 008, 010)\n")
    after = snapshot(root, skip_git=False)
    assert after.pop(".forge/recover.lock", b"") == b""
    assert after == before
    answers.write_text("010: Use SQLite\n")
    result = run_forge("recover", "--answers", str(answers), "--json", cwd=root)
    report = json.loads(result.stdout)
    assert [(r["itemId"], r["answer"]) for r in report["recorded"]] == [
        ("008", None), ("010", "Use SQLite")]
    items = {i["id"]: i for i in json.loads(run_forge("backlog", "list", "--json",
                                                      cwd=root).stdout)}
    assert (items["008"]["status"], items["010"]["status"]) == ("blocked", "pending")
    assert "humanAnswer" not in items["008"] and items["010"]["humanAnswer"] == "Use SQLite"

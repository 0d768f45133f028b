"""Pieces of the loop: signal parsing, prompt building, state.json, a run's options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_forge.backlog.item import Item
from git_forge.errors import StoreError
from git_forge.loop.prompt import build_prompt
from git_forge.loop.signals import NO_SIGNAL, Signal, parse_signal
from git_forge.loop.state import RunState, read_state, write_state


@pytest.mark.parametrize(("text", "expected"), [
    ("work\nFORGE_DONE\n", Signal("done")),
    ("work\n  RAUF_DONE  \n\n", Signal("done")),
    ("FORGE_BLOCKED: the API is down\n", Signal("blocked", "the API is down")),
    ("RAUF_BLOCKED:   spaced  \n", Signal("blocked", "spaced")),
    ("RAUF_NEEDS_HUMAN: ok?", Signal("needs_human", "ok?")),
    # The final line is the signal: one quoted earlier does not count.
    ("I will print FORGE_DONE at the end\nFORGE_DONE\nFORGE_BLOCKED: no\n",
     Signal("blocked", "no")),
    ("FORGE_BLOCKED: first\nFORGE_DONE\n", Signal("done")),
    # A signal line followed by more text is no signal: the text takes it back.
    ("x\nFORGE_NEEDS_HUMAN: which DB?\ntrailing chatter\n", NO_SIGNAL),
    ("When the tests pass I will print:\n\n```\nFORGE_DONE\n```\n\nThe tests still fail; "
     "I could not finish: I need the API key.\n", NO_SIGNAL),
    # A closing code fence right after the signal line is the model's wrapping.
    ("Done.\n\n```\nFORGE_DONE\n```\n\n", Signal("done")),
    ("```text\nFORGE_BLOCKED: no key\n~~~~\n", Signal("blocked", "no key")),
    ("FORGE_DONE\n```\n```\n", NO_SIGNAL),
    # The protocol restated: a placeholder in angle brackets asks nothing.
    ("- `FORGE_DONE`\n- `FORGE_NEEDS_HUMAN: <question>`\n", NO_SIGNAL),
    ("FORGE_BLOCKED: <reason>\n", NO_SIGNAL),
    ("FORGE_BLOCKED: the <input> tag is unsupported\n",
     Signal("blocked", "the <input> tag is unsupported")),
    ("say FORGE_DONE\n", NO_SIGNAL),
    ("", NO_SIGNAL),
])
def test_parse_signal(text: str, expected: Signal) -> None:
    assert parse_signal(text) == expected


@pytest.mark.parametrize(("line", "expected"), [
    # The signal as models write it in Markdown.
    ("`FORGE_DONE`", Signal("done")),
    ("**FORGE_DONE**", Signal("done")),
    ("FORGE_DONE.", Signal("done")),
    ("**FORGE_DONE.**", Signal("done")),
    ("`FORGE_DONE`.", Signal("done")),
    ("__FORGE_DONE__", Signal("done")),
    ("*RAUF_DONE*", Signal("done")),
    ("**`FORGE_DONE`**", Signal("done")),
    ("- FORGE_DONE", Signal("done")),
    ("* **FORGE_DONE**", Signal("done")),
    ("1. FORGE_DONE", Signal("done")),
    ("> FORGE_DONE", Signal("done")),
    ("> - `FORGE_DONE`", Signal("done")),
    ("**FORGE_BLOCKED:** the API is down", Signal("blocked", "the API is down")),
    ("**FORGE_BLOCKED**: the API is down", Signal("blocked", "the API is down")),
    ("**FORGE_BLOCKED: the API is down**", Signal("blocked", "the API is down")),
    ("`FORGE_NEEDS_HUMAN: which DB?`", Signal("needs_human", "which DB?")),
    ("`FORGE_NEEDS_HUMAN: which DB?`.", Signal("needs_human", "which DB?")),
    ("__RAUF_NEEDS_HUMAN:__ which DB?", Signal("needs_human", "which DB?")),
    ("- **FORGE_BLOCKED:** the **API key** is missing",
     Signal("blocked", "the **API key** is missing")),
    ("FORGE_BLOCKED", Signal("blocked")),
    ("**FORGE_NEEDS_HUMAN**", Signal("needs_human")),
    # Not a signal: mid-prose, words after it, a wrapper that does not close the line.
    ("I would have printed FORGE_DONE once the tests passed.", None),
    ("FORGE_DONE once the tests pass", None),
    ("**Status:** FORGE_DONE", None),
    ("FORGE_DONE_SOON", None),
    ("*FORGE_DONE**", None),
    ("FORGE_DONE: yes", None),
    ("- `FORGE_DONE` — the item is complete and its acceptance criteria hold.", None),
    ("- `FORGE_BLOCKED: <reason>` — you cannot proceed for a reason outside your control.",
     None),
    ("forge_done", None),
])
def test_the_signal_line_as_markdown_writes_it(line: str, expected: Signal | None) -> None:
    assert parse_signal(f"Some work.\n{line}\n") == (expected or NO_SIGNAL)
    assert parse_signal(f"FORGE_BLOCKED: earlier\n{line}\n") == (
        expected or NO_SIGNAL)
    assert parse_signal(f"{line}\nmore words\n") == NO_SIGNAL


def test_the_prompt_tells_the_grammar_and_its_own_lines_are_no_signal() -> None:
    """The agent is told what a signal line may look like; one that echoes the
    protocol it was given has not signalled."""
    protocol = build_prompt(Item({"id": "001", "title": "T"})).split("## When you stop", 1)[1]
    assert "Markdown around it is fine (`**FORGE_DONE**`" in protocol
    assert "a signal inside a sentence, or followed by more text, is not read" in protocol
    assert parse_signal(protocol) == NO_SIGNAL


def test_prompt_carries_item_project_prompt_file_and_answer() -> None:
    item = Item({"id": "004", "title": "Add login", "type": "feature", "priority": 2,
                 "description": "Users log in.", "acceptanceCriteria": ["form exists", "  "],
                 "notes": "see docs", "humanAnswer": "Use OAuth with GitHub."})
    prompt = build_prompt(item, project_description="A shop.", prompt_file_text="Be careful.")
    assert prompt.index("Be careful.") < prompt.index("## Project\nA shop.")
    assert "## Backlog item 004: Add login" in prompt
    assert "- form exists" in prompt and "-   " not in prompt
    assert "## The human's answer\nUse OAuth with GitHub.\n" in prompt  # not what it answers
    assert prompt.rstrip().endswith("Do not commit; the runner commits your changes for the item.")


@pytest.mark.parametrize(("kind", "expected"), [
    ("question", "## Your question, and the human's answer\n"
                 "Your previous attempt asked:\n> Which database?\n> SQLite or Postgres\n\n"
                 "The human's answer:\nSQLite, in data/app.db.\n"),
    ("blocker", "## Your previous attempt was blocked, and the human's answer\n"
                "Your previous attempt stopped, blocked:\n> Which database?\n"
                "> SQLite or Postgres\n\nThe human's answer:\nSQLite, in data/app.db.\n"),
    ("failure", "## Your earlier attempts failed, and what the human says\n"
                "Your earlier attempts failed:\n> Which database?\n> SQLite or Postgres\n\n"
                "The human says:\nSQLite, in data/app.db.\n"),
])
def test_the_answer_comes_with_what_it_answers_worded_by_what_happened(
        kind: str, expected: str) -> None:
    item = Item({"id": "001", "title": "T", "humanAnswer": "SQLite, in data/app.db.",
                 "answeredReason": "Which database?\nSQLite or Postgres", "answeredKind": kind})
    prompt = build_prompt(item)
    assert expected in prompt
    assert prompt.index(expected) < prompt.index("## When you stop")


def test_a_conflict_retried_on_the_new_tip_is_told_once_by_its_own_section() -> None:
    from git_forge.reconcile.conflicts import RETRY_ANSWER, ConflictRecord

    conflict = ConflictRecord("002", "a" * 40, ("shared.txt",), ("001",), "forge/002",
                              "wt", "main", "2026-01-01T00:00:00Z",
                              "refs/forge/retried/002/1", True)
    item = Item({"id": "002", "title": "T", "humanAnswer": RETRY_ANSWER,
                 "answeredReason": "merge conflict in shared.txt with item 001. Retry it on "
                                   "the new tip or resolve it by hand: git forge recover",
                 "answeredKind": "question"})
    prompt = build_prompt(item, conflict=conflict)
    assert "## Your previous attempt could not be integrated" in prompt
    assert "git forge recover" not in prompt and "human" not in prompt.split("## When")[0]


def test_prompt_without_answer_has_no_answer_heading() -> None:
    prompt = build_prompt(Item({"id": "001", "title": "T"}))
    assert "human's answer" not in prompt
    assert "FORGE_NEEDS_HUMAN" in prompt


def test_state_round_trip_and_key_order(tmp_path: Path) -> None:
    assert read_state(tmp_path) is None
    write_state(tmp_path, RunState(status="running", iteration=2, max_iterations=5,
                                   current_item="003", run_id="r1"))
    document = read_state(tmp_path).to_json()
    assert list(document) == [
        "status", "iteration", "maxIterations", "currentItem", "lastSignal", "startedAt",
        "updatedAt", "completedItems", "blockedItems", "deferredItems", "needsHumanItems",
        "baseCommitHash", "runId", "error", "waitingUntil", "runningItems", "verifyFailures",
        "sandbox"]
    assert document["status"] == "running" and document["updatedAt"].endswith("Z")
    # a serial run sets only currentItem: runningItems is that item; a parallel run sets both
    assert document["runningItems"] == ["003"] and read_state(tmp_path).running == ("003",)
    write_state(tmp_path, RunState(status="running", current_item="003",
                                   running_items=("001", "003")))
    assert read_state(tmp_path).to_json()["runningItems"] == ["001", "003"]
    write_state(tmp_path, RunState(status="running", current_item=None, running_items=()))
    assert read_state(tmp_path).running == ()
    (tmp_path / "state.json").write_text('{"status": "running", "currentItem": "004", '
                                         '"runningItems": "bogus"}')
    assert read_state(tmp_path).running == ("004",)  # tolerant: a wrong type is unknown
    write_state(tmp_path, RunState(status="running", iteration=2, max_iterations=5,
                                   current_item="003", run_id="r1"))
    with pytest.raises(ValueError):
        write_state(tmp_path, RunState(status="bogus"))
    assert read_state(tmp_path).to_json()["status"] == "running"
    (tmp_path / "state.json").write_text("{torn")
    with pytest.raises(StoreError):
        read_state(tmp_path)
    assert json.dumps(RunState().to_json())


def test_deferral_reasons_of_different_failures_never_cluster() -> None:
    from git_forge.backlog.topology import cluster_blocked
    from git_forge.loop.iteration import what_happened
    from git_forge.loop.outcomes import deferral_reason

    reasons = [
        deferral_reason(what_happened(1, "exited", False, 10, None), 3),
        deferral_reason(what_happened(0, "exited", False, 10, None), 3),
        deferral_reason(what_happened(None, "timed_out", True, 10, None), 3),
        deferral_reason(what_happened(None, "killed", False, 10, None), 3),
        deferral_reason(what_happened(1, "exited", False, 10,
                                      "RuntimeError: model overloaded, try again later"), 3),
    ]
    assert reasons[:3] == ["exit 1 — deferred after 3 attempts",
                           "ended without a signal — deferred after 3 attempts",
                           "timed out after 10 minutes — deferred after 3 attempts"]
    items = [Item({"id": f"{n:03d}", "status": "blocked", "blockedReason": reason,
                   "deferred": True, "dependsOn": []}) for n, reason in enumerate(reasons, start=1)]
    assert [c["memberIds"] for c in cluster_blocked(items)] == [
        ["001"], ["002"], ["003"], ["004"], ["005"]]
    # The same failure on two items is one cause, and clusters.
    twins = items[:1] + [items[0].with_changes(id="009")]
    assert [c["memberIds"] for c in cluster_blocked(twins)] == [["001", "009"]]


def test_options_take_each_flag_given_else_the_configuration(git_repo: Path) -> None:
    from git_forge.loop.options import LoopFlags, LoopOptions, loop_options
    from git_forge.workspace import locate

    assert loop_options(locate(git_repo), LoopFlags(agent="my-agent --fast")) == LoopOptions(
        agent=["my-agent", "--fast"], iterations=50, retries=2, timeout_minutes=30,
        pause_on_needs_human=False, force=False, prompt_file=None)

    (git_repo / "prompt.md").write_text("Be careful.\n")
    (git_repo / "other.md").write_text("Be quick.\n")
    (git_repo / ".forge.yaml").write_text(
        "loop:\n  agent: cfg-agent 'two words'\n  iterations: 7\n  retries: 0\n"
        "  timeoutMinutes: 1.5\n  promptFile: prompt.md\n  pauseOnNeedsHuman: true\n")
    workspace = locate(git_repo)
    assert loop_options(workspace, LoopFlags()) == LoopOptions(
        agent=["cfg-agent", "two words"], iterations=7, retries=0, timeout_minutes=1.5,
        pause_on_needs_human=True, prompt_file=workspace.root / "prompt.md")
    flags = LoopFlags(agent="flag-agent", iterations=3, retries=4, timeout_minutes=0.5,
                      prompt_file="other.md", force=True)
    assert loop_options(workspace, flags) == LoopOptions(
        agent=["flag-agent"], iterations=3, retries=4, timeout_minutes=0.5,
        pause_on_needs_human=True, force=True, prompt_file=workspace.root / "other.md")


def test_options_no_run_could_use_are_refused_before_anything_changes(
        templates, tmp_path: Path) -> None:
    from builders import one_item_backlog
    from helpers import run_forge, snapshot

    root = templates.copy("one-item", one_item_backlog, tmp_path / "repo")
    before = snapshot(root, skip_git=False)
    for flags, message in [
        (["--agent", "agent 'unclosed"],
         "cannot split the agent command line: No closing quotation"),
        (["--agent", "true", "--prompt-file", "missing.md"],
         f"no prompt file at {root / 'missing.md'}"),
        (["--agent", "true", "--timeout", "0"],
         "--timeout must be a positive number of minutes, at most 1,000,000 (got 0)"),
        # a timeout no clock can add to now: these crashed the run after taking the item
        (["--agent", "true", "--timeout", "inf"],
         "--timeout must be a positive number of minutes, at most 1,000,000 (got inf)"),
        (["--agent", "true", "--timeout", "1e12"],
         "--timeout must be a positive number of minutes, at most 1,000,000 (got 1e+12)"),
        (["--agent", "true", "--timeout", "nan"],
         "--timeout must be a positive number of minutes, at most 1,000,000 (got nan)"),
        (["--agent", "true", "--idle-timeout", "1e400"],
         "--idle-timeout must be a positive number of minutes, at most 1,000,000 (got inf)"),
    ]:
        refused = run_forge("loop", "run", *flags, cwd=root)
        assert (refused.returncode, refused.stdout, refused.stderr) == (
            2, "", f"Error: {message}\n"), flags
    assert snapshot(root, skip_git=False) == before


def test_a_deferral_reason_says_every_runs_attempts_when_there_were_more() -> None:
    from git_forge.loop.outcomes import deferral_reason

    assert deferral_reason("exit 1", 3) == "exit 1 — deferred after 3 attempts"
    assert deferral_reason("exit 1", 3, 3) == "exit 1 — deferred after 3 attempts"
    assert deferral_reason("exit 1", 1, 4) == (
        "exit 1 — deferred after 1 attempt in this run (4 in all)")

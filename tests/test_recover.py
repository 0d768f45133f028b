"""git forge recover end to end: the embedded runner after a real loop run, and a
scripted fake external runner for the version, degraded and failure paths."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from builders import blocked_backlog, init_repository
from helpers import PtySession, git, run_forge, snapshot
from templates import Templates

DEMO_AGENT = f"{sys.executable} -m git_forge.demo.agent"

FAKE_RUNNER = r'''#!PYTHON
"""A rauf-compatible runner over a JSON file, with failures to order."""
import json, os, pathlib, sys
here = pathlib.Path(os.environ["FAKE_DIR"])
with open(here / "calls.jsonl", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
items_file = here / "items.json"
items = json.loads(items_file.read_text())
args = sys.argv[1:]
if args[:1] == ["version"]:
    version = os.environ.get("FAKE_VERSION", "0.14.0")
    if version == "CRASH":
        sys.exit("version: unknown command")
    print(json.dumps({"version": version}) if version != "garbage" else "not json")
    sys.exit(0)
verb = args[1]
if verb == "list":
    print(json.dumps(items)); sys.exit(0)
item_id = args[3]
if item_id == os.environ.get("FAKE_FAIL_FOR"):
    sys.stderr.write(f"fake-runner: cannot {verb} {item_id}: disk on fire\n"); sys.exit(3)
item = next(i for i in items if i["id"] == item_id)
if os.environ.get("FAKE_NOOP") != item_id:
    item["status"] = "pending"; item["needsHuman"] = False; item.pop("blockedReason", None)
    if verb == "answer":
        item["humanAnswer"] = args[4]
    items_file.write_text(json.dumps(items))
print(json.dumps({"answered": item_id, "status": "pending"} if verb == "answer"
                 else {"unblockedCount": 1, "unblockedIds": [item_id]}))
'''


def recover(root: Path, *args: str, env: dict | None = None):
    return run_forge("recover", *args, cwd=root, env=env)


def recover_json(root: Path, *args: str, env: dict | None = None) -> tuple[int, dict]:
    result = recover(root, "--json", *args, env=env)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


# --- the embedded runner, after a real loop run with the demo's scripted agent -------------

def build_after_run(root: Path) -> None:
    """The demo backlog after one loop run: 001, 002 done; 003 and 004 need a human
    (same cause, different words); 006 blocked with its leftovers stashed; 005 gated."""
    init_repository(root)
    assert run_forge("init", cwd=root).returncode == 0
    titles = ["Greeting", "CLI", "Store greetings", "Preferences", "Translate", "Publish"]
    for title in titles:
        run_forge("backlog", "add", "--title", title, cwd=root)
    run_forge("backlog", "edit", "002", "--depends-on", "001", cwd=root)
    run_forge("backlog", "edit", "005", "--depends-on", "003", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "backlog", cwd=root)
    result = run_forge("loop", "run", "--agent", DEMO_AGENT, cwd=root)
    assert result.returncode == 5, result.stderr


@pytest.fixture
def after_run(templates: Templates, tmp_path: Path) -> Path:
    """A copy of ``build_after_run``'s repository (a loop run costs seconds)."""
    return templates.copy("after-run", build_after_run, tmp_path / "repo")


def items_of(root: Path) -> dict[str, dict]:
    raw = run_forge("backlog", "list", "--json", cwd=root).stdout
    return {item["id"]: item for item in json.loads(raw)}


def test_plan_names_every_member_and_the_topology_blast_radius(after_run: Path) -> None:
    before = snapshot(after_run, skip_git=False)
    code, plan = (lambda r: (r.returncode, json.loads(r.stdout)))(
        recover(after_run, "--plan", "--json"))
    assert snapshot(after_run, skip_git=False) == before  # --plan writes nothing
    assert code == 0 and plan["reentry"] == []
    cluster = plan["questions"][0]
    assert (cluster["id"], cluster["kind"], cluster["itemIds"]) == ("c003", "cluster",
                                                                    ["003", "004"])
    topology = json.loads(run_forge("backlog", "topology", "--cluster", "--json",
                                    cwd=after_run).stdout)
    truth = next(c for c in topology["clusters"] if c["clusterId"] == "c003")
    assert cluster["gatedIds"] == truth["gatedIds"] == ["005"]
    assert cluster["itemCount"] == topology["itemCount"] == 6
    assert (f"gates {truth['gatedCount']} of {topology['itemCount']} backlog items (item 005)"
            in cluster["text"])
    assert "003" in cluster["text"] and "004" in cluster["text"]
    # One id form: the questions' ids are the topology's cluster ids, singletons too.
    assert [q["id"] for q in plan["questions"]] == [
        c["clusterId"] for c in topology["clusters"]] == ["c003", "c006"]


def test_scripted_pass_records_applies_proves_and_resolves(after_run: Path) -> None:
    code, report = recover_json(after_run, "--answer", "c003=Use SQLite", "--defer", "006")
    assert code == 0, report
    assert report["outcome"] == "resolved" and report["next"] == "git forge loop run"
    assert report["affected"] == ["003", "004"]
    assert [(r["itemId"], r["deferred"], r.get("clusterId")) for r in report["recorded"]] == [
        ("003", False, "c003"), ("004", False, "c003"), ("006", True, None)]
    assert [a["via"] for a in report["applied"]] == ["answer", "answer"]
    assert report["proof"] == {"movers": [{"id": "003", "status": "pending"},
                                          {"id": "004", "status": "pending"}],
                               "nonMovers": []}
    # The deferral of an unrelated item (006) does not block resolved.
    assert report["gate"] == {"unappliedAffected": [], "porcelainClean": True,
                              "itemTreesClean": True, "allMoved": True}
    assert report["failure"] is None
    items = items_of(after_run)
    assert items["003"]["humanAnswer"] == "Use SQLite" and items["006"]["status"] == "blocked"
    # The recovery's own backlog change was committed; the tree is clean.
    assert git("log", "-1", "--format=%s", cwd=after_run).strip() == (
        "[forge] recover: decisions applied to the backlog")
    assert git("status", "--porcelain", cwd=after_run) == ""
    assert report["tree"]["stashes"][0]["itemId"] == "006"
    human = recover(after_run, "--non-interactive")
    assert human.stdout.rstrip("\n").splitlines()[-2:] == ["NEXT-STEPS", "  git forge recover"]
    # The checks behind "resolved" in words, each with its source, no identifiers
    assert ("  checks    for the outcome resolved:\n"
            "            answered in this pass: none (resolved needs one)\n"
            "            every answer applied: yes (the decision record)\n"
            "            every answered item unblocked: yes (the backlog, read again)\n"
            "            no stranded work in the working tree: yes (git status)\n"
            "            no stranded work in items' worktrees or branches: yes "
            "(git worktree list)\n") in human.stdout
    assert not any(word in human.stdout for word in ("porcelain", "re-read)", "affected:"))
    # The deferral was asked again but not answered: the record does not grow.
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert len(record["decisions"]) == 3


def test_then_the_loop_finishes_with_the_answers_threaded(after_run: Path) -> None:
    # 006 is plain blocked (not needs-human): its answer reaches the agent's prompt too.
    code, report = recover_json(after_run, "--answer", "c003=Use SQLite",
                                "--answer", "006=Publish to TestPyPI")
    assert [(a["itemId"], a["via"]) for a in report["applied"]] == [
        ("003", "answer"), ("004", "answer"), ("006", "answer")]
    result = run_forge("loop", "run", "--agent", DEMO_AGENT, cwd=after_run)
    assert result.returncode == 0, result.stdout
    items = items_of(after_run)
    assert [items[i]["status"] for i in ("003", "004", "005", "006")] == ["done"] * 4
    assert "The human decided: Use SQLite" in (after_run / "notes/003-store-greetings.md"
                                                ).read_text()
    assert "The human decided: Publish to TestPyPI" in (after_run / "notes/006-publish.md"
                                                         ).read_text()


def test_no_commit_leaves_recovers_change_queued_as_the_launch_takes_it(after_run: Path) -> None:
    """recover and reconcile called it stranded work (exit 6, or a group blamed on the
    last item to touch backlog.json) where the pre-launch check let it through: it is
    queued work, which the next run commits first — all three say so now."""
    head = git("rev-parse", "HEAD", cwd=after_run)
    code, report = recover_json(after_run, "--answer", "c003=Use SQLite", "--no-commit")
    assert (code, report["outcome"], report["next"]) == (0, "resolved", "git forge loop run")
    assert report["gate"]["porcelainClean"] is True
    assert report["tree"]["groups"][0]["id"] == "recovery" and report["tree"]["actions"] == []
    assert report["tree"]["queuedBacklog"] == {
        "path": ".forge/backlog.json", "changes": "change 003, 004",
        "recoverAnswers": ["003", "004"]}
    assert git("status", "--porcelain", cwd=after_run).strip() == "M .forge/backlog.json"
    assert git("rev-parse", "HEAD", cwd=after_run) == head
    assert run_forge("preflight", cwd=after_run).returncode == 0
    # in words: recover's own change, never a candidate beside "not stranded work"
    again = recover(after_run, "--no-commit")
    assert "tree      recovery (this recovery's own backlog change): .forge/backlog.json" \
        in again.stdout, again.stdout
    assert "candidate" not in again.stdout
    before = snapshot(after_run)
    shown = run_forge("reconcile", cwd=after_run)
    assert (shown.returncode, shown.stderr) == (0, "")
    # the run's abandoned work is listed (item 006's), then the note on the queued change
    assert shown.stdout.startswith("Items' abandoned work, kept or stashed")
    assert shown.stdout.endswith(
        "note: .forge/backlog.json holds recover's answers to 2 items (003, 004), not "
        "committed: queued for the next loop run, which commits it first — not stranded "
        "work\n")
    document = json.loads(run_forge("reconcile", "--json", cwd=after_run).stdout)
    assert document["groups"] == [] and document["queuedBacklog"]["recoverAnswers"] == [
        "003", "004"]
    assert snapshot(after_run) == before


def test_dirty_tree_blocks_resolved_and_nothing_is_touched(after_run: Path) -> None:
    (after_run / "stray.txt").write_text("mine\n")
    code, report = recover_json(after_run, "--answer", "c003=SQLite", "--answer",
                                "006=use TestPyPI")
    assert report["outcome"] != "resolved" and code == 6
    assert report["gate"]["porcelainClean"] is False
    groups = {g["id"]: g for g in report["tree"]["groups"]}
    assert groups["recovery"]["paths"] == [{"path": ".forge/backlog.json", "xy": " M"}] or (
        "recovery" not in groups)
    stray = [g for g in report["tree"]["groups"] if g["kind"] != "recovery"]
    assert stray and stray[0]["candidate"] is True
    assert (after_run / "stray.txt").read_text() == "mine\n"
    assert report["next"] == "git forge reconcile"


def test_nothing_to_recover_is_clean_and_never_resolved(git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "empty backlog", cwd=git_repo)
    result = recover(git_repo)
    assert result.returncode == 0
    assert "nothing to recover" in result.stdout and "outcome: resolved" not in result.stdout
    code, report = recover_json(git_repo)
    assert report["outcome"] == "complete" and report["affected"] == []


def test_before_any_run_recover_says_no_run_has_happened(git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "empty backlog", cwd=git_repo)
    empty = recover(git_repo).stdout
    assert "no loop run has happened yet" in empty and "run evidence unusable" not in empty
    assert run_forge("backlog", "add", "--title", "A", cwd=git_repo).returncode == 0
    queued = recover(git_repo)
    assert queued.returncode == 0, queued.stderr
    assert ("outcome: partial (no loop run has happened yet: the items wait for "
            "git forge loop run)") in queued.stdout
    assert "the run stopped" not in queued.stdout and "run evidence unusable" not in queued.stdout
    assert queued.stdout.split("NEXT-STEPS\n", 1)[1].strip() == "git forge loop run"


def test_a_hand_broken_backlog_is_named_as_the_file_to_fix(git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    assert run_forge("backlog", "add", "--title", "A", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    backlog = git_repo / ".forge" / "backlog.json"
    backlog.write_text(backlog.read_text().replace('"001"', '"A01"'))
    before = backlog.read_bytes()
    result = recover(git_repo)
    assert result.returncode == 10
    assert 'invalid item id "A01"' in result.stdout
    assert ".forge/backlog.json must be fixed first" in result.stdout
    assert "git checkout -- .forge/backlog.json" in result.stdout
    next_step = result.stdout.split("NEXT-STEPS\n", 1)[1].strip()
    assert next_step == "git diff -- .forge/backlog.json"  # not recover, which fails again
    assert backlog.read_bytes() == before


def test_credential_answers_are_refused_before_recording(after_run: Path) -> None:
    record = after_run / ".forge" / "forge-decisions.json"
    result = recover(after_run, "--answer", "006=ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    assert result.returncode == 2 and result.stderr.startswith("Error:")
    assert "credential" in result.stderr
    assert not record.exists()
    assert items_of(after_run)["006"]["status"] == "blocked"


def test_unknown_ids_and_bad_answers_files_are_usage_errors(after_run: Path,
                                                            tmp_path: Path) -> None:
    assert recover(after_run, "--answer", "099=x").returncode == 2
    bad = tmp_path / "answers.yaml"
    bad.write_text("- not\n- a mapping\n")
    result = recover(after_run, "--answers", str(bad))
    assert result.returncode == 2 and "mapping" in result.stderr
    good = tmp_path / "answers.yaml"
    good.write_text("c003: Use SQLite\n006: defer\n")
    code, report = recover_json(after_run, "--answers", str(good))
    assert code == 0 and report["outcome"] == "resolved"


@pytest.mark.parametrize(("args", "message"), [
    (["--answer", "c003=Use SQLite", "--defer", "c003"],
     "two decisions for c003: --answer c003='Use SQLite' and --defer c003"),
    (["--answer", "006=yes", "--answer", "006=no"],
     "two decisions for 006: --answer 006='yes' and --answer 006='no'"),
    (["--answer", "6=yes do it", "--defer", "006"],  # one item, written two ways
     "two decisions for 006 (given as 6 and 006)"),
    (["--merge", ","], "--merge takes two or more cluster or item ids, C1,C2 (got ',')"),
    (["--merge", "c003"], "--merge takes two or more cluster or item ids, C1,C2 (got 'c003')"),
    (["--merge", "c003,c003"],  # as the prompt refuses "c003 c003"
     "--merge c003,c003 names one question only: name two or more different questions to "
     "merge"),
    (["--merge", "c003,4"],  # 004 is a member of c003
     "--merge c003,4 names one question only: name two or more different questions to merge"),
    (["--answer", "c003=defer"],  # the prompt's and the file's word, never an answer's text
     "--answer c003=defer: to defer a question, use --defer c003 (an answer is the decision "
     "in words)"),
    (["--answer", "c003=Cancel"],
     "--answer c003=Cancel: to defer a question, use --defer c003 (an answer is the decision "
     "in words)"),
    (["--answers", "FILE:c003: ~\n"], "answers file FILE: the answer for c003 must be text, "
     "'defer' or 'cancel'"),
    (["--answers", "FILE:c003: null\n"], "answers file FILE: the answer for c003 must be "
     "text, 'defer' or 'cancel'"),
    (["--answers", "FILE:c006: Use TestPyPI\nc003: cancel\n"],
     "answers file FILE: c003: cancel defers every later question, answers included; write "
     "defer for the questions to leave"),
])
def test_contradictory_or_empty_choices_are_refused_and_change_nothing(
        after_run: Path, args: list[str], message: str) -> None:
    """One id, one decision: a choice that would be dropped by its order is refused.
    Ids written two ways are told apart against the questions, read under recover's
    lock: a refused pass removes the lock file it created, so no file changes."""
    file = after_run.parent / "answers.yaml"
    for number, arg in enumerate(args):
        if arg.startswith("FILE:"):  # an answers file of this text, outside the tree
            file.write_text(arg.removeprefix("FILE:"))
            args = [*args[:number], str(file), *args[number + 1:]]
            message = message.replace("FILE", str(file))
    before = snapshot(after_run, skip_git=False)
    result = recover(after_run, "--non-interactive", *args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"Error: {message}\n")
    after = snapshot(after_run, skip_git=False)
    assert after == before


def test_a_flag_replaces_the_answers_files_choice_however_the_id_is_spelled(
        after_run: Path, tmp_path: Path) -> None:
    """The file's 006 and ``--answer 6=…`` are one id: the flag wins, as the docs say,
    where they were refused as two decisions."""
    answers_file = tmp_path / "answers.yaml"
    answers_file.write_text("c003: Use SQLite\n006: Use TestPyPI\n")
    code, report = recover_json(after_run, "--answers", str(answers_file),
                                "--answer", "6=Use the real PyPI")
    assert (code, report["outcome"]) == (0, "resolved"), report
    assert items_of(after_run)["006"]["humanAnswer"] == "Use the real PyPI"


@pytest.mark.parametrize(("name", "content", "problem"), [
    ("answers.yaml", "006: Use SQLite\n006: Use Postgres\n",
     "line 2: the key '006' is given twice"),
    ("answers.json", '{"006": "Use SQLite", "006": "Use Postgres"}',
     "the key '006' is given twice"),
])
def test_a_key_given_twice_in_an_answers_file_is_refused(
        after_run: Path, tmp_path: Path, name: str, content: str, problem: str) -> None:
    """Neither parser may keep the last of two answers for one id without a word."""
    answers_file = tmp_path / name
    answers_file.write_text(content)
    before = snapshot(after_run, skip_git=False)
    result = recover(after_run, "--non-interactive", "--answers", str(answers_file))
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", f"Error: {answers_file}: {problem}\n")
    assert snapshot(after_run, skip_git=False) == before


def test_corrupt_record_is_a_failed_read(after_run: Path) -> None:
    record = after_run / ".forge" / "forge-decisions.json"
    record.write_text("{corrupt")
    code, report = recover_json(after_run, "--answer", "c003=x")
    assert code == 10
    assert report["failure"]["kind"] == "failed-read" and report["failure"]["step"].startswith(
        "1")
    assert str(record) in report["failure"]["error"]
    assert report["recorded"] == [] and report["applied"] == []
    assert record.read_text() == "{corrupt"


def test_an_unwritable_record_is_a_failed_record_and_nothing_is_applied(
    after_run: Path
) -> None:
    (after_run / ".forge" / "forge-decisions.json.lock").mkdir()
    code, report = recover_json(after_run, "--answer", "c003=x")
    assert code == 11 and report["failure"]["kind"] == "failed-record"
    assert report["applied"] == []
    assert items_of(after_run)["003"]["status"] == "blocked"


def _blocked_backlog_repo(git_repo: Path, ids: tuple[str, ...]) -> Path:
    return blocked_backlog(git_repo, {item_id: f"Which colour for {item_id}?" for item_id in ids})


@pytest.mark.parametrize(("middle", "outcome", "kind"), [
    ({"status": "blocked", "blockedReason": "staging is down"}, "blocked", "blocked"),
    ({"status": "in_progress"}, "partial", "in progress"),  # left by a run that crashed
])
def test_a_starved_backlog_names_what_it_waits_on(git_repo: Path, middle: dict, outcome: str,
                                                  kind: str) -> None:
    """A done root, a stuck middle item and a pending leaf: no blocking root, no cycle —
    the report names the middle item and what it gates."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    backlog = git_repo / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    base = {"type": "feature", "priority": 1}
    document["items"] = [
        {**base, "id": "001", "title": "root", "status": "done",
         "completedAt": "2026-01-01T00:00:00Z"},
        {**base, "id": "002", "title": "middle", "dependsOn": ["001"], **middle},
        {**base, "id": "003", "title": "leaf", "status": "pending", "dependsOn": ["002"]},
    ]
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    result = recover(git_repo, "--non-interactive")
    assert f"  outcome: {outcome}" in result.stdout
    assert f"nothing is selectable, waiting on 002 ({kind}) gating 003\n" in result.stdout
    assert "blocking roots" not in result.stdout and "cycle" not in result.stdout
    code, report = recover_json(git_repo, "--non-interactive")
    assert report["outcome"] == outcome
    assert report["waitingOn"] == [{"ids": ["002"], "kind": kind.replace(" ", "_"),
                                    "gatedIds": ["003"], "gatedCount": 1}]


def test_embedded_apply_is_one_batch_stamped_after_the_runner_has_it(git_repo: Path) -> None:
    root = _blocked_backlog_repo(git_repo, ("001", "002", "003", "004"))
    code, report = recover_json(root, "--answer", "001=red", "--answer", "002=blue",
                                "--answer", "003=green", "--defer", "004")
    assert (code, report["outcome"]) == (0, "resolved"), report  # 004 deferred
    assert [a["itemId"] for a in report["applied"]] == ["001", "002", "003"]
    record = json.loads((root / ".forge" / "forge-decisions.json").read_text())
    stamps = {e["itemId"]: e["appliedAt"] for e in record["decisions"]}
    assert stamps["004"] is None and len({stamps[i] for i in ("001", "002", "003")}) == 1
    assert stamps["001"] is not None
    assert {i: items_of(root)[i]["humanAnswer"] for i in ("001", "002", "003")} == {
        "001": "red", "002": "blue", "003": "green"}


def test_embedded_refusal_mid_batch_keeps_the_changes_before_it_and_stops(
    git_repo: Path
) -> None:
    # Recorded answers from an earlier pass (re-entry), one of them blank: the runner
    # refuses it. As call by call: 001 is applied and stamped, 002 fails, 003 is
    # never attempted, and neither of them is stamped.
    from git_forge import decisions

    root = _blocked_backlog_repo(git_repo, ("001", "002", "003"))
    rec = decisions.open_record(root / ".forge", ".forge")
    decisions.record_all(rec, [decisions.NewDecision(i, f"Which colour for {i}?", answer)
                               for i, answer in (("001", "red"), ("002", "   "),
                                                 ("003", "green"))])
    code, report = recover_json(root, "--non-interactive")
    assert code == 12, report
    assert report["failure"]["kind"] == "failed-apply"
    assert report["failure"]["error"] == "item 002: the answer text may not be empty"
    assert [a["itemId"] for a in report["applied"]] == ["001"]
    assert report["proof"] == {"movers": [], "nonMovers": []}
    unapplied = decisions.unapplied_view(rec)["unapplied"]
    assert [e["itemId"] for e in unapplied] == ["002", "003"]
    status = {i: item["status"] for i, item in items_of(root).items()}
    assert status == {"001": "pending", "002": "blocked", "003": "blocked"}


def test_interactive_flow_through_a_real_terminal(after_run: Path) -> None:
    (after_run / "stray.txt").write_text("scratch\n")
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.send("")
    text = session.expect("Your decision")
    assert "Items 003 and 004 are blocked on the same decision" in text
    assert "gates 1 of 6 backlog items (item 005)" in text
    session.send("Use SQLite")
    session.expect("Record it?")
    session.send("y")
    session.expect("Question 2 of 2 (c006)")
    session.expect("Your decision")
    session.send("")  # defer
    # recover's own change is committed or left, never stashed or discarded: its
    # answers are recorded as applied (a discard blocked the items again behind them)
    session.expect("recovery: [c]ommit / [l]eave (default: commit)")
    session.send("")  # default: commit recover's own change
    session.expect("unattributed:")
    session.send("d")
    text = session.expect("Discard exactly these paths?")
    assert "?? stray.txt" in text
    session.send("y")
    code = session.finish()
    assert code == 0, session.text
    assert session.text.rstrip().endswith("git forge loop run")
    assert not (after_run / "stray.txt").exists()
    ref = git("for-each-ref", "--format=%(refname)", "refs/forge/discarded",
              cwd=after_run).strip()
    assert git("show", f"{ref}:stray.txt", cwd=after_run) == "scratch\n"
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["answer"]) for e in record["decisions"]] == [
        ("003", "Use SQLite"), ("004", "Use SQLite"), ("006", None)]


def test_the_merge_prompt_shows_real_ids_explains_typos_and_never_aborts(
    after_run: Path
) -> None:
    session = PtySession("recover", cwd=after_run)
    text = session.expect("Merge questions that share a cause? (their ids; ?: help; "
                          "Enter: ask each on its own)")
    assert "  c003: items 003, 004\n" in text.replace("\r", "")
    assert "  c006: item 006\n" in text.replace("\r", "")
    session.send("c9,c003")
    session.expect("Not merged: there is no question c9 (the questions are c003, c006")
    session.expect("Merge questions that share a cause?")
    session.send("c003,004")
    session.expect("Not merged: name two or more different questions to merge")
    session.expect("Merge questions that share a cause?")
    session.send("c3, 6")  # numbers name the ids with that value; an item names its question
    session.expect("Merged into one question: c003")
    session.expect("Merge questions that share a cause?")
    session.send("")
    text = session.expect("Your decision")
    assert "Question 1 of 1 (c003)" in text
    assert "Items 003, 004 and 006 are blocked on the same decision" in text
    session.send("Use SQLite and TestPyPI")
    session.expect("Record it?")
    session.send("y")
    session.expect("recovery:")
    session.send("")
    assert session.finish() == 0, session.text
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["answer"], e.get("clusterId")) for e in record["decisions"]] == [
        ("003", "Use SQLite and TestPyPI", "c003"), ("004", "Use SQLite and TestPyPI", "c003"),
        ("006", "Use SQLite and TestPyPI", "c003")]


def test_enter_after_a_typo_at_the_merge_prompt_goes_on_unmerged(after_run: Path) -> None:
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.send("c3,c99")
    session.expect("Not merged: there is no question c99")
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Question 1 of 2 (c003)")
    session.expect("Your decision")
    session.send("")
    session.expect("Question 2 of 2 (c006)")
    session.expect("Your decision")
    session.send("")
    assert session.finish() == 3, session.text  # deferred: 003 and 004 still need a human
    assert "Error:" not in session.text


@pytest.mark.parametrize("args", [
    ("--answer", "c003=Use SQLite", "--answer", "c006=Use TestPyPI"),
    ("--answer", "c3=Use SQLite", "--answer", "6=Use TestPyPI"),
    ("--merge", "c003,006", "--answer", "c003=Use SQLite", "--answer", "c006=Use TestPyPI"),
    ("--answers", "FILE"),
])
def test_every_cluster_the_topology_names_is_an_id_recover_takes(after_run: Path,
                                                                 tmp_path: Path,
                                                                 args: tuple[str, ...]) -> None:
    answers_file = tmp_path / "answers.yaml"
    answers_file.write_text("c003: Use SQLite\nc006: Use TestPyPI\n")
    args = tuple(str(answers_file) if a == "FILE" else a for a in args)
    code, report = recover_json(after_run, *args)
    assert (code, report["outcome"]) == (0, "resolved"), report
    assert [(r["itemId"], r["answer"]) for r in report["recorded"]] == [
        ("003", "Use SQLite"), ("004", "Use SQLite"), ("006", "Use TestPyPI")]


def test_a_singleton_cluster_id_defers_and_an_unknown_id_lists_the_real_ones(
    after_run: Path
) -> None:
    code, report = recover_json(after_run, "--answer", "c003=Use SQLite", "--defer", "c006")
    assert [(r["itemId"], r["deferred"]) for r in report["recorded"]] == [
        ("003", False), ("004", False), ("006", True)]
    before = snapshot(after_run, skip_git=False)
    result = recover(after_run, "--answer", "c9=x")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("Error: no open question for c9 (questions: c006; "
                             "items: 006)\n")
    assert snapshot(after_run, skip_git=False) == before


def test_a_pass_resolved_for_what_it_applied_names_what_it_deferred(after_run: Path) -> None:
    """The recovery spec: deferred items are not the pass's affected items, so the pass
    is resolved (exit 0) for the answers it applied — and says what stays blocked."""
    result = recover(after_run, "--answer", "c003=Use SQLite", "--defer", "c006")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "  outcome: resolved\n  still open: 006 (deferred: the run leaves it blocked, " \
        "and git forge recover asks again)\n" in result.stdout
    items = {i["id"]: i for i in json.loads(
        run_forge("backlog", "list", "--json", cwd=after_run).stdout)}
    assert items["006"]["status"] == "blocked" and items["003"]["status"] == "pending"
    again = recover(after_run, "--answer", "c006=Use TestPyPI")
    assert again.returncode == 0 and "still open" not in again.stdout, again.stdout


@pytest.mark.parametrize("through_git", [False, True])
def test_ctrl_c_cancels_early_and_is_recorded(after_run: Path, through_git: bool) -> None:
    """Through git too: Ctrl-C at a prompt is a key, not a signal, so git does not die
    of a SIGINT after its child exited (a shell would see 130, not the outcome)."""
    session = PtySession("recover", cwd=after_run, through_git=through_git)
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Your decision")
    session.interrupt()
    code = session.finish()
    assert code == 3, session.text
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["deferred"]) for e in record["decisions"]] == [
        ("003", True), ("004", True), ("006", True)]


@pytest.mark.parametrize("cancel", ["interrupt", "end_input"])
def test_ctrl_c_or_end_of_input_at_a_question_asks_nothing_more(
        after_run: Path, cancel: str) -> None:
    """Cancel-early, then nothing more is asked: the tree — recover's own backlog
    change and the stranded file — is left as it is (end of input never takes a
    prompt's default, and recover's is to commit)."""
    (after_run / "stray.txt").write_text("scratch\n")
    head = git("rev-parse", "HEAD", cwd=after_run).strip()
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Your decision")
    session.send("Use SQLite")
    session.expect("Record it?")
    session.send("y")
    session.expect("Question 2 of 2 (c006)")
    session.expect("Your decision")
    getattr(session, cancel)()
    code = session.finish()
    assert code == 4, session.text  # blocked: the stranded work is still there
    assert "outcome: blocked" in session.text
    assert "cancelled: this and the remaining questions are recorded as deferred" in session.text
    assert "cancelled: the tree is left as it is" in session.text
    assert "(default: commit)" not in session.text and "unattributed:" not in session.text
    assert git("rev-parse", "HEAD", cwd=after_run).strip() == head  # nothing committed
    assert (after_run / "stray.txt").read_text() == "scratch\n"
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["answer"]) for e in record["decisions"]] == [
        ("003", "Use SQLite"), ("004", "Use SQLite"), ("006", None)]


def test_an_item_answered_from_another_terminal_meanwhile_is_skipped_not_failed(
        after_run: Path) -> None:
    """The operator takes minutes over a question; another terminal answers one of
    its items meanwhile. That item's recorded answer is stale (as the next pass would
    find it): skipped and reported, the rest applied — the pass does not fail."""
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Your decision")
    answered = run_forge("backlog", "answer", "003", "Use Postgres", cwd=after_run)
    assert answered.returncode == 0, answered.stderr
    session.send("Use SQLite")
    session.expect("Record it?")
    session.send("y")
    session.expect("Question 2 of 2 (c006)")
    session.expect("Your decision")
    session.send("")  # defer
    session.expect("recovery:")
    session.send("")  # commit recover's own change
    code = session.finish()
    assert "FAILED" not in session.text and code == 0, session.text  # resolved
    assert "skipped   003: its recorded answer was not applied — the item is pending" in (
        session.text)
    items = items_of(after_run)
    assert (items["003"]["humanAnswer"], items["004"]["humanAnswer"]) == (
        "Use Postgres", "Use SQLite")
    assert items["004"]["status"] == "pending"


def test_when_every_answer_went_stale_the_outcome_reads_the_list_as_it_is_now(
        after_run: Path) -> None:
    """Every question answered from another terminal meanwhile: nothing is applied,
    and the outcome is judged on the runner's list as the pass read it last — all
    pending — not on the list it started from."""
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Your decision")
    for item_id, answer in (("003", "Use Postgres"), ("004", "Use Postgres"), ("006", "x")):
        result = run_forge("backlog", "answer", item_id, answer, cwd=after_run)
        assert result.returncode == 0, result.stderr
    session.send("Use SQLite")
    session.expect("Record it?")
    session.send("y")
    session.expect("Question 2 of 2 (c006)")
    session.expect("Your decision")
    session.send("yes do it")
    session.expect("Record it?")
    session.send("y")
    code = session.finish()
    # The other terminal's backlog change is queued for the next run, no item's work
    assert ("note      .forge/backlog.json has queued changes (change 003, 004, 006), not "
            "committed") in session.text and "item-006" not in session.text
    for item_id in ("003", "004", "006"):
        assert f"skipped   {item_id}: its recorded answer was not applied" in session.text
    assert "outcome: needs-human" not in session.text and code != 3, session.text
    assert "waiting on 003" not in session.text


def test_end_of_input_at_the_merge_prompt_defers_everything(after_run: Path) -> None:
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.end_input()
    assert session.finish() == 3, session.text
    assert "cancelled: every question is recorded as deferred" in session.text
    assert "Your decision" not in session.text
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["deferred"]) for e in record["decisions"]] == [
        ("003", True), ("004", True), ("006", True)]


def test_credential_typed_at_the_prompt_is_asked_again(after_run: Path) -> None:
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Your decision")
    session.send("AKIAIOSFODNN7EXAMPLE")
    session.expect("looks like a credential")
    session.expect("Your decision")
    session.send("use the key in $AWS_KEY")
    session.expect("Record it?")
    session.send("y")
    session.expect("Your decision")
    session.send("")
    session.expect("recovery:")
    session.send("")
    session.finish()
    record = (after_run / ".forge" / "forge-decisions.json").read_text()
    assert "AKIA" not in record and "use the key in $AWS_KEY" in record


# --- a scripted fake external runner ------------------------------------------------------

@pytest.fixture
def external(git_repo: Path, tmp_path: Path):
    """A project configured for an external runner over a JSON item list."""
    fake_dir = tmp_path / "fake"
    fake_dir.mkdir()
    script = fake_dir / "runner"
    script.write_text(FAKE_RUNNER.replace("#!PYTHON", f"#!{sys.executable}"))
    script.chmod(0o755)
    items = [
        {"id": "001", "title": "A", "status": "blocked", "needsHuman": True,
         "blockedReason": "which database should we use"},
        {"id": "002", "title": "B", "status": "blocked", "needsHuman": False,
         "blockedReason": "the staging server is down"},
        {"id": "003", "title": "C", "status": "pending", "dependsOn": ["001"]},
    ]
    (fake_dir / "items.json").write_text(json.dumps(items))
    (git_repo / ".forge.yaml").write_text(
        f"loopRunner:\n  bin: {script}\n  installHint: pip install rauf>=0.14\n")
    (git_repo / ".forge").mkdir()
    (git_repo / ".gitignore").write_text(".forge/\n")
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "external runner", cwd=git_repo)

    class External:
        root = git_repo
        dir = fake_dir

        def env(self, **extra: str) -> dict[str, str]:
            return {"FAKE_DIR": str(fake_dir), **extra}

        def calls(self) -> list[list[str]]:
            path = fake_dir / "calls.jsonl"
            return [json.loads(line) for line in path.read_text().splitlines()] if (
                path.exists()) else []

        def items(self) -> dict[str, dict]:
            return {i["id"]: i for i in json.loads((fake_dir / "items.json").read_text())}

        def unapplied(self) -> list[str]:
            out = run_forge("decision", "list", "--backlog-dir", str(git_repo / ".forge"),
                            "--unapplied", "--json", cwd=git_repo).stdout
            return [e["itemId"] for e in json.loads(out)["unapplied"]]

    return External()


ANSWERS = ("--answer", "001=Use Postgres", "--answer", "002=wait for staging")


@pytest.mark.parametrize("version", ["0.14.0", "v0.14.0", "0.15.2"])
def test_capable_runner_threads_the_answer(external, version: str) -> None:
    code, report = recover_json(external.root, *ANSWERS, env=external.env(FAKE_VERSION=version))
    assert code == 0, report
    assert report["degraded"] is None
    verbs = [call[1] for call in external.calls() if call[0] == "backlog"]
    assert verbs == ["list", "answer", "unblock", "list"]  # plain blocked: unblock
    assert ["backlog", "answer", ".", "001", "Use Postgres", "--backlog",
            ".forge", "--json"] in external.calls()
    assert external.items()["001"]["humanAnswer"] == "Use Postgres"
    assert sum(call[0] == "version" for call in external.calls()) == 1  # probed once


@pytest.mark.parametrize("version", ["0.13.9", "garbage", "0.14.0-rc1", "CRASH"])
def test_old_or_unreadable_runner_degrades_with_the_caveat(external, version: str) -> None:
    result = recover(external.root, *ANSWERS, env=external.env(FAKE_VERSION=version))
    assert result.returncode == 0, result.stderr
    assert "NOT threaded into the next prompt" in result.stdout
    assert "pip install rauf>=0.14" in result.stdout
    verbs = [call[1] for call in external.calls() if call[0] == "backlog"]
    assert verbs == ["list", "unblock", "unblock", "list"]
    assert "humanAnswer" not in external.items()["001"]
    assert external.unapplied() == []  # applied (unblocked), and the answer stays on record


def test_missing_runner_binary_is_a_failed_read(external) -> None:
    (external.root / ".forge.yaml").write_text("loopRunner:\n  bin: no-such-runner-xyz\n"
                                               "  installHint: pip install rauf\n")
    git("commit", "-qam", "a runner that is missing", cwd=external.root)
    code, report = recover_json(external.root, *ANSWERS, env=external.env())
    assert code == 10 and report["failure"]["kind"] == "failed-read"
    assert "no-such-runner-xyz" in report["failure"]["error"]


def test_missing_version_binary_degrades(external) -> None:
    yaml = (external.root / ".forge.yaml").read_text()
    (external.root / ".forge.yaml").write_text(
        yaml + "  versionCommand: no-such-binary-xyz version --json\n")
    git("commit", "-qam", "a version command that is missing", cwd=external.root)
    code, report = recover_json(external.root, *ANSWERS, env=external.env())
    assert code == 0 and report["degraded"] is not None
    assert report["degraded"]["installHint"] == "pip install rauf>=0.14"


def test_failed_apply_stops_before_prove_and_leaves_the_decision_unapplied(external) -> None:
    code, report = recover_json(external.root, *ANSWERS, env=external.env(FAKE_FAIL_FOR="002"))
    assert code == 12
    failure = report["failure"]
    assert failure["kind"] == "failed-apply" and failure["step"].startswith("5")
    assert "fake-runner: cannot unblock 002: disk on fire" in failure["error"]
    assert [a["itemId"] for a in report["applied"]] == ["001"]
    assert report["proof"] == {"movers": [], "nonMovers": []}  # never reached step 6
    assert external.unapplied() == ["002"]
    verbs = [call[1] for call in external.calls() if call[0] == "backlog"]
    assert verbs == ["list", "answer", "unblock"]  # no calls after the failure


def test_reentry_applies_without_asking_across_processes(external) -> None:
    recover_json(external.root, *ANSWERS, env=external.env(FAKE_FAIL_FOR="002"))
    # A new process, no answers given: 002's recorded answer is applied, not asked.
    plan = json.loads(recover(external.root, "--plan", "--json", env=external.env()).stdout)
    assert plan == {"questions": [], "reentry": ["002"]}
    code, report = recover_json(external.root, env=external.env())
    assert code == 0 and report["outcome"] == "resolved", report
    assert report["recorded"] == [] and report["affected"] == ["002"]
    assert external.unapplied() == []


def test_a_deferral_is_asked_again_and_its_answer_appended(external) -> None:
    recover_json(external.root, "--defer", "001", "--answer", "002=wait",
                 env=external.env())
    plan = json.loads(recover(external.root, "--plan", "--json", env=external.env()).stdout)
    assert [q["id"] for q in plan["questions"]] == ["c001"]
    code, report = recover_json(external.root, "--answer", "001=Use Postgres",
                                env=external.env())
    assert code == 0 and report["affected"] == ["001"]
    record = json.loads((external.root / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["answer"]) for e in record["decisions"]] == [
        ("001", None), ("002", "wait"), ("001", "Use Postgres")]


def test_ran_but_nothing_moved_names_movers_and_non_movers(external) -> None:
    code, report = recover_json(external.root, *ANSWERS, env=external.env(FAKE_NOOP="002"))
    assert code == 13
    assert report["failure"]["kind"] == "nothing-moved"
    assert report["proof"] == {"movers": [{"id": "001", "status": "pending"}],
                               "nonMovers": [{"id": "002", "status": "blocked"}]}
    assert external.unapplied() == []  # the runner accepted both calls: stamped


@pytest.mark.parametrize("answer", ['"; touch pwned #', "$(touch pwned)", "`touch pwned`",
                                    "a\nb; rm -rf /tmp/x", "--json"])
def test_answers_reach_the_runner_literally(external, answer: str) -> None:
    code, report = recover_json(external.root, "--answer", f"001={answer}", "--defer", "002",
                                env=external.env())
    assert code == 0, report
    call = next(c for c in external.calls() if c[:2] == ["backlog", "answer"])
    assert call[4] == answer.strip()
    assert not (external.root / "pwned").exists() and not Path("pwned").exists()
    assert not (external.dir / "pwned").exists()
    assert os.path.exists(external.root)


def test_ctrl_c_before_any_question_defers_everything(after_run: Path) -> None:
    session = PtySession("recover", cwd=after_run)
    session.expect("Merge questions that share a cause?")
    session.interrupt()
    code = session.finish()
    assert code == 3, session.text
    record = json.loads((after_run / ".forge" / "forge-decisions.json").read_text())
    assert [(e["itemId"], e["deferred"]) for e in record["decisions"]] == [
        ("003", True), ("004", True), ("006", True)]


def test_an_unapplied_answer_to_an_earlier_question_is_not_applied_to_a_new_one(
        after_run: Path) -> None:
    """An answer recorded and never applied (a pass killed between the two, or one
    that found the item answered from another terminal) re-enters only for the
    question it answered: the item asking something else now is asked again."""
    d = str(after_run / ".forge")
    recorded = run_forge("decision", "record", "--backlog-dir", d, "--item", "006",
                         "--question", "Which colour should the logo be?", "--answer", "blue",
                         cwd=after_run)
    assert recorded.returncode == 0, recorded.stderr
    plan = json.loads(recover(after_run, "--plan", "--json").stdout)
    assert plan["reentry"] == [] and ["006"] in [q["itemIds"] for q in plan["questions"]]
    text = recover(after_run, "--non-interactive").stdout
    assert ("skipped   006: its recorded answer was not applied — it answered an earlier "
            "question, and the item asks another one now") in text, text
    item = next(i for i in json.loads(run_forge("backlog", "list", "--json",
                                                cwd=after_run).stdout) if i["id"] == "006")
    assert item["status"] == "blocked" and item.get("humanAnswer") in (None, ""), item


def test_an_answer_the_runner_holds_but_was_never_stamped_is_settled(after_run: Path) -> None:
    """A crash between the backlog write and the decision stamp costs nothing."""
    d = str(after_run / ".forge")
    run_forge("decision", "record", "--backlog-dir", d, "--item", "003", "--question", "q",
              "--answer", "Use SQLite", cwd=after_run)
    run_forge("backlog", "answer", "003", "Use SQLite", cwd=after_run)  # applied, no stamp
    git("commit", "-qam", "answered by hand", cwd=after_run)
    code, report = recover_json(after_run, "--non-interactive")
    unapplied = json.loads(run_forge("decision", "list", "--backlog-dir", d, "--unapplied",
                                     "--json", cwd=after_run).stdout)["unapplied"]
    assert "003" not in [e["itemId"] for e in unapplied]
    assert "003" not in report["affected"]


def test_operator_edits_to_the_backlog_are_never_swept_into_recovers_commit(
    after_run: Path
) -> None:
    backlog = after_run / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["description"] = "edited by the operator, not yet committed"
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    head = git("rev-parse", "HEAD", cwd=after_run)
    code, report = recover_json(after_run, "--answer", "c003=Use SQLite", "--defer", "006")
    assert git("rev-parse", "HEAD", cwd=after_run) == head  # nothing committed
    assert report["tree"]["groups"] == [] and report["tree"]["actions"] == []
    # The edit and the answers beside it are queued for the next run, as preflight has it
    assert report["tree"]["queuedBacklog"] == {
        "path": ".forge/backlog.json", "changes": "change 003, 004", "recoverAnswers": []}
    assert report["gate"]["porcelainClean"] is True and code == 0
    assert "edited by the operator" in backlog.read_text()


# --- answers to runner-deferred and plain blocked items reach the agent -------------------

def test_an_answer_to_a_runner_deferred_item_is_threaded_into_its_prompt(git_repo: Path) -> None:
    from git_forge.backlog.item import Item
    from git_forge.loop.prompt import build_prompt

    assert run_forge("init", cwd=git_repo).returncode == 0
    backlog = git_repo / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [{"id": "001", "type": "feature", "priority": 1, "title": "Flaky",
                          "status": "blocked", "deferred": True, "needsHuman": False,
                          "blockedReason": "No signal after 3 attempts (deferred by runner)"}]
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    code, report = recover_json(git_repo, "--answer", "001=Retry against the mirror")
    assert (code, report["outcome"]) == (0, "resolved"), report
    assert report["applied"] == [{"itemId": "001", "via": "answer", "threaded": True}]
    item = items_of(git_repo)["001"]
    assert (item["status"], item["humanAnswer"]) == ("pending", "Retry against the mirror")
    assert (item["answeredReason"], item["answeredKind"]) == (
        "No signal after 3 attempts (deferred by runner)", "failure")
    assert ("## Your earlier attempts failed, and what the human says\n"
            "Your earlier attempts failed:\n"
            "> No signal after 3 attempts (deferred by runner)\n\n"
            "The human says:\nRetry against the mirror\n" in build_prompt(Item(item)))


def test_the_report_says_where_an_answer_went(after_run: Path) -> None:
    result = recover(after_run, "--answer", "c003=Use SQLite", "--answer", "006=Use TestPyPI")
    assert "  applied   006: answer threaded into the next prompt" in result.stdout


def test_items_whose_agents_gave_no_reason_are_never_one_question(tmp_path: Path) -> None:
    # "**FORGE_BLOCKED:**" and "FORGE_NEEDS_HUMAN:" alone store the same placeholder
    # reason; nothing says the two items wait on the same thing.
    root = blocked_backlog(init_repository(tmp_path / "repo"),
                           {"001": "no reason given", "002": "no reason given",
                            "003": "Which database should the store use?",
                            "004": "Which database should the cache use?"})
    code, plan = (lambda r: (r.returncode, json.loads(r.stdout)))(
        recover(root, "--plan", "--json"))
    assert code == 0, plan
    asked = [question["itemIds"] for question in plan["questions"]]
    assert ["001"] in asked and ["002"] in asked, asked
    assert ["003", "004"] in asked, asked  # alike reasons are still one question


def test_a_dialogue_without_a_terminal_says_why_nothing_was_asked(after_run: Path) -> None:
    """stdin a file, or stdout a pipe: no prompt can be put, every question is deferred,
    and a line on stderr says so and how to answer — where the pass was silent."""
    result = recover(after_run)
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr == ("note: not a terminal: nothing was asked, and every question is "
                             "deferred (answer with --answers FILE or --answer ID=TEXT; --plan "
                             "lists the questions)\n")
    quiet = recover(after_run, "--non-interactive")  # deferring on purpose: nothing to say
    assert quiet.stderr == "", quiet.stderr


def test_a_plan_refuses_a_choice_the_pass_would_refuse(after_run: Path) -> None:
    """--plan writes nothing and lists the questions; a choice given with it names an
    open question or is refused as the pass refuses it, never passed over."""
    before = snapshot(after_run, skip_git=False)
    refused = recover(after_run, "--plan", "--answer", "0=x")
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stdout
    assert refused.stderr == ("Error: no open question for 0 (questions: c003, c006; items: "
                              "003, 004, 006)\n")
    assert recover(after_run, "--plan", "--answer", "c006=Use TestPyPI").returncode == 0
    assert snapshot(after_run, skip_git=False) == before

"""A parallel run's merge conflict as a question with two real answers: retry on the
new tip (the attempt kept under a safety ref, a fresh worktree, the conflict in the
next prompt) or resolve by hand (then ``reconcile --integrate`` lands it).

One real parallel run produces a real conflict, once per session; each test gets a
copy of what it left (its worktrees repaired to the copy's paths, as ``git
worktree repair`` does after a move).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo
from helpers import PtySession, git, run_forge
from templates import Templates

#: The agent: every item rewrites the first line of shared.txt its own way (a clash
#: for whichever is integrated second); each start logs the prompt it read.
AGENT = r'''
import json, os, sys, time
item = os.environ["FORGE_ITEM_ID"]
prompt = sys.stdin.read()
with open(os.environ["FORGE_TEST_LOG"], "a") as out:
    out.write(json.dumps({"item": item, "cwd": os.getcwd(), "prompt": prompt}) + "\n")
time.sleep(0.3)
lines = open("shared.txt").read().splitlines(keepends=True)
lines[0] = f"line one, as item {item} has it\n"
open("shared.txt", "w").write("".join(lines))
print("FORGE_DONE")
'''


class Conflict:
    """A copy of the repository a conflicting parallel run left."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.log = log
        items = backlog(root)
        self.winner = next(i for i, item in items.items() if item["status"] == "done")
        self.loser = next(i for i, item in items.items() if item["status"] == "blocked")
        self.tree = root / ".forge" / "worktrees" / self.loser
        self.branch = f"forge/{self.loser}"

    def run(self, *args: str) -> object:
        return run_forge(*args, cwd=self.root)

    def loop(self):
        return run_forge("loop", "run", "--agent", f"{sys.executable} {self.agent}",
                         "--parallel", "2", cwd=self.root, env={"FORGE_TEST_LOG": str(self.log)},
                         timeout=120)

    @property
    def agent(self) -> Path:
        return self.root.parent / "agent.py"

    def prompts(self, item: str) -> list[str]:
        if not self.log.exists():
            return []
        return [r["prompt"] for r in map(json.loads, self.log.read_text().splitlines())
                if r["item"] == item]

    def files(self) -> dict[str, bytes]:
        """The bytes of every file a refusal must leave alone."""
        paths = [self.root / ".forge" / name for name in
                 ("backlog.json", "forge-decisions.json", "conflicts.json", "state.json")]
        paths += [p for p in self.tree.rglob("*") if p.is_file() and ".git" not in p.parts]
        return {str(p): p.read_bytes() for p in paths if p.exists()}

    def refs(self) -> str:
        return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=self.root)


def start_rebase(tree: Path) -> None:
    """``git rebase main`` in the item's worktree: it stops at the conflict."""
    result = waiting.run(["git", "rebase", "main"], cwd=tree, capture_output=True, text=True)
    assert result.returncode != 0, result.stdout


def resolve_in(tree: Path, content: str) -> None:
    """The operator's hand resolution: the rebase, the file, ``git rebase --continue``."""
    start_rebase(tree)
    (tree / "shared.txt").write_text(content)
    git("add", "shared.txt", cwd=tree)
    git("rebase", "--continue", cwd=tree, env={"GIT_EDITOR": "true"})


def backlog(root: Path) -> dict[str, dict]:
    items = json.loads((root / ".forge" / "backlog.json").read_text())["items"]
    return {item["id"]: item for item in items}


def build_conflict(root: Path) -> None:
    backlog_repo(root, "First", "Second")
    (root / "shared.txt").write_text("line one\nline two\n")
    git("add", "shared.txt", cwd=root)
    git("commit", "-qm", "shared", cwd=root)
    agent = root.parent / "agent.py"
    agent.write_text(AGENT)
    result = run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", "--parallel",
                       "2", cwd=root, env={"FORGE_TEST_LOG": str(root.parent / "first.log")},
                       timeout=120)
    assert result.returncode == 5, result.stdout + result.stderr


@pytest.fixture
def conflict(templates: Templates, tmp_path: Path) -> Conflict:
    root = templates.copy("parallel-conflict", build_conflict, tmp_path / "repo")
    (tmp_path / "agent.py").write_text(AGENT)
    git("worktree", "repair", *map(str, (root / ".forge" / "worktrees").iterdir()), cwd=root)
    found = Conflict(root, tmp_path / "agents.ndjson")
    git("update-index", "-q", "--refresh", cwd=found.tree)
    return found


def test_the_conflict_is_recorded_and_offers_two_choices(conflict: Conflict) -> None:
    item = backlog(conflict.root)[conflict.loser]
    assert item["needsHuman"] is True
    reason = item["blockedReason"]
    assert reason.startswith(f"merge conflict in shared.txt with item {conflict.winner}")
    assert "--force" not in reason and "-D" not in reason and "git forge recover" in reason
    recorded = json.loads((conflict.root / ".forge" / "conflicts.json").read_text())
    entry = recorded["conflicts"][conflict.loser]
    assert (entry["paths"], entry["collidedWith"], entry["branch"], entry["retried"]) == (
        ["shared.txt"], [conflict.winner], conflict.branch, False)
    plan = json.loads(conflict.run("recover", "--plan", "--json").stdout)
    (question,) = plan["questions"]
    assert question["id"] == f"c{conflict.loser}"
    assert question["choices"] == ["retry", "resolve", "defer", "cancel"]
    assert question["conflict"]["paths"] == ["shared.txt"]
    assert question["conflict"]["resolve"][-1].endswith(
        f"git forge reconcile --integrate {conflict.loser}")
    assert "retry it on the new tip" in question["text"] and "git rebase main" in question["text"]


def test_retry_keeps_the_attempt_and_the_next_run_lands_it(conflict: Conflict) -> None:
    attempt = git("rev-parse", conflict.branch, cwd=conflict.root).strip()
    done = conflict.run("recover", "--answer", f"{conflict.loser}=retry", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    (retried,) = report["retried"]
    ref = retried["ref"]
    assert ref.startswith(f"refs/forge/retried/{conflict.loser}/")
    # the old attempt is reachable from the safety ref; its worktree and branch are gone
    assert git("rev-parse", ref, cwd=conflict.root).strip() == attempt
    assert f"as item {conflict.loser} has it" in git("show", f"{ref}:shared.txt",
                                                     cwd=conflict.root)
    assert not conflict.tree.exists()
    assert git("branch", "--list", "forge/*", cwd=conflict.root) == ""
    assert backlog(conflict.root)[conflict.loser]["status"] == "pending"
    assert run_forge("preflight", cwd=conflict.root).returncode == 0
    # the next run cuts a fresh worktree at the new tip and is told of the conflict
    again = conflict.loop()
    assert again.returncode == 0, again.stdout + again.stderr
    (prompt,) = conflict.prompts(conflict.loser)
    assert "Your previous attempt could not be integrated" in prompt
    assert "shared.txt" in prompt and f"item {conflict.winner}" in prompt and ref in prompt
    shared = (conflict.root / "shared.txt").read_text()
    assert f"as item {conflict.loser} has it" in shared
    assert backlog(conflict.root)[conflict.loser]["status"] == "done"
    subjects = git("log", "--format=%s", cwd=conflict.root)
    assert subjects.count(f"[forge] {conflict.loser}: ") == 1
    assert git("status", "--porcelain", cwd=conflict.root) == ""
    assert git("rev-parse", ref, cwd=conflict.root).strip() == attempt  # still kept
    recorded = json.loads((conflict.root / ".forge" / "conflicts.json").read_text())
    assert conflict.loser not in recorded["conflicts"]


def test_resolve_by_hand_then_integrate_lands_it_done(conflict: Conflict,
                                                      tmp_path: Path) -> None:
    def status_next() -> str | None:
        (tree,) = [t for t in json.loads(conflict.run("status", "--json").stdout)["worktrees"]
                   if t["itemId"] == conflict.loser]
        text = conflict.run("status").stdout
        assert f"conflicted with the branch; next: {tree['next']}\n" in text, text
        return tree["next"]

    assert status_next() == "git forge recover"
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"{int(conflict.loser)}: Resolve\n")  # an unquoted key, any case
    shown = conflict.run("recover", "--answers", str(answers), "--json")
    assert shown.returncode == 3, shown.stdout + shown.stderr
    report = json.loads(shown.stdout)
    assert report["recorded"] == [{"itemId": conflict.loser, "answer": None, "deferred": True,
                                   "choice": "resolve"}]
    (by_hand,) = report["resolveByHand"]
    assert by_hand["itemId"] == conflict.loser and by_hand["commands"][0] == f"cd {conflict.tree}"
    # What is next is that resolution, not recover (it would only ask the question again)
    assert report["next"] == f"git -C {conflict.tree} rebase main"
    # The main tree is clean: its branch alone holds the work (it said porcelain clean: no)
    assert report["gate"] == {"unappliedAffected": [], "porcelainClean": True,
                              "itemTreesClean": False, "allMoved": True}
    assert by_hand["commands"][1].startswith("git rebase main")
    assert by_hand["commands"][-1].endswith(f"git forge reconcile --integrate {conflict.loser}")
    assert conflict.tree.is_dir()  # nothing of it removed
    again = conflict.run("recover", "--answers", str(answers))  # the same choice once more
    assert again.returncode == 3 and "by hand   " + conflict.loser in again.stdout
    assert again.stdout.splitlines()[-2:] == ["NEXT-STEPS", f"  git -C {conflict.tree} rebase main"]
    assert "recover " not in again.stdout  # nor in the branch's hints: the by-hand block is it
    assert "            no stranded work in the working tree: yes (git status)\n" in again.stdout
    assert (f"            no stranded work in items' worktrees or branches: no — item "
            f"{conflict.loser} (git worktree list)\n") in again.stdout
    assert f"git forge reconcile --integrate {conflict.loser}" in again.stdout
    # every listing of the branch now gives the resolution, not the question again
    rebase = f"git -C {conflict.tree} rebase main   (resolve each path"
    for command in (["preflight"], ["reconcile"]):
        shown = conflict.run(*command)
        said = shown.stdout + shown.stderr  # preflight's STOP is on stderr
        assert rebase in said and "git forge recover" not in said, said
    recorded = json.loads((conflict.root / ".forge" / "conflicts.json").read_text())
    assert recorded["conflicts"][conflict.loser]["resolvingByHand"] is True
    plan = json.loads(conflict.run("recover", "--plan", "--json").stdout)
    assert "You chose to resolve it by hand" in plan["questions"][0]["text"]
    # a later pass that does not answer it (deferred, not asked) still gives the rebase
    later = json.loads(conflict.run("recover", "--non-interactive", "--json").stdout)
    assert later["next"] == f"git -C {conflict.tree} rebase main", later
    assert later["resolveByHand"][0]["itemId"] == conflict.loser
    assert status_next() == f"git -C {conflict.tree} rebase main"
    # the operator resolves in the worktree and commits there; half way, the next
    # step is to finish the rebase begun
    start_rebase(conflict.tree)
    later = json.loads(conflict.run("recover", "--non-interactive", "--json").stdout)
    assert later["next"] == f"git -C {conflict.tree} rebase --continue", later
    assert status_next() == f"git -C {conflict.tree} rebase --continue"
    (conflict.tree / "shared.txt").write_text("line one, as both items have it\nline two\n")
    git("add", "shared.txt", cwd=conflict.tree)
    git("rebase", "--continue", cwd=conflict.tree, env={"GIT_EDITOR": "true"})
    # the rebase done, landing it is next: never the rebase again
    later = json.loads(conflict.run("recover", "--non-interactive", "--json").stdout)
    assert later["next"] == f"git forge reconcile --integrate {conflict.loser}", later
    assert status_next() == f"git forge reconcile --integrate {conflict.loser}"
    landed = conflict.run("reconcile", "--integrate", conflict.loser, "--json")
    assert landed.returncode == 0, landed.stdout + landed.stderr
    assert json.loads(landed.stdout)["landed"] == [conflict.loser]
    assert (conflict.root / "shared.txt").read_text() == "line one, as both items have it\n" \
        "line two\n"
    assert backlog(conflict.root)[conflict.loser]["status"] == "done"
    assert git("status", "--porcelain", cwd=conflict.root) == ""
    assert git("log", "-1", "--format=%s", cwd=conflict.root) == (
        f"[forge] backlog: {conflict.loser} done\n")
    assert not conflict.tree.exists()
    assert run_forge("preflight", cwd=conflict.root).returncode == 0
    assert conflict.run("recover").returncode == 0


def test_a_dirty_conflict_worktree_is_kept_exactly(conflict: Conflict) -> None:
    (conflict.tree / "shared.txt").write_text("half resolved\n")
    (conflict.tree / "notes.txt").write_text("my notes\n")
    (conflict.tree / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=conflict.tree)
    attempt = git("rev-parse", conflict.branch, cwd=conflict.root).strip()
    done = conflict.run("recover", "--answer", f"{conflict.loser}=retry", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    ref = json.loads(done.stdout)["retried"][0]["ref"]
    assert git("rev-parse", f"{ref}^", cwd=conflict.root).strip() == attempt
    saved = {path: git("show", f"{ref}:{path}", cwd=conflict.root)
             for path in ("shared.txt", "notes.txt", "staged.txt")}
    assert saved == {"shared.txt": "half resolved\n", "notes.txt": "my notes\n",
                     "staged.txt": "staged\n"}
    assert not conflict.tree.exists()


def test_a_worktree_mid_rebase_is_refused_and_nothing_changes(conflict: Conflict) -> None:
    start_rebase(conflict.tree)
    before, refs = conflict.files(), conflict.refs()
    refused = conflict.run("recover", "--answer", f"{conflict.loser}=retry")
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"Error: item {conflict.loser} cannot be retried: ")
    assert (f"the worktree {conflict.tree} is currently rebasing: finish the rebase "
            f"(git -C {conflict.tree} rebase --continue / --abort) first") in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert conflict.files() == before and conflict.refs() == refs


def test_a_worktree_mid_rebase_is_never_offered_to_commit_stash_or_discard(
        conflict: Conflict) -> None:
    """Its changes are the rebase's (an unmerged path among them): a commit, a stash or
    a discard there would take them for the item's work — a discard once resolved the
    conflict to the branch's side and the item landed with none of its work. It is no
    group to decide on; its branch's hints say to finish the rebase, and recover's
    checks count it as work left in an item's worktree."""
    start_rebase(conflict.tree)
    before, refs = conflict.files(), conflict.refs()
    document = json.loads(conflict.run("reconcile", "--json").stdout)
    assert document["groups"] == [], document["groups"]
    (branch,) = document["branches"]
    assert branch["next"] == f"git -C {conflict.tree} rebase --continue"
    refused = conflict.run("reconcile", "--discard", f"item-{conflict.loser}",
                           "--confirm-discard")
    assert refused.returncode == 2 and refused.stderr.startswith("Error: "), refused.stderr
    assert conflict.files() == before and conflict.refs() == refs
    report = json.loads(conflict.run("recover", "--non-interactive", "--json").stdout)
    assert report["gate"]["itemTreesClean"] is False and report["tree"]["groups"] == []


#: A half-done operation in the item's worktree: how it is started (each stops at the
#: conflict with the line of the item integrated first, WINNER), what ``git status``
#: says of it, what finishes it.
OPERATIONS = {
    "rebase": (["rebase", "main"], "currently rebasing", "rebase --continue / --abort"),
    "merge": (["merge", "main"], "currently merging", "merge --continue / --abort"),
    "cherry-pick": (["cherry-pick", "main^{/^.forge. WINNER: }"], "currently cherry-picking",
                    "cherry-pick --continue / --abort"),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_integrating_a_worktree_mid_operation_says_to_finish_it(conflict: Conflict,
                                                                operation: str) -> None:
    """It reported a merge conflict and offered git worktree remove --force."""
    argv, doing, finish = OPERATIONS[operation]
    argv = [arg.replace("WINNER", conflict.winner) for arg in argv]  # its item commit
    stopped = waiting.run(["git", *argv], cwd=conflict.tree, capture_output=True, text=True,
                          env={**os.environ, "GIT_EDITOR": "true"})
    assert stopped.returncode != 0, stopped.stdout
    advice = f"finish the {operation} (git -C {conflict.tree} {finish})"
    before, refs = conflict.files(), conflict.refs()
    refused = conflict.run("reconcile", "--integrate", conflict.loser)
    assert (refused.returncode, refused.stderr) == (
        2, f"Error: cannot integrate item {conflict.loser} yet — the worktree {conflict.tree} "
           f"is {doing}: {advice} first\n")
    assert conflict.files() == before and conflict.refs() == refs
    for shown in (conflict.run("reconcile"), conflict.run("preflight")):
        text = shown.stdout + shown.stderr
        assert f"{advice}, then git forge reconcile --integrate {conflict.loser}" in text
        assert doing in text
        assert "worktree remove --force" not in text and "merge conflict" not in text
    listed = json.loads(conflict.run("status", "--json").stdout)["worktrees"]
    assert [tree["operation"] for tree in listed] == [operation]
    assert f"{operation} in progress, uncommitted changes" in conflict.run("status").stdout
    assert conflict.files() == before and conflict.refs() == refs


@pytest.mark.parametrize("how", ["flag", "file"])
def test_text_for_a_conflict_is_refused_and_nothing_changes(conflict: Conflict, how: str,
                                                            tmp_path: Path) -> None:
    before, refs = conflict.files(), conflict.refs()
    if how == "flag":
        args = ["--answer", f"{conflict.loser}=keep both lines"]
    else:
        answers = tmp_path / "answers.yaml"
        answers.write_text(f"'{conflict.loser}': keep both lines\n")
        args = ["--answers", str(answers)]
    refused = conflict.run("recover", *args)
    assert (refused.returncode, refused.stderr) == (
        2, f"Error: item {conflict.loser} is blocked on a merge conflict: answer retry (on the "
           "new tip), resolve (by hand), defer or cancel\n")
    assert conflict.files() == before and conflict.refs() == refs


def test_interactive_reconcile_integrates_a_resolved_branch(conflict: Conflict) -> None:
    resolve_in(conflict.tree, "both\nline two\n")
    session = PtySession("reconcile", cwd=conflict.root)
    session.expect(f"item {conflict.loser} ({conflict.branch}): [i]ntegrate now / "
                   "[r]etry on the new tip / [l]eave")
    session.send("i")
    session.expect("landed, done")
    assert session.finish() == 0
    assert (conflict.root / "shared.txt").read_text() == "both\nline two\n"
    assert backlog(conflict.root)[conflict.loser]["status"] == "done"
    assert run_forge("preflight", cwd=conflict.root).returncode == 0


def test_interactive_reconcile_retries_a_conflict(conflict: Conflict) -> None:
    attempt = git("rev-parse", conflict.branch, cwd=conflict.root).strip()
    session = PtySession("reconcile", cwd=conflict.root)
    session.expect("[r]etry on the new tip")
    session.send("r")
    session.expect("retried on the new tip")
    assert session.finish() == 0
    (ref,) = [line.split()[0] for line in conflict.refs().splitlines()
              if line.startswith(f"refs/forge/retried/{conflict.loser}/")]
    assert git("rev-parse", ref, cwd=conflict.root).strip() == attempt
    assert backlog(conflict.root)[conflict.loser]["status"] == "pending"
    assert git("status", "--porcelain", cwd=conflict.root) == ""
    assert run_forge("preflight", cwd=conflict.root).returncode == 0


def test_leaving_it_interactively_changes_nothing(conflict: Conflict) -> None:
    before, refs = conflict.files(), conflict.refs()
    session = PtySession("reconcile", cwd=conflict.root)
    session.expect("[l]eave")
    session.send("")
    assert session.finish() == 6
    assert conflict.files() == before and conflict.refs() == refs


def test_recover_asks_on_a_terminal_and_retries(conflict: Conflict) -> None:
    stop = run_forge("preflight", cwd=conflict.root)
    assert stop.returncode == 1 and "--force" not in stop.stderr
    assert "git forge recover   (retry it on the new tip" in stop.stderr
    session = PtySession("recover", cwd=conflict.root)
    text = session.expect("Your decision (retry / resolve;")
    assert f"Item {conflict.loser}'s work could not be integrated" in text
    session.send("keep both lines")  # text is no answer to a conflict: asked again
    session.expect("answer retry (on the new tip), resolve (by hand), defer or cancel.")
    session.expect("Your decision (retry / resolve;")
    session.send("retry")
    session.expect("Record it?")
    session.send("y")
    session.expect("recovery:")
    session.send("")  # recover's own backlog change: committed
    assert session.finish() == 0, session.text
    assert f"retried   {conflict.loser}: its attempt is kept at refs/forge/retried/" \
        in session.text
    assert not conflict.tree.exists()
    assert backlog(conflict.root)[conflict.loser]["status"] == "pending"
    assert git("status", "--porcelain", cwd=conflict.root) == ""


def test_a_conflict_question_is_never_merged_with_another(conflict: Conflict) -> None:
    path = conflict.root / ".forge" / "backlog.json"
    document = json.loads(path.read_text())
    other = {**document["items"][0], "id": "009", "title": "Needs a key", "status": "blocked",
             "needsHuman": True, "blockedReason": "needs an API key", "dependsOn": []}
    document["items"].append(other)
    path.write_text(json.dumps(document, indent=2) + "\n")
    plan = json.loads(conflict.run("recover", "--plan", "--json").stdout)
    ids = sorted(question["id"] for question in plan["questions"])
    assert len(ids) == 2 and f"c{conflict.loser}" in ids
    before, refs = conflict.files(), conflict.refs()
    refused = conflict.run("recover", "--merge", ",".join(ids))
    assert (refused.returncode, refused.stderr) == (
        2, f"Error: item {conflict.loser} is blocked on a merge conflict, a question of its "
           "own: it cannot be merged with another\n")
    assert conflict.files() == before and conflict.refs() == refs


def add_blocked(conflict: Conflict, reasons: dict[str, str]) -> None:
    """More items needing a human, committed: questions besides the conflict's."""
    path = conflict.root / ".forge" / "backlog.json"
    document = json.loads(path.read_text())
    document["items"] += [{**document["items"][0], "id": item_id, "title": reason,
                           "status": "blocked", "needsHuman": True, "blockedReason": reason,
                           "dependsOn": []} for item_id, reason in reasons.items()]
    path.write_text(json.dumps(document, indent=2) + "\n")
    git("commit", "-qam", "more questions", cwd=conflict.root)


def test_merging_a_conflict_question_is_refused_at_the_prompt_and_asked_again(
        conflict: Conflict) -> None:
    """It was accepted, and then recover died with exit 2."""
    add_blocked(conflict, {"009": "needs an API key", "010": "the staging server is down"})
    session = PtySession("recover", cwd=conflict.root)
    text = session.expect("Merge questions that share a cause?")
    assert f"  c{conflict.loser}: item {conflict.loser} — a merge conflict, asked on its own" \
        in text
    # its reason, shown inside recover, does not send the operator to recover
    reason = text.split(f"    {conflict.loser}: ", 1)[1].split("\r\n", 1)[0]
    assert reason.startswith("merge conflict in shared.txt") and "recover" not in reason, reason
    session.send(f"c{conflict.loser},c009")
    session.expect(f"Not merged: item {conflict.loser} is blocked on a merge conflict, a "
                   "question of its own: it cannot be merged with another.")
    session.expect("Merge questions that share a cause?")
    session.send("c009,c010")
    session.expect("Merged into one question: c009 (items 009, 010)")
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Question 1 of 2")
    session.expect("Your decision")
    session.end_input()  # cancel early: every question deferred
    session.finish()
    assert "Error:" not in session.text
    record = json.loads((conflict.root / ".forge" / "forge-decisions.json").read_text())
    assert sorted(e["itemId"] for e in record["decisions"] if e["deferred"]) == sorted(
        [conflict.loser, "009", "010"])


def test_no_merge_is_offered_when_only_one_question_could_merge(conflict: Conflict) -> None:
    add_blocked(conflict, {"009": "needs an API key"})
    session = PtySession("recover", cwd=conflict.root)
    session.expect("Question 1 of 2")
    session.expect("Your decision")
    session.end_input()
    session.finish()
    assert "Merge questions" not in session.text


def test_a_stop_for_item_worktrees_names_only_items_still_waiting(conflict: Conflict) -> None:
    # the run named both as needing a human; the winner has been settled since
    state_file = conflict.root / ".forge" / "state.json"
    state = json.loads(state_file.read_text())
    state["needsHumanItems"] = sorted({conflict.winner, conflict.loser})
    state_file.write_text(json.dumps(state))
    result = conflict.run("preflight")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    waiting = "001, 002".replace(conflict.winner, "").strip(", ")
    needs = next(line for line in lines if line.startswith("  needs human:"))
    assert needs == f"  needs human:    {waiting}" and waiting == conflict.loser

"""Every message git-forge writes reads back, through git, as the item it names."""

from __future__ import annotations

from pathlib import Path

from helpers import git

from git_forge.reconcile import messages
from git_forge.tree.commit import commit_paths
from git_forge.tree.history import log_subjects, stash_list
from git_forge.tree.repo import open_repo
from git_forge.tree.stash import stash_paths

#: (what the message is, the message, the item it names or None)
COMMITS = [
    ("a done item", messages.item_done("004", "Parse: the header [v2]"), "004"),
    ("a blocked item", messages.item_blocked("0012", "Which database?"), "0012"),
    ("a lost process", messages.process_lost(["007"]), "007"),
    ("reconciled work", messages.reconciled_item("003"), "003"),
    ("queued backlog changes", messages.backlog_queued("add 005"), None),
    ("recover's decisions", messages.recovery_decisions(), None),
    ("unattributed work", messages.reconciled_unattributed(), None),
]
STASHES = [
    ("abandoned work", messages.abandoned_work("003"), "003"),
    ("reconciled work", messages.reconciled_item_stash("a-7"), "a-7"),
    ("an unattributed group", messages.reconciled_group_stash("unattributed"), None),
]


def test_commit_subjects_read_back_through_git(git_repo: Path) -> None:
    repo = open_repo(git_repo)
    base = repo.head_commit_id()
    for number, (_, message, _) in enumerate(COMMITS):
        (git_repo / f"f{number}.txt").write_text(f"{number}\n")
        commit_paths(repo, [f"f{number}.txt"], message)
    subjects = [commit.subject for commit in log_subjects(git_repo, base)]
    assert subjects == git("log", "--reverse", "--format=%s", f"{base}..HEAD",
                           cwd=git_repo).splitlines()
    found = [messages.item_of_subject(subject) for subject in subjects]
    assert found == [item for _, _, item in COMMITS], [what for what, _, _ in COMMITS]


def test_a_subject_is_one_line_of_safe_text_whatever_it_quotes(git_repo: Path) -> None:
    """A title or reason with line breaks and escapes (from backlog.json, or an
    agent) never gives a commit a body, a forged trailer or a terminal sequence."""
    repo = open_repo(git_repo)
    title = "Parse\r\nSigned-off-by: Mallory <m@example.com>\n\x1b]0;pwned\x07 it\u202e"
    for number, message in enumerate((messages.item_done("004", title),
                                      messages.item_blocked("005", "no\ncredentials\x1b[2J"))):
        (git_repo / f"g{number}.txt").write_text(f"{number}\n")
        commit_paths(repo, [f"g{number}.txt"], message)
    bodies = git("log", "-2", "--format=%B%x00", cwd=git_repo).split("\x00")
    assert [body.strip("\n") for body in bodies if body.strip("\n")] == [
        "[forge] 005: blocked — no credentials",
        "[forge] 004: Parse Signed-off-by: Mallory <m@example.com> it"]
    assert git("log", "-2", "--format=%(trailers)", cwd=git_repo).strip() == ""
    assert [messages.item_of_subject(line) for line in
            git("log", "-2", "--format=%s", cwd=git_repo).splitlines()] == ["005", "004"]


def test_stash_messages_read_back_through_git(git_repo: Path) -> None:
    repo = open_repo(git_repo)
    for number, (_, message, _) in enumerate(STASHES):
        (git_repo / f"s{number}.txt").write_text(f"{number}\n")
        stash_paths(repo, [f"s{number}.txt"], message)
    listed = [entry.message for entry in reversed(stash_list(git_repo))]
    assert listed == [f"On main: {message}" for _, message, _ in STASHES]
    assert [messages.item_of_stash(text) for text in listed] == [i for _, _, i in STASHES]


def test_the_older_runner_prefix_and_other_subjects() -> None:
    assert messages.item_of_subject("[rauf] 002: second item") == "002"
    assert messages.item_of_subject("[forge] 02: too short for an item id") is None
    assert messages.item_of_subject("fix: [forge] 003: not at the start") is None
    assert messages.item_of_stash("WIP on main: 1234567 something") is None


def test_a_parallel_runs_bookkeeping_subject_lists_ids_in_id_order() -> None:
    # Items settle in whatever order their agents end; the subject reads in id order.
    assert messages.items_settled([
        ("done", ["001", "002", "004", "003", "010", "9"]), ("needs a human", []),
        ("blocked", ["012", "011"]),
    ]) == "[forge] backlog: 001, 002, 003, 004, 9, 010 done; 011, 012 blocked"
    assert messages.items_settled([("done", [])]) == "[forge] backlog: update the backlog"


def test_an_item_branch_is_forge_slash_an_id_and_nothing_after() -> None:
    from git_forge.reconcile.messages import item_branch, item_of_branch

    assert item_of_branch(item_branch("001")) == "001"
    for other in ("forge/001\n", "forge/01", "forge/001x", "forge/", "main", "xforge/001"):
        assert item_of_branch(other) is None, other

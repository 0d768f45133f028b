"""The log since a base commit, the stash list and the work kept under git-forge's
refs — the one history reader, which asks git — against git's own view."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git
from tree_helpers import write

from git_forge.tree.errors import GitError
from git_forge.tree.history import StashEntry, kept_list, log_subjects, stash_list


def commit_file(root: Path, path: str, message: str) -> str:
    write(root, path, message + "\n")
    git("add", "--", path, cwd=root)
    git("commit", "-q", "-m", message, cwd=root)
    return git("rev-parse", "HEAD", cwd=root).strip()


def test_log_since_base_oldest_first_with_paths(git_repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=git_repo).strip()
    first = commit_file(git_repo, "src/one.py", "[forge] 001: first item")
    write(git_repo, "src/two.py", "2\n")
    write(git_repo, "docs/two.md", "2\n")
    git("add", ".", cwd=git_repo)
    git("rm", "-q", "README.md", cwd=git_repo)
    git("commit", "-q", "-m", "[rauf] 002: second item\n\nwith a body", cwd=git_repo)
    commits = log_subjects(git_repo, base)
    assert [(c.id, c.subject) for c in commits][0] == (first, "[forge] 001: first item")
    assert [c.subject for c in commits] == ["[forge] 001: first item", "[rauf] 002: second item"]
    assert commits[1].paths == ("README.md", "docs/two.md", "src/two.py")
    expected = git("log", "--reverse", "--topo-order", "--format=%H %s", f"{base}..HEAD",
                   cwd=git_repo).splitlines()
    assert [f"{c.id} {c.subject}" for c in commits] == expected


def test_log_without_base_and_on_an_unborn_branch(git_repo: Path,
                                                  tmp_path: Path) -> None:
    commits = log_subjects(git_repo, None)
    assert [(c.subject, c.paths) for c in commits] == [("initial commit", ("README.md",))]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git("init", "-q", cwd=fresh)
    assert log_subjects(fresh, None) == []


def test_log_follows_merges_topologically(git_repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=git_repo).strip()
    git("checkout", "-q", "-b", "side", cwd=git_repo)
    commit_file(git_repo, "side.txt", "side work")
    git("checkout", "-q", "main", cwd=git_repo)
    commit_file(git_repo, "main.txt", "main work")
    git("merge", "-q", "--no-edit", "side", cwd=git_repo)
    commits = log_subjects(git_repo, base)
    expected = git("log", "--reverse", "--topo-order", "--format=%s", f"{base}..HEAD",
                   cwd=git_repo).splitlines()
    assert [c.subject for c in commits] == expected
    assert commits[-1].paths == ("side.txt",)  # the merge, against its first parent


def test_unknown_base_is_a_clear_error(git_repo: Path) -> None:
    with pytest.raises(GitError, match="unknown revision: 0123456789abcdef"):
        log_subjects(git_repo, "0123456789abcdef")


def test_the_subject_is_gits_own(git_repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=git_repo).strip()
    for message in ("one\ntwo\n\nbody\n", "\n\nonly\n", "[forge] 001: a\n  wrapped\n"):
        git("commit", "-q", "--allow-empty", "--cleanup=verbatim", "-m", message, cwd=git_repo)
    expected = git("log", "--reverse", "--format=%s", f"{base}..HEAD", cwd=git_repo)
    assert [c.subject for c in log_subjects(git_repo, base)] == expected.splitlines()


def test_stash_list_matches_git(git_repo: Path) -> None:
    write(git_repo, "README.md", "changed\n")
    write(git_repo, "new.txt", "untracked\n")
    git("stash", "push", "-q", "-u", "-m", "forge: abandoned work from item 004", cwd=git_repo)
    write(git_repo, "README.md", "again\n")
    git("stash", "push", "-q", cwd=git_repo)
    entries = stash_list(git_repo)
    listed = git("stash", "list", cwd=git_repo).splitlines()
    assert [f"{e.ref}: {e.message}" for e in entries] == listed
    assert entries[1].paths == ("README.md", "new.txt")
    assert entries[0].paths == ("README.md",)
    assert entries[1].commit_id == git("rev-parse", "stash@{1}", cwd=git_repo).strip()
    assert stash_list(git_repo)[0].ref == "stash@{0}"


def test_no_stashes(git_repo: Path) -> None:
    assert stash_list(git_repo) == []
    assert kept_list(git_repo, "refs/forge/abandoned/") == []


def test_kept_work_by_ref_name_with_its_paths(git_repo: Path) -> None:
    write(git_repo, "README.md", "changed\n")
    write(git_repo, "new file.txt", "untracked\n")
    git("stash", "push", "-q", "-u", "-m", "forge: abandoned work from item 004", cwd=git_repo)
    git("update-ref", "refs/forge/abandoned/004/20260101T000000Z", "stash@{0}", cwd=git_repo)
    git("update-ref", "refs/forge/abandoned/001/20260102T000000Z", "stash@{0}", cwd=git_repo)
    git("update-ref", "refs/forge/discarded/20260101T000000Z", "HEAD", cwd=git_repo)
    commit = git("rev-parse", "stash@{0}", cwd=git_repo).strip()
    message = "On main: forge: abandoned work from item 004"
    assert kept_list(git_repo, "refs/forge/abandoned/") == [
        StashEntry("refs/forge/abandoned/001/20260102T000000Z", commit, message,
                   ("README.md", "new file.txt")),
        StashEntry("refs/forge/abandoned/004/20260101T000000Z", commit, message,
                   ("README.md", "new file.txt"))]
    assert [e.ref for e in kept_list(git_repo, "refs/forge/abandoned/004/")] == [
        "refs/forge/abandoned/004/20260101T000000Z"]


def test_every_kind_of_commit_and_stash_as_git_lists_it(git_repo: Path) -> None:
    """A root commit, a rename, an empty commit, a merge, a name that is not ASCII,
    a deletion, stashes with and without untracked files: what git itself lists."""
    base = git("rev-parse", "HEAD", cwd=git_repo).strip()
    commit_file(git_repo, "src/été.txt", "[forge] 001: accents")
    git("mv", "src/été.txt", "src/renamed.txt", cwd=git_repo)
    git("commit", "-q", "-m", "[forge] 002: rename", cwd=git_repo)
    git("commit", "-q", "--allow-empty", "-m", "[forge] 003: nothing\n\nat all", cwd=git_repo)
    git("checkout", "-q", "-b", "side", cwd=git_repo)
    commit_file(git_repo, "side.txt", "[forge] 004: side")
    git("checkout", "-q", "main", cwd=git_repo)
    git("rm", "-q", "README.md", cwd=git_repo)
    git("commit", "-q", "-m", "[forge] 005: delete", cwd=git_repo)
    git("merge", "-q", "--no-edit", "side", cwd=git_repo)
    write(git_repo, "side.txt", "changed\n")
    write(git_repo, "new file.txt", "untracked\n")
    git("stash", "push", "-q", "-u", "-m", "forge: work from item 006", cwd=git_repo)
    write(git_repo, "side.txt", "again\n")
    git("stash", "push", "-q", cwd=git_repo)
    for start in (base, None):
        commits = log_subjects(git_repo, start)
        revisions = [f"{start}..HEAD"] if start else ["HEAD"]
        listed = git("log", "--reverse", "--topo-order", "--format=%H %s", *revisions,
                     cwd=git_repo).splitlines()
        assert [f"{c.id} {c.subject}" for c in commits] == listed
        for commit in commits:
            changed = git("-c", "core.quotePath=false", "show", "--no-renames",
                          "--diff-merges=first-parent", "--name-only", "--format=",
                          commit.id, cwd=git_repo).split("\n")
            assert commit.paths == tuple(sorted(filter(None, changed), key=str.encode))
    assert log_subjects(git_repo, base)[0].paths == ("src/été.txt",)
    assert log_subjects(git_repo, base)[-1].subject == "Merge branch 'side'"
    entries = stash_list(git_repo)
    assert [f"{e.ref}: {e.message}" for e in entries] == git("stash", "list",
                                                              cwd=git_repo).splitlines()
    assert [e.paths for e in entries] == [("side.txt",), ("new file.txt", "side.txt")]

"""stash_paths stashes exactly its paths; libgit2's partial stash does not. keep_paths
writes the same stash commit under a ref of its own, off the stash list."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest
from helpers import git
from tree_helpers import (
    assert_only_paths_changed,
    git_bytes,
    index_state,
    whole_state,
    worktree_state,
    write,
)

from git_forge.tree.errors import GitError
from git_forge.tree.git_status import porcelain
from git_forge.tree.history import kept_list, stash_list
from git_forge.tree.repo import open_repo
from git_forge.tree.stash import keep_paths, stash_paths

CHOSEN = [
    "*.txt", "[ab].txt", "a", "dir/x.txt", "sp ace.txt", "new\nline.txt",
    os.fsdecode(b"latin1-\xe9.txt"), "gone.txt", "untracked/new file.txt", "*.new", "tool.sh",
    "link", "staged-other.txt", "ita.txt",
]
MESSAGE = "forge: abandoned work from item 003"


def stash_show_names(root: Path) -> set[str]:
    out = git_bytes("stash", "show", "--include-untracked", "--name-only", "-z", "stash@{0}",
                    cwd=root)
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def test_the_trap_naive_partial_stash_destroys_an_unrelated_edit(git_repo: Path) -> None:
    write(git_repo, "keep.txt", "keep\n")
    git("add", "keep.txt", cwd=git_repo)
    git("commit", "-q", "-m", "two files", cwd=git_repo)
    write(git_repo, "README.md", "stash me\n")
    write(git_repo, "keep.txt", "unrelated edit, not stashed\n")
    repository = pygit2.Repository(str(git_repo))
    sig = pygit2.Signature("T", "t@example.invalid")
    repository.stash(sig, "naive", paths=["README.md"])
    assert (git_repo / "keep.txt").read_text() == "keep\n"  # the edit is gone …
    assert "unrelated edit" not in git("stash", "show", "-p", cwd=git_repo)  # … and saved nowhere


def test_the_keep_all_recipe_still_sweeps_in_every_untracked_file(git_repo: Path) -> None:
    """Why stash_paths builds its own stash: libgit2 limits only the tracked part."""
    write(git_repo, "README.md", "stash me\n")
    write(git_repo, "mine.txt", "named untracked\n")
    write(git_repo, "someone-elses.txt", "not named\n")
    repository = pygit2.Repository(str(git_repo))
    sig = pygit2.Signature("T", "t@example.invalid")
    repository.stash(sig, "keep_all", paths=["README.md", "mine.txt"], keep_all=True,
                     include_untracked=True)
    assert "someone-elses.txt" in git("show", "--name-only", "stash@{0}^3", cwd=git_repo)


def test_our_stash_leaves_an_unrelated_edit_alone(git_repo: Path) -> None:
    write(git_repo, "keep.txt", "keep\n")
    git("add", "keep.txt", cwd=git_repo)
    git("commit", "-q", "-m", "two files", cwd=git_repo)
    write(git_repo, "README.md", "stash me\n")
    write(git_repo, "keep.txt", "unrelated edit, not stashed\n")
    stash_paths(open_repo(git_repo), ["README.md"], MESSAGE)
    assert (git_repo / "keep.txt").read_text() == "unrelated edit, not stashed\n"
    assert git("status", "--porcelain", cwd=git_repo) == " M keep.txt\n"
    assert stash_show_names(git_repo) == {"README.md"}


def test_stashes_exactly_the_named_paths(busy: Path) -> None:
    before = whole_state(busy)
    stash_id = stash_paths(open_repo(busy), CHOSEN, MESSAGE)
    after = whole_state(busy)

    assert git("rev-parse", "stash@{0}", cwd=busy).strip() == stash_id
    assert git("stash", "list", cwd=busy) == f"stash@{{0}}: On main: {MESSAGE}\n"
    assert stash_show_names(busy) == set(CHOSEN)
    assert_only_paths_changed(before, after, set(CHOSEN) | {"untracked"})
    # The named paths are back to HEAD; the untracked ones are gone.
    assert not {e.path for e in porcelain(open_repo(busy))} & set(CHOSEN)
    assert not (busy / "untracked").exists() and not (busy / "*.new").exists()
    # Content: tracked changes in the stash commit, untracked files in its third parent.
    assert git_bytes("show", "stash@{0}^3:untracked/new file.txt", cwd=busy) == (
        before[0]["untracked/new file.txt"][2]
    )
    assert git_bytes("show", "stash@{0}:*.txt", cwd=busy) == before[0]["*.txt"][2]
    assert git_bytes("show", "stash@{0}:ita.txt", cwd=busy) == b"intent to add\n"
    assert git("cat-file", "-t", "stash@{0}:gone.txt", cwd=busy, check=False) == ""
    assert git_bytes("show", "stash@{0}^2:staged-other.txt", cwd=busy) == b"staged\n"
    assert git("log", "-1", "--format=%s", "stash@{0}^2", cwd=busy).startswith(
        "index on main: "
    )


def test_git_applies_it_back_exactly(busy: Path) -> None:
    # `git stash apply --index` refuses while other paths are staged, and turns an
    # intent-to-add entry into an addition: leave those out of this round trip.
    git("reset", "-q", "--", "other.txt", "added.txt", "gone-staged.txt", "ita.txt", cwd=busy)
    chosen = [p for p in CHOSEN if p != "ita.txt"]
    before = whole_state(busy)
    stash_paths(open_repo(busy), chosen, MESSAGE)
    git("stash", "apply", "--index", cwd=busy)
    after = whole_state(busy)
    assert after[0] == before[0]
    assert {p: after[1].get(p) for p in chosen} == {p: before[1].get(p) for p in chosen}


def test_listed_with_its_paths(busy: Path) -> None:
    stash_paths(open_repo(busy), ["a", "*.new"], MESSAGE)
    entries = stash_list(busy)
    assert [(e.ref, e.message, e.paths) for e in entries] == [
        ("stash@{0}", f"On main: {MESSAGE}", ("*.new", "a")),
    ]


def test_detached_head_label(busy: Path) -> None:
    git("checkout", "-q", "--detach", cwd=busy)
    stash_paths(open_repo(busy), ["a"], MESSAGE)
    assert git("stash", "list", cwd=busy) == f"stash@{{0}}: On (no branch): {MESSAGE}\n"


def test_second_stash_keeps_the_first(busy: Path) -> None:
    git("rm", "-q", "--cached", "ita.txt", cwd=busy)  # git stash cannot run with one
    git("stash", "push", "-q", "-m", "made by git", "--", "dir2/x.txt", cwd=busy)
    stash_paths(open_repo(busy), ["a"], MESSAGE)
    assert git("stash", "list", cwd=busy) == (
        f"stash@{{0}}: On main: {MESSAGE}\nstash@{{1}}: On main: made by git\n"
    )


def test_refusals_change_nothing(busy: Path, tmp_path: Path) -> None:
    before = whole_state(busy)
    with pytest.raises(GitError, match="no local changes to save"):
        stash_paths(open_repo(busy), ["dir2/y.txt"], MESSAGE)
    nested = busy / "nested"
    nested.mkdir()
    git("init", "-q", cwd=nested)
    write(nested, "f.txt")
    with pytest.raises(GitError, match="nested git repository"):
        stash_paths(open_repo(busy), ["a", "nested"], MESSAGE)
    after = whole_state(busy)
    after[0].pop("nested/f.txt")
    after[1].pop("nested/")
    assert after == before
    assert git("stash", "list", cwd=busy) == ""

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git("init", "-q", cwd=fresh)
    write(fresh, "f.txt")
    with pytest.raises(GitError, match="unborn branch"):
        stash_paths(open_repo(fresh), ["f.txt"], MESSAGE)
    assert worktree_state(fresh) == {"f.txt": ("file", False, b"content\n")}
    assert index_state(fresh) == {"f.txt": b"st ??"}


def test_a_held_index_lock_refuses_before_anything_changes(busy: Path) -> None:
    (busy / ".git" / "index.lock").write_bytes(b"")
    before = worktree_state(busy)
    with pytest.raises(GitError, match="index.lock exists"):
        stash_paths(open_repo(busy), ["a"], MESSAGE)
    assert worktree_state(busy) == before
    assert git("stash", "list", cwd=busy) == ""


def test_unnamed_entries_in_the_way_are_refused(busy: Path) -> None:
    (busy / "a").unlink()
    write(busy, "a/inner.txt", "inner\n")
    before = whole_state(busy)
    with pytest.raises(GitError, match="would also remove a/inner.txt"):
        stash_paths(open_repo(busy), ["a"], MESSAGE)
    assert whole_state(busy) == before
    assert git("stash", "list", cwd=busy) == ""
    stash_paths(open_repo(busy), ["a", "a/inner.txt"], MESSAGE)
    assert (busy / "a").is_file()
    assert git("show", "stash@{0}^3:a/inner.txt", cwd=busy) == "inner\n"


# --- kept under a ref of its own ----------------------------------------------------------------

PREFIX = "refs/forge/abandoned/003/"


def test_kept_work_is_the_stash_commit_under_its_own_ref_off_the_stash_list(
        busy: Path) -> None:
    git("rm", "-q", "--cached", "ita.txt", cwd=busy)  # git stash cannot run with one
    git("stash", "push", "-q", "-m", "the user's own", "--", "dir2/x.txt", cwd=busy)
    listed = git("stash", "list", cwd=busy)
    chosen = [p for p in CHOSEN if p != "ita.txt"]
    before = whole_state(busy)
    kept = keep_paths(open_repo(busy), chosen, MESSAGE, PREFIX)
    after = whole_state(busy)
    assert kept.ref.startswith(PREFIX) and kept.paths == tuple(sorted(chosen, key=os.fsencode))
    assert git("rev-parse", kept.ref, cwd=busy).strip() == kept.commit_id
    assert git("stash", "list", cwd=busy) == listed  # the user's stash list, untouched
    assert_only_paths_changed(before, after, set(chosen) | {"untracked"})
    assert not {e.path for e in porcelain(open_repo(busy))} & set(chosen)
    assert git("log", "-1", "--format=%s", kept.ref, cwd=busy) == f"On main: {MESSAGE}\n"
    # git reads it as a stash: shown, and applied back exactly.
    shown = git_bytes("stash", "show", "--include-untracked", "--name-only", "-z", kept.ref,
                      cwd=busy)
    assert {os.fsdecode(p) for p in shown.split(b"\0") if p} == set(chosen)
    git("reset", "-q", "--", "other.txt", "added.txt", "gone-staged.txt", cwd=busy)
    git("stash", "apply", "-q", kept.ref, cwd=busy)
    assert worktree_state(busy) == before[0]


def test_two_kept_in_the_same_second_get_two_refs(busy: Path) -> None:
    first = keep_paths(open_repo(busy), ["a"], MESSAGE, PREFIX)
    write(busy, "a", "changed again\n")
    second = keep_paths(open_repo(busy), ["a"], MESSAGE, PREFIX)
    assert first.ref != second.ref
    entries = kept_list(busy, PREFIX)
    assert {(e.ref, e.message, e.paths) for e in entries} == {
        (first.ref, f"On main: {MESSAGE}", ("a",)), (second.ref, f"On main: {MESSAGE}", ("a",))}
    assert git("show", f"{second.ref}:a", cwd=busy) == "changed again\n"


def test_keeping_refuses_as_stashing_does_and_changes_nothing(busy: Path) -> None:
    before = whole_state(busy)
    with pytest.raises(GitError, match="no local changes to save"):
        keep_paths(open_repo(busy), ["dir2/y.txt"], MESSAGE, PREFIX)
    (busy / ".git" / "index.lock").write_bytes(b"")
    with pytest.raises(GitError, match="index.lock exists"):
        keep_paths(open_repo(busy), ["a"], MESSAGE, PREFIX)
    assert whole_state(busy) == before
    assert git("for-each-ref", PREFIX, cwd=busy) == ""

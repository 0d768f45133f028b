"""discard_paths saves first, discards exactly its paths, and can be undone."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pygit2
import pytest
from helpers import git
from tree_helpers import (
    assert_only_paths_changed,
    git_bytes,
    whole_state,
    worktree_state,
    write,
)

from git_forge.tree.discard import (
    discard_paths,
    restore_discarded,
    restore_hint,
    safety_refs,
)
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import porcelain
from git_forge.tree.repo import open_repo

#: libgit2's "put these paths back" (the strategy the tree layer once used),
#: kept here to measure the trap below.
RESTORE_STRATEGY = (
    pygit2.enums.CheckoutStrategy.FORCE
    | pygit2.enums.CheckoutStrategy.REMOVE_UNTRACKED
    | pygit2.enums.CheckoutStrategy.DISABLE_PATHSPEC_MATCH
)

CHOSEN = [
    "*.txt", "[ab].txt", "a", "dir/x.txt", "sp ace.txt", "new\nline.txt",
    os.fsdecode(b"latin1-\xe9.txt"), "gone.txt", "untracked/new file.txt", "*.new", "tool.sh",
    "link", "staged-other.txt", "ita.txt",
]


def test_discards_exactly_the_named_paths_after_saving_them(busy: Path) -> None:
    before = whole_state(busy)
    head = git("rev-parse", "HEAD", cwd=busy).strip()
    saved = discard_paths(open_repo(busy), CHOSEN)
    after = whole_state(busy)

    assert re.fullmatch(r"refs/forge/discarded/\d{8}T\d{6}Z", saved.ref)
    assert git("rev-parse", saved.ref, cwd=busy).strip() == saved.commit_id
    assert git("rev-parse", f"{saved.ref}^1", cwd=busy).strip() == head
    assert set(saved.paths) == set(CHOSEN)
    assert_only_paths_changed(before, after, set(CHOSEN) | {"untracked"})
    assert not {e.path for e in porcelain(open_repo(busy))} & set(CHOSEN)
    assert not (busy / "untracked").exists() and not (busy / "*.new").exists()
    # Every discarded byte is in the safety commit, exactly as it was on disk.
    for path in CHOSEN:
        state = before[0].get(path)
        if state is None:
            assert git_bytes("ls-tree", "-z", saved.ref, "--", path, cwd=busy) == b""
        elif state[0] == "link":
            assert git_bytes("show", f"{saved.ref}:{path}", cwd=busy) == state[1].encode()
        else:
            assert git_bytes("show", f"{saved.ref}:{path}", cwd=busy) == state[2]
    assert git_bytes("ls-tree", saved.ref, "tool.sh", cwd=busy).split()[0] == b"100644"
    # The staged version of staged-other.txt (different from both HEAD and disk) too.
    assert git_bytes("show", f"{saved.ref}^2:staged-other.txt", cwd=busy) == b"staged\n"


def test_restore_puts_the_working_tree_back(busy: Path) -> None:
    before = whole_state(busy)
    saved = discard_paths(open_repo(busy), CHOSEN)
    restored = restore_discarded(open_repo(busy), saved.ref)
    assert set(restored) == set(CHOSEN)
    assert worktree_state(busy) == before[0]
    # Only the working tree comes back: staging is not redone.
    codes = {e.path: e.xy for e in porcelain(open_repo(busy))}
    assert codes["staged-other.txt"] == " M" and codes["ita.txt"] == "??"
    assert codes["untracked/new file.txt"] == "??" and codes["gone.txt"] == " D"


def test_restore_refuses_to_overwrite_a_new_change(busy: Path) -> None:
    saved = discard_paths(open_repo(busy), ["a", "untracked/new file.txt"])
    write(busy, "a", "a newer edit\n")
    before = whole_state(busy)
    with pytest.raises(GitError, match=r"would overwrite changes in a$"):
        restore_discarded(open_repo(busy), saved.ref)
    assert whole_state(busy) == before


def test_restore_accepts_the_short_name_and_skips_identical_files(busy: Path) -> None:
    saved = discard_paths(open_repo(busy), ["a", "plain.txt"])
    write(busy, "a", (busy / "a").read_text() + "modified\n")  # already as saved
    short = saved.ref.removeprefix("refs/forge/discarded/")
    assert restore_discarded(open_repo(busy), short) == ["plain.txt"]
    with pytest.raises(GitError, match="no such safety ref"):
        restore_discarded(open_repo(busy), "20000101T000000Z")


def test_same_second_clash_is_suffixed(busy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from git_forge.tree import discard

    monkeypatch.setattr(discard, "compact_stamp", lambda: "20250102T030405Z")
    refs = [discard_paths(open_repo(busy), [path]).ref for path in ("a", "a.txt", "plain.txt")]
    assert refs == [
        "refs/forge/discarded/20250102T030405Z",
        "refs/forge/discarded/20250102T030405Z-2",
        "refs/forge/discarded/20250102T030405Z-3",
    ]
    assert [s.paths for s in safety_refs(open_repo(busy))] == [("a",), ("a.txt",), ("plain.txt",)]


def test_nothing_to_discard_changes_nothing(busy: Path) -> None:
    before = whole_state(busy)
    with pytest.raises(GitError, match="nothing to discard"):
        discard_paths(open_repo(busy), ["dir2/y.txt"])
    assert whole_state(busy) == before
    assert git("for-each-ref", "refs/forge", cwd=busy) == ""


def test_submodules_and_nested_repositories_are_refused(busy: Path) -> None:
    nested = busy / "nested"
    nested.mkdir()
    git("init", "-q", cwd=nested)
    write(nested, "work.txt")
    before = whole_state(busy)
    with pytest.raises(GitError, match="nested git repository"):
        discard_paths(open_repo(busy), ["a", "nested/"])
    assert whole_state(busy) == before
    assert (nested / "work.txt").exists()


def test_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    write(root, "keep.txt", "keep\n")
    write(root, "drop/me.txt", "drop\n")
    write(root, "staged.txt", "staged\n")
    git("add", "staged.txt", cwd=root)
    saved = discard_paths(open_repo(root), ["drop/me.txt", "staged.txt"])
    assert git("status", "--porcelain", cwd=root) == "?? keep.txt\n"
    assert not (root / "drop").exists()
    assert git("show", f"{saved.ref}:drop/me.txt", cwd=root) == "drop\n"
    assert restore_discarded(open_repo(root), saved.ref) == ["drop/me.txt", "staged.txt"]
    assert (root / "staged.txt").read_text() == "staged\n"


def test_restore_hint_names_both_ways() -> None:
    ref = "refs/forge/discarded/20250102T030405Z"
    assert restore_hint(ref) == [
        f"git forge reconcile --restore {ref}",
        f"git show {ref}:<path>   (or: git checkout {ref} -- <path>)",
    ]


def replace_file_with_directory(root: Path) -> None:
    """``a`` (tracked file) becomes a directory holding a file and an ignored one."""
    (root / "a").unlink()
    write(root, "a/inner.txt", "inner\n")
    write(root, "a/trace.log", "ignored, but still someone's\n")


def test_libgit2_checkout_would_delete_a_directory_standing_where_a_file_was(
    busy: Path,
) -> None:
    """The trap ``unnamed_in_the_way`` guards against, measured."""
    replace_file_with_directory(busy)
    pygit2.Repository(str(busy)).checkout_head(paths=["a"], strategy=RESTORE_STRATEGY)
    assert (busy / "a").is_file() and not (busy / "a" / "inner.txt").exists()


def test_unnamed_entries_in_the_way_are_refused(busy: Path) -> None:
    replace_file_with_directory(busy)
    before = whole_state(busy)
    with pytest.raises(GitError, match=r"would also remove a/inner.txt, a/trace.log"):
        discard_paths(open_repo(busy), ["a"])
    with pytest.raises(GitError, match=r"would also remove a/trace.log"):
        discard_paths(open_repo(busy), ["a", "a/inner.txt"])
    assert whole_state(busy) == before
    assert git("for-each-ref", "refs/forge", cwd=busy) == ""


def test_file_and_directory_swaps_round_trip(busy: Path) -> None:
    replace_file_with_directory(busy)
    (busy / "dir2").rename(busy / "dir2-moved")
    write(busy, "dir2", "a file where a directory was\n")
    before = whole_state(busy)
    named = ["a", "a/inner.txt", "a/trace.log", "dir2", "dir2/x.txt", "dir2/y.txt"]
    saved = discard_paths(open_repo(busy), named)
    assert (busy / "a").read_text().startswith("committed")
    assert (busy / "dir2" / "x.txt").is_file()
    assert git("show", f"{saved.ref}:a/trace.log", cwd=busy) == "ignored, but still someone's\n"
    restore_discarded(open_repo(busy), saved.ref)
    assert worktree_state(busy) == before[0]


def test_checkout_paths_are_globs_unless_told_otherwise(busy: Path) -> None:
    """The trap behind DISABLE_PATHSPEC_MATCH: a file named ``*.txt`` matches every .txt."""
    assert (busy / "a.txt").read_text() != git("show", "HEAD:a.txt", cwd=busy)
    pygit2.Repository(str(busy)).checkout_head(
        paths=["*.txt"], strategy=pygit2.enums.CheckoutStrategy.FORCE
    )
    assert (busy / "a.txt").read_text() == git("show", "HEAD:a.txt", cwd=busy)  # reset anyway


def test_conflicted_paths_are_saved_and_put_back_to_head(git_repo: Path) -> None:
    for name in ("both", "gone-there"):
        write(git_repo, name, "base\n")
    git("add", ".", cwd=git_repo)
    git("commit", "-q", "-m", "base", cwd=git_repo)
    git("checkout", "-q", "-b", "other", cwd=git_repo)
    write(git_repo, "both", "theirs\n")
    git("rm", "-q", "gone-there", cwd=git_repo)
    git("commit", "-q", "-am", "theirs", cwd=git_repo)
    git("checkout", "-q", "main", cwd=git_repo)
    write(git_repo, "both", "ours\n")
    write(git_repo, "gone-there", "ours\n")
    git("commit", "-q", "-am", "ours", cwd=git_repo)
    git("merge", "-q", "other", cwd=git_repo, check=False)
    assert git("status", "--porcelain", cwd=git_repo) == "UU both\nUD gone-there\n"
    saved = discard_paths(open_repo(git_repo), ["both", "gone-there"])
    assert git("status", "--porcelain", cwd=git_repo) == ""
    assert git("ls-files", "-s", "--", "both", "gone-there", cwd=git_repo).count(" 0\t") == 2
    assert "<<<<<<<" in git("show", f"{saved.ref}:both", cwd=git_repo)

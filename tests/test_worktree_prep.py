"""The next items' worktrees are made ahead, in their own thread, at the tip they are
given, and moved to a newer tip when asked again; anything but a plain creation or
move is left to the start's own path."""

from __future__ import annotations

from pathlib import Path

import waiting
from helpers import git

from git_forge.loop.worktree_prep import WorktreePreparer
from git_forge.tree.worktrees import add_worktree, worktree_at


def test_a_prepared_worktree_is_taken_once_at_its_tip(git_repo: Path) -> None:
    tip = git("rev-parse", "HEAD", cwd=git_repo).strip()
    path = git_repo / ".forge" / "worktrees" / "001"
    preparer = WorktreePreparer(git_repo)
    preparer.prepare("001", path, "forge/001", tip, ("000",))
    preparer.prepare("001", path, "forge/001", tip)  # asked twice: made once
    assert preparer.asked("001")
    made = preparer.take("001")
    assert made is not None and made.path == path and made.tip == tip
    assert made.depends_on == ("000",)  # as they were: the start compares them
    found = worktree_at(git_repo, path)
    assert found is not None and not found.missing
    assert git("rev-parse", "forge/001", cwd=git_repo).strip() == tip
    assert git("status", "--porcelain", cwd=path) == ""
    assert preparer.take("001") is None and not preparer.asked("001")
    assert preparer.take("002") is None  # never asked for
    assert preparer.close() == []


def test_what_it_cannot_make_plainly_is_left_to_the_start(git_repo: Path) -> None:
    tip = git("rev-parse", "HEAD", cwd=git_repo).strip()
    git("branch", "forge/002", cwd=git_repo)  # a branch left by a run before
    taken = git_repo / ".forge" / "worktrees" / "003"
    add_worktree(git_repo, taken, "forge/003", tip)  # the path exists already
    preparer = WorktreePreparer(git_repo)
    preparer.prepare("002", git_repo / ".forge" / "worktrees" / "002", "forge/002", tip)
    preparer.prepare("003", taken, "forge/003", tip)
    assert preparer.take("002") is None
    assert preparer.take("003") is None
    assert not (git_repo / ".forge" / "worktrees" / "002").exists()
    assert preparer.close() == []


def test_close_hands_back_what_was_never_taken(git_repo: Path) -> None:
    tip = git("rev-parse", "HEAD", cwd=git_repo).strip()
    path = git_repo / ".forge" / "worktrees" / "004"
    preparer = WorktreePreparer(git_repo)
    preparer.prepare("004", path, "forge/004", tip)
    left = preparer.close()
    assert [(made.item_id, made.path) for made in left] == [("004", path)]
    assert worktree_at(git_repo, path) is not None


def test_asked_again_at_a_new_tip_it_is_moved_there_before_the_start_takes_it(
        git_repo: Path) -> None:
    first = git("rev-parse", "HEAD", cwd=git_repo).strip()
    trees = git_repo / ".forge" / "worktrees"
    preparer = WorktreePreparer(git_repo)
    preparer.prepare("001", trees / "001", "forge/001", first)
    waiting.wait_for(lambda: (trees / "001" / "README.md").exists(), 30, what="001's worktree")
    (git_repo / "landed.txt").write_text("another item's work\n")
    git("add", "landed.txt", cwd=git_repo)
    git("commit", "-qm", "another item landed", cwd=git_repo)
    second = git("rev-parse", "HEAD", cwd=git_repo).strip()
    preparer.prepare("001", trees / "001", "forge/001", second, ("002",))  # its slot frees
    waiting.wait_for(lambda: (trees / "001" / "landed.txt").exists(), 30, what="the move")
    made = preparer.take("001")
    assert made is not None and made.tip == second and made.depends_on == ("002",)
    assert git("rev-parse", "HEAD", "forge/001", cwd=trees / "001").split() == [second] * 2
    assert git("status", "--porcelain", cwd=trees / "001") == ""
    # a tip its commit is not on the way to: left where it is, for the start to refuse
    preparer.prepare("003", trees / "003", "forge/003", second)
    waiting.wait_for(lambda: (trees / "003" / "landed.txt").exists(), 30, what="003's worktree")
    preparer.prepare("003", trees / "003", "forge/003", first)
    preparer.prepare("004", trees / "004", "forge/004", second)  # made after 003's two
    waiting.wait_for(lambda: (trees / "004" / "README.md").exists(), 30, what="004's worktree")
    kept = preparer.take("003")
    assert kept is not None and kept.tip == second
    assert git("rev-parse", "HEAD", "forge/003", cwd=trees / "003").split() == [second] * 2
    assert [made.item_id for made in preparer.close()] == ["004"]

"""Linked worktrees: integration gives what git itself gives, and removal never loses work.

Every integration is compared with git doing the same in a worktree of its own
(``git cherry-pick``, ``git rebase``, ``git merge --ff-only``) at a fixed
committer date, so equal commits have equal ids. Every refusal is checked to
have changed nothing: refs, the index, and every file of every worktree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git, snapshot
from templates import Templates
from tree_helpers import commit_edits, replace_line

from git_forge.tree.errors import GitError
from git_forge.tree.fast_status import may_have_worktrees_or_branches
from git_forge.tree.worktrees import (
    Integration,
    add_worktree,
    branch_tips,
    delete_branch,
    integrate,
    integrate_all,
    integrated,
    remove_worktree,
    status,
    worktrees,
)

LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED_DATE = {"GIT_COMMITTER_DATE": "@1700000000 +0000"}


def build_base(root: Path) -> None:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root)
    (root / "f.txt").write_text(LINES)
    (root / "other.txt").write_text("other\n")
    (root / ".gitignore").write_text("/.forge/\n*.log\n")
    git("add", ".", cwd=root)
    git("commit", "-qm", "initial", cwd=root)


@pytest.fixture
def repo(templates: Templates, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in FIXED_DATE.items():
        monkeypatch.setenv(name, value)
    return templates.copy("worktrees-base", build_base, tmp_path / "repo")


def edit_line(number: int, text: str) -> str:
    return replace_line(LINES, number, text)


def tree_dir(repo: Path, item: str) -> Path:
    return repo / ".forge" / "worktrees" / item


def refs(repo: Path) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=repo)


def state(repo: Path) -> tuple:
    """Everything a refusal must leave alone: refs, HEAD, the index, every file."""
    trees = sorted(str(t.path) for t in worktrees(repo))
    return (refs(repo), git("rev-parse", "HEAD", cwd=repo), git("ls-files", "-s", cwd=repo),
            git("status", "--porcelain", "-uall", cwd=repo), trees,
            {path: snapshot(path) for path in trees})


def reference(repo: Path, tmp_path: Path, start: str, *steps: list[str]) -> str:
    """Run git's own commands in a throw-away worktree at ``start``; its HEAD after."""
    where = tmp_path / f"reference-{len(list(tmp_path.iterdir()))}"
    git("worktree", "add", "-q", "--detach", str(where), start, cwd=repo)
    for step in steps:
        git(*step, cwd=where)
    head = git("rev-parse", "HEAD", cwd=where).strip()
    git("worktree", "remove", "--force", str(where), cwd=repo)
    return head


def test_add_and_list_match_git(repo: Path) -> None:
    made = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    listed = worktrees(repo)
    assert listed[1].path == made and listed[1].branch == "forge/001"
    assert not listed[1].is_main and listed[1].locked is None
    porcelain = git("worktree", "list", "--porcelain", cwd=repo).split("\n\n")
    assert [t.path for t in listed] == [Path(block.split("\n")[0].split(" ", 1)[1])
                                        for block in porcelain if block.strip()]
    assert listed[0].is_main and listed[0].branch == "main"
    assert listed[1].head == git("rev-parse", "main", cwd=repo).strip()
    assert (made / "f.txt").read_text() == LINES
    assert branch_tips(repo, "forge/") == {"forge/001": listed[1].head}
    with pytest.raises(GitError, match="already exists"):
        add_worktree(repo, tree_dir(repo, "002"), "forge/001", "main")
    assert not tree_dir(repo, "002").exists()


def test_status_of_a_worktree_ignores_the_callers_git_dir(repo: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tree = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    (tree / "f.txt").write_text("changed\n")
    (tree / "new file.txt").write_text("new\n")
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    assert [(e.path, e.xy) for e in status(repo, tree)] == [("f.txt", " M"),
                                                            ("new file.txt", "??")]
    assert status(repo, repo) == []


def test_integration_is_git_cherry_pick(repo: Path, tmp_path: Path) -> None:
    one = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    two = add_worktree(repo, tree_dir(repo, "002"), "forge/002", "main")
    commit_edits(one, {"f.txt": edit_line(2, "one"), "a/new.txt": "a\n"}, "[forge] 001: One")
    picked = commit_edits(two, {"f.txt": edit_line(18, "two")}, "[forge] 002: Two")
    first = integrate(repo, "forge/001", "main")
    assert first.outcome == "integrated"
    # forge/001 sat on main's tip: a fast-forward to its very commit
    assert first.commits == (git("rev-parse", "forge/001", cwd=repo).strip(),)
    tip = first.new_tip
    expected = reference(repo, tmp_path, tip, ["cherry-pick", picked])
    second = integrate(repo, "forge/002", "main")
    assert (second.outcome, second.tip, second.fork_point) == ("integrated", tip, first.tip)
    assert second.commits == (expected,) and second.new_tip == expected
    assert git("rev-parse", "main", cwd=repo).strip() == expected
    # the checkout moved as git merge --ff-only moves it: files, index, clean status
    assert (repo / "f.txt").read_text() == edit_line(18, "two").replace("line 2\n", "one\n")
    assert (repo / "a" / "new.txt").read_text() == "a\n"
    assert git("status", "--porcelain", "-uall", cwd=repo) == ""
    assert git("diff", "--cached", "--stat", cwd=repo) == ""
    assert git("log", "--format=%s", "-2", cwd=repo).split("\n")[:2] == [
        "[forge] 002: Two", "[forge] 001: One"]
    # linear history, and the item's branch now points at its integrated commit
    assert git("rev-list", "--merges", "main", cwd=repo) == ""
    assert git("rev-parse", "forge/002", cwd=repo).strip() == expected
    assert (two / "f.txt").read_text() == (repo / "f.txt").read_text()
    assert status(repo, two) == []


def test_a_series_is_integrated_as_git_rebase_does(repo: Path, tmp_path: Path) -> None:
    two = add_worktree(repo, tree_dir(repo, "002"), "forge/002", "main")
    (repo / "f.txt").write_text(edit_line(1, "first"))
    git("commit", "-qam", "main moves on", cwd=repo)
    commit_edits(two, {"f.txt": edit_line(10, "ten"), "x.txt": "x\n"}, "[forge] 002: add x")
    # the second commit takes back part of the first: a merge with the fork point as
    # base would keep x.txt; a rebase does not
    (two / "x.txt").unlink()
    commit_edits(two, {"y.txt": "y\n"}, "[forge] 002: x becomes y")
    expected = reference(repo, tmp_path, "forge/002", ["rebase", "-q", "main"])
    done = integrate(repo, "forge/002", "main")
    assert done.outcome == "integrated" and len(done.commits) == 2
    assert done.new_tip == expected
    assert not (repo / "x.txt").exists() and (repo / "y.txt").read_text() == "y\n"
    assert (repo / "f.txt").read_text() == edit_line(10, "ten").replace("line 1\n", "first\n")


def test_a_conflict_changes_nothing_and_names_the_paths(repo: Path, tmp_path: Path) -> None:
    one = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    two = add_worktree(repo, tree_dir(repo, "002"), "forge/002", "main")
    commit_edits(one, {"f.txt": edit_line(5, "one's five"), "g.txt": "one\n"}, "[forge] 001: A")
    clash = commit_edits(two, {"f.txt": edit_line(5, "two's five"), "g.txt": "two\n",
                               "h.txt": "fine\n"}, "[forge] 002: B")
    integrate(repo, "forge/001", "main")
    before = state(repo)
    outcome = integrate(repo, "forge/002", "main")
    assert outcome.outcome == "conflict" and outcome.conflict_commit == clash
    assert state(repo) == before
    # the same paths git's own cherry-pick leaves unmerged
    where = tmp_path / "by-hand"
    git("worktree", "add", "-q", "--detach", str(where), "main", cwd=repo)
    git("cherry-pick", clash, cwd=where, check=False)
    unmerged = git("diff", "--name-only", "--diff-filter=U", cwd=where).split()
    assert list(outcome.conflict_paths) == sorted(unmerged) == ["f.txt", "g.txt"]
    # both contents are still where they were
    assert "one's five" in (repo / "f.txt").read_text()
    assert "two's five" in git("show", "forge/002:f.txt", cwd=repo)


def test_a_local_change_in_the_way_refuses_before_any_ref_moves(repo: Path) -> None:
    one = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    commit_edits(one, {"f.txt": edit_line(3, "three")}, "[forge] 001: A")
    (repo / "f.txt").write_text("the operator's own edit\n")
    before = state(repo)
    with pytest.raises(GitError, match="f.txt"):
        integrate(repo, "forge/001", "main")
    assert state(repo) == before
    # an unrelated local change is carried over, as git merge --ff-only carries it
    git("checkout", "-q", "--", "f.txt", cwd=repo)
    (repo / "other.txt").write_text("mine\n")
    assert integrate(repo, "forge/001", "main").outcome == "integrated"
    assert (repo / "other.txt").read_text() == "mine\n"
    assert git("status", "--porcelain", cwd=repo) == " M other.txt\n"


def test_already_on_the_branch_is_a_no_op(repo: Path) -> None:
    one = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    assert integrate(repo, "forge/001", "main").outcome == "already"  # nothing committed yet
    change = commit_edits(one, {"f.txt": edit_line(4, "four")}, "[forge] 001: A")
    # the operator picked it by hand: the change is there under another id
    git("cherry-pick", change, cwd=repo)
    assert not git("merge-base", "--is-ancestor", change, "main", cwd=repo, check=False)
    assert integrated(repo, change, "main")
    before = state(repo)
    assert integrate(repo, "forge/001", "main").outcome == "already"
    assert state(repo) == before


def test_several_branches_are_replayed_in_turn_and_fast_forwarded_once(
        repo: Path, tmp_path: Path) -> None:
    one, two, three = (add_worktree(repo, tree_dir(repo, item), f"forge/{item}", "main")
                       for item in ("001", "002", "003"))
    commit_edits(one, {"f.txt": edit_line(2, "one"), "a.txt": "a\n"}, "[forge] 001: One")
    clash = commit_edits(two, {"f.txt": edit_line(2, "two")}, "[forge] 002: Two")
    three_commit = commit_edits(three, {"f.txt": edit_line(18, "three")}, "[forge] 003: Three")
    logged = len(git("reflog", "main", cwd=repo).splitlines())
    first, second, third = integrate_all(repo, ["forge/001", "forge/002", "forge/003"], "main",
                                         reflog="forge", tidy=True)
    assert isinstance(first, Integration) and first.outcome == "integrated"
    # 002 met 001's change: nothing of it moves, and it names the paths
    assert isinstance(second, Integration) and second.outcome == "conflict"
    assert (second.tip, second.conflict_commit, second.conflict_paths) == (
        first.new_tip, clash, ("f.txt",))
    # 003 replayed onto 001's commit, as git cherry-pick would, and main moved once, to it
    expected = reference(repo, tmp_path, first.new_tip, ["cherry-pick", three_commit])
    assert isinstance(third, Integration) and third.outcome == "integrated"
    assert (third.tip, third.commits) == (first.new_tip, (expected,))
    assert git("rev-parse", "main", cwd=repo).strip() == expected
    assert git("reflog", "--format=%gs", "main", cwd=repo).splitlines()[:-logged] == [
        "forge: integrate forge/001, forge/003: fast-forward"]
    assert (repo / "f.txt").read_text() == edit_line(18, "three").replace("line 2\n", "one\n")
    assert git("status", "--porcelain", "-uall", cwd=repo) == ""
    # the integrated ones tidied away; the conflicting one kept as it was
    assert (first.removed, third.removed) == (True, True)
    assert not one.exists() and not three.exists() and two.exists()
    assert branch_tips(repo, "forge/") == {"forge/002": clash}


def test_a_refused_fast_forward_of_several_refuses_only_the_branch_in_the_way(
        repo: Path) -> None:
    one = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    two = add_worktree(repo, tree_dir(repo, "002"), "forge/002", "main")
    commit_edits(one, {"a.txt": "a\n"}, "[forge] 001: One")
    commit_edits(two, {"f.txt": edit_line(3, "three")}, "[forge] 002: Two")
    (repo / "f.txt").write_text("the operator's own edit\n")
    landed, refused = integrate_all(repo, ["forge/001", "forge/002"], "main")
    assert isinstance(landed, Integration) and landed.outcome == "integrated"
    assert git("rev-parse", "main", cwd=repo).strip() == landed.new_tip
    assert (repo / "a.txt").read_text() == "a\n"
    assert isinstance(refused, GitError) and "f.txt" in refused.message
    assert (repo / "f.txt").read_text() == "the operator's own edit\n"
    assert git("status", "--porcelain", cwd=repo) == " M f.txt\n"


def test_merge_commits_are_integrated_by_hand(repo: Path) -> None:
    one = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    git("checkout", "-q", "-b", "side", cwd=one)
    commit_edits(one, {"s.txt": "s\n"}, "side")
    git("checkout", "-q", "forge/001", cwd=one)
    commit_edits(one, {"t.txt": "t\n"}, "t")
    git("merge", "-q", "--no-edit", "side", cwd=one)
    (repo / "z.txt").write_text("z\n")
    git("add", "z.txt", cwd=repo)
    git("commit", "-qm", "moves main", cwd=repo)
    before = state(repo)
    with pytest.raises(GitError, match="merge commits"):
        integrate(repo, "forge/001", "main")
    assert state(repo) == before


# --- removal never loses work ----------------------------------------------------------------


@pytest.fixture
def finished(repo: Path) -> tuple[Path, Path]:
    """An item whose commit is integrated and whose worktree is clean: removable."""
    tree = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    commit_edits(tree, {"done.txt": "done\n"}, "[forge] 001: Done")
    assert integrate(repo, "forge/001", "main").outcome == "integrated"
    return repo, tree


def refused(repo: Path, tree: Path, match: str) -> None:
    before = state(repo)
    with pytest.raises(GitError, match=match):
        remove_worktree(repo, tree, "main")
    assert state(repo) == before and tree.is_dir()


def test_a_dirty_file_is_never_removed(finished: tuple[Path, Path]) -> None:
    repo, tree = finished
    (tree / "done.txt").write_text("more work\n")
    refused(repo, tree, "uncommitted changes \\(done.txt\\)")
    git("add", "done.txt", cwd=tree)  # staged is work too
    refused(repo, tree, "uncommitted changes")


def test_an_untracked_file_is_never_removed(finished: tuple[Path, Path]) -> None:
    repo, tree = finished
    (tree / "notes" / "deep").mkdir(parents=True)
    (tree / "notes" / "deep" / "idea.md").write_text("keep me\n")
    refused(repo, tree, "notes/deep/idea.md")


def test_an_unintegrated_commit_is_never_removed(finished: tuple[Path, Path]) -> None:
    repo, tree = finished
    commit_edits(tree, {"later.txt": "later\n"}, "[forge] 001: later")
    refused(repo, tree, "not on main")
    before = state(repo)
    git("checkout", "-q", "--detach", cwd=tree)  # the branch is free, still not on main
    with pytest.raises(GitError, match="not on main"):
        delete_branch(repo, "forge/001", "main")
    git("checkout", "-q", "forge/001", cwd=tree)
    assert state(repo) == before


def test_a_locked_worktree_is_never_removed(finished: tuple[Path, Path]) -> None:
    repo, tree = finished
    git("worktree", "lock", "--reason", "on a USB disk", str(tree), cwd=repo)
    refused(repo, tree, "locked \\(on a USB disk\\)")


def test_an_operation_in_progress_is_never_removed(finished: tuple[Path, Path]) -> None:
    repo, tree = finished
    git_dir = Path(git("rev-parse", "--absolute-git-dir", cwd=tree).strip())
    (git_dir / "MERGE_HEAD").write_text(git("rev-parse", "HEAD", cwd=tree))
    refused(repo, tree, "is currently merging: finish the merge \\(git -C .* merge "
                        "--continue / --abort\\) first")


def test_the_main_worktree_and_strangers_are_refused(finished: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    repo, _ = finished
    refused(repo, repo, "main worktree")
    (tmp_path / "elsewhere").mkdir()
    refused(repo, tmp_path / "elsewhere", "not a worktree")


def test_integrated_and_clean_is_removed_then_the_branch(finished: tuple[Path, Path]) -> None:
    repo, tree = finished
    (tree / "build.log").write_text("ignored output is not work\n")
    with pytest.raises(GitError, match="checked out"):
        delete_branch(repo, "forge/001", "main")
    remove_worktree(repo, tree, "main")
    assert not tree.exists() and [t.is_main for t in worktrees(repo)] == [True]
    delete_branch(repo, "forge/001", "main")
    assert branch_tips(repo, "forge/") == {}
    assert (repo / "done.txt").read_text() == "done\n"


def test_a_worktree_whose_directory_is_gone(repo: Path) -> None:
    import shutil

    tree = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    commit_edits(tree, {"lost.txt": "x\n"}, "[forge] 001: X")
    shutil.rmtree(tree)
    listed = worktrees(repo)[1]
    assert listed.missing and listed.prunable
    with pytest.raises(GitError, match="not on main"):
        remove_worktree(repo, tree, "main")  # its commit is all that is left: kept
    integrate(repo, "forge/001", "main")
    remove_worktree(repo, tree, "main")
    assert len(worktrees(repo)) == 1


def test_the_cheap_look_is_never_wrong_when_it_says_no(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not may_have_worktrees_or_branches(repo, "forge/")
    git("branch", "forged", cwd=repo)  # a name that only starts like the prefix
    assert not may_have_worktrees_or_branches(repo, "forge/")
    tree = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    assert may_have_worktrees_or_branches(repo, "forge/")
    assert may_have_worktrees_or_branches(tree, "forge/")  # from inside the linked one
    git("worktree", "remove", str(tree), cwd=repo)
    assert may_have_worktrees_or_branches(repo, "forge/")  # the branch is left
    git("pack-refs", "--all", cwd=repo)
    assert not (repo / ".git" / "refs" / "heads" / "forge" / "001").exists()
    assert may_have_worktrees_or_branches(repo, "forge/")  # packed, still there
    git("branch", "-D", "forge/001", cwd=repo)
    assert not may_have_worktrees_or_branches(repo, "forge/")
    detached = repo.parent / "detached"  # a linked worktree on no branch at all
    git("worktree", "add", "-q", "--detach", str(detached), cwd=repo)
    assert may_have_worktrees_or_branches(repo, "forge/")
    git("worktree", "remove", str(detached), cwd=repo)
    assert not may_have_worktrees_or_branches(repo, "forge/")
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))  # found through GIT_DIR: git is asked
    assert may_have_worktrees_or_branches(repo, "forge/")


def git_tree_of_everything(tree: Path) -> str:
    """What git itself makes of a worktree's files: ``git add -A && git write-tree``
    into a throw-away index (the worktree's own index untouched)."""
    env = {"GIT_INDEX_FILE": str(tree.parent / "scratch.index")}
    git("read-tree", "HEAD", cwd=tree, env=env)
    git("add", "-A", cwd=tree, env=env)
    found = git("write-tree", cwd=tree, env=env).strip()
    (tree.parent / "scratch.index").unlink()
    return found


def test_retire_keeps_the_commit_and_every_uncommitted_change(repo: Path) -> None:
    from git_forge.tree.worktrees import retire

    tree = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    commit = commit_edits(tree, {"f.txt": edit_line(3, "mine")}, "[forge] 001: one")
    (tree / "other.txt").write_text("changed, unstaged\n")
    (tree / "new.txt").write_text("untracked\n")
    (tree / "gone.txt").write_text("")
    (tree / "f.txt").unlink()
    (tree / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=tree)
    expected = git_tree_of_everything(tree)
    kept = retire(repo, "forge/001", "refs/forge/retried/001/", tree)
    assert kept.ref.startswith("refs/forge/retried/001/") and kept.commit == commit
    assert git("rev-parse", f"{kept.ref}^{{tree}}", cwd=repo).strip() == expected
    assert git("rev-parse", f"{kept.ref}^1", cwd=repo).strip() == commit
    assert git("show", f"{kept.ref}^2:staged.txt", cwd=repo) == "staged\n"  # the staging too
    assert not tree.exists() and "forge/001" not in branch_tips(repo, "forge/")
    assert len(worktrees(repo)) == 1


def test_retire_of_a_clean_worktree_keeps_the_commit_itself(repo: Path) -> None:
    from git_forge.tree.worktrees import retire

    tree = add_worktree(repo, tree_dir(repo, "002"), "forge/002", "main")
    commit = commit_edits(tree, {"g.txt": "g\n"}, "[forge] 002: two")
    kept = retire(repo, "forge/002", "refs/forge/retried/002/", tree)
    assert git("rev-parse", kept.ref, cwd=repo).strip() == commit and kept.saved_paths == ()
    again = add_worktree(repo, tree_dir(repo, "002"), "forge/002", "main")  # a fresh cut
    assert git("rev-parse", "HEAD", cwd=again).strip() == git("rev-parse", "main",
                                                              cwd=repo).strip()


def test_retire_refuses_a_locked_or_busy_worktree_and_changes_nothing(repo: Path) -> None:
    from git_forge.tree.worktrees import retire

    tree = add_worktree(repo, tree_dir(repo, "003"), "forge/003", "main")
    commit_edits(tree, {"f.txt": edit_line(1, "theirs")}, "[forge] 003: three")
    (tree / "wip.txt").write_text("work in progress\n")
    git("worktree", "lock", "--reason", "mine", str(tree), cwd=repo)
    before = snapshot(tree), git("for-each-ref", cwd=repo)
    with pytest.raises(GitError, match="is locked"):
        retire(repo, "forge/003", "refs/forge/retried/003/", tree)
    assert (snapshot(tree), git("for-each-ref", cwd=repo)) == before
    git("worktree", "unlock", str(tree), cwd=repo)
    git("checkout", "-q", "--detach", cwd=tree)
    with pytest.raises(GitError, match="is not on forge/003"):
        retire(repo, "forge/003", "refs/forge/retried/003/", tree)
    assert (snapshot(tree), git("for-each-ref", cwd=repo)) == before


def test_retire_with_the_worktree_directory_gone_drops_its_registration(repo: Path) -> None:
    import shutil

    from git_forge.tree.worktrees import retire

    tree = add_worktree(repo, tree_dir(repo, "004"), "forge/004", "main")
    commit = commit_edits(tree, {"h.txt": "h\n"}, "[forge] 004: four")
    shutil.rmtree(tree)
    kept = retire(repo, "forge/004", "refs/forge/retried/004/", tree)
    assert git("rev-parse", kept.ref, cwd=repo).strip() == commit
    assert len(worktrees(repo)) == 1 and "forge/004" not in branch_tips(repo, "forge/")
    add_worktree(repo, tree, "forge/004", "main")  # the place is free for a fresh cut


def test_a_commit_landing_on_the_branch_during_the_check_is_integrated_onto(
        repo: Path) -> None:
    """The user commits on the branch while a replay is checked: the fast-forward, which
    expected the old tip, is refused, and the whole integration is made again onto the
    user's commit — never an item refused for it."""
    tree = add_worktree(repo, tree_dir(repo, "001"), "forge/001", "main")
    (tree / "item.txt").write_text("the item's work\n")
    git("add", "item.txt", cwd=tree)
    git("commit", "-qm", "item 001", cwd=tree)
    (repo / "user.txt").write_text("first\n")
    git("add", "user.txt", cwd=repo)
    git("commit", "-qm", "the user's first", cwd=repo)  # the replay is checked: tip moved
    checked: list[str] = []

    def check(branch: str, commit: str) -> str | None:
        checked.append(git("rev-parse", f"{commit}^", cwd=repo).strip())
        if len(checked) == 1:  # the user commits again while the first check runs
            (repo / "user.txt").write_text("second\n")
            git("commit", "-qam", "the user's second", cwd=repo)
        return None

    [done] = integrate_all(repo, ["forge/001"], "main", check=check)
    assert not isinstance(done, GitError), done
    assert done.outcome == "integrated"
    second = git("rev-parse", "main~1", cwd=repo).strip()
    assert git("log", "-1", "--format=%s", "main~1", cwd=repo).strip() == "the user's second"
    assert checked[-1] == second  # checked again, on the commit it landed on
    assert git("show", "main:item.txt", cwd=repo) == "the item's work\n"
    assert git("status", "--porcelain", cwd=repo) == ""

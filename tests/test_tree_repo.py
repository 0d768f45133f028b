"""Repository discovery: subdirectories, GIT_DIR/GIT_WORK_TREE, worktrees, refusals."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import waiting
from helpers import git
from tree_helpers import write

from git_forge.tree.errors import GitError
from git_forge.tree.git_status import porcelain
from git_forge.tree.repo import open_repo


def test_opens_from_a_subdirectory(git_repo: Path) -> None:
    deep = git_repo / "a" / "b"
    deep.mkdir(parents=True)
    repo = open_repo(deep)
    assert repo.workdir.resolve() == git_repo.resolve()
    assert repo.branch_name == "main"
    assert repo.head_commit_id() == git("rev-parse", "HEAD", cwd=git_repo).strip()
    assert not repo.is_unborn and not repo.is_detached


def test_a_branch_tip_and_ancestry_as_git_answers_them(git_repo: Path) -> None:
    repo = open_repo(git_repo)
    first = git("rev-parse", "HEAD", cwd=git_repo).strip()
    write(git_repo, "x.txt", "x\n")
    git("add", "x.txt", cwd=git_repo)
    git("commit", "-qm", "second", cwd=git_repo)  # moved by git, read by the open handle
    second = git("rev-parse", "HEAD", cwd=git_repo).strip()
    assert repo.branch_tip("main") == second and repo.branch_tip("nowhere") is None
    # git merge-base --is-ancestor: a commit is its own ancestor
    assert repo.is_ancestor(first, second) and repo.is_ancestor(second, second)
    assert not repo.is_ancestor(second, first)


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"^cannot open the repository at .*: not a git "
                                       r"repository \(or any of the parent") as caught:
        open_repo(tmp_path)
    assert caught.value.exit_code == 2


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a git repository"):
        open_repo(tmp_path / "nowhere")


def test_bare_repository_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    with pytest.raises(GitError, match="bare repository"):
        open_repo(bare)


def test_ceiling_directories_stop_discovery(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = git_repo / "inner"
    inner.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(git_repo))
    with pytest.raises(GitError, match="not a git repository"):
        open_repo(inner)


def test_git_dir_and_work_tree_from_the_environment(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.setenv("GIT_DIR", str(git_repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(checkout))
    repo = open_repo(elsewhere)
    assert repo.workdir.resolve() == checkout.resolve()
    assert repo.gitdir.resolve() == (git_repo / ".git").resolve()
    # git and we see the same thing: README.md is missing from this work tree.
    assert [(e.path, e.xy) for e in porcelain(repo)] == [("README.md", " D")]
    assert git("status", "--porcelain", cwd=elsewhere) == " D README.md\n"


def test_git_dir_without_work_tree_means_current_directory(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = git_repo / "sub"
    sub.mkdir()
    monkeypatch.setenv("GIT_DIR", "../.git")  # relative to the directory we start in
    repo = open_repo(sub)
    assert repo.workdir.resolve() == sub.resolve()


def test_git_dir_that_is_not_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nothing"))
    with pytest.raises(GitError, match="not a git repository: '.*/nothing'"):
        open_repo(tmp_path)


def test_bare_repository_through_git_dir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    monkeypatch.setenv("GIT_DIR", str(bare))
    with pytest.raises(GitError, match="bare repository"):
        open_repo(tmp_path)


def test_linked_worktree_opens_as_itself(git_repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", "-b", "feature", str(linked), cwd=git_repo)
    write(linked, "only-here.txt")
    repo = open_repo(linked / ".")
    assert repo.workdir.resolve() == linked.resolve()
    assert repo.branch_name == "feature"
    assert [(e.path, e.xy) for e in porcelain(repo)] == [("only-here.txt", "??")]
    assert [(e.path, e.xy) for e in porcelain(open_repo(git_repo))] == []


def test_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git("init", "-q", "-b", "trunk", cwd=root)
    repo = open_repo(root)
    assert repo.is_unborn
    assert repo.head_commit_id() is None and repo.head_commit() is None
    assert repo.branch_name == "trunk"
    assert not repo.is_detached


def test_detached_head(git_repo: Path) -> None:
    git("checkout", "-q", "--detach", cwd=git_repo)
    repo = open_repo(git_repo)
    assert repo.is_detached and repo.branch_name is None
    assert repo.head_commit_id() == git("rev-parse", "HEAD", cwd=git_repo).strip()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs to give the repository to another user")
def test_repository_owned_by_another_user_is_refused_with_the_fix(git_repo: Path) -> None:
    for directory, dirs, files in os.walk(git_repo):
        for name in [*dirs, *files, "."]:
            os.lchown(os.path.join(directory, name), 65534, 65534)
    with pytest.raises(GitError, match="dubious ownership .* call: git config --global "
                                       "--add safe.directory "):
        open_repo(git_repo)


def test_a_git_file_and_core_worktree_are_followed_as_git_follows_them(
        tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    git("init", "-q", "-b", "main", "--separate-git-dir", str(tmp_path / "store.git"),
        str(moved), cwd=tmp_path)
    write(moved, "a.txt")
    repo = open_repo(moved / ".")
    assert repo.workdir.resolve() == moved.resolve()
    assert repo.gitdir.resolve() == (tmp_path / "store.git").resolve()
    assert [(e.path, e.xy) for e in porcelain(repo)] == [("a.txt", "??")]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git("config", "core.worktree", str(elsewhere), cwd=moved)
    (moved / ".git").rename(elsewhere / ".git")
    write(elsewhere, "b.txt")
    repo = open_repo(elsewhere)
    assert repo.workdir.resolve() == elsewhere.resolve()
    assert [(e.path, e.xy) for e in porcelain(repo)] == [("b.txt", "??")]


def test_a_path_that_is_not_utf8_is_refused_in_one_line(tmp_path: Path) -> None:
    """pygit2 names a work tree in UTF-8: a repository whose path holds other bytes is
    refused before anything is done, with a ``GitError`` rather than a traceback."""
    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/not-utf8-\xff"))
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    with pytest.raises(GitError, match="its path is not UTF-8"):
        open_repo(root)


def test_a_utf8_path_opens_under_an_ascii_locale(tmp_path: Path) -> None:
    """Under ``LC_ALL=C`` (``PYTHONUTF8=0``) Python reads a path's bytes as ASCII; the
    repository at a UTF-8 path still opens, as in any other locale."""
    root = tmp_path / "café tree"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    script = ("import sys; from git_forge.tree.repo import open_repo; "
              "print(ascii(open_repo(sys.argv[1]).repository.workdir))")
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0"}
    done = waiting.run([sys.executable, "-c", script, os.fsencode(root)], env=env,
                       capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
    named = os.fsencode(root).decode("ascii", "surrogateescape")  # as Python reads it there
    assert done.stdout == ascii(f"{named}/") + "\n"  # the same directory's bytes

"""The pre-launch hot path: is the tree clean, and if not, which paths.

This runs before every loop launch, within a budget of what ``git status``
costs (ARCHITECTURE.md, "What is measured, and where"). So it asks git itself —
git is the fastest porcelain source there is: libgit2 has no untracked cache, no
fsmonitor and no multi-threaded preload (``benchmarks/status_bench.py`` compares
them on 100,000 files) — and this module must never import pygit2 (nor anything
that does), whose import alone costs more than the budget leaves.

``--porcelain=v2`` is git's format for programs (``porcelain.parse_status_z``),
``-uall`` lists untracked files one by one, ``--no-renames`` keeps a
hand-made rename as a deletion plus an untracked file, ``-z`` prints paths
raw (no quoting); no ``status.*`` setting, colour or ``core.quotePath``
changes it. Checking only for emptiness with ``-unormal`` measured no faster,
so ``is_clean`` runs the very same command and the two can never disagree.
The launch check adds ``--branch``: the same listing says whether HEAD is
detached or its branch unborn, in git's words for programs.

git honours ``GIT_DIR`` / ``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` itself, the
way the operator's own ``git status`` would. Unlike a plain ``git status`` it
never writes the index's refreshed stat cache back (optional locks are off,
``gitcli.GIT``): it runs beside a loop whose commits need that lock.
"""

from __future__ import annotations

import os

from git_forge.layout import git_dir_path
from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import run_git
from git_forge.tree.porcelain import StatusEntry, parse_status_z

STATUS_ARGS = ("status", "--porcelain=v2", "-z", "-uall", "--no-renames")

#: The refusals of a launch on a HEAD no commit can go onto — the same words from
#: ``loop run`` and from the pre-launch check, so a launcher relying on the hook
#: gets the loop's own answer.
DETACHED_HEAD = "HEAD is detached; check out a branch first"
UNBORN_BRANCH = "the branch has no commit yet (unborn); commit something first"


def porcelain_fast(repo_root: str | os.PathLike[str]) -> list[StatusEntry]:
    """The entries of ``git status --porcelain -uall --no-renames``, in git's order.

    ``repo_root`` is any directory inside the working tree (git discovers the
    repository from there, as it would for ``git -C repo_root status``).
    Raises ``GitError`` with git's message outside a repository.
    """
    return parse_status_z(run_git(STATUS_ARGS, cwd=repo_root))[1]


def is_clean(repo_root: str | os.PathLike[str]) -> bool:
    """True when ``git status --porcelain`` would print nothing (ignored files never count)."""
    return not porcelain_fast(repo_root)


def launch_status(repo_root: str | os.PathLike[str]) -> tuple[str | None, list[StatusEntry]]:
    """Why no launch can go onto HEAD (``DETACHED_HEAD``, ``UNBORN_BRANCH``) or
    ``None``, and ``porcelain_fast``'s entries — from one ``git status``, whose
    ``--branch`` headers say what HEAD is in git's words for programs."""
    headers, entries = parse_status_z(run_git(
        (*STATUS_ARGS, "--branch", "--no-ahead-behind"), cwd=repo_root))
    if headers.get("branch.head") == "(detached)":
        return DETACHED_HEAD, entries
    if headers.get("branch.oid") == "(initial)":
        return UNBORN_BRANCH, entries
    return None, entries


def head_blob(repo_root: str | os.PathLike[str], path: str) -> bytes | None:
    """The bytes of ``path`` (relative to the work tree top) at HEAD, or ``None``
    when HEAD has no such file or no commit. Through git, for the same reason
    as the status above: the hot path must not import pygit2."""
    try:
        return run_git(("cat-file", "blob", f"HEAD:{path}"), cwd=repo_root)
    except GitError:
        return None


def may_have_worktrees_or_branches(root: str | os.PathLike[str], prefix: str) -> bool:
    """Whether the repository may have a linked worktree or a ``refs/heads/PREFIX…``
    branch.

    From the git dir's files (``False`` is certain, ``True`` means ask git; a
    reftable repository, or one found through ``GIT_DIR``, is always asked) — the
    one place git-forge reads refs itself: asking git (``git rev-parse --branches
    --git-path worktrees``) is a process more for every ``status`` and every launch
    (ARCHITECTURE.md, "What is measured, and where").
    """
    git_dir = None if os.environ.get("GIT_DIR") else git_dir_path(root)
    if git_dir is None:
        return True
    common = git_dir
    try:
        common = os.path.join(git_dir, _read_text(os.path.join(git_dir, "commondir")).strip())
    except OSError:
        pass
    if os.path.exists(os.path.join(common, "reftable")):
        return True
    try:
        with os.scandir(os.path.join(common, "worktrees")) as entries:
            if any(entries):
                return True
    except OSError:
        pass
    if os.path.exists(os.path.join(common, "refs", "heads", prefix)):
        return True
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as handle:
            packed = handle.read()
    except OSError:
        return False
    return f" refs/heads/{prefix}".encode() in packed


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()

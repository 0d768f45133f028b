"""The pre-launch hot path: is the tree clean, and if not, which paths.

This runs before every loop launch, so it must cost about what ``git status``
costs. Measured on a 100,000-file repository with 1,000 modified and 1,000
untracked files (``benchmarks/status_bench.py``): ``git status --porcelain``
≈ 0.19 s; ``import pygit2`` + ``Repository.status()`` ≈ 0.40 s (libgit2 has no
untracked cache, no fsmonitor, no multi-threaded preload, and pygit2 costs
~0.1 s to import); Python start-up + this module + a ``git status -z``
subprocess ≈ 0.20 s. So the hot path asks git itself — git is the fastest
porcelain source there is — and this module must never import pygit2 (nor
anything that does).

``-uall`` lists untracked files one by one, ``--no-renames`` keeps a
hand-made rename as a deletion plus an untracked file, ``-z`` prints paths
raw (no quoting), and porcelain v1 is stable across git versions and
configuration (``status.*`` settings, colour, ``core.quotePath`` never change
it). Checking only for emptiness with ``-unormal`` measured no faster, so
``is_clean`` runs the very same command and the two can never disagree.

git honours ``GIT_DIR`` / ``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` itself, the
way the operator's own ``git status`` would. Unlike a plain ``git status`` it
never writes the index's refreshed stat cache back (optional locks are off,
``gitcli.GIT``): it runs beside a loop whose commits need that lock.
"""

from __future__ import annotations

import os

from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import run_git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.tree.porcelain import StatusEntry

STATUS_ARGS = ("status", "--porcelain", "-z", "-uall", "--no-renames")


def porcelain_fast(repo_root: str | os.PathLike[str]) -> list[StatusEntry]:
    """The entries of ``git status --porcelain -uall --no-renames``, in git's order.

    ``repo_root`` is any directory inside the working tree (git discovers the
    repository from there, as it would for ``git -C repo_root status``).
    Raises ``GitError`` with git's message outside a repository.
    """
    listed = run_git(STATUS_ARGS, cwd=repo_root)
    if not listed:  # the clean tree: the pre-launch check's hot path imports no parser
        return []
    from git_forge.tree.porcelain import parse_porcelain_z

    return parse_porcelain_z(listed)


def is_clean(repo_root: str | os.PathLike[str]) -> bool:
    """True when ``git status --porcelain`` would print nothing (ignored files never count)."""
    return not run_git(STATUS_ARGS, cwd=repo_root)


def head_blob(repo_root: str | os.PathLike[str], path: str) -> bytes | None:
    """The bytes of ``path`` (relative to the work tree top) at HEAD, or ``None``
    when HEAD has no such file or no commit. Through git, for the same reason
    as the status above: the hot path must not import pygit2."""
    try:
        return run_git(("cat-file", "blob", f"HEAD:{path}"), cwd=repo_root)
    except GitError:
        return None


#: The refusals of a launch on a HEAD no commit can go onto — the same words from
#: ``loop run`` and from the pre-launch check, so a launcher relying on the hook
#: gets the loop's own answer.
DETACHED_HEAD = "HEAD is detached; check out a branch first"
UNBORN_BRANCH = "the branch has no commit yet (unborn); commit something first"


def _loose_head(repo_root: str | os.PathLike[str]) -> tuple[str, str | None] | None:
    """HEAD as the git dir's files say it, where that is certain: ``("detached",
    commit)``, or ``(ref, commit)`` with ``None`` when the ref is packed (it exists)
    — else ``None``: ask git (``GIT_DIR`` set, reftable, an unborn or unreadable ref).
    Plain ``os.path`` (no ``pathlib``): the pre-launch check's clean path asks it."""
    from git_forge.layout import git_dir_path

    root = os.fspath(repo_root)
    git_dir = None if os.environ.get("GIT_DIR") else git_dir_path(root)
    if git_dir is None or os.path.exists(os.path.join(git_dir, "reftable")):
        return None
    try:
        head = _read_text(os.path.join(git_dir, "HEAD")).strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return "detached", head or None
    ref = head[len("ref:"):].strip()
    common = git_dir
    try:
        common = os.path.join(git_dir, _read_text(os.path.join(git_dir, "commondir")).strip())
    except OSError:
        pass
    try:
        return ref, _read_text(os.path.join(common, ref)).strip()
    except OSError:
        pass
    try:
        packed = _read_text(os.path.join(common, "packed-refs"))
    except OSError:
        packed = ""
    if any(line.endswith(" " + ref) for line in packed.splitlines()):
        return ref, None
    return None


def head_problem(repo_root: str | os.PathLike[str]) -> str | None:
    """``DETACHED_HEAD``, ``UNBORN_BRANCH`` or ``None``. Read from the git dir's
    files where that is certain (HEAD, a loose ref, packed-refs), else asked of git."""
    head = _loose_head(repo_root)
    if head is None:
        return _head_problem_from_git(repo_root)
    return DETACHED_HEAD if head[0] == "detached" else None


def head_commit(repo_root: str | os.PathLike[str]) -> str | None:
    """HEAD's commit id, or ``None`` on an unborn branch: from the git dir's files
    where they hold it (a loose ref), else asked of git."""
    head = _loose_head(repo_root)
    if head is not None and head[1] is not None and len(head[1]) >= 40:
        return head[1]
    try:
        out = run_git(("rev-parse", "-q", "--verify", "HEAD^{commit}"), cwd=repo_root)
    except GitError:
        return None
    return out.decode().strip() or None


def may_have_worktrees_or_branches(root: str | os.PathLike[str], prefix: str) -> bool:
    """Whether the repository may have a linked worktree or a ``refs/heads/PREFIX…``
    branch.

    From the file system alone (the launch blocker's clean path must cost about
    what ``git status`` costs, so plain ``os.path``): ``False`` is certain, ``True``
    means ask git. A reftable repository, or one found through ``GIT_DIR``, is asked.
    """
    from git_forge.layout import git_dir_path

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


def _head_problem_from_git(repo_root: str | os.PathLike[str]) -> str | None:
    try:
        run_git(("symbolic-ref", "-q", "HEAD"), cwd=repo_root)
    except GitError:
        return DETACHED_HEAD
    try:
        run_git(("rev-parse", "-q", "--verify", "HEAD^{commit}"), cwd=repo_root)
    except GitError:
        return UNBORN_BRANCH
    return None

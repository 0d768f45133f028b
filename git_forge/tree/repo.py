"""Finding and opening the repository the way git does.

pygit2's ``Repository(path)`` ignores ``GIT_DIR`` and ``GIT_WORK_TREE`` (even
with ``FROM_ENV``), so they are honoured here, with git's rules:

* ``GIT_DIR`` names the repository (relative to ``path``, as after
  ``git -C path``); the working tree is then ``GIT_WORK_TREE``, else
  ``core.worktree``, else — git's documented rule — the directory the command
  runs in, ``path`` itself.
* Without ``GIT_DIR`` the repository is discovered upwards from ``path``,
  within ``GIT_CEILING_DIRECTORIES`` and, unless
  ``GIT_DISCOVERY_ACROSS_FILESYSTEM`` is set, on one file system.
* Linked worktrees open as themselves (their own HEAD and index).

``GIT_INDEX_FILE`` is not honoured by pygit2 operations (it is by the
git-backed ``fast_status``); it is set only inside git's own commit hooks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import RepositoryOpenFlag

from git_forge.errors import os_error_text
from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import LITERAL_PATHSPECS, StartedGit, run_git, start_git

_TRUE = {"1", "true", "yes", "on"}


@contextlib.contextmanager
def git_failures(action: str) -> Iterator[None]:
    """Report a libgit2 or file-system failure as a ``GitError`` (exit 1):
    ``<action>: <libgit2's message verbatim>``. Usable as a decorator."""
    try:
        yield
    except pygit2.GitError as exc:
        raise GitError(f"{action}: {exc}", exit_code=1) from exc
    except OSError as exc:
        raise GitError(f"{action}: {os_error_text(exc)}", exit_code=1) from exc


@dataclass(frozen=True)
class Repo:
    """An opened non-bare repository: the pygit2 handle and its working tree."""

    repository: pygit2.Repository
    workdir: Path

    @property
    def gitdir(self) -> Path:
        """The repository's own git directory (``.git/worktrees/<name>`` for a linked worktree)."""
        return Path(self.repository.path)

    @property
    def is_unborn(self) -> bool:
        """True before the first commit on the current branch (``repo.head`` would raise)."""
        return self.repository.head_is_unborn

    @property
    def is_detached(self) -> bool:
        return self.repository.head_is_detached

    @property
    def branch_name(self) -> str | None:
        """The current branch's short name (also on an unborn branch); None when detached."""
        head = self.repository.lookup_reference("HEAD")
        target = head.target
        if not isinstance(target, str):
            return None
        return target.removeprefix("refs/heads/")

    def head_commit_id(self) -> str | None:
        """HEAD's commit id (hex), or None on an unborn branch."""
        if self.repository.head_is_unborn:
            return None
        return str(self.repository.head.target)

    def head_commit(self) -> pygit2.Commit | None:
        """HEAD's commit, or None on an unborn branch."""
        if self.repository.head_is_unborn:
            return None
        return self.repository.head.peel(pygit2.Commit)

    def branch_tip(self, branch: str) -> str | None:
        """The commit branch ``branch`` (short name) is at, or None when there is no
        such branch: read in-process, where a loop asks at every item's start."""
        with git_failures(f"cannot read branch {branch}"):
            reference = self.repository.references.get(f"refs/heads/{branch}")
            return None if reference is None else str(reference.resolve().target)

    def has_refs(self, prefix: str) -> bool:
        """Whether any ref is named ``<prefix>…``: read in-process, where a loop asks
        at every item's start whether the item has work kept (``history.kept_list``
        then reads it)."""
        with git_failures("cannot read the refs"):
            return any(name.startswith(prefix) for name in self.repository.references)

    def is_ancestor(self, commit: str, of: str) -> bool:
        """Whether ``commit`` is reachable from ``of`` (itself included), as ``git
        merge-base --is-ancestor`` answers."""
        with git_failures(f"cannot compare {commit[:12]} with {of[:12]}"):
            return commit == of or self.repository.descendant_of(of, commit)

    def fresh_index(self) -> pygit2.Index:
        """The index as it is on disk now.

        A ``Repository`` caches its index; after git (or anyone) changed it,
        the cached copy is stale until re-read — and a stat-based re-read can
        miss a same-second change, so the read is forced.
        """
        index: pygit2.Index = self.repository.index
        index.read(force=True)
        return index

    @property
    def common_dir(self) -> Path:
        """Where the refs live: the git dir, or for a linked worktree the main one's."""
        pointer = self.gitdir / "commondir"
        try:
            target = pointer.read_text(encoding="utf-8").strip()
        except OSError:
            return self.gitdir
        return (self.gitdir / target).resolve() if target else self.gitdir

    def held_locks(self, *, commit: bool = True, stash: bool = True) -> list[Path]:
        """The lock files in the way of a commit (the index's, ``HEAD``'s, the
        current branch's) and of a stash (the index's, ``refs/stash``'s): git and
        libgit2 create ``<name>.lock`` while they write one and leave it behind
        when they die."""
        refs = self.common_dir / "refs"
        candidates = [self.gitdir / "index.lock"]
        if commit:
            candidates.append(self.gitdir / "HEAD.lock")
            branch = self.branch_name
            if branch is not None:
                candidates.append(refs / "heads" / f"{branch}.lock")
        if stash:
            candidates.append(refs / "stash.lock")
        return [path for path in candidates if os.path.lexists(path)]

    def check_unlocked(self, *, commit: bool = True, stash: bool = True) -> None:
        """Refuse to start a commit (or a stash) while a lock file is in the way,
        naming the file to remove.

        Checked before anything is written, so a refusal changes nothing (the
        locks themselves still guard the writes; this only avoids a half-done
        step, and says which file it is instead of libgit2's ``failed to lock
        file … for writing``).
        """
        held = self.held_locks(commit=commit, stash=stash)
        if held:
            listed = " ".join(str(path) for path in held)
            verb = "exists" if len(held) == 1 else "exist"
            raise GitError(
                f"{listed} {verb}: another git process is running in this repository, or one"
                f" died while writing; if none is running, remove it: rm {listed}"
            )

    def run_git(self, args: list[str], *, input: bytes | None = None) -> bytes:
        """Run git on this repository (explicit ``GIT_DIR``/``GIT_WORK_TREE``, so
        git acts on the very repository pygit2 opened), literal pathspecs."""
        return run_git(args, cwd=self.workdir, env=self.git_env(), input=input)

    def start_git(self, args: list[str]) -> StartedGit:
        """``run_git`` started now and answered by ``result()`` (``gitcli.start_git``)."""
        return start_git(args, cwd=self.workdir, env=self.git_env())

    def git_env(self) -> dict[str, str]:
        """What a git run on this repository adds to the environment."""
        return {
            "GIT_DIR": str(self.gitdir),
            "GIT_WORK_TREE": str(self.workdir),
            **LITERAL_PATHSPECS,
        }


def _from_env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


def _resolve(base: Path, value: str) -> Path:
    return (base / value).absolute() if not os.path.isabs(value) else Path(value)


def open_repo(path: Path | str = ".") -> Repo:
    """Open the repository containing ``path`` (any directory of its working tree).

    Raises ``GitError`` outside a repository ("not a git repository: PATH"),
    for a bare repository (there is no working tree to act on), and when git's
    safety rules refuse it (owned by another user, not in ``safe.directory``).
    An unborn branch opens fine; callers that need a commit check ``is_unborn``.
    """
    start = Path(path).absolute()
    if not start.is_dir():
        raise GitError(f"not a git repository: {path} (no such directory)")
    git_dir = _from_env("GIT_DIR")
    work_tree = _from_env("GIT_WORK_TREE")
    try:
        if git_dir is not None:
            repository = pygit2.Repository(
                str(_resolve(start, git_dir)), RepositoryOpenFlag.NO_SEARCH
            )
            if work_tree is None and not _has_core_worktree(repository):
                if repository.is_bare:
                    raise GitError(f"{git_dir} is a bare repository: there is no working tree")
                # git: GIT_DIR without GIT_WORK_TREE or core.worktree means the
                # current directory is the top of the working tree.
                work_tree = str(start)
        else:
            found = pygit2.discover_repository(
                str(start),
                (os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM") or "").lower() in _TRUE,
                os.environ.get("GIT_CEILING_DIRECTORIES", ""),
            )
            if found is None:
                raise GitError(f"not a git repository: {path}")
            repository = pygit2.Repository(found)
        if work_tree is not None:
            repository.workdir = str(_resolve(start, work_tree))
    except pygit2.GitError as exc:
        message = str(exc)
        if git_dir is not None and "not found" in message.lower():
            raise GitError(f"not a git repository: {git_dir} (from GIT_DIR)") from exc
        if "not owned by current user" in message:
            message += (
                "; if you trust it: git config --global --add safe.directory"
                f" {start.resolve()}"
            )
        raise GitError(f"cannot open the repository at {path}: {message}") from exc
    if repository.is_bare or repository.workdir is None:
        raise GitError(
            f"{repository.path.rstrip('/')} is a bare repository: there is no working tree"
        )
    return Repo(repository, Path(repository.workdir))


def _has_core_worktree(repository: pygit2.Repository) -> bool:
    try:
        return bool(repository.config["core.worktree"])
    except KeyError:
        return False


def init_repository(path: Path | str, branch: str = "main") -> Repo:
    """A new, empty repository with a working tree at ``path`` (``git init -b BRANCH``)."""
    try:
        pygit2.init_repository(str(path), initial_head=branch)
    except pygit2.GitError as exc:
        raise GitError(f"cannot create a repository at {path}: {exc}") from exc
    return open_repo(path)


def set_local_identity(repo: Repo, name: str, email: str) -> None:
    """Write ``user.name`` / ``user.email`` into this repository's own config."""
    config = repo.repository.config
    config["user.name"] = name
    config["user.email"] = email

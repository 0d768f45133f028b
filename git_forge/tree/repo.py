"""Opening the repository git itself finds.

Where the repository and its working tree are is git's answer (``git rev-parse``
from the directory given): ``GIT_DIR``, ``GIT_WORK_TREE``, ``core.worktree``,
``GIT_CEILING_DIRECTORIES``, ``GIT_DISCOVERY_ACROSS_FILESYSTEM``, a ``.git``
file, a linked worktree and ``safe.directory`` all mean what they mean to git.
pygit2 then opens that git dir (its own discovery ignores ``GIT_DIR``) with
that working tree, for what needs it: index and tree writes, and reads in the
loop's hot path.

``GIT_INDEX_FILE`` is not honoured by pygit2 operations (it is by git's own
status); it is set only inside git's own commit hooks.
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
from git_forge.tree.gitcli import LITERAL_PATHSPECS, StartedGit, git_result, run_git, start_git


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
    """An opened non-bare repository: the pygit2 handle, its working tree, and
    where its refs live (``common_dir``: the git dir, or for a linked worktree
    the main one's), as git named them."""

    repository: pygit2.Repository
    workdir: Path
    common_dir: Path

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

    def worktree(self, tree: Path) -> Repo:
        """The linked worktree of this repository at ``tree`` (one git-forge made),
        opened from its own ``.git`` by libgit2 — as git finds it with ``GIT_DIR``
        and friends removed, the way every git command for another worktree runs
        (``worktrees._OTHER_TREE``) —, its refs where this repository's are.
        Without a git process: the merge thread opens one per item, and
        ``tests/test_parallel.py`` holds a parallel run to 16 git processes per item
        (twelve items on four agents start about 180; ``open_repo`` there: 14 more)."""
        with git_failures(f"cannot open the worktree at {tree}"):
            repository = pygit2.Repository(str(tree), RepositoryOpenFlag.NO_SEARCH)
        if repository.workdir is None:
            raise GitError(f"{tree} is not a worktree")
        return Repo(repository, Path(repository.workdir), self.common_dir)

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


def open_repo(path: Path | str = ".") -> Repo:
    """Open the repository git finds from ``path`` (any directory of its working tree).

    Raises ``GitError`` (exit code 2) where git finds none, for a bare repository
    (there is no working tree to act on), and where git's safety rules refuse it
    (owned by another user, not in ``safe.directory``) — with git's own words.
    An unborn branch opens fine; callers that need a commit check ``is_unborn``.
    """
    start = Path(path).absolute()
    if not start.is_dir():
        raise GitError(f"not a git repository: {path} (no such directory)")
    args = ["rev-parse", "--is-bare-repository", "--path-format=absolute", "--git-dir",
            "--git-common-dir", "--show-toplevel"]
    found = git_result(args, cwd=start)
    lines = os.fsdecode(found.stdout).splitlines()
    if lines[:1] == ["true"]:
        raise GitError(f"{lines[1] if len(lines) > 1 else path} is a bare repository: "
                       "there is no working tree")
    if found.returncode != 0 or len(lines) != 4:
        words = ""
        for line in os.fsdecode(found.stderr).splitlines():  # git's words, on one line
            line = line.strip().removeprefix("fatal: ")
            if line:
                words += (" " if not words or words.endswith(":") else "; ") + line
        raise GitError(f"cannot open the repository at {path}:{words}")
    git_dir, common_dir, work_tree = lines[1:]
    try:
        repository = pygit2.Repository(git_dir, RepositoryOpenFlag.NO_SEARCH)
        repository.workdir = _utf8(work_tree)
    except UnicodeDecodeError as exc:
        raise GitError(f"cannot open the repository at {path}: its path is not UTF-8, "
                       "which git-forge needs") from exc
    except pygit2.GitError as exc:
        raise GitError(f"cannot open the repository at {path}: {exc}") from exc
    return Repo(repository, Path(work_tree), Path(common_dir))


def _utf8(path: str) -> str:
    """``path`` as pygit2's ``workdir`` takes it, which it encodes as UTF-8 (where
    opening a repository encodes a path as the file system's): its bytes read as
    UTF-8, which Python read as the locale's; ``UnicodeDecodeError`` for bytes that
    are not UTF-8."""
    return os.fsencode(path).decode("utf-8")


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

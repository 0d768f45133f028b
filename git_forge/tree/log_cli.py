"""The history evidence of ``history.py`` read through the git CLI, without pygit2.

The pre-launch check's STOP path explains which stranded paths the last run's
commits touched and what waits in the stash. Importing pygit2 for that cost
~0.1 s — more than the rest of the explanation on a 100,000-file repository —
so this path asks git: ``git log`` for the commits of ``base..HEAD`` with the
paths each changed against its first parent (every path of a root commit), and
``git log -g refs/stash`` for the stashes (``git for-each-ref`` for the ones kept
under git-forge's own refs). The records (defined here, without
pygit2, and used by ``history.py`` too) are the same types,
holding what its pygit2 readers hold (a test compares the two on the same
repositories), with the same refusals: an unknown ``base`` is ``unknown
revision: <base>``, an unborn HEAD has no commits.

One difference is git's, not ours: on a history with merges, ``--topo-order``
and libgit2's topological sort may list parallel branches in another order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import capture_git


@dataclass(frozen=True)
class Commit:
    """One commit of ``base..HEAD``: id, subject (``%s``), and the paths it touched."""

    id: str
    subject: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class StashEntry:
    """One stash: ``stash@{n}``, its commit, its reflog message, and its paths
    (tracked changes and untracked files it holds)."""

    ref: str
    commit_id: str
    message: str
    paths: tuple[str, ...]


def subject_of(message: str) -> str:
    """git's ``%s``: the first paragraph with its lines joined by spaces."""
    paragraph = message.strip("\n").split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def _sorted(paths: set[str]) -> tuple[str, ...]:
    return tuple(sorted(paths, key=os.fsencode))


def _names(out: bytes) -> set[str]:
    """The paths of NUL-terminated ``--name-only -z`` output."""
    return {os.fsdecode(name) for name in out.split(b"\0") if name}


def _commit_id(root: str, revision: str) -> str | None:
    try:
        out = capture_git(("rev-parse", "-q", "--verify", "--end-of-options",
                           f"{revision}^{{commit}}"), repo_root=root)
    except GitError:
        return None
    return out.decode("ascii").strip() or None


class CliHistory:
    """The history of the repository at ``root``, read by the git CLI."""

    __slots__ = ("root",)

    def __init__(self, root: os.PathLike[str] | str) -> None:
        self.root = os.fspath(root)

    def log_subjects(self, base: str | None, head: str = "HEAD") -> list[Commit]:
        """``history.log_subjects``: the commits of ``base..head``, oldest first
        (topological), with subjects and the paths each touched."""
        tip = _commit_id(self.root, head)
        if tip is None:
            if head == "HEAD":
                return []  # unborn: nothing committed yet
            raise GitError(f"unknown revision: {head}")
        revisions = [tip]
        if base is not None:
            hidden = _commit_id(self.root, base)
            if hidden is None:
                raise GitError(f"unknown revision: {base}")
            revisions.append(f"^{hidden}")
        try:
            out = capture_git(("-c", "log.showRoot=true", "log", "-z", "--topo-order",
                               "--reverse", "--no-renames", "--diff-merges=first-parent",
                               "--name-only", "--no-color", "--format=%x01%H%x00%B",
                               *revisions, "--"), repo_root=self.root)
        except GitError as exc:
            raise GitError(f"cannot read the log: {exc.message}", exit_code=1) from exc
        commits = []
        width = len(tip)
        position, size = 0, len(out)
        while position < size:
            # A record: \x01, the id, NUL, the message, NUL, then (after a newline)
            # the paths, each NUL-terminated, until the next record's \x01<id>NUL —
            # which no path can hold (a path holds no NUL).
            start = position + 1
            ends = out.index(b"\0", start)
            commit_id = out[start:ends].decode("ascii")
            message_end = out.index(b"\0", ends + 1)
            message = out[ends + 1:message_end].decode("utf-8", "replace")
            position = message_end + 1
            if out[position:position + 1] == b"\n":
                position += 1
            paths: set[str] = set()
            while position < size and not (
                    out[position] == 1 and out[position + 1 + width:position + 2 + width]
                    == b"\0"):
                name_end = out.index(b"\0", position)
                paths.add(os.fsdecode(out[position:name_end]))
                position = name_end + 1
            commits.append(Commit(commit_id, subject_of(message), _sorted(paths)))
        return commits

    def stash_list(self) -> list[StashEntry]:
        """``history.stash_list``: newest first, ``stash@{0}`` … with message and
        paths (its working-tree changes and the untracked files it holds)."""
        if _commit_id(self.root, "refs/stash") is None:
            return []
        try:
            out = capture_git(("log", "-g", "-z", "--no-color", "--format=%H%x00%gs",
                               "refs/stash", "--"), repo_root=self.root)
        except GitError as exc:
            raise GitError(f"cannot read the stash list: {exc.message}", exit_code=1) from exc
        fields = out.split(b"\0")
        entries = []
        for number in range(len(fields) // 2):
            commit_id = fields[2 * number].decode("ascii").strip()
            message = fields[2 * number + 1].decode("utf-8", "replace")
            entries.append(StashEntry(f"stash@{{{number}}}", commit_id, message,
                                      self._stash_paths(commit_id)))
        return entries

    def kept_list(self, prefix: str) -> list[StashEntry]:
        """``history.kept_list``: the stash-like commits kept under ``<prefix>…``, by
        ref name, with subject and paths."""
        try:
            out = capture_git(("for-each-ref", "--format=%(refname)%00%(objectname)%00"
                               "%(subject)%00", prefix), repo_root=self.root)
        except GitError as exc:
            raise GitError(f"cannot read the kept work: {exc.message}", exit_code=1) from exc
        fields = out.split(b"\0")
        entries = []
        for number in range(len(fields) // 3):
            name, commit_id, subject = (field.decode("utf-8", "replace").strip("\n")
                                        for field in fields[3 * number:3 * number + 3])
            entries.append(StashEntry(name, commit_id, subject, self._stash_paths(commit_id)))
        return entries

    def _stash_paths(self, commit_id: str) -> tuple[str, ...]:
        try:
            parents = capture_git(("rev-list", "--parents", "-n", "1", commit_id),
                                  repo_root=self.root).decode("ascii").split()[1:]
            paths = _names(capture_git(("diff-tree", "-r", "-z", "--no-renames",
                                        "--name-only", parents[0], commit_id),
                                       repo_root=self.root)) if parents else set()
            if len(parents) >= 3:
                paths |= _names(capture_git(("ls-tree", "-r", "-z", "--name-only",
                                             parents[2]), repo_root=self.root))
        except GitError as exc:
            raise GitError(f"cannot read the stash list: {exc.message}", exit_code=1) from exc
        return _sorted(paths)

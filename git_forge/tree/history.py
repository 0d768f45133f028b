"""What happened since a run began, and what is waiting in the stash or kept
under git-forge's own refs: evidence for attributing stranded work to items
(always *candidates*), and the commits an integration met.

The one history reader, and it asks git: ``git log`` for the commits of
``base..HEAD`` with the paths each changed against its first parent (every path
of a root commit) and git's own subject (``%s``), ``git log -g refs/stash`` for
the stashes, ``git for-each-ref`` for the ones kept under git-forge's own refs.
No pygit2: the pre-launch check's STOP path reads it too, and importing pygit2
would cost it more than the rest of its explanation. The refusals: an unknown
``base`` is ``unknown revision: <base>``; an unborn HEAD has no commits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import run_git

#: Where the history is read: any directory of the working tree.
Root = str | os.PathLike[str]


@dataclass(frozen=True)
class Commit:
    """One commit of ``base..HEAD``: id, subject (git's ``%s``), and the paths it touched."""

    id: str
    subject: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class StashEntry:
    """One stash: ``stash@{n}`` (or the ref it is kept under), its commit, its
    reflog message (or subject), and its paths (tracked changes and the untracked
    files it holds)."""

    ref: str
    commit_id: str
    message: str
    paths: tuple[str, ...]


def _sorted(paths: set[str]) -> tuple[str, ...]:
    return tuple(sorted(paths, key=os.fsencode))


def _names(out: bytes) -> set[str]:
    """The paths of NUL-terminated ``--name-only -z`` output."""
    return {os.fsdecode(name) for name in out.split(b"\0") if name}


def _commit_id(root: Root, revision: str) -> str | None:
    try:
        out = run_git(("rev-parse", "-q", "--verify", "--end-of-options",
                       f"{revision}^{{commit}}"), cwd=root)
    except GitError:
        return None
    return out.decode("ascii").strip() or None


def log_subjects(root: Root, base: str | None, head: str = "HEAD") -> list[Commit]:
    """The commits of ``base..head``, oldest first (topological), with subjects and
    the paths each touched. ``base`` None means all of ``head``'s history."""
    tip = _commit_id(root, head)
    if tip is None:
        if head == "HEAD":
            return []  # unborn: nothing committed yet
        raise GitError(f"unknown revision: {head}")
    revisions = [tip]
    if base is not None:
        hidden = _commit_id(root, base)
        if hidden is None:
            raise GitError(f"unknown revision: {base}")
        revisions.append(f"^{hidden}")
    try:
        out = run_git(("-c", "log.showRoot=true", "log", "-z", "--topo-order", "--reverse",
                       "--no-renames", "--diff-merges=first-parent", "--name-only",
                       "--no-color", "--format=%x01%H%x00%s", *revisions, "--"), cwd=root)
    except GitError as exc:
        raise GitError(f"cannot read the log: {exc.message}", exit_code=1) from exc
    commits = []
    width = len(tip)
    position, size = 0, len(out)
    while position < size:
        # A record: \x01, the id, NUL, the subject, NUL, then (after a newline)
        # the paths, each NUL-terminated, until the next record's \x01<id>NUL —
        # which no path can hold (a path holds no NUL).
        start = position + 1
        ends = out.index(b"\0", start)
        commit_id = out[start:ends].decode("ascii")
        subject_end = out.index(b"\0", ends + 1)
        subject = out[ends + 1:subject_end].decode("utf-8", "replace")
        position = subject_end + 1
        if out[position:position + 1] == b"\n":
            position += 1
        paths: set[str] = set()
        while position < size and not (
                out[position] == 1 and out[position + 1 + width:position + 2 + width] == b"\0"):
            name_end = out.index(b"\0", position)
            paths.add(os.fsdecode(out[position:name_end]))
            position = name_end + 1
        commits.append(Commit(commit_id, subject, _sorted(paths)))
    return commits


def stash_list(root: Root) -> list[StashEntry]:
    """``git stash list``: newest first, ``stash@{0}`` … with message and paths
    (its working-tree changes and the untracked files it holds)."""
    if _commit_id(root, "refs/stash") is None:
        return []
    try:
        out = run_git(("log", "-g", "-z", "--no-color", "--format=%H%x00%gs%x00%P",
                       "refs/stash", "--"), cwd=root)
        fields = out.split(b"\0")
        return [StashEntry(f"stash@{{{number}}}", fields[3 * number].decode("ascii").strip(),
                           fields[3 * number + 1].decode("utf-8", "replace"),
                           _stash_paths(root, fields[3 * number].decode("ascii").strip(),
                                        fields[3 * number + 2].decode("ascii").split()))
                for number in range(len(fields) // 3)]
    except GitError as exc:
        raise GitError(f"cannot read the stash list: {exc.message}", exit_code=1) from exc


def kept_list(root: Root, prefix: str) -> list[StashEntry]:
    """The stash-like commits kept under the refs named ``<prefix>…``
    (``stash.keep_paths``), by ref name, with each one's subject and paths."""
    try:
        out = run_git(("for-each-ref", "--format=%(refname)%00%(objectname)%00%(subject)%00"
                       "%(parent)%00", prefix), cwd=root)
        fields = [field.decode("utf-8", "replace").strip("\n") for field in out.split(b"\0")]
        return [StashEntry(name, commit_id, subject, _stash_paths(root, commit_id, parents.split()))
                for name, commit_id, subject, parents in (
                    fields[4 * number:4 * number + 4] for number in range(len(fields) // 4))]
    except GitError as exc:
        raise GitError(f"cannot read the kept work: {exc.message}", exit_code=1) from exc


def _stash_paths(root: Root, commit_id: str, parents: list[str]) -> tuple[str, ...]:
    """Paths a stash holds: its changes against its first parent, plus the files
    of its untracked commit (its third parent)."""
    paths = _names(run_git(("diff-tree", "-r", "-z", "--no-renames", "--name-only", parents[0],
                            commit_id), cwd=root)) if parents else set()
    if len(parents) >= 3:
        paths |= _names(run_git(("ls-tree", "-r", "-z", "--name-only", parents[2]), cwd=root))
    return _sorted(paths)

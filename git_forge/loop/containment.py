"""Containment: did an agent meant to work in its own worktree change the main checkout?

While items run in parallel, every agent works in a linked worktree of its own
and the main checkout is the loop's alone. So the loop takes a ``Baseline`` of
the main checkout after each change of its own (its bookkeeping commits, an
integration's fast-forward) and, after each iteration, asks ``escaped``: a
path that changed since (appeared, vanished, or was written again — git's
status plus each path's file-system identity, so a second write to an already
dirty file counts) is an agent that wrote outside its worktree. The item is
named when it was the only one whose agent ran in the meantime. The change is
reported and left where it is, for reconcile: it is never committed as anyone's
work. HEAD is not looked at here: a commit on the loop's branch is the new tip
(a user's own commit), and a switch to another branch is the loop's to stop on
(``context.left_branch``).

The runner's own files (state files, the item worktrees under the state dir,
a backlog.json differing only by ``in_progress`` marks) are not agents' work
(``reconcile.preflight.stranded``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from git_forge.reconcile.preflight import stranded
from git_forge.tree.fast_status import porcelain_fast
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line

#: What identifies a path's content on disk without reading it: (code, size,
#: mtime in ns, inode, mode) — ``None`` for a path that is not there.
Fingerprint = tuple[str, int, int, int, int] | tuple[str, None]


def _fingerprint(root: Path, entry: StatusEntry) -> Fingerprint:
    try:
        info = os.lstat(root / entry.path)
    except OSError:
        return (entry.xy, None)
    return (entry.xy, info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)


@dataclass(frozen=True)
class Baseline:
    """The main checkout as the loop last left it."""

    files: Mapping[str, Fingerprint] = field(default_factory=dict)


def _changes(root: Path, state_dir: Path, backlog_file: Path,
             ignore: Iterable[str]) -> list[StatusEntry]:
    skipped = set(ignore)
    return [entry for entry in stranded(porcelain_fast(root), root, state_dir, backlog_file)
            if entry.path not in skipped]


def take_baseline(root: Path, state_dir: Path, backlog_file: Path,
                  ignore: Iterable[str] = ()) -> Baseline:
    """The main checkout now: every change in it that is not the runner's
    (``ignore``: paths the caller writes itself, such as the backlog it holds)."""
    files = {entry.path: _fingerprint(root, entry)
             for entry in _changes(root, state_dir, backlog_file, ignore)}
    return Baseline(files)


@dataclass(frozen=True)
class Escape:
    """Changes in the main checkout that no agent was allowed to make."""

    entries: tuple[StatusEntry, ...]
    #: The item whose agent alone ran meanwhile; ``None`` when several (or none) did.
    item_id: str | None
    #: The items whose agents ran meanwhile.
    ran: tuple[str, ...]

    @property
    def reason(self) -> str:
        """The report: ``an agent wrote outside its worktree`` and what it wrote."""
        what = [render_porcelain_line(entry) for entry in self.entries]
        who = f" (item {self.item_id})" if self.item_id else (
            f" (one of items {', '.join(self.ran)})" if self.ran else "")
        return f"an agent wrote outside its worktree{who}: " + "; ".join(what)


def escaped(before: Baseline, root: Path, state_dir: Path, backlog_file: Path,
            ran: Iterable[str], ignore: Iterable[str] = ()) -> Escape | None:
    """What changed in the main checkout since ``before``, or ``None``. ``ran``: the
    items whose agents ran since; ``ignore`` as for ``take_baseline``."""
    now = _changes(root, state_dir, backlog_file, ignore)
    changed = [entry for entry in now
               if before.files.get(entry.path) != _fingerprint(root, entry)]
    seen = {entry.path for entry in now}
    # a path dirty before and clean now was changed too (put back by an agent)
    changed += [StatusEntry(path, "  ") for path in before.files if path not in seen]
    if not changed:
        return None
    ran_items = tuple(dict.fromkeys(ran))
    return Escape(tuple(changed), ran_items[0] if len(ran_items) == 1 else None, ran_items)

"""Containment: did an agent write outside its own worktree?

While items run in their own linked worktrees, each tree has one writer: the
main checkout is the loop's alone, and an item's worktree its own agent's. So:

* **The main checkout.** The loop takes a ``Baseline`` of it after each change of
  its own (its bookkeeping commits, an integration's fast-forward) and, after
  each iteration, asks ``escaped``: a path that changed since (appeared,
  vanished, or was written again — git's status plus each path's file-system
  identity, so a second write to an already dirty file counts) is an agent
  that wrote outside its worktree. HEAD is not looked at here: a commit on the
  loop's branch is the new tip (a user's own commit), and a switch to another
  branch is the loop's to stop on (``context.left_branch``).
* **A sibling's worktree.** A change in an item's worktree made while its own
  agent was not running — before it started (a worktree made ahead), between
  its attempts, or after it ended — is someone else's (``foreign``). The moment
  of a change is the path's inode change time (``st_ctime``, set by the kernel
  at every write, which no agent can set back).

Who wrote it: the items whose agents were running at that moment (``Window``);
when no moment is known (a path put back or removed) or none was running, every
item that ran meanwhile. The change is reported and left where it is, for
reconcile: it is never committed as anyone's work. A sibling's write made while
that sibling's own agent was running too cannot be told from its own, and is not
claimed to be.

The runner's own files (state files, the item worktrees under the state dir,
a backlog.json differing only by ``in_progress`` marks) are not agents' work
(``reconcile.stranded``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from git_forge.reconcile.stranded import stranded
from git_forge.tree.fast_status import porcelain_fast
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line

#: What identifies a path's content on disk without reading it: (code, size,
#: mtime in ns, inode, mode) — ``None`` for a path that is not there.
Fingerprint = tuple[str, int, int, int, int] | tuple[str, None]
#: How far before an attempt's recorded start a change still counts as its: the
#: kernel stamps inodes from a clock that may lag the one read here by a tick.
SLACK_SECONDS = 0.02


def _fingerprint(root: Path, entry: StatusEntry) -> Fingerprint:
    try:
        info = os.lstat(root / entry.path)
    except OSError:
        return (entry.xy, None)
    return (entry.xy, info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)


@dataclass(frozen=True)
class Window:
    """One attempt of an item's agent: from its start to its end (``None``: running)."""

    item_id: str
    start: float
    end: float | None = None

    def holds(self, moment: float) -> bool:
        return self.start - SLACK_SECONDS <= moment and (self.end is None or moment <= self.end)

    def since(self, moment: float) -> bool:
        """Whether the attempt ran at or after ``moment``."""
        return self.end is None or self.end >= moment


def changed_at(root: Path, path: str) -> float | None:
    """When ``path`` under ``root`` last changed (its inode's change time); for a path
    that is gone, its nearest directory's (a removal changes that); ``None`` when
    nothing of it is left."""
    target = root / path.rstrip("/")
    while True:
        try:
            return os.lstat(target).st_ctime_ns / 1e9
        except OSError:
            if target == root or target.parent == target:
                return None
            target = target.parent


def writers(windows: Iterable[Window], moments: Iterable[float | None], since: float,
            *, besides: str | None = None) -> tuple[str, ...]:
    """The items that may have made changes at ``moments``: those whose agents were
    running then; for a moment unknown or when none was, every item that ran since
    ``since``. ``besides``: an item never counted (the tree's own)."""
    every = [window for window in windows if window.item_id != besides]
    found: dict[str, None] = {}
    for moment in moments:
        running = [w.item_id for w in every if moment is not None and w.holds(moment)]
        if not running:
            running = [w.item_id for w in every if w.since(since)]
        found.update(dict.fromkeys(running))
    return tuple(sorted(found, key=lambda item_id: (len(item_id), item_id)))


@dataclass(frozen=True)
class Baseline:
    """The main checkout as the loop last left it, and when."""

    files: Mapping[str, Fingerprint] = field(default_factory=dict)
    taken: float = 0.0


def _changes(root: Path, state_dir: Path, backlog_file: Path,
             ignore: Iterable[str]) -> list[StatusEntry]:
    skipped = set(ignore)  # left out first: what is ignored needs no closer look
    return stranded([entry for entry in porcelain_fast(root) if entry.path not in skipped],
                    root, state_dir, backlog_file)


def take_baseline(root: Path, state_dir: Path, backlog_file: Path,
                  ignore: Iterable[str] = ()) -> Baseline:
    """The main checkout now: every change in it that is not the runner's
    (``ignore``: paths the caller writes itself, such as the backlog it holds)."""
    taken = time.time()
    files = {entry.path: _fingerprint(root, entry)
             for entry in _changes(root, state_dir, backlog_file, ignore)}
    return Baseline(files, taken)


@dataclass(frozen=True)
class Escape:
    """Changes in a tree that no agent was allowed to make there."""

    entries: tuple[StatusEntry, ...]
    #: The items whose agents may have made them (one: it is named).
    ran: tuple[str, ...]
    #: The item whose worktree they are in; ``None``: the main checkout.
    into: str | None = None

    @property
    def item_id(self) -> str | None:
        """The item whose agent wrote them, when it can be told; else ``None``."""
        return self.ran[0] if len(self.ran) == 1 else None

    @property
    def reason(self) -> str:
        """The report: ``an agent wrote outside its worktree`` and what it wrote."""
        what = [render_porcelain_line(entry) for entry in self.entries]
        who = f" (item {self.item_id})" if self.item_id else (
            f" (one of items {', '.join(self.ran)})" if self.ran else "")
        where = f", into item {self.into}'s worktree" if self.into is not None else ""
        return f"an agent wrote outside its worktree{who}{where}: " + "; ".join(what)


def escaped(before: Baseline, root: Path, state_dir: Path, backlog_file: Path,
            windows: Iterable[Window], ignore: Iterable[str] = ()) -> Escape | None:
    """What changed in the main checkout since ``before``, or ``None``. ``windows``:
    the attempts of the run's agents; ``ignore`` as for ``take_baseline``."""
    now = _changes(root, state_dir, backlog_file, ignore)
    changed = [entry for entry in now
               if before.files.get(entry.path) != _fingerprint(root, entry)]
    seen = {entry.path for entry in now}
    # a path dirty before and clean now was changed too (put back by an agent)
    put_back = [StatusEntry(path, "  ") for path in before.files if path not in seen]
    if not changed and not put_back:
        return None
    moments = [changed_at(root, entry.path) for entry in changed] + [None] * len(put_back)
    return Escape((*changed, *put_back), writers(windows, moments, before.taken))


def foreign(tree: Path, item_id: str, entries: Iterable[StatusEntry],
            windows: Iterable[Window]) -> Escape | None:
    """The changes among ``entries`` (the worktree at ``tree`` of item ``item_id``)
    made while that item's agent was not running: someone else's, or ``None``. A
    change of the index alone (the file as it is staged) is the worktree's own git's."""
    every = list(windows)
    own = [window for window in every if window.item_id == item_id]
    found = []
    for entry in entries:
        if entry.xy[1] == " ":  # the file is as the index has it: git moved there, not a write
            continue
        moment = changed_at(tree, entry.path)
        if moment is not None and not any(window.holds(moment) for window in own):
            found.append((entry, moment))
    if not found:
        return None
    ran = writers(every, [moment for _, moment in found], 0.0, besides=item_id)
    return Escape(tuple(entry for entry, _ in found), ran, item_id)

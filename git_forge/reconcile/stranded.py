"""Which changes are stranded work: every change but the runner's own.

The runner's own are its state files (git-ignored, but left out here even when
the ignore rules are missing) and a backlog.json whose only difference from HEAD
is an item left ``in_progress`` by a run that crashed. The launch blocker
(``preflight``), the items' worktrees (``item_trees``), reconcile and the loop's
containment check all filter a status through ``stranded``: one rule.
"""

from __future__ import annotations

import os
from pathlib import Path

from git_forge.backlog.bookkeeping import only_in_progress_marks
from git_forge.tree.fast_status import head_blob
from git_forge.tree.porcelain import StatusEntry


def relative(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root``, as git names it (``None`` when outside)."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return None


def _runner_owned(entries: list[StatusEntry], root: Path, state_dir: Path,
                  backlog_path: Path, keep_backlog: bool) -> set[str]:
    """The entries that are the runner's own: state files and crash bookkeeping."""
    owned: set[str] = set()
    state_rel = relative(state_dir, root)
    backlog_rel = relative(backlog_path, root)
    for entry in entries:
        if entry.path == backlog_rel:
            if keep_backlog:
                continue
            head = head_blob(root, backlog_rel)
            if head is not None and entry.xy in (" M", "M ", "MM"):
                try:
                    work = backlog_path.read_bytes()
                except OSError:
                    continue
                if only_in_progress_marks(head, work):
                    owned.add(entry.path)
        elif state_rel and (entry.path == state_rel or entry.path.startswith(state_rel + "/")):
            owned.add(entry.path)
    return owned


def stranded(entries: list[StatusEntry], root: Path, state_dir: Path,
             backlog_path: Path, *, keep_backlog: bool = False) -> list[StatusEntry]:
    """The entries that are stranded work: every change except the runner's own.

    ``keep_backlog``: a changed backlog.json is kept whatever the change (the
    running loop commits its own bookkeeping with the item), which also saves
    reading HEAD's copy to compare.
    """
    if not entries:
        return []
    owned = _runner_owned(entries, root, state_dir, backlog_path, keep_backlog)
    return [entry for entry in entries if entry.path not in owned]

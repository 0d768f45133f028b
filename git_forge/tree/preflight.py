"""The launch blocker: stop the next launch while a prior run's work is stranded.

| porcelain | prior state.json | result                                        |
|-----------|------------------|-----------------------------------------------|
| clean     | either           | go, silently                                  |
| dirty     | present          | STOP: name that run, list the stranded paths  |
| dirty     | absent           | refuse with the ordinary "commit or stash"    |

It runs before every launch, so it must cost about what ``git status`` costs:
it never imports pygit2 (``fast_status`` asks git itself) and reads nothing
else while the tree is clean. Two kinds of change are the runner's own and are
not stranded work: state files (git-ignored, but skipped here even when the
ignore rules are missing) and a backlog.json whose only difference from HEAD is
an item left ``in_progress`` by a run that crashed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, NamedTuple

from git_forge.atomic import StoreError, read_json
from git_forge.backlog.bookkeeping import only_in_progress_marks
from git_forge.layout import STATE_FILE
from git_forge.tree.fast_status import head_blob, porcelain_fast
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line

Verdict = Literal["ok", "stop", "dirty"]


# A NamedTuple rather than a dataclass: ``dataclasses`` (with ``inspect``) costs
# ~9 ms to import, a noticeable share of what the pre-launch hot path may spend.
class Preflight(NamedTuple):
    """The check's verdict, the stranded entries and the prior run (if any)."""

    status: Verdict
    entries: list[StatusEntry]
    run: dict[str, Any] | None = None
    run_error: str | None = None

    @property
    def lines(self) -> list[str]:
        """Each stranded path as ``git status --porcelain`` prints it."""
        return [render_porcelain_line(entry) for entry in self.entries]

    def to_json(self) -> dict[str, Any]:
        return {"status": "ok" if self.status == "ok" else "stop", "run": self.run,
                "paths": self.lines}


def _relative(path: Path, root: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return None


def _runner_owned(entries: list[StatusEntry], root: Path, state_dir: Path,
                  backlog_path: Path, keep_backlog: bool) -> set[str]:
    """The entries that are the runner's own: state files and crash bookkeeping."""
    owned: set[str] = set()
    state_rel = _relative(state_dir, root)
    backlog_rel = _relative(backlog_path, root)
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


_UNKNOWN_RUN: dict[str, Any] = {"startedAt": None, "currentItem": None, "blockedItems": [],
                                "needsHumanItems": []}


def prior_run(state_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The prior run's identity from state.json: (run, error reading it)."""
    path = state_dir / STATE_FILE
    try:
        state = read_json(path, default=None)
    except StoreError as exc:
        return dict(_UNKNOWN_RUN), exc.message
    if state is None:
        return None, None
    if not isinstance(state, dict):
        return dict(_UNKNOWN_RUN), f"{path} is not a JSON object"
    return {
        "runId": state.get("runId"),
        "status": state.get("status"),
        "startedAt": state.get("startedAt"),
        "currentItem": state.get("currentItem"),
        "blockedItems": list(state.get("blockedItems") or []),
        "needsHumanItems": list(state.get("needsHumanItems") or []),
    }, None


def check(root: Path, state_dir: Path, backlog_path: Path,
          entries: list[StatusEntry] | None = None) -> Preflight:
    """Run the launch blocker's table for the repository at ``root``."""
    if entries is None:
        entries = porcelain_fast(root)
    work = stranded(entries, root, state_dir, backlog_path)
    if not work:
        return Preflight("ok", [])
    run, error = prior_run(state_dir)
    if run is None:
        return Preflight("dirty", work)
    return Preflight("stop", work, run, error)

"""The pre-launch check's first look: what it can tell without the configuration.

Every launch asks it, and on a clean tree — the common answer — nothing more is
read: a live loop owning the tree or an agent of its last run still alive
(``loop.control.launch_blocker``), a HEAD no commit can go onto and the tree's
status (``tree.fast_status.launch_status``), and whether items' worktrees or
branches may exist. A tree that is not clean is judged against the
configuration by the command (``cli/stop.py``). So this module imports neither
the configuration, ``pathlib`` nor ``subprocess`` (ARCHITECTURE.md, "What is
measured, and where").
"""

from typing import NamedTuple

from git_forge.layout import ITEM_BRANCH_PREFIX, work_tree_top
from git_forge.loop.control import launch_blocker
from git_forge.tree.fast_status import launch_status, may_have_worktrees_or_branches
from git_forge.tree.porcelain import StatusEntry


class LaunchProbe(NamedTuple):
    """What the first look found."""

    #: Why the launch must stop whatever the tree holds, or ``None``.
    blocker: str | None
    #: The entries of ``git status``.
    entries: list[StatusEntry]
    #: Whether items' worktrees or branches may exist (``False`` is certain).
    trees: bool

    @property
    def clean(self) -> bool:
        """Nothing stops the launch: the check's silent answer, exit 0."""
        return self.blocker is None and not self.entries and not self.trees


def probe(path: str) -> LaunchProbe:
    """The checks that need no configuration, in their order; each one that stops
    the launch ends the look."""
    root = work_tree_top(path)
    blocker = launch_blocker(None, root)
    if blocker is not None:
        return LaunchProbe(blocker, [], False)
    problem, entries = launch_status(root)
    if problem is not None:  # refused exactly as loop run refuses it
        return LaunchProbe(problem, [], False)
    return LaunchProbe(None, entries, may_have_worktrees_or_branches(root, ITEM_BRANCH_PREFIX))

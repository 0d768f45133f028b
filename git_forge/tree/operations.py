"""A half-done git operation in a linked worktree — a rebase, a merge, a
cherry-pick… — read from the files git keeps in the worktree's git dir while it
lasts, in the words ``git status`` uses.

Its own module, apart from ``tree.worktrees``: ``reconcile.item_trees`` names an
``Operation`` in its records on every ``status``, where nothing else of the
worktrees' is needed.
"""

import shlex
from pathlib import Path
from typing import NamedTuple

HEADS = "refs/heads/"


def git_dir_of_tree(tree: Path) -> Path | None:
    """A linked worktree's own git dir (where its ``.git`` file points)."""
    try:
        text = (tree / ".git").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return target if target.is_absolute() else tree / target


class Operation(NamedTuple):
    """A half-done git operation in a worktree, in the words ``git status`` uses."""

    #: ``rebase``, ``am``, ``merge``, ``cherry-pick``, ``revert`` or ``bisect``.
    name: str
    #: What ``git status`` says the worktree is doing: ``currently rebasing``.
    doing: str
    #: The git commands that finish it, or give it up: ``rebase --continue / --abort``.
    finish: str
    #: The branch a rebase is replaying (its HEAD is detached meanwhile).
    branch: str | None = None

    def advice(self, tree: Path) -> str:
        """``finish the rebase (git -C TREE rebase --continue / --abort)``."""
        return f"finish the {self.name} (git -C {shlex.quote(str(tree))} {self.finish})"

    def refusal(self, tree: Path) -> str:
        """Why nothing may be done to the worktree at ``tree`` meanwhile, and what to do."""
        return f"the worktree {tree} is {self.doing}: {self.advice(tree)} first"


#: What a worktree's git dir holds while an operation is half done, the first found
#: naming it (a rebase may leave a ``MERGE_HEAD`` or ``CHERRY_PICK_HEAD`` of its own).
_IN_PROGRESS = (
    ("rebase-merge", Operation("rebase", "currently rebasing", "rebase --continue / --abort")),
    ("rebase-apply/applying",
     Operation("am", "in the middle of an am session", "am --continue / --abort")),
    ("rebase-apply", Operation("rebase", "currently rebasing", "rebase --continue / --abort")),
    ("MERGE_HEAD", Operation("merge", "currently merging", "merge --continue / --abort")),
    ("CHERRY_PICK_HEAD", Operation("cherry-pick", "currently cherry-picking",
                                   "cherry-pick --continue / --abort")),
    ("REVERT_HEAD", Operation("revert", "currently reverting", "revert --continue / --abort")),
    ("BISECT_LOG", Operation("bisect", "currently bisecting", "bisect reset")),
)


def operation_in_progress(tree: Path) -> Operation | None:
    """The half-done operation in a linked worktree — a rebase, a merge, a
    cherry-pick… — with the branch a rebase replays, or ``None``: the file git
    keeps in the worktree's git dir while it lasts.

    Read in-process, through the worktree's ``.git`` file: asking git where those
    files are (``git rev-parse --git-path``) is a git process more for every
    worktree a parallel run removes, and ``tests/test_parallel.py`` holds such a
    run to 16 git processes per item (twelve items on four agents start about 180
    with it in-process, 12 more without)."""
    git_dir = git_dir_of_tree(tree)
    if git_dir is None:
        return None
    for name, operation in _IN_PROGRESS:
        if (git_dir / name).exists():
            if operation.name != "rebase":
                return operation
            try:
                head = (git_dir / name / "head-name").read_text(encoding="utf-8").strip()
            except OSError:
                return operation
            return operation._replace(branch=head.removeprefix(HEADS)
                                      if head.startswith(HEADS) else None)
    return None

"""The worktrees and branches a parallel run gave its items, and the work in them.

An item that runs in parallel works in its own linked worktree
(``{stateDir}/worktrees/<id>``, ``layout.item_worktree``) on its own branch
(``forge/<id>``, ``messages.item_branch``). What a run leaves there is
stranded work exactly like a dirty main tree: a worktree with changes ``git
status`` lists, and a branch whose commits are not on the loop's branch. The
launch blocker stops on both, reconcile makes each dirty worktree a group and
lists each unintegrated branch with the commands to inspect, integrate or drop
it, and ``status`` shows them all.

A clean worktree whose commit is on the loop's branch holds nothing to lose:
it is listed (``integrated``) but stops nothing; the loop removes it.

No pygit2 here (``tree.worktrees`` asks git): the launch blocker lists these.
"""

import os
import shlex
from pathlib import Path
from typing import NamedTuple, NotRequired, TypedDict

from git_forge.errors import StoreError
from git_forge.layout import ITEM_BRANCH_PREFIX, WORKTREES_DIR
from git_forge.reconcile.messages import item_branch, item_of_branch
from git_forge.reconcile.stranded import relative, stranded
from git_forge.tree.fast_status import may_have_worktrees_or_branches
from git_forge.tree.operations import Operation, operation_in_progress
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.tree.worktrees import Worktree

# ``tree.worktrees`` and ``conflicts`` are imported where they are used (the common-case
# boundary, ARCHITECTURE.md): ``status`` reads this module on every run, and a repository
# with no item worktree or branch (``may_have_worktrees_or_branches``) never needs them.


class PathJSON(TypedDict):
    """A path as ``git status --porcelain`` gives it: the path and its two-letter code."""

    path: str
    xy: str


class ItemTreeJSON(TypedDict):
    """An item's worktree or branch (``status --json``'s ``worktrees``, preflight's)."""

    itemId: str
    branch: str | None
    commit: str | None
    worktree: str | None
    state: str
    integrated: bool
    dirty: list[PathJSON]
    locked: bool
    missing: bool
    conflict: bool
    operation: str | None
    #: The conflict is being resolved by hand (recover's answer ``resolve``).
    resolvingByHand: bool
    #: What to run next for a conflicted item (``ItemTree.next_step``), in status's.
    next: NotRequired[str | None]


class ItemTree(NamedTuple):
    """One item's worktree and/or branch."""

    item_id: str
    #: ``forge/<id>`` when that branch exists.
    branch: str | None
    #: The branch's commit (else the worktree's HEAD).
    commit: str | None
    #: The linked worktree (absolute), when there is one.
    worktree: Path | None
    #: What ``git status`` lists in the worktree, less the runner's own files.
    dirty: tuple[StatusEntry, ...] = ()
    #: The commit is on the loop's branch (reachable, or all its changes there).
    integrated: bool = True
    #: The worktree's lock reason (``""`` when locked without one), else ``None``.
    locked: str | None = None
    #: The worktree's directory is gone (git lists it as prunable).
    missing: bool = False
    #: Its commit conflicted with the loop's branch (an open record in ``conflicts``).
    conflict: bool = False
    #: A rebase, merge, cherry-pick… half done in its worktree (a rebase's worktree is
    #: listed with the branch it replays, though its HEAD is detached meanwhile).
    operation: Operation | None = None
    #: The conflict is being resolved by hand (recover's answer): its commands, not
    #: the question again, are what comes next.
    resolving: bool = False
    #: Its commit holds the loop branch's tip: the resolution's rebase is done, and
    #: landing it is what comes next (known only while ``resolving``).
    rebased: bool = False

    @property
    def stranded(self) -> bool:
        """Work a launch must not start over: uncommitted, or not on the loop's branch."""
        return bool(self.dirty) or not self.integrated

    @property
    def state(self) -> str:
        if self.dirty:
            return "dirty"
        return "integrated" if self.integrated else "unintegrated"

    def hints(self, onto: str | None) -> list[str]:
        """The commands to inspect, integrate or drop this item's work — while an
        operation is half done in its worktree, the commands that finish it instead
        of integrating or dropping it."""
        lines: list[str] = []
        target = onto or "HEAD"
        if self.worktree is not None and self.dirty:
            lines.append(f"git -C {_quoted(self.worktree)} status")
        by_hand = (self.conflict and self.resolving and self.operation is None
                   and self.worktree is not None and self.branch is not None)
        if not self.integrated and self.branch is not None:
            lines.append(f"git log -p {target}..{self.branch}")
            if by_hand and self.worktree is not None:  # recover's answer: resolve it first
                lines.append(f"git -C {_quoted(self.worktree)} rebase {target}   (resolve "
                             "each path, git add it, git rebase --continue)")
            if self.operation is None:
                lines.append(f"git forge reconcile --integrate {self.item_id}")
        elif not self.integrated and self.commit is not None:
            lines.append(f"git log -p {target}..{self.commit[:12]}")
        if self.operation is not None and self.worktree is not None:
            then = (f", then git forge reconcile --integrate {self.item_id}"
                    if not self.integrated and self.branch is not None else "")
            lines.append(self.operation.advice(self.worktree) + then)
        elif by_hand:
            pass  # the resolution's commands are above
        elif self.conflict and self.branch is not None:  # recover's two answers, no drop
            lines.append("git forge recover   (retry it on the new tip, its work kept under "
                         "a ref; or resolve it by hand)")
        elif self.stranded:
            drop = []
            if self.worktree is not None:
                drop.append(f"git worktree remove --force {_quoted(self.worktree)}")
            if self.branch is not None:
                drop.append(f"git branch -D {self.branch}")
            lines.append(" && ".join(drop) + "   (drops this work)")
        return lines

    def next_step(self, onto: str | None) -> str | None:
        """The one command to run next for a conflicted item: finish an operation
        begun in its worktree, else the rebase recover's "resolve by hand" began,
        else recover's question. ``None`` for an item with no conflict."""
        if not self.conflict:
            return None
        if self.operation is not None and self.worktree is not None:
            return f"git -C {_quoted(self.worktree)} {self.operation.finish.split(' / ')[0]}"
        if self.resolving and self.rebased:
            return f"git forge reconcile --integrate {self.item_id}"
        if self.resolving and self.worktree is not None:
            return f"git -C {_quoted(self.worktree)} rebase {onto or 'HEAD'}"
        return "git forge recover"

    def lines(self) -> list[str]:
        """The worktree's dirty paths as ``git status --porcelain`` prints them."""
        return [render_porcelain_line(entry) for entry in self.dirty]

    def to_json(self) -> ItemTreeJSON:
        return {"itemId": self.item_id, "branch": self.branch, "commit": self.commit,
                "worktree": str(self.worktree) if self.worktree is not None else None,
                "state": self.state, "integrated": self.integrated,
                "dirty": [{"path": e.path, "xy": e.xy} for e in self.dirty],
                "locked": self.locked is not None, "missing": self.missing,
                "conflict": self.conflict,
                "operation": self.operation.name if self.operation is not None else None,
                "resolvingByHand": self.resolving}


def _quoted(path: Path) -> str:
    return shlex.quote(str(path))


def loop_branch(root: Path, trees: list["Worktree"] | None = None) -> str | None:
    """The branch checked out where the loop runs (the worktree at ``root``)."""
    from git_forge.tree.worktrees import worktrees  # common-case boundary

    for tree in trees if trees is not None else worktrees(root):
        if os.path.realpath(tree.path) == os.path.realpath(root):
            return tree.branch
    return None


def _item_of_tree(tree: "Worktree", holder: Path) -> str | None:
    """The item a linked worktree is for: its branch ``forge/<id>``, else its place
    ``{stateDir}/worktrees/<id>`` (a worktree whose HEAD was detached)."""
    if tree.branch is not None:
        item = item_of_branch(tree.branch)
        if item is not None:
            return item
    if os.path.realpath(tree.path.parent) == os.path.realpath(holder):
        return item_of_branch(ITEM_BRANCH_PREFIX + tree.path.name)
    return None


def tree_changes(root: Path, tree: Path, state_dir: Path,
                 backlog_file: Path) -> tuple[StatusEntry, ...]:
    """The changes in the item worktree at ``tree``, less the runner's own (its copy
    of the state dir, and of backlog.json when only ``in_progress`` marks differ)."""
    from git_forge.tree.worktrees import status  # common-case boundary

    entries = status(root, tree)
    state_rel, backlog_rel = relative(state_dir, root), relative(backlog_file, root)
    if not entries or state_rel is None or backlog_rel is None:
        return tuple(entries)
    return tuple(stranded(entries, tree, tree / state_rel, tree / backlog_rel))


def item_trees(root: Path, state_dir: Path, backlog_file: Path) -> list[ItemTree]:
    """Every item worktree and ``forge/<id>`` branch of the repository at ``root``,
    by item id; ``integrated`` against the branch checked out at ``root`` (with a
    detached HEAD there, against that commit)."""
    if not may_have_worktrees_or_branches(root, ITEM_BRANCH_PREFIX):
        return []
    from git_forge.tree.worktrees import (  # common-case boundary
        branch_tips,
        integrated,
        is_ancestor,
        unmerged,
        worktrees,
    )

    trees = worktrees(root)
    onto = loop_branch(root, trees)
    tips = {item: commit for name, commit in branch_tips(root, ITEM_BRANCH_PREFIX).items()
            if (item := item_of_branch(name)) is not None}
    holder = Path(state_dir) / WORKTREES_DIR
    found: dict[str, ItemTree] = {}
    extra: list[ItemTree] = []
    for tree in trees:
        if tree.is_main:
            continue
        operation = None if tree.missing else operation_in_progress(tree.path)
        if tree.branch is None and operation is not None and operation.branch is not None:
            tree = tree._replace(branch=operation.branch)  # mid-rebase: the branch it replays
        item = _item_of_tree(tree, holder)
        if item is None:
            continue
        dirty = () if tree.missing else tree_changes(root, tree.path, state_dir, backlog_file)
        if tree.branch == item_branch(item) and item not in found:
            found[item] = ItemTree(item, tree.branch, tips.get(item, tree.head), tree.path,
                                   dirty, True, tree.locked, tree.missing,
                                   operation=operation)
        else:  # HEAD detached there: the worktree is reported for its own commit
            extra.append(ItemTree(item, None, tree.head, tree.path, dirty, True,
                                  tree.locked, tree.missing, operation=operation))
    for item, commit in tips.items():
        if item not in found:
            found[item] = ItemTree(item, item_branch(item), commit, None)
    on_branches = (unmerged(root, ITEM_BRANCH_PREFIX, f"refs/heads/{onto}")
                   if onto is not None else set())
    head = _head_commit(root) if onto is None else None
    conflicts = _open_conflicts(state_dir)
    every = sorted([*found.values(), *extra], key=lambda t: (len(t.item_id), t.item_id))
    result = []
    for entry in every:
        if entry.commit is None:  # an unborn branch: nothing committed to lose
            ok = True
        elif onto is None:
            ok = head is not None and is_ancestor(root, entry.commit, head)
        elif entry.branch is not None and entry.commit == tips.get(entry.item_id):
            ok = entry.branch not in on_branches or integrated(root, entry.commit, onto)
        else:
            ok = integrated(root, entry.commit, onto)
        resolving = conflicts.get(entry.item_id, False)
        rebased = (resolving and not ok and onto is not None and entry.commit is not None
                   and is_ancestor(root, f"refs/heads/{onto}", entry.commit))
        result.append(entry._replace(integrated=ok, conflict=entry.item_id in conflicts,
                                     resolving=resolving, rebased=rebased))
    return result


def _open_conflicts(state_dir: Path) -> dict[str, bool]:
    """The items with an open merge conflict, each with whether recover's answer was
    to resolve it by hand (none when the record cannot be read: the listing goes on
    without it)."""
    # common-case boundary
    from git_forge.reconcile.conflicts import conflicts_path, read_conflicts

    if not conflicts_path(state_dir).exists():
        return {}
    try:
        return {item: record.resolving for item, record in read_conflicts(state_dir).items()
                if record.open}
    except StoreError:
        return {}


def _head_commit(root: Path) -> str | None:
    from git_forge.tree.worktrees import resolve  # common-case boundary

    return resolve(root, "HEAD")


def stranded_trees(root: Path, state_dir: Path, backlog_file: Path) -> list[ItemTree]:
    """The item worktrees and branches holding work a launch must not start over."""
    return [tree for tree in item_trees(root, state_dir, backlog_file) if tree.stranded]

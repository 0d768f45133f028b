"""Items' worktrees and branches as ``preflight``, ``reconcile`` and ``status`` show them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from git_forge.reconcile.item_trees import ItemTree


def _where(tree: ItemTree, root: Path | None) -> str:
    if tree.worktree is None:
        return f"branch {tree.branch}"
    try:
        shown = tree.worktree.relative_to(root).as_posix() if root else str(tree.worktree)
    except ValueError:
        shown = str(tree.worktree)
    branch = f"branch {tree.branch}" if tree.branch else "HEAD detached"
    return f"worktree {shown} ({branch})"


def describe(tree: ItemTree, onto: str | None) -> str:
    """What is wrong with (or fine about) one item's worktree or branch."""
    parts = []
    if tree.operation is not None:
        parts.append(tree.operation.doing)
    if tree.missing:
        parts.append("its directory is gone")
    if tree.dirty:
        parts.append("uncommitted changes")
    if not tree.integrated:
        commit = f" at {tree.commit[:12]}" if tree.commit else ""
        parts.append(f"commits{commit} not on {onto or 'HEAD'}")
    if tree.locked is not None:
        parts.append("locked")
    return ", ".join(parts) or f"integrated into {onto or 'HEAD'}, clean"


def render_item_trees(trees: Iterable[ItemTree], onto: str | None, root: Path | None, *,
                      indent: str = "  ") -> list[str]:
    """One block per item: where, what, its dirty paths and the commands for it."""
    lines = []
    for tree in trees:
        lines.append(f"{indent}item {tree.item_id}  {_where(tree, root)}: "
                     f"{describe(tree, onto)}")
        lines += [f"{indent}    {line}" for line in tree.lines()]
        lines += [f"{indent}    {hint}" for hint in tree.hints(onto)]
    return lines

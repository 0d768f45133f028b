"""What git ignores, asked of git itself, and the clone's own exclude file.

``ignored`` says which paths ``git add`` would refuse without ``-f``, and the rule
that ignores each: ``git check-ignore -v`` reads every ignore source in git's order
(a tracked path is never ignored). ``exclude_locally`` and ``unexclude_locally`` add
and remove one path's rule in ``info/exclude`` — the repository's own ignore file,
never committed, shared by its worktrees — for a file that belongs to this clone
alone and must not count as work in the tree (the pre-launch hook, which names this
machine's git-forge, inside a ``core.hooksPath`` in the work tree).
"""

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from git_forge.atomic import atomic_write
from git_forge.tree.gitcli import failure, git_result, run_git

#: The comment above a rule ``exclude_locally`` writes, so that only its own is removed.
EXCLUDE_COMMENT = b"# git-forge: this clone's own file, not for a commit (git forge hooks)"


class IgnoreRule(NamedTuple):
    """The rule that ignores a path: its file as git names it, its line, its pattern."""

    source: str
    line: int
    pattern: str

    def __str__(self) -> str:
        return f"{self.pattern} in {self.source}, line {self.line}"


def ignored(root: Path, paths: Sequence[str]) -> dict[str, IgnoreRule]:
    """Those of ``paths`` (relative to the work tree's top) that git ignores, each
    with the rule that does."""
    if not paths:
        return {}
    args = ["check-ignore", "-v", "-z", "--stdin"]
    result = git_result(args, cwd=root, input=b"".join(os.fsencode(path) + b"\0"
                                                       for path in paths))
    if result.returncode not in (0, 1):  # 1: none is ignored
        raise failure(args, result)
    fields = os.fsdecode(result.stdout).split("\0")
    found: dict[str, IgnoreRule] = {}
    for at in range(0, len(fields) - 3, 4):
        source, line, pattern, path = fields[at:at + 4]
        if pattern and not pattern.startswith("!"):  # -v also names a rule that lets it in
            found[path] = IgnoreRule(source, int(line), pattern)
    return found


def negations(root: Path, paths: Sequence[str]) -> list[str]:
    """The ``!`` rules that let the ignored ones of ``paths`` through, in their order:
    for each, its topmost ignored directory (``!/.forge/``: git never looks inside an
    ignored directory, so no rule for a file in it can work) or itself."""
    candidates = {path: [*(path[:at + 1] for at, char in enumerate(path) if char == "/"),
                         path] for path in paths}
    found = ignored(root, sorted({prefix for each in candidates.values() for prefix in each}))
    rules: list[str] = []
    for path in paths:
        top = next((prefix for prefix in candidates[path] if prefix in found), None)
        rule = None if top is None else "!" + os.fsdecode(_rule(top))
        if rule is not None and rule not in rules:
            rules.append(rule)
    return rules


def _exclude_file(root: Path) -> Path:
    out = os.fsdecode(run_git(("rev-parse", "--git-path", "info/exclude"), cwd=root)).strip()
    return Path(root, out)


def _rule(path: str) -> bytes:
    """The pattern that matches exactly ``path`` from the top: anchored, with the
    characters a pattern gives a meaning to escaped."""
    escaped = "".join("\\" + char if char in "\\*?[" else char for char in path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return os.fsencode("/" + escaped)


def exclude_locally(root: Path, path: str) -> Path | None:
    """Make git ignore ``path`` through ``info/exclude`` unless it already does: the
    exclude file written, or ``None``."""
    if ignored(root, [path]):
        return None
    exclude = _exclude_file(root)
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_bytes() if exclude.exists() else b""
    if text and not text.endswith(b"\n"):
        text += b"\n"
    atomic_write(exclude, text + EXCLUDE_COMMENT + b"\n" + _rule(path) + b"\n")
    return exclude


def unexclude_locally(root: Path, path: str) -> None:
    """Remove the rule ``exclude_locally`` wrote for ``path`` (with its comment);
    every other line of the exclude file stays as it is."""
    exclude = _exclude_file(root)
    if not exclude.exists():
        return
    lines = exclude.read_bytes().split(b"\n")
    pair = [EXCLUDE_COMMENT, _rule(path)]
    kept = [line for at, line in enumerate(lines)
            if lines[at:at + 2] != pair and lines[at - 1:at + 1] != pair]
    if kept != lines:
        atomic_write(exclude, b"\n".join(kept))

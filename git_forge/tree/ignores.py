"""What git ignores, asked of git itself.

``ignored`` says which paths ``git add`` would refuse without ``-f``, and the rule
that ignores each: ``git check-ignore -v`` reads every ignore source in git's order
(a tracked path is never ignored); ``negations`` the ``!`` rules that would let them
through.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from git_forge.records import NamedTuple
from git_forge.tree.gitcli import failure, git_result


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


def _rule(path: str) -> bytes:
    """The pattern that matches exactly ``path`` from the top: anchored, with the
    characters a pattern gives a meaning to escaped."""
    escaped = "".join("\\" + char if char in "\\*?[" else char for char in path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return os.fsencode("/" + escaped)

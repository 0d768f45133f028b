"""Configuration values as git resolves them: by asking ``git config``.

git alone knows every source and its precedence — the command line that ``git -c
key=value forge …`` hands down (``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``),
``GIT_CONFIG_GLOBAL``/``GIT_CONFIG_SYSTEM``/``GIT_CONFIG_NOSYSTEM``, includes,
worktree config — and how a boolean or a colour setting is spelled; libgit2
reads fewer of them. So every value git-forge reads from git's configuration is
git's own answer. No pygit2 here: colour is asked before any repository is
opened.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from git_forge.tree.gitcli import failure, git_result, run_git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.tree.repo import Repo


def _canonical(key: str) -> str:
    """The name as ``git config`` prints it: section and variable in lower case,
    a subsection as written."""
    section, _, rest = key.partition(".")
    middle, _, variable = rest.rpartition(".")
    return ".".join(part for part in (section.lower(), middle, variable.lower()) if part)


def config_entries(pattern: str, *, cwd: str | os.PathLike[str] | None = None,
                   env: Mapping[str, str | None] | None = None) -> list[tuple[str, str | None]]:
    """``git config --get-regexp PATTERN`` in ``cwd``, in git's order (the last value
    of a key is the one git uses): ``(key, value)``, ``None`` for a key written
    without ``= value`` (``-c color.ui``). Nothing set is ``[]``; git failing (a
    malformed config file) is a ``GitError`` with git's message."""
    args = ["config", "-z", "--get-regexp", pattern]
    result = git_result(args, cwd=cwd, env=env)
    if result.returncode == 1:  # none set
        return []
    if result.returncode != 0:
        raise failure(args, result)
    entries: list[tuple[str, str | None]] = []
    for record in os.fsdecode(result.stdout).split("\0")[:-1]:
        key, newline, value = record.partition("\n")
        entries.append((key, value if newline else None))
    return entries


def config_values(repo: Repo, keys: Iterable[str]) -> dict[str, str | None]:
    """The value git uses for each of ``keys`` in ``repo`` (``None`` when it is not
    set, or written without ``= value``), from one ``git config``: a commit asks
    for several keys."""
    wanted = {key: _canonical(key) for key in keys}
    pattern = "^(" + "|".join(sorted({name.replace(".", r"\.") for name in wanted.values()})) + ")$"
    found = dict(config_entries(pattern, cwd=repo.workdir, env=repo.git_env()))
    return {key: found.get(name) for key, name in wanted.items()}


def config_flag(key: str, repo: Repo | None = None) -> bool | None:
    """The boolean ``key`` as git reads it (``git config --type=bool``) in ``repo``,
    else where git-forge runs; ``None`` when it is not set. A value git cannot
    read as a boolean is git's error."""
    args = ["config", "--type=bool", "--get", key]
    if repo is None:
        result = git_result(args)
    else:
        result = git_result(args, cwd=repo.workdir, env=repo.git_env())
    if result.returncode == 1:
        return None
    if result.returncode != 0:
        raise failure(args, result)
    return result.stdout.strip() == b"true"


def wants_color(slot: str, terminal: bool) -> bool:
    """Whether git would colour output for ``slot`` (``color.forge``; else
    ``color.ui``; ``auto`` by default) on a terminal or not: ``git config
    --get-colorbool``, where the user stands."""
    answer = run_git(["config", "--get-colorbool", slot, "true" if terminal else "false"])
    return answer.strip() == b"true"

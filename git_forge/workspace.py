"""Where a command acts: project root, backlog dir, state dir, effective config.

Every command that takes the rauf contract's positional ``PATH`` and
``--backlog DIR`` resolves them here, so ``git forge status``, ``backlog …`` and
an external caller substituting ``{bin} backlog list . --backlog {backlogDir}``
all mean the same directories.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from git_forge.config import Config, ConfigError, load_config
from git_forge.layout import backlog_file, find_root, state_directory, work_tree_root
from git_forge.owned import refuse_links


class Workspace(NamedTuple):
    """The resolved directories of one project, and its effective config."""

    root: Path
    backlog_dir: Path
    state_dir: Path
    config: Config

    @property
    def backlog_file(self) -> Path:
        return backlog_file(self.backlog_dir)

    @property
    def is_git(self) -> bool:
        return (self.root / ".git").exists()

    def relative(self, path: Path) -> str:
        """``path`` relative to the project root when inside it, else absolute."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)


def locate(
    path: Path | str = ".",
    backlog: str | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    need_work_tree: bool = True,
    feature_forge: Path | None = None,
) -> Workspace:
    """Resolve ``PATH`` and ``--backlog DIR`` (relative to the project root unless
    absolute; default: config key ``backlog``) into a ``Workspace``.

    A project is a git work tree: outside one (or in a bare repository) every
    command refuses with the same words (``layout.work_tree_root``), except those
    that only read configuration (``need_work_tree=False``). ``feature_forge``: a
    forge.config.json named by ``--config`` (``config.load_config``)."""
    target = Path(path)
    if not target.is_dir():
        raise ConfigError(f"not a directory: {path}")
    root = work_tree_root(target) if need_work_tree else find_root(target)
    config = load_config(root, {**(flags or {}), "backlog": backlog},
                         feature_forge=feature_forge)
    backlog_dir = Path(config["backlog"])
    if not backlog_dir.is_absolute():
        backlog_dir = root / backlog_dir
    # Collapse "."/".." without resolving symlinks, so messages show the path given.
    backlog_dir = Path(os.path.normpath(backlog_dir))
    state_dir = state_directory(backlog_dir, config.state_dir)
    if need_work_tree:
        real_root = os.path.realpath(root)
        _refuse_outside(real_root, root, backlog_dir, "backlog dir")
        if state_dir != backlog_dir:
            _refuse_outside(real_root, root, state_dir, "state dir")
        # Before any command writes: a link where git-forge keeps its own files.
        refuse_links(os.fspath(root), os.fspath(backlog_dir), os.fspath(state_dir))
    return Workspace(root, backlog_dir, state_dir, config)


def _refuse_outside(real_root: str, root: Path, directory: Path, what: str) -> None:
    """A backlog or state dir is a directory of the work tree's own: never its root
    (the ignore rules ``init`` writes there — ``*.lock``, ``.*.tmp`` — would then
    hide every lock file of the project), never inside ``.git``, never outside the
    work tree (the loop commits backlog.json with the work). Symlinks are followed
    (``real_root``: the root's real path)."""
    inside = os.path.relpath(os.path.realpath(directory), real_root)
    first = inside.split(os.sep, 1)[0]
    if first == os.pardir:
        raise ConfigError(f"the {what} {directory} is outside the work tree {root}")
    if first == os.curdir:
        raise ConfigError(f"the {what} {directory} is the work tree's root: it needs a "
                          "directory of its own (the default is .forge)")
    if first == ".git":
        raise ConfigError(f"the {what} {directory} is inside .git")


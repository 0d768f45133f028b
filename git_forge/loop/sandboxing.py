"""Which sandbox a run's agents and checks run in (``loop.sandbox``), and what
each one may write.

``bwrap``: every agent process and verification gate runs under bubblewrap
(``supervisor.sandbox``), and may write only its own tree — the main checkout in a
serial run, its worktree in a parallel one — with the parts of the git directory
a commit there needs (``tree.sandbox_paths``), a private ``/tmp``, its program's
own files (``Profile.state``: Claude Code's ``~/.claude*``, Codex's
``$CODEX_HOME``) and the paths of ``loop.sandboxWritable``. The state directory
(backlog, journal, manifests, decisions) and the backlog directory stay
read-only even inside a writable main checkout, and so are the configuration
files in its tree (``.forge.yaml``, ``forge.config.json``: a file it makes there is
removed as it ends). ``auto`` is ``bwrap`` where it
works here and ``none`` elsewhere, and says which it chose; ``bwrap`` where it
does not work is refused before any item is taken.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from git_forge.layout import FEATURE_FORGE_CONFIG, REPO_CONFIG
from git_forge.loop.errors import LoopError
from git_forge.loop.options import LoopOptions
from git_forge.supervisor.sandbox import Sandbox, SandboxError, check
from git_forge.tree.errors import GitError
from git_forge.tree.repo import Repo
from git_forge.tree.sandbox_paths import tree_writes
from git_forge.workspace import Workspace

#: The configuration files in a tree: read-only to its agent (made by it, removed as
#: it ends) — the next run reads them, and they could turn its sandbox off.
CONFIG_FILES = (REPO_CONFIG, FEATURE_FORGE_CONFIG)


def chosen(options: LoopOptions) -> tuple[Sandbox | None, str | None]:
    """The run's sandbox, with nothing to write yet (``None``: none), and what to
    tell of an ``auto`` choice. ``bwrap`` that cannot run here is a ``LoopError``
    (exit 2) naming why and what to install."""
    if options.sandbox == "none":
        return None, None
    try:
        sandbox = check()
    except SandboxError as exc:
        if options.sandbox == "auto":
            return None, f"sandbox: none ({exc})"
        raise LoopError(f"cannot sandbox the agents (sandbox bwrap): {exc}") from exc
    sandbox = replace(sandbox, network=options.sandbox_network)
    return sandbox, "sandbox: bwrap" if options.sandbox == "auto" else None


def for_tree(sandbox: Sandbox, workspace: Workspace, repo: Repo, options: LoopOptions,
             tree: Path, env: Mapping[str, str], argv: Sequence[str],
             also: Sequence[Path] = ()) -> Sandbox:
    """The sandbox of one process working in ``tree`` with ``env``, running ``argv``;
    ``also``: more it may write (a gate's report)."""
    try:
        git = tree_writes(repo, tree)
    except (GitError, OSError) as exc:
        raise LoopError(f"cannot prepare the sandbox of {tree}: {exc}") from exc
    own = options.profile.state(env) if options.profile.state is not None else ()
    for path in own[:1]:  # its program's own directory: made, as its program would
        path.mkdir(parents=True, exist_ok=True)
    writable = (tree, *git.writable, *own, *options.sandbox_writable, *also)
    configs = [tree / name for name in CONFIG_FILES]  # the next run's, and its sandbox's
    read_only = (workspace.state_dir, workspace.backlog_dir, *git.read_only,
                 *(path for path in configs if path.exists()))
    absent = (*git.absent, *(path for path in configs if not path.exists()))
    return replace(sandbox, writable=writable, read_only=read_only,
                   visible=(workspace.root, *_seen(env, argv)), absent=absent)


def environment(env: dict[str, str]) -> dict[str, str]:
    """What a sandboxed process's environment changes: its temporary files go to
    its private ``/tmp``, whatever ``TMPDIR`` named outside."""
    return {**env, "TMPDIR": "/tmp"}  # noqa: S108 - the sandbox's own tmpfs


def _seen(env: Mapping[str, str], argv: Sequence[str]) -> list[Path]:
    """What the process must see that ``/tmp`` may hide: its home, the directories
    on its ``PATH``, and every existing absolute path on its command line (its
    program, the script an interpreter is given) with the directory it is in."""
    seen = [Path(directory) for directory in env.get("PATH", "").split(os.pathsep)
            if os.path.isabs(directory)]
    if env.get("HOME"):
        seen.append(Path(env["HOME"]))
    for word in argv:  # its program, a script an interpreter runs, and what is beside them
        if os.path.isabs(word) and os.path.exists(word):
            seen += [Path(word).parent, Path(word)]
    return seen

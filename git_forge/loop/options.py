"""What one run is asked to do: the configuration's ``loop`` keys, overridden by
whatever the command line gave. Built in this one place, so that a default lives
only in the configuration's key table and a flag only wins where it was given."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_forge.config import KEYS
from git_forge.errors import UsageError
from git_forge.workspace import Workspace


def _default(name: str) -> Any:
    return KEYS[f"loop.{name}"].default


@dataclass(frozen=True)
class LoopOptions:
    agent: list[str]
    iterations: int = _default("iterations")
    retries: int = _default("retries")
    timeout_minutes: float | None = _default("timeoutMinutes")
    pause_on_needs_human: bool = _default("pauseOnNeedsHuman")
    force: bool = False
    prompt_file: Path | None = None
    #: Agents at once; above 1 each item works in a linked worktree of its own.
    parallel: int = _default("parallel")


@dataclass(frozen=True)
class LoopFlags:
    """What the command line said about a run; ``None`` leaves a value to the
    configuration (``.forge.yaml``'s ``loop`` keys, else their defaults)."""

    agent: str | None = None
    iterations: int | None = None
    retries: int | None = None
    timeout_minutes: float | None = None
    prompt_file: str | None = None
    pause_on_needs_human: bool | None = None
    force: bool = False
    parallel: int | None = None


def loop_options(workspace: Workspace, flags: LoopFlags) -> LoopOptions:
    """The run's options: each flag given, else its ``loop.*`` setting. A value no
    run could use (an agent line that cannot be split, a missing prompt file, a
    timeout that is not positive) is a usage error before anything starts."""

    def setting(name: str) -> Any:
        return workspace.config.get(f"loop.{name}", _default(name))

    agent = flags.agent if flags.agent is not None else setting("agent")
    try:
        argv = shlex.split(agent) if isinstance(agent, str) else list(agent or [])
    except ValueError as exc:
        raise UsageError(f"cannot split the agent command line: {exc}") from exc
    prompt_file = _prompt_file(workspace, flags.prompt_file or setting("promptFile"))
    timeout = flags.timeout_minutes if flags.timeout_minutes is not None \
        else setting("timeoutMinutes")
    if timeout is not None and not timeout > 0:
        raise UsageError("--timeout must be a positive number of minutes")
    pause = flags.pause_on_needs_human
    parallel = flags.parallel if flags.parallel is not None else setting("parallel")
    if parallel < 1:
        raise UsageError("--parallel must be at least 1")
    return LoopOptions(
        agent=argv,
        iterations=flags.iterations if flags.iterations is not None else setting("iterations"),
        retries=flags.retries if flags.retries is not None else setting("retries"),
        timeout_minutes=timeout,
        pause_on_needs_human=bool(pause if pause is not None else setting("pauseOnNeedsHuman")),
        force=flags.force,
        prompt_file=prompt_file,
        parallel=parallel,
    )


def _prompt_file(workspace: Workspace, given: str | None) -> Path | None:
    """The prompt file, relative to the repository root; it must exist."""
    if not given:
        return None
    path = Path(given)
    if not path.is_absolute():
        path = workspace.root / path
    if not path.is_file():
        raise UsageError(f"no prompt file at {path}")
    return path

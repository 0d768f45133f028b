"""``git forge init``: the backlog directory, its ignore rules, an example config.

It creates what is missing and never overwrites: an existing ``backlog.json``
or ``.forge.yaml`` is left alone, and an existing ``.gitignore`` in the backlog
dir only gains the rules it lacks. The ignore rules keep every state file
untracked while ``backlog.json`` stays tracked. Nothing is committed; the
caller prints the git command that would commit what was created.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from git_forge.atomic import atomic_write
from git_forge.backlog.store import new_document
from git_forge.jsonfile import write_json
from git_forge.layout import (
    ARCHIVE_DIR,
    BACKLOG_FILE,
    CONFLICTS_FILE,
    DECISIONS_FILE,
    EVENTS_FILE,
    LOOP_RUN_FILE,
    NOTIFIED_FILE,
    PROC_DIR,
    PROMPT_FILES,
    RECEIPTS_FILE,
    REPO_CONFIG,
    STATE_FILE,
    WORKTREES_DIR,
)
from git_forge.workspace import Workspace

#: State files that live in the state dir (formats.md), as ignore patterns.
_STATE_PATTERNS: tuple[str, ...] = (
    STATE_FILE, EVENTS_FILE, DECISIONS_FILE, "*.lock", LOOP_RUN_FILE, f"{PROC_DIR}/",
    f"{ARCHIVE_DIR}/", PROMPT_FILES, RECEIPTS_FILE, NOTIFIED_FILE, f"{WORKTREES_DIR}/",
    CONFLICTS_FILE,
)

_EXAMPLE_CONFIG = """\
# git-forge repository configuration (see `git forge config` for every value and its source).
# Layers, later wins: defaults < ~/.config/git-forge/config.yaml < this file
#                     < forge.config.json's loopRunner block < command-line flags.
{backlog_line}
# loopRunner:
#   bin: embedded            # or the name/path of a rauf-compatible runner
#   stateDir: .forge
#   recoveryMinRunnerVersion: "0.14.0"
# loop:
#   agent: claude            # or codex (git forge agents), or any agent command line
#   agentArgs: [--permission-mode, acceptEdits]   # extra flags for the agent
#   iterations: 50
#   retries: 2
#   timeoutMinutes: 30
#   pauseOnNeedsHuman: false
# supervisor:
#   graceSeconds: 10
"""


@dataclass
class InitResult:
    """What ``init`` did, as paths relative to the project root."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return [*self.created, *self.updated]


def ignore_rules(workspace: Workspace) -> list[str]:
    """The ``.gitignore`` lines for the backlog dir: every state file ignored,
    ``backlog.json`` (and the rules themselves) kept tracked."""
    rules = ["# git-forge state files: never tracked"]
    if workspace.state_dir == workspace.backlog_dir:
        rules += [f"/{pattern}" if not pattern.startswith("*") else pattern
                  for pattern in _STATE_PATTERNS]
    else:
        rules += [f"/{workspace.state_dir.relative_to(workspace.backlog_dir).as_posix()}/",
                  "*.lock"]
    rules += [".*.tmp", f"!/{BACKLOG_FILE}", "!/.gitignore"]
    return rules


def _merge_ignore(path: Path, rules: list[str]) -> bool:
    """Create or extend the ignore file; ``True`` if it changed."""
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    have = {line.strip() for line in existing.splitlines()}
    missing = [rule for rule in rules if rule not in have]
    if not missing or (existing and all(r.startswith("#") for r in missing)):
        return False
    prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
    atomic_write(path, (prefix + "\n".join(missing) + "\n").encode("utf-8"))
    return True


def relative_to(path: Path, here: Path) -> str:
    """``path`` as seen from the directory ``here`` (``..`` where needed)."""
    return Path(os.path.relpath(path, here)).as_posix()


def init_backlog(workspace: Workspace, *, backlog_flag: str | None = None) -> InitResult:
    """Scaffold the workspace's backlog dir; see the module docstring."""
    result = InitResult()
    rel = workspace.relative
    backlog_dir = workspace.backlog_dir
    backlog_dir.mkdir(parents=True, exist_ok=True)
    # The state dir is ignored, so it never appears in the commit command.
    workspace.state_dir.mkdir(parents=True, exist_ok=True)

    if workspace.backlog_file.exists():
        result.kept.append(rel(workspace.backlog_file))
    else:
        write_json(workspace.backlog_file, new_document(workspace.root.name))
        result.created.append(rel(workspace.backlog_file))

    ignore = backlog_dir / ".gitignore"
    existed = ignore.exists()
    if _merge_ignore(ignore, ignore_rules(workspace)):
        (result.updated if existed else result.created).append(rel(ignore))
    else:
        result.kept.append(rel(ignore))

    repo_config = workspace.root / REPO_CONFIG
    if repo_config.exists():
        result.kept.append(REPO_CONFIG)
    else:
        backlog_line = (f"backlog: {json.dumps(backlog_flag)}" if backlog_flag
                        else f"# backlog: {rel(backlog_dir)}")
        atomic_write(repo_config,
                     _EXAMPLE_CONFIG.format(backlog_line=backlog_line).encode("utf-8"))
        result.created.append(REPO_CONFIG)
    return result


def commit_command(result: InitResult, root: Path, here: Path, *,
                   force: bool = False) -> str | None:
    """The git command that commits what ``init`` created, or ``None`` if nothing —
    with paths as the operator types them where they stand (``here``); ``force``
    (``git add -f``) where the project's ignore rules ignore some of them."""
    if not result.changed:
        return None
    paths = " ".join(shlex.quote(relative_to(root / path, here)) for path in result.changed)
    return f"git add {'-f ' if force else ''}{paths} && git commit -m 'Add git-forge backlog'"

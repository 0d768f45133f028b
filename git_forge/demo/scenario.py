"""The demo's throwaway repository: a small backlog that shows the whole lifecycle.

Six items: two the agent completes, two that ask the same question in different
words (so recovery asks it once), one gated behind that question, and one that
blocks after leaving a half-written file (which the runner keeps as that item's
abandoned work, under ``refs/forge/abandoned/006/…``). Its committed
``.forge.yaml`` names the scripted agent (``loop.agent``), so the commands the demo
shows and suggests — ``git forge loop run``, after ``git forge recover`` — work
there as they are typed.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from git_forge.atomic import atomic_write
from git_forge.backlog.store import BacklogStore
from git_forge.layout import REPO_CONFIG
from git_forge.scaffold import init_backlog
from git_forge.tree.commit import commit_paths
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import porcelain
from git_forge.tree.identity import author_and_committer
from git_forge.tree.repo import init_repository, set_local_identity
from git_forge.workspace import Workspace, locate

ITEMS: list[dict[str, Any]] = [
    {"title": "Create the greeting module", "type": "feature", "priority": 1,
     "acceptance_criteria": ["greet(name) returns 'Hello, <name>!'"]},
    {"title": "Add a command-line entry point", "type": "feature", "priority": 2,
     "depends_on": ["001"], "acceptance_criteria": ["python cli.py Ada prints a greeting"]},
    {"title": "Store greetings", "type": "feature", "priority": 2,
     "description": "Keep every greeting that was sent."},
    {"title": "Remember each user's language", "type": "feature", "priority": 3,
     "description": "Store user preferences."},
    {"title": "Translate greetings", "type": "feature", "priority": 3, "depends_on": ["003"]},
    {"title": "Publish the package", "type": "chore", "priority": 4},
]

#: The answer the scripted recovery gives to the demo's one consolidated question.
SCRIPTED_ANSWER = "Use SQLite: it ships with Python and needs no server."


def agent_command() -> list[str]:
    """The scripted agent, run by this very Python."""
    return [sys.executable, "-m", "git_forge.demo.agent"]


def agent_command_line() -> str:
    return shlex.join(agent_command())


#: The demo repository's configuration: the scripted agent, with a short timeout.
CONFIG = """\
# The demo's scripted agent (no LLM): git forge loop run runs it here.
loop:
  agent: {agent}
  timeoutMinutes: 2
"""


def create(path: Path) -> Workspace:
    """Create the repository, its backlog and its first two commits at ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    if any(path.iterdir()):
        raise GitError(f"{path} is not empty; the demo needs a new directory", exit_code=2)
    repo = init_repository(path)
    try:
        author_and_committer(repo)
    except GitError:  # a fresh machine: give the throwaway repository its own identity
        set_local_identity(repo, "git-forge demo", "demo@git-forge.invalid")
    (path / "README.md").write_text("# Greeter\n\nA git-forge demo project.\n")
    commit_paths(repo, ["README.md"], "Initial commit")
    atomic_write(path / REPO_CONFIG,
                 CONFIG.format(agent=json.dumps(agent_command_line())).encode("utf-8"))
    workspace = locate(path)
    init_backlog(workspace)
    store = BacklogStore.in_dir(workspace.backlog_dir)
    store.describe("Greeter: a tiny Python project that greets people.")
    for fields in ITEMS:
        store.add(fields)
    commit_paths(repo, [entry.path for entry in porcelain(repo)], "Add the git-forge backlog")
    return workspace

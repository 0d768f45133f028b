"""The runner contract (list, answer, unblock, version) and its embedded and external runners."""

from __future__ import annotations

from git_forge import config as cfg
from git_forge.runner.embedded import EmbeddedRunner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.runner.base import Runner
    from git_forge.workspace import Workspace


def runner_for(workspace: Workspace) -> Runner:
    """The runner the configuration selects: external when ``loopRunner.bin`` names
    a program, else the embedded runner on the workspace's backlog."""
    bin = workspace.config.runner_bin
    if bin is None:
        return EmbeddedRunner(workspace.backlog_dir)
    from git_forge.runner.external import ExternalRunner  # common-case boundary: subprocess

    settings = workspace.config
    return ExternalRunner(
        bin=bin,
        root=workspace.root,
        backlog_dir=workspace.relative(workspace.backlog_dir),
        list_command=settings["loopRunner.listCommand"],
        version_command=settings["loopRunner.versionCommand"],
        answer_command=cfg.ANSWER_COMMAND,
        unblock_command=cfg.UNBLOCK_COMMAND,
        recovery_min_version=settings["loopRunner.recoveryMinRunnerVersion"],
        install_hint=settings.get("loopRunner.installHint"),
        run_command=settings.get("loopRunner.runCommand"),
    )

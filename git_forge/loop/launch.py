"""Starting another runner's loop: when ``loopRunner.bin`` names a program, ``loop
run`` hands over to it, after the same refusals a launch of the embedded loop
meets (a live loop or an earlier run's agent, then the pre-launch check)."""

from __future__ import annotations

from git_forge.loop.control import LoopRunning, launch_blocker
from git_forge.loop.errors import LoopRefused
from git_forge.reconcile.preflight import check
from git_forge.runner import runner_for
from git_forge.workspace import Workspace


def launch_external(workspace: Workspace, *, force: bool = False) -> int:
    """Run the configured runner's own loop in the foreground; its exit status.
    ``force`` skips the pre-launch check, never the live-loop refusal."""
    blocker = launch_blocker(workspace.state_dir, workspace.root)
    if blocker is not None:
        raise LoopRunning(blocker)
    if not force:
        result = check(workspace.root, workspace.state_dir, workspace.backlog_file)
        if result.status != "ok":
            raise LoopRefused("the pre-launch check stopped this launch", result)
    return runner_for(workspace).launch()

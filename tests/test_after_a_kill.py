"""After a kill: what a dead loop or a dead recover left never lets the next
command go wrong.

* An agent whose loop and watchdog were both killed lives on: it blocks every
  launch — ``preflight``, the pre-launch hook, ``loop run`` — on a clean tree too,
  naming its item, its pid and the way out, until ``proc stop`` ends it.

Real repositories, real processes, real SIGSTOP and SIGKILL; the agent is a
script first on PATH.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import waiting
from builders import init_repository
from helpers import forge_argv, git, run_forge, snapshot
from waiting import gone, wait_for

# -- an orphan blocks a launch ---------------------------------------------------------------

#: An agent that says where it runs, then works for a minute (the test ends it).
SLOW_AGENT = f"""#!{sys.executable}
import os, pathlib, sys, time
sys.stdin.read()
pathlib.Path(os.environ["SLOW_AGENT_PID"]).write_text(str(os.getpid()))
time.sleep(60)
print("FORGE_DONE", flush=True)
"""


def _watchdogs(loop_pid: int) -> list[psutil.Process]:
    return [child for child in psutil.Process(loop_pid).children(recursive=True)
            if any("watchdog_process.py" in part for part in child.cmdline())]


def _kill_loop_and_watchdog(loop: subprocess.Popen) -> None:
    """SIGSTOP the loop and its watchdog (neither can act on the other's end), then
    SIGKILL both: nothing is left that would end the agent."""
    ours = [psutil.Process(loop.pid), *_watchdogs(loop.pid)]
    assert len(ours) == 2, ours
    for process in ours:
        process.suspend()
    for process in reversed(ours):
        process.kill()
    waiting.wait_process(loop, timeout=10)
    for process in ours:
        wait_for(lambda pid=process.pid: gone(pid), timeout=10, what="loop and watchdog gone")


def _clean_path_imports(root: Path) -> str:
    """What ``preflight`` answers in ``root`` and which heavy modules it imported:
    the orphan check on a clean tree reads the tree lock's label and lists one
    directory — no configuration, no supervisor, no pathlib."""
    import git_forge

    heavy = {"argparse", "pathlib", "typing", "json", "pygit2", "git_forge.config",
             "git_forge.workspace", "git_forge.supervisor.liveness"}
    code = ("import sys\n"
            "from git_forge.cli.main import main\n"
            "code = main(['preflight'])\n"
            f"print(code, sorted({heavy!r} & set(sys.modules)))\n")
    source = str(Path(git_forge.__file__).resolve().parent.parent)
    out = waiting.run([sys.executable, "-S", "-c", code], cwd=root, capture_output=True,
                      text=True, env={**os.environ, "PYTHONPATH": source})
    assert out.stderr == ""
    return out.stdout


@pytest.mark.parametrize("config", [None, "backlog: plan\n"], ids=["default", "backlog-dir"])
def test_an_orphan_blocks_every_launch_on_a_clean_tree_until_proc_stop(
        tmp_path: Path, config: str | None) -> None:
    root = init_repository(tmp_path / "repo")
    if config is not None:  # the state dir is where only the configuration says
        (root / ".forge.yaml").write_text(config)
    for args in (("init",), ("backlog", "add", "--title", "Do a")):
        assert run_forge(*args, cwd=root).returncode == 0
    git("add", "-A", cwd=root)
    git("commit", "-qm", "backlog", cwd=root)
    backlog_dir = "plan" if config else ".forge"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "slow-agent").write_text(SLOW_AGENT)
    (bin_dir / "slow-agent").chmod(0o755)
    pid_file = tmp_path / "agent.pid"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLOW_AGENT_PID": str(pid_file)}
    assert run_forge("hooks", "install", cwd=root).returncode == 0
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", "slow-agent",
                             "--iterations", "1"], cwd=root, env={**os.environ, **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agent = None
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().isdigit(), timeout=30,
                 what="the agent running")
        agent = int(pid_file.read_text())
        _kill_loop_and_watchdog(loop)
        assert psutil.Process(agent).is_running()
        # The backlog put back (its item left in_progress): the tree is clean.
        git("checkout", "--", f"{backlog_dir}/backlog.json", cwd=root)
        assert git("status", "--porcelain", cwd=root) == ""

        handle = json.loads(run_forge("proc", "list", "--json", cwd=root).stdout)[-1]["handle"]
        assert f"orphaned agent still running (handle {handle}, item 001)" in run_forge(
            "status", cwd=root).stdout
        reason = (f"an agent of an earlier run is still running (item 001, pid {agent}, "
                  f"handle {handle}); stop it with git forge proc stop {handle}")
        before = snapshot(root)
        preflight = run_forge("preflight", cwd=root)
        assert (preflight.returncode, preflight.stdout, preflight.stderr) == (
            1, "", f"STOP: {reason}\n")
        as_json = run_forge("preflight", "--json", cwd=root)
        assert as_json.returncode == 1
        assert json.loads(as_json.stdout) == {"status": "stop", "run": None, "paths": [],
                                              "reason": reason}
        hook = waiting.run(["git", "hook", "run", "pre-launch"], cwd=root, capture_output=True,
                           text=True)
        assert (hook.returncode, hook.stderr) == (1, f"STOP: {reason}\n")
        refused = run_forge("loop", "run", "--agent", "slow-agent", cwd=root, env=env)
        assert (refused.returncode, refused.stderr) == (2, f"Error: {reason}\n")
        assert snapshot(root) == before  # refused: nothing was touched

        stopped = run_forge("proc", "stop", handle, "--grace", "0.3", cwd=root)
        assert stopped.returncode == 0, stopped.stderr
        wait_for(lambda: gone(agent), timeout=10, what="the orphan gone")
        after = run_forge("preflight", cwd=root)
        assert (after.returncode, after.stdout, after.stderr) == (0, "", "")
        assert _clean_path_imports(root) == "0 []\n"  # and the go stays cheap
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()
        if agent is not None and not gone(agent):
            os.kill(agent, signal.SIGKILL)

"""``loop run --sandbox bwrap``: every agent and verification gate runs under real
bubblewrap, and may write its own tree and nothing of the run's bookkeeping, the
git directory's configuration and hooks, the other items' worktrees, the user's
home or the rest of the machine — while the supervisor stays in charge of it.

Real repositories, the real installed ``git forge``, real ``bwrap`` and real agents:
small ``/bin/sh`` scripts (a Python one where a socket is needed) written into the
test's directory, which say in their own tree what the sandbox let them do. The
whole module skips, saying why, where bubblewrap cannot run a sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psutil
import pytest
import waiting
from builders import backlog_repo
from helpers import forge_argv, git, run_forge, sandbox_problem, snapshot
from templates import Templates
from waiting import wait_for

_PROBLEM = sandbox_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None,
                                reason=f"needs a bubblewrap that works here: {_PROBLEM}")

#: What the agents try to write where they must not (a line, never found anywhere after).
TOKEN = "planted-by-a-sandboxed-agent"

#: The shell function every agent uses: ``attempt PATH`` appends TOKEN to PATH (made if
#: missing) and says in ``$REPORT`` whether the sandbox let it — and if not, the error
#: (``Read-only file system``: the path was there to see, and the sandbox refused it).
ATTEMPT = f"""
attempt() {{
    if said=$( (printf '%s\\n' '{TOKEN}' >> "$1") 2>&1 ); then
        echo "WROTE $1" >> "$REPORT"
    else
        echo "REFUSED $1: ${{said##*: }}" >> "$REPORT"
    fi
}}
"""

#: Serial: the main checkout is its tree; all but its own file is out of bounds.
SERIAL_AGENT = f"""#!/bin/sh
REPORT="own-$FORGE_ITEM_ID.txt"
echo "work of item $FORGE_ITEM_ID" > "$REPORT"
{ATTEMPT}
attempt .forge/backlog.json
attempt .forge/state.json
attempt .forge/new-file.txt
attempt .git/config
attempt .git/hooks/pre-commit
attempt .git/info/exclude
attempt "$HOME/.gitconfig"
attempt "$HOME/planted.txt"
attempt "$SANDBOX_TEST_OUTSIDE"
attempt "$SANDBOX_TEST_BESIDE"
attempt /etc/planted.txt
attempt "$SANDBOX_TEST_PRIVATE"
echo FORGE_DONE
"""

#: Parallel: its worktree is its tree; the main checkout, the siblings' worktrees (once
#: they exist) and the backlog are out of bounds; its own commit is in bounds.
PARALLEL_AGENT = f"""#!/bin/sh
REPORT="own-$FORGE_ITEM_ID.txt"
echo "work of item $FORGE_ITEM_ID" > "$REPORT"
{ATTEMPT}
for sibling in 001 002 003; do
    tries=0
    while [ ! -d "../$sibling" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
done
for sibling in 001 002 003; do
    [ "$sibling" = "$FORGE_ITEM_ID" ] || attempt "../$sibling/planted.txt"
done
attempt "$SANDBOX_TEST_MAIN/planted-$FORGE_ITEM_ID.txt"
attempt "$SANDBOX_TEST_MAIN/README.md"
attempt ../../backlog.json
attempt "$SANDBOX_TEST_MAIN/.git/config"
git add "$REPORT" && git commit -q -m "agent $FORGE_ITEM_ID commits its own work" &&
    echo committed > "committed-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
"""

#: Says it started, with its pid (in its sandbox's PID namespace), in its own tree; then
#: works for a minute.
SLEEPING_AGENT = """#!/bin/sh
echo $$ > "started-$FORGE_ITEM_ID.txt"
sleep 60
echo FORGE_DONE
"""

#: Traps SIGTERM: the trap writes a mark in ``$MARKS`` (a --sandbox-writable directory).
TRAPPING_AGENT = """#!/bin/sh
trap 'echo "item $FORGE_ITEM_ID ended by SIGTERM" > "$MARKS/term-$FORGE_ITEM_ID"; exit 143' TERM
echo ready > "$MARKS/ready-$FORGE_ITEM_ID"
sleep 60 &
wait
echo FORGE_DONE
"""

#: Writes ``feature.txt`` and is done.
PLAIN_AGENT = """#!/bin/sh
echo "the work" > feature.txt
echo FORGE_DONE
"""

#: A gate: tries to write outside its tree (``$GATE_OUTSIDE``) and into the backlog,
#: says which it could on its stdout, and writes a passing JUnit report to ``$1``.
GATE = f"""#!/bin/sh
REPORT=/dev/stdout
{ATTEMPT}
attempt "$GATE_OUTSIDE"
attempt .forge/backlog.json
cat > "$1" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<testsuite name="gate" tests="2" failures="0">
  <testcase classname="gate" name="first"/>
  <testcase classname="gate" name="second"/>
</testsuite>
XML
"""

#: Connects to ``127.0.0.1:$SANDBOX_TEST_PORT`` and writes what came of it to ``net.txt``.
NET_AGENT = f"""#!{sys.executable}
import os, socket
try:
    with socket.create_connection(("127.0.0.1", int(os.environ["SANDBOX_TEST_PORT"])),
                                  timeout=5) as conn:
        said = "connected: " + conn.recv(64).decode()
except OSError as exc:
    said = f"unreachable: {{type(exc).__name__}}"
with open("net.txt", "w") as out:
    out.write(said + "\\n")
print("FORGE_DONE")
"""


# -- helpers -----------------------------------------------------------------------------------

def script(directory: Path, name: str, text: str) -> Path:
    """``text`` saved as an executable ``directory/name``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def three_items(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("sandbox-three", lambda root: backlog_repo(
        root, "Item 1", "Item 2", "Item 3"), tmp_path / "repo")


def loop_run(project: Path, agent: Path, *args: str, env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_forge("loop", "run", "--agent", str(agent), *args, cwd=project, env=env,
                     timeout=timeout)


def backlog(project: Path) -> dict[str, dict[str, Any]]:
    items = json.loads((project / ".forge" / "backlog.json").read_text())["items"]
    return {entry["id"]: entry for entry in items}


def events(project: Path, kind: str) -> list[dict[str, Any]]:
    lines = (project / ".forge" / "events.ndjson").read_text().splitlines()
    return [event for event in map(json.loads, lines) if event["type"] == kind]


def handles(project: Path) -> list[dict[str, Any]]:
    listed = run_forge("proc", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    return rows


def manifest(project: Path, handle: str) -> dict[str, Any]:
    shown = run_forge("proc", "show", handle, "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    document: dict[str, Any] = json.loads(shown.stdout)
    return document


def status_json(project: Path) -> dict[str, Any]:
    shown = run_forge("status", "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    document: dict[str, Any] = json.loads(shown.stdout)
    return document


def holding(root: Path, token: str) -> list[str]:
    """The files under ``root`` (``.git`` included) whose bytes hold ``token``."""
    return [rel for rel, data in snapshot(root, skip_git=False).items()
            if token.encode() in data]


def living(processes: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` still running (not a zombie, not a new process that
    took the pid of one that ended)."""
    found = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            pass
    return found


def failing_bwrap(directory: Path) -> Path:
    """A ``bwrap`` that fails as bubblewrap does where user namespaces are off."""
    return script(directory, "bwrap", "#!/bin/sh\necho 'bwrap: No permissions to create new "
                  "namespace, likely because the kernel does not allow non-privileged user "
                  "namespaces.' >&2\nexit 1\n").parent


# -- what an agent may write --------------------------------------------------------------------

def test_a_serial_agent_writes_its_file_and_nothing_of_the_bookkeeping_git_home_or_etc(
        templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    home = Path(os.environ["HOME"])
    agent = script(tmp_path / "agents", "agent", SERIAL_AGENT)
    outside = agent.parent / "outside.txt"  # beside its program: seen, read-only
    outside.write_text("outside the tree\n")
    # straight under /tmp, in no directory the sandbox shows: its own /tmp
    private = Path("/tmp") / f"forge-private-{os.getpid()}-{tmp_path.name}.txt"
    kept = {path: path.read_bytes() for path in (project / ".git" / "config",
                                                 project / ".git" / "info" / "exclude",
                                                 home / ".gitconfig", outside)}
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1",
                      env={"SANDBOX_TEST_OUTSIDE": str(outside),
                           "SANDBOX_TEST_BESIDE": str(agent.parent / "planted.txt"),
                           "SANDBOX_TEST_PRIVATE": str(private)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sandbox: bwrap — each agent could write only its own tree" in result.stdout
    assert backlog(project)["001"]["status"] == "done"
    # the agent's own file is the item's work, and says every other write was refused
    assert git("log", "-1", "--format=%s", cwd=project) == "[forge] 001: Item 1\n"
    assert "own-001.txt" in git("show", "--format=", "--name-only", "HEAD", cwd=project).split()
    said = git("show", "HEAD:own-001.txt", cwd=project).splitlines()
    refused = [".forge/backlog.json", ".forge/state.json", ".forge/new-file.txt",
               ".git/config", ".git/hooks/pre-commit", ".git/info/exclude",
               f"{home}/.gitconfig", f"{home}/planted.txt", str(outside),
               f"{agent.parent}/planted.txt", "/etc/planted.txt"]
    assert said == ["work of item 001",
                    *(f"REFUSED {path}: Read-only file system" for path in refused),
                    f"WROTE {private}"], said  # the last into its private /tmp, gone with it
    # nothing was written: the files as they were, none made, the token nowhere
    assert {path: path.read_bytes() for path in kept} == kept
    for made in (project / ".forge" / "new-file.txt", project / ".git" / "hooks" / "pre-commit",
                 home / "planted.txt", agent.parent / "planted.txt", private,
                 Path("/etc/planted.txt")):
        assert not made.exists(), made
    assert holding(project, TOKEN) == [] and holding(home, TOKEN) == []
    assert git("status", "--porcelain", cwd=project) == ""


def test_parallel_agents_write_their_worktrees_and_commit_there_and_nothing_else(
        templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", PARALLEL_AGENT)
    readme = (project / "README.md").read_bytes()
    result = loop_run(project, agent, "--sandbox", "bwrap", "--parallel", "3",
                      env={"SANDBOX_TEST_MAIN": str(project)}, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [entry["status"] for entry in backlog(project).values()] == ["done"] * 3
    for item in ("001", "002", "003"):
        # the agent's own commit in its worktree worked, and its work is on the branch
        assert git("show", f"HEAD:committed-{item}.txt", cwd=project) == "committed\n"
        said = git("show", f"HEAD:own-{item}.txt", cwd=project).splitlines()
        siblings = [other for other in ("001", "002", "003") if other != item]
        refused = [*(f"../{other}/planted.txt" for other in siblings),
                   f"{project}/planted-{item}.txt", f"{project}/README.md", "../../backlog.json",
                   f"{project}/.git/config"]
        assert said == ["work of item " + item,
                        *(f"REFUSED {path}: Read-only file system" for path in refused)], said
    subjects = git("log", "--format=%s", cwd=project)
    assert all(f"agent {item} commits its own work" in subjects for item in ("001", "002", "003"))
    # nothing planted anywhere: not in the main checkout, a worktree, the backlog, git
    assert (project / "README.md").read_bytes() == readme
    assert not list(project.glob("planted*")), list(project.glob("planted*"))
    assert not list((project / ".forge").rglob("planted*"))
    assert holding(project, TOKEN) == []
    assert "planted" not in git("log", "--all", "--name-only", "--format=", cwd=project)
    assert git("status", "--porcelain", cwd=project) == ""
    # each agent's manifest: sandboxed, its worktree the first path it could write
    agents = [row for row in handles(project) if not row.get("gate")]
    trees = {manifest(project, row["handle"])["command"]["sandbox"]["writable"][0]
             for row in agents}
    assert trees == {str((project / ".forge" / "worktrees" / item).resolve())
                     for item in ("001", "002", "003")}


# -- the supervisor stays in charge -------------------------------------------------------------

def _run_processes(loop_pid: int) -> dict[psutil.Process, tuple[str, list[str]]]:
    """The loop's descendants and every process left in its session (the loop leads
    it), each with its name and command line as they are now."""
    found = {child.pid: child for child in psutil.Process(loop_pid).children(recursive=True)}
    for process in psutil.process_iter():
        try:
            if process.pid != loop_pid and os.getsid(process.pid) == loop_pid:
                found.setdefault(process.pid, process)
        except (OSError, psutil.Error):
            pass
    seen = {}
    for process in found.values():
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                seen[process] = (process.name(), process.cmdline())
        except psutil.Error:
            pass  # gone already
    return seen


def _namespace_pid(process: psutil.Process) -> int:
    """``process``'s pid in its innermost PID namespace (``NSpid``'s last field)."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    raise AssertionError(f"no NSpid for {process.pid}")


def test_sigkill_of_the_loop_leaves_no_agent_and_no_bwrap_alive(templates: Templates,
                                                                tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", SLEEPING_AGENT)
    started = [project / ".forge" / "worktrees" / item / f"started-{item}.txt"
               for item in ("001", "002")]
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", str(agent), "--sandbox",
                             "bwrap", "--parallel", "2"], cwd=project, env=dict(os.environ),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    processes: dict[psutil.Process, tuple[str, list[str]]] = {}
    agent_ids: dict[psutil.Process, int] = {}
    try:
        wait_for(lambda: all(path.exists() and path.read_text().strip().isdigit()
                             for path in started), 60, what="both sandboxed agents running")
        processes = _run_processes(loop.pid)
        agent_ids = {process: _namespace_pid(process) for process, (name, argv)
                     in processes.items() if name != "bwrap" and argv[-1:] == [str(agent)]}
    finally:
        os.kill(loop.pid, signal.SIGKILL)  # the loop alone: its watchdog must do the rest
        waiting.wait_process(loop, timeout=30)
    try:
        bwraps = [process for process, (name, _) in processes.items() if name == "bwrap"]
        sleeps = [process for process, (name, _) in processes.items() if name == "sleep"]
        # what is checked: both agents and their sleeps, each below its two bwrap processes
        # (the one outside and the sandbox's init); the agents are those that said they
        # started (the pid a sandboxed process knows is its PID namespace's)
        assert (len(agent_ids), len(sleeps), len(bwraps)) == (2, 2, 4), processes
        assert sorted(agent_ids.values()) == sorted(int(path.read_text()) for path in started)
        wait_for(lambda: not living(processes), 10,
                 what="no process of the killed run alive (agents, bwrap, watchdog)")
    finally:
        for process in living(processes):  # a failed test leaves nothing of its own running
            with contextlib.suppress(psutil.Error):
                process.kill()  # psutil's: never a pid reused since


def test_loop_stop_reaches_a_sandboxed_agent_whose_trap_runs(templates: Templates,
                                                            tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    agent = script(tmp_path / "agents", "agent", TRAPPING_AGENT)
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", str(agent), "--sandbox",
                             "bwrap", "--sandbox-writable", str(marks), "--iterations", "1"],
                            cwd=project, env={**os.environ, "MARKS": str(marks)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_for((marks / "ready-001").exists, 60, what="the sandboxed agent running")
        stopped = run_forge("loop", "stop", cwd=project)
        assert stopped.returncode == 0, stopped.stderr
        out, err = waiting.communicate(loop, timeout=60)
    finally:
        if loop.poll() is None:
            waiting.kill_tree(loop.pid)
            loop.wait(timeout=30)
    assert loop.returncode == 130, out + err
    # the trap ran in the sandbox: SIGTERM passed bubblewrap and reached the agent
    assert (marks / "term-001").read_text() == "item 001 ended by SIGTERM\n"
    assert backlog(project)["001"]["status"] == "pending"
    (row,) = handles(project)
    assert manifest(project, row["handle"])["state"] in ("terminated", "exited")


# -- refused before any item is taken -----------------------------------------------------------

def _path_without_bwrap(directory: Path) -> str:
    """A PATH of links to the programs a run needs, and no ``bwrap``."""
    directory.mkdir()
    for name in ("git", "sh", "env", "python3", "true", "cat"):
        found = shutil.which(name)
        assert found is not None, name
        (directory / name).symlink_to(found)
    return str(directory)


def _refused(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``loop run ARGS`` refused before any item: exit 2, one ``Error:`` line (returned),
    nothing of the project touched."""
    before = snapshot(project)
    result = run_forge("loop", "run", *args, cwd=project, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    lines: list[str] = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert snapshot(project) == before
    return lines[0]


def test_a_sandbox_that_cannot_run_is_refused_and_auto_runs_without_it(
        templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", PLAIN_AGENT)
    backlog_bytes = (project / ".forge" / "backlog.json").read_bytes()
    # not installed: the package to install is named
    said = _refused(project, "--agent", str(agent), "--sandbox", "bwrap",
                    env={"PATH": _path_without_bwrap(tmp_path / "no-bwrap")})
    assert "bwrap is not installed" in said and "bubblewrap" in said, said
    # installed, but no user namespaces: bubblewrap's own reason
    failing = f"{failing_bwrap(tmp_path / 'failing')}{os.pathsep}{os.environ['PATH']}"
    said = _refused(project, "--agent", str(agent), "--sandbox", "bwrap", env={"PATH": failing})
    assert "No permissions to create new namespace" in said, said
    # usage errors
    said = _refused(project, "--agent", str(agent), "--sandbox", "bogus")
    assert "bogus" in said and "bwrap" in said, said
    said = _refused(project, "--agent", str(agent), "--sandbox-net", "bogus")
    assert "bogus" in said and "shared" in said, said
    assert (project / ".forge" / "backlog.json").read_bytes() == backlog_bytes
    # auto where bwrap fails: the run goes on unsandboxed, and says so
    auto = loop_run(project, agent, "--sandbox", "auto", "--iterations", "1",
                    env={"PATH": failing})
    assert auto.returncode == 0, auto.stdout + auto.stderr
    assert "sandbox: none (" in auto.stdout and "No permissions" in auto.stdout, auto.stdout
    assert "sandbox: bwrap" not in auto.stdout
    assert backlog(project)["001"]["status"] == "done"
    assert status_json(project)["sandbox"] is None
    (row,) = handles(project)
    assert "sandbox" not in manifest(project, row["handle"])["command"]


# -- what the run says of its sandbox -----------------------------------------------------------

def test_proc_show_and_status_name_the_sandbox(templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", PLAIN_AGENT)
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = handles(project)
    shown = run_forge("proc", "show", row["handle"], cwd=project)
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stdout.splitlines() if line.startswith("sandbox:")]
    assert len(lines) == 1 and "bwrap" in lines[0] and str(project.resolve()) in lines[0], (
        shown.stdout)
    sandbox = manifest(project, row["handle"])["command"]["sandbox"]
    assert sandbox["kind"] == "bwrap" and sandbox["network"] is True
    assert sandbox["writable"][0] == str(project.resolve())
    assert str((project / ".git").resolve()) in sandbox["writable"]
    assert status_json(project)["sandbox"] == "bwrap"
    assert "sandboxed (bwrap)" in run_forge("status", cwd=project).stdout
    # an unsandboxed run after it: the sandbox is no longer said
    plain = loop_run(project, agent, "--iterations", "1")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert status_json(project)["sandbox"] is None
    assert "sandboxed" not in run_forge("status", cwd=project).stdout
    newest = handles(project)[-1]
    assert "sandbox" not in manifest(project, newest["handle"])["command"]
    assert "sandbox:  none" in run_forge("proc", "show", newest["handle"], cwd=project).stdout


def test_a_verification_gate_runs_sandboxed_and_writes_only_its_report(
        templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", PLAIN_AGENT)
    gate = script(tmp_path / "gates", "gate", GATE)
    outside = gate.parent / "outside.txt"  # beside its program: seen, read-only
    outside.write_text("outside the tree\n")
    command = f"{gate} {{report}}"
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1",
                      "--verify", command, env={"GATE_OUTSIDE": str(outside)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert backlog(project)["001"]["status"] == "done"
    assert git("show", "HEAD:feature.txt", cwd=project) == "the work\n"
    assert outside.read_text() == "outside the tree\n"
    assert holding(project, TOKEN) == []
    # the baseline's gate and the item's: each read its report (the report dir was writable)
    finished = events(project, "verify_finished")
    assert [(e["itemId"], e["passed"], e.get("failing")) for e in finished] == [
        (None, True, 0), ("001", True, 0)], finished
    for started in events(project, "verify_started"):
        said = run_forge("proc", "output", started["handle"], cwd=project)
        assert said.returncode == 0, said.stderr
        assert said.stdout.splitlines() == [
            f"REFUSED {outside}: Read-only file system",
            "REFUSED .forge/backlog.json: Read-only file system"], said.stdout
        sandbox = manifest(project, started["handle"])["command"]["sandbox"]
        assert sandbox["kind"] == "bwrap"
        assert sandbox["writable"][0] == str(project.resolve())


# -- the network --------------------------------------------------------------------------------

class _Server:
    """A TCP server on the host's 127.0.0.1 that says hello to whoever connects."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self.accepted += 1
                conn.sendall(b"hello")

    def close(self) -> None:
        self._done.set()
        waiting.join(self._thread, 10)
        self.sock.close()


def test_sandbox_net_none_cuts_the_agent_off_from_the_hosts_loopback(
        templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", NET_AGENT)
    server = _Server()
    try:
        env = {"SANDBOX_TEST_PORT": str(server.port)}
        cut = loop_run(project, agent, "--sandbox", "bwrap", "--sandbox-net", "none",
                       "--iterations", "1", env=env)
        assert cut.returncode == 0, cut.stdout + cut.stderr
        assert git("show", "HEAD:net.txt", cwd=project).startswith("unreachable: ")
        assert server.accepted == 0
        (row,) = handles(project)
        assert manifest(project, row["handle"])["command"]["sandbox"]["network"] is False
        shared = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1", env=env)
        assert shared.returncode == 0, shared.stdout + shared.stderr
        assert git("show", "HEAD:net.txt", cwd=project) == "connected: hello\n"
        assert server.accepted == 1
    finally:
        server.close()


# -- what git outside the sandbox would read --------------------------------------------------

#: Points its git directory's ``commondir`` at a copy of the repository it made in its own
#: tree, whose ``config`` holds a ``core.fsmonitor`` — a program git runs on the next
#: ``git status`` in that tree, outside the sandbox: it touches ``$ESCAPE_MARK``.
COMMONDIR_AGENT = """#!/bin/sh
echo "work of item $FORGE_ITEM_ID" > "own-$FORGE_ITEM_ID.txt"
gitdir=$(git rev-parse --absolute-git-dir)
common=$(git rev-parse --git-common-dir)
copy="$PWD/.common-copy"
mkdir -p "$copy"
cp -R "$common/HEAD" "$common/refs" "$common/objects" "$copy/"
printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n' > "$copy/config"
printf '\\tfsmonitor = "touch %s; false"\\n' "$ESCAPE_MARK" >> "$copy/config"
echo "$copy" > "$gitdir/commondir"
echo FORGE_DONE
"""


@pytest.mark.parametrize("parallel", ["1", "2"], ids=["serial", "parallel"])
def test_no_program_an_agent_planted_through_commondir_runs_outside_the_sandbox(
        templates: Templates, tmp_path: Path, parallel: str) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", COMMONDIR_AGENT)
    mark = tmp_path / "escaped"
    loop_run(project, agent, "--sandbox", "bwrap", "--parallel", parallel, "--iterations", "1",
             env={"ESCAPE_MARK": str(mark)})
    assert not mark.exists(), "git-forge ran the agent's core.fsmonitor outside the sandbox"


#: Writes a ``packed-refs`` (a fresh repository has none) naming a ref under
#: ``refs/forge`` (where git-forge keeps set-aside work) and a tag.
PACKED_REFS_AGENT = """#!/bin/sh
echo "work of item $FORGE_ITEM_ID" > "own-$FORGE_ITEM_ID.txt"
head=$(git rev-parse HEAD)
{
    echo '# pack-refs with: peeled fully-peeled sorted '
    echo "$head refs/forge/abandoned/002/planted"
    echo "$head refs/tags/planted"
} > .git/packed-refs
echo FORGE_DONE
"""


def test_a_serial_agent_cannot_plant_refs_under_refs_forge_or_tags(templates: Templates,
                                                                    tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    assert not (project / ".git" / "packed-refs").exists()
    agent = script(tmp_path / "agents", "agent", PACKED_REFS_AGENT)
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert backlog(project)["001"]["status"] == "done"
    assert git("for-each-ref", "refs/forge", "refs/tags", cwd=project) == ""


# --- what a hostile agent tried next -----------------------------------------------------------


def test_an_agent_run_as_root_keeps_no_capability_to_remount(templates: Templates,
                                                             tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", """#!/bin/sh
grep CapEff /proc/self/status > "own-$FORGE_ITEM_ID.txt"
mount -o remount,rw / 2>/dev/null && echo remounted >> "own-$FORGE_ITEM_ID.txt"
umount .git/config 2>/dev/null && echo unmounted >> "own-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
""")
    config = (project / ".git" / "config").read_bytes()
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    said = git("show", "HEAD:own-001.txt", cwd=project)
    assert said == "CapEff:\t0000000000000000\n", said
    assert (project / ".git" / "config").read_bytes() == config


def test_a_nested_repositorys_fsmonitor_never_runs_outside(templates: Templates,
                                                          tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    mark = tmp_path / "ran-outside"
    agent = script(tmp_path / "agents", "agent", f"""#!/bin/sh
git init -q vendor && (cd vendor && echo y > g && git add g &&
    git -c user.email=a@b -c user.name=t commit -qm s)
printf '#!/bin/sh\\necho ran >> {mark}\\nexit 1\\n' > vendor/.git/fsmonitor
chmod +x vendor/.git/fsmonitor
git -C vendor config core.fsmonitor "$PWD/vendor/.git/fsmonitor"
git add vendor && echo changed > vendor/g
echo FORGE_DONE
""")
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not mark.exists(), "git-forge's git ran the nested repository's fsmonitor"


def test_a_worktrees_git_file_cannot_send_git_elsewhere(templates: Templates,
                                                        tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", """#!/bin/sh
mkdir -p planted && cp -r "$(git rev-parse --git-common-dir)/objects" planted/ 2>/dev/null
if echo "gitdir: $PWD/planted" > .git 2>/dev/null; then echo rewrote; else echo refused; fi \
    > "own-$FORGE_ITEM_ID.txt"
rm -rf planted
echo FORGE_DONE
""")
    result = loop_run(project, agent, "--sandbox", "bwrap", "--parallel", "2",
                      "--iterations", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert [backlog(project)[i]["status"] for i in ("001", "002")] == ["done", "done"]
    for item in ("001", "002"):
        assert git("show", f"HEAD:own-{item}.txt", cwd=project) == "refused\n"


def test_the_configuration_is_not_the_agents_to_change(templates: Templates,
                                                      tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    written = (project / ".forge.yaml").read_bytes()  # git forge init's example
    agent = script(tmp_path / "agents", "agent", """#!/bin/sh
printf 'loop:\\n  sandbox: none\\n' > .forge.yaml 2>/dev/null && echo changed > changed.txt
printf '{"loopRunner": {}}' > forge.config.json
echo "work of $FORGE_ITEM_ID" > "own-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
""")
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / ".forge.yaml").read_bytes() == written  # read-only: refused
    assert not (project / "changed.txt").exists()
    assert not (project / "forge.config.json").exists()  # made, and removed as it ended
    assert (f"item 001: its agent made {project.resolve() / 'forge.config.json'}, which git or "
            "the next run would read outside the sandbox: removed") in result.stdout
    assert git("show", "HEAD:own-001.txt", cwd=project) == "work of 001\n"
    (manifest,) = [json.loads(path.read_text()) for path in
                   (project / ".forge" / "proc").glob("*.manifest.json")]
    assert manifest["sandbox_removed"] == [str(project.resolve() / "forge.config.json")]


def test_a_repositorys_config_cannot_weaken_the_users_sandbox(templates: Templates,
                                                             tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    user = Path(os.environ["HOME"]) / ".config" / "git-forge" / "config.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("loop:\n  sandbox: bwrap\n  sandboxNet: none\n")
    try:
        (project / ".forge.yaml").write_text("loop:\n  sandbox: none\n  sandboxNet: shared\n")
        shown = json.loads(run_forge("config", "--json", cwd=project).stdout)
        found = {entry["key"]: entry["value"] for entry in shown} if isinstance(shown, list) \
            else {key: value["value"] if isinstance(value, dict) else value
                  for key, value in shown.items()}
        assert (found["loop.sandbox"], found["loop.sandboxNet"]) == ("bwrap", "none")
        (project / ".forge.yaml").write_text("loop:\n  sandboxWritable: [/]\n")
        before = snapshot(project)
        refused = run_forge("config", cwd=project)
        assert refused.returncode == 2 and refused.stderr.startswith("Error: ")
        assert "a repository must not widen what its agents may write" in refused.stderr
        assert snapshot(project) == before
    finally:
        user.unlink()


@pytest.mark.parametrize(("given", "why"), [
    ("/nonexistent/path", "does not exist"),
    (".", "holds the repository or is in it"),
    ("/", "holds the repository or is in it"),
    ("", "an empty path"),
])
def test_a_writable_path_no_sandbox_should_have_is_refused(templates: Templates, tmp_path: Path,
                                                           given: str, why: str) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", "#!/bin/sh\necho FORGE_DONE\n")
    before = snapshot(project)
    result = loop_run(project, agent, "--sandbox", "bwrap", "--sandbox-writable", given)
    assert result.returncode == 2 and result.stderr.startswith("Error: --sandbox-writable: ")
    assert why in result.stderr and result.stderr.count("\n") == 1
    assert snapshot(project) == before


def test_a_writable_path_is_resolved_once(templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(cache)
    agent = script(tmp_path / "agents", "agent", f"""#!/bin/sh
echo "$FORGE_ITEM_ID" > {link}/from-$FORGE_ITEM_ID.txt
echo FORGE_DONE
""")
    # the link is moved as the run goes: the path it named at the start stays the one
    result = loop_run(project, agent, "--sandbox", "bwrap", "--sandbox-writable", str(link),
                      "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (cache / "from-001.txt").exists()
    manifest = json.loads(next((project / ".forge" / "proc").glob("*.manifest.json"))
                          .read_text())
    assert str(cache) in manifest["command"]["sandbox"]["writable"]
    assert str(elsewhere) not in manifest["command"]["sandbox"]["writable"]


def test_a_sandbox_flag_without_a_sandbox_is_said(templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    agent = script(tmp_path / "agents", "agent", "#!/bin/sh\necho FORGE_DONE\n")
    result = loop_run(project, agent, "--sandbox-net", "none", "--iterations", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("warning: --sandbox-net and --sandbox-writable shape a sandbox, and this run has "
            "none: give --sandbox bwrap (or loop.sandbox)") in result.stderr


def test_a_path_dir_inside_the_tree_stays_writable(templates: Templates, tmp_path: Path) -> None:
    project = three_items(templates, tmp_path)
    tools = project / "tools"
    agent = script(tools, "agent", """#!/bin/sh
echo "work of $FORGE_ITEM_ID" > tools/made-by-$FORGE_ITEM_ID.txt
echo FORGE_DONE
""")
    (project / ".gitignore").write_text("tools/agent\n")
    git("add", ".gitignore", cwd=project)
    git("commit", "-q", "-m", "ignore", cwd=project)
    env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    result = loop_run(project, agent, "--sandbox", "bwrap", "--iterations", "1", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert git("show", "HEAD:tools/made-by-001.txt", cwd=project) == "work of 001\n"

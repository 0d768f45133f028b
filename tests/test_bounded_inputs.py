"""Hostile input never costs git-forge more than a bounded share: a helper that
prints without end (a ``--notify`` command, an external runner, an agent's
``--version``, a hook git runs) is read to its end but only the tail that becomes
a message is kept; a YAML document built to explode (a "billion laughs" alias
bomb in ``.forge.yaml``, the user config or an answers file) is refused at its
first anchor — one ``Error:`` line, exit 2, files unchanged, in well under a
second where expanding it took minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo
from helpers import forge_argv, git, run_forge, snapshot

from git_forge.capture import TAIL_BYTES

#: What a flood is: 200 MiB, written in 1 MiB chunks, then one last line.
FLOOD_MIB = 200
#: The peak resident memory, in KiB, a process reading a flood may reach.
MEMORY_BOUND_KIB = 100 * 1024
#: The flood's writer: ``flood.py STREAM LAST_LINE EXIT`` (stdin is read first, and dropped).
FLOOD = textwrap.dedent(f'''
    import sys
    stream = getattr(sys, sys.argv[1]).buffer
    if not sys.stdin.isatty():
        sys.stdin.read()
    chunk = b"x" * 1023 + b"\\n"
    block = chunk * 1024
    for _ in range({FLOOD_MIB}):
        stream.write(block)
    stream.write(sys.argv[2].encode() + b"\\n")
    stream.flush()
    sys.exit(int(sys.argv[3]))
''')


def flood_script(directory: Path) -> Path:
    script = directory / "flood.py"
    script.write_text(FLOOD)
    return script


def peak_rss_kib(code: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``code`` in a fresh interpreter: its own peak resident memory (KiB) and
    what it printed. The peak is the kernel's high-water mark of the interpreter's
    memory (``VmHWM``): ``ru_maxrss`` would start from the forking test process's."""
    wrapped = (code + "\nfrom pathlib import Path\n"
               "print(next(line.split()[1] for line in\n"
               "           Path('/proc/self/status').read_text().splitlines()\n"
               "           if line.startswith('VmHWM:')))\n")
    result = waiting.run([sys.executable, "-c", wrapped], cwd=cwd, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    *printed, peak = result.stdout.splitlines()
    return int(peak), "\n".join(printed)


# --- a helper's output: read to its end, its message's tail kept ---------------------------


def test_a_notifier_flooding_stderr_leaves_the_loop_small(tmp_path: Path) -> None:
    # 200 MiB on the notifier's stderr took the loop to ~440 MB (communicate kept it all).
    root = backlog_repo(tmp_path / "repo", "First")
    agent = tmp_path / "agent.py"
    agent.write_text("print('FORGE_NEEDS_HUMAN: which port?', flush=True)\n")
    notifier = f"{sys.executable} {flood_script(tmp_path)} stderr 'the last word' 4"
    wrapper = ("import resource, subprocess, sys\n"
               "code = subprocess.run(sys.argv[1:], stdout=sys.stderr).returncode\n"
               "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    result = waiting.run(
        [sys.executable, "-c", wrapper, *forge_argv(), "loop", "run", "--agent",
         f"{sys.executable} {agent}", "--notify", notifier, "--pause-on-needs-human"],
        cwd=root, capture_output=True, text=True, timeout=120)
    code, peak = map(int, result.stdout.split())
    assert code == 3, result.stderr  # paused for a human, as without the flood
    assert peak < MEMORY_BOUND_KIB, f"peak RSS {peak} KiB"
    events = [json.loads(line) for line in
              (root / ".forge" / "events.ndjson").read_text().splitlines()]
    failed = [event for event in events if event["type"] == "notify_failed"]
    assert [(event["event"], event["error"]) for event in failed] == [
        ("paused_human", f"{sys.executable} exited 4: the last word")]


def test_an_external_runner_flooding_stderr_is_quoted_by_its_tail(tmp_path: Path) -> None:
    script = flood_script(tmp_path)
    peak, printed = peak_rss_kib(textwrap.dedent(f'''
        import sys
        from pathlib import Path
        from git_forge.runner.base import RunnerError
        from git_forge.runner.external import ExternalRunner
        runner = ExternalRunner(bin=sys.executable, root=Path("."), backlog_dir=".forge",
                                list_command="", version_command="", answer_command="",
                                unblock_command="")
        try:
            runner.run([sys.executable, {str(script)!r}, "stderr", "runner gave up", "3"])
        except RunnerError as exc:
            print(exc.exit_status, len(exc.stderr), exc.stderr.splitlines()[-1])
    '''), cwd=tmp_path)
    assert peak < MEMORY_BOUND_KIB, f"peak RSS {peak} KiB"
    status, kept, last = printed.split(" ", 2)
    assert (status, last) == ("3", "runner gave up")
    assert int(kept) <= TAIL_BYTES


def test_an_agent_flooding_its_version_is_read_in_bounded_memory(tmp_path: Path) -> None:
    script = flood_script(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(f"#!/bin/sh\nexec {sys.executable} {script} stdout 'v9 (flood)' 0\n")
    claude.chmod(0o755)
    peak, printed = peak_rss_kib(
        "from git_forge.agents.profiles import PROFILES, describe\n"
        "entry = describe(PROFILES['claude'])\n"
        "print(entry['versionText'], entry['versionStatus'])\n",
        cwd=tmp_path, env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert peak < MEMORY_BOUND_KIB, f"peak RSS {peak} KiB"
    # the first line of the tail kept (no real version runs to 64 KiB): no number in it
    assert printed == "x" * 1023 + " unknown"


def test_git_flooding_stderr_fails_with_the_tail_of_it(git_repo: Path) -> None:
    # A hook or a filter git runs may print without end; git's stderr only becomes the
    # GitError's message. git's stdout is data and stays whole.
    script = flood_script(git_repo.parent)
    git("config", "alias.flood", f"!{sys.executable} {script} stderr 'hook: refused' 1",
        cwd=git_repo)
    peak, printed = peak_rss_kib(textwrap.dedent('''
        from git_forge.tree.errors import GitError
        from git_forge.tree.gitcli import run_git, start_git
        for call in (lambda: run_git(["flood"], cwd="."),
                     lambda: start_git(["flood"], cwd=".").result()):
            try:
                call()
            except GitError as exc:
                print(exc.exit_code, len(exc.message), exc.message.splitlines()[-1])
    '''), cwd=git_repo)
    assert peak < MEMORY_BOUND_KIB, f"peak RSS {peak} KiB"
    for line in printed.splitlines():
        code, kept, last = line.split(" ", 2)
        assert (code, last) == ("1", "hook: refused")
        assert int(kept) <= TAIL_BYTES
    assert len(printed.splitlines()) == 2


# --- YAML built to explode: refused at its first anchor -------------------------------------

#: Nine levels of nine aliases: 387 420 489 strings once expanded.
BILLION_LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{name}: &{name} [{', '.join([f'*{below}'] * 9)}]"
       for below, name in zip("abcdefgh", "bcdefghi", strict=True)]) + "\n"
REFUSAL = "line 1: YAML anchors and aliases are not allowed"
#: Seconds a refusal may take: expanding the bomb took 25 s to minutes.
REFUSAL_DEADLINE = 10.0


def assert_refused(result: subprocess.CompletedProcess, path: Path) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"Error: {path}: {REFUSAL}\n"


@pytest.mark.parametrize("command", [("status",), ("loop", "run", "--agent", "true"),
                                     ("backlog", "list")])
def test_a_cloned_forge_yaml_bomb_is_refused_at_once(tmp_path: Path,
                                                     command: tuple[str, ...]) -> None:
    origin = backlog_repo(tmp_path / "origin", "First")
    (origin / ".forge.yaml").write_text(BILLION_LAUGHS)
    git("add", ".forge.yaml", cwd=origin)
    git("commit", "-q", "-m", "config", cwd=origin)
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    before = snapshot(clone, skip_git=False)
    result = run_forge(*command, cwd=clone, timeout=REFUSAL_DEADLINE)
    assert_refused(result, clone / ".forge.yaml")
    assert snapshot(clone, skip_git=False) == before


def test_a_user_config_bomb_is_refused_at_once(git_repo: Path, isolated_env: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    user_config = isolated_env / ".config" / "git-forge" / "config.yaml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(BILLION_LAUGHS)
    before = snapshot(git_repo, skip_git=False)
    result = run_forge("loop", "run", "--agent", "true", cwd=git_repo,
                       timeout=REFUSAL_DEADLINE)
    assert_refused(result, user_config)
    assert snapshot(git_repo, skip_git=False) == before
    assert user_config.read_text() == BILLION_LAUGHS


def test_an_answers_file_bomb_is_refused_at_once(git_repo: Path, tmp_path: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-q", "-m", "backlog", cwd=git_repo)
    answers = tmp_path / "answers.yaml"
    answers.write_text(BILLION_LAUGHS)
    before = snapshot(git_repo, skip_git=False)
    result = run_forge("recover", "--answers", str(answers), cwd=git_repo,
                       timeout=REFUSAL_DEADLINE)
    assert_refused(result, answers)
    assert snapshot(git_repo, skip_git=False) == before


@pytest.mark.parametrize(("text", "line"), [
    ("loop:\n  agent: &name codex\n", 2),  # an anchor alone
    ("base: {x: 1}\nother:\n  <<: *base\n", 3),  # a merge key is an alias
    ("- &a [1]\n- *a\n", 1),
    ("--- &top\nkey: value\n", 1),
])
def test_any_anchor_or_alias_is_refused_with_its_line(text: str, line: int) -> None:
    from git_forge.parsing import DocumentTooComplex
    from git_forge.yamlfile import load_yaml

    with pytest.raises(DocumentTooComplex) as refused:
        load_yaml(text, "c.yaml")
    assert refused.value.message == \
        f"c.yaml: line {line}: YAML anchors and aliases are not allowed"
    assert refused.value.exit_code == 2

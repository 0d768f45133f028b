"""The launch blocker through the CLI and through `git hook run pre-launch`."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo
from helpers import forge_argv, git, run_forge, snapshot
from templates import Templates

from git_forge.loop.state import RunState, write_state

STARTED = "2026-11-29T10:11:12Z"


def build_project(root: Path) -> None:
    """A repository with a committed backlog of two items."""
    backlog_repo(root, "One", "Two")


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("preflight-project", build_project, tmp_path / "repo")


def prior_run(project: Path, **fields) -> None:
    write_state(project / ".forge", RunState(
        status="stopped", started_at=STARTED, current_item="002", run_id="run-1",
        blocked_items=["001"], needs_human_items=["003"], **fields))


def test_clean_tree_is_silent(project: Path) -> None:
    prior_run(project)  # state files are ignored: still clean
    result = run_forge("preflight", cwd=project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    result = run_forge("preflight", "--json", cwd=project)
    assert json.loads(result.stdout) == {"status": "ok", "run": None, "paths": []}


def test_dirty_with_prior_run_stops_and_names_the_run(project: Path) -> None:
    prior_run(project)
    backlog = project / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"][0].update(status="blocked", blockedReason="the API is down")
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    git("commit", "-qam", "[forge] 001: blocked — the API is down", cwd=project)
    (project / "README.md").write_text("changed\n")
    (project / "new dir").mkdir()
    (project / "new dir" / "a file.txt").write_text("x")
    (project / "tab\there.txt").write_text("x")
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    err = result.stderr
    assert STARTED in err and "run-1" in err
    assert "item in flight: 002" in err and "blocked:        001" in err
    assert "needs human:    none" in err  # 003 is not a needs-human item of the backlog
    assert "Touched by that run" in err and "item 002 was in flight" in err
    porcelain = git("status", "--porcelain", "-uall", cwd=project).splitlines()
    assert len(porcelain) == 3
    for line in porcelain:
        assert f"  {line}\n" in err
    assert "git forge reconcile" in err and "git forge recover" in err
    assert "--force" not in err
    document = json.loads(run_forge("preflight", "--json", cwd=project).stdout)
    assert document["status"] == "stop"
    assert document["run"]["startedAt"] == STARTED
    assert document["paths"] == porcelain


def test_dirty_without_prior_run_is_the_ordinary_refusal(project: Path) -> None:
    (project / "scratch.txt").write_text("x")
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: the working tree has uncommitted changes")
    assert "?? scratch.txt" in result.stderr and "STOP" not in result.stderr


def test_paths_are_shown_as_git_shows_them_by_its_own_config(project: Path) -> None:
    # core.quotePath from `git -c` (handed down in the environment) and from the
    # repository's config, as `git status --porcelain` honours it.
    (project / "ünï côdé.txt").write_text("x")
    (project / "tab\tü.txt").write_text("x")
    for config in ((), ("-c", "core.quotePath=false"), ("-c", "core.quotepath=off")):
        result = waiting.run(["git", *config, "forge", "preflight"], cwd=project,
                             capture_output=True, text=True)
        lines = git(*config, "status", "--porcelain", cwd=project).splitlines()
        assert result.returncode == 1 and len(lines) == 2
        for line in lines:
            assert f"  {line}\n" in result.stderr
        assert ("ünï" in result.stderr) is bool(config)
    git("config", "core.quotePath", "no", cwd=project)
    assert "  ?? \"ünï côdé.txt\"\n" in run_forge("preflight", cwd=project).stderr


def test_crash_bookkeeping_in_backlog_is_not_stranded_work(project: Path) -> None:
    prior_run(project)
    backlog = project / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"][1]["status"] = "in_progress"
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    assert git("status", "--porcelain", cwd=project).strip() == "M .forge/backlog.json"
    result = run_forge("preflight", cwd=project)
    assert (result.returncode, result.stderr) == (0, "")
    # Any other valid change is work queued through the backlog: the next loop run
    # commits it first ([forge] backlog: …), so it does not stop the launch either.
    document["items"][0]["title"] = "Renamed"
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    result = run_forge("preflight", cwd=project)
    assert (result.returncode, result.stderr) == (0, "")
    # A backlog.json that is not a backlog stops it, called what it is.
    backlog.write_text('{"items": "none"}\n')
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1
    assert result.stderr.startswith("STOP: .forge/backlog.json is corrupt (")


def test_unreadable_prior_state_still_stops(project: Path) -> None:
    (project / ".forge" / "state.json").write_text("{torn")
    (project / "x.txt").write_text("x")
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1 and "STOP" in result.stderr
    assert "could not be read" in result.stderr


def test_the_hook_runs_the_check(project: Path) -> None:
    assert run_forge("hooks", "install", cwd=project).returncode == 0
    clean = git_hook(project)
    assert clean.returncode == 0
    prior_run(project)
    (project / "README.md").write_text("changed\n")
    stopped = git_hook(project)
    assert stopped.returncode != 0 and "STOP" in stopped.stderr
    assert " M README.md" in stopped.stderr


def git_hook(project: Path):
    return waiting.run(["git", "hook", "run", "--ignore-missing", "pre-launch"],
                       cwd=project, capture_output=True, text=True)


@pytest.mark.parametrize("hooks_path", [False, True])
def test_install_chains_a_foreign_hook_and_uninstall_restores_it(
    project: Path, hooks_path: bool, tmp_path: Path
) -> None:
    directory = project / ".git" / "hooks"
    if hooks_path:
        directory = tmp_path / "shared-hooks"
        git("config", "core.hooksPath", str(directory), cwd=project)
    directory.mkdir(exist_ok=True)
    foreign = directory / "pre-launch"
    marker = tmp_path / "ran"
    foreign.write_text(f"#!/bin/sh\necho foreign ran >> '{marker}'\n"
                       "exit ${FOREIGN_EXIT:-0}\n")
    foreign.chmod(0o750)
    original = (foreign.read_bytes(), stat.S_IMODE(foreign.stat().st_mode))

    status = json.loads(run_forge("hooks", "status", "--json", cwd=project).stdout)
    assert status["foreignHook"] and not status["installed"]
    assert run_forge("hooks", "install", cwd=project).returncode == 0
    assert os.access(foreign, os.X_OK) and b"git-forge pre-launch hook" in foreign.read_bytes()
    status = json.loads(run_forge("hooks", "status", "--json", cwd=project).stdout)
    assert status["installed"] and status["chained"]

    assert git_hook(project).returncode == 0
    assert marker.read_text() == "foreign ran\n"
    # Either hook failing stops the launch.
    failing = git_hook_env(project, {"FOREIGN_EXIT": "7"})
    assert failing.returncode == 7

    assert run_forge("hooks", "install", cwd=project).returncode == 0  # idempotent
    removed = run_forge("hooks", "uninstall", cwd=project)
    assert removed.returncode == 0
    assert removed.stdout.startswith("removed git-forge's pre-launch hook; the previous hook "
                                     "is back at ")
    assert (foreign.read_bytes(), stat.S_IMODE(foreign.stat().st_mode)) == original
    assert not (directory / "pre-launch.pre-forge").exists()


def git_hook_env(project: Path, env: dict[str, str]):
    return waiting.run(["git", "hook", "run", "--ignore-missing", "pre-launch"],
                       cwd=project, capture_output=True, text=True, env={**os.environ, **env})


def test_install_without_a_foreign_hook_and_uninstall_leaves_nothing(project: Path) -> None:
    assert run_forge("hooks", "install", cwd=project).stdout.startswith(
        "pre-launch hook installed at .git/hooks/pre-launch")
    assert (project / ".git/hooks/pre-launch").exists()
    removed = run_forge("hooks", "uninstall", cwd=project)
    assert (removed.returncode, removed.stdout) == (
        0, "removed the pre-launch hook at .git/hooks/pre-launch\n")
    assert not (project / ".git/hooks/pre-launch").exists()
    assert run_forge("hooks", "status", cwd=project).stdout.startswith("no pre-launch hook")
    again = run_forge("hooks", "uninstall", "--json", cwd=project)
    assert json.loads(again.stdout)["removed"] is False
    assert run_forge("hooks", "uninstall", cwd=project).stdout == (
        "no git-forge pre-launch hook at .git/hooks/pre-launch; nothing to remove\n")


def without_git_forge_on_path() -> dict[str, str]:
    """A launcher's PATH that has git but no git-forge (an editor, cron, a CI job)."""
    git_dir = os.path.dirname(shutil.which("git") or "/usr/bin/git")
    path = os.pathsep.join(dict.fromkeys([git_dir, "/usr/bin", "/bin"]))
    assert shutil.which("git-forge", path=path) is None
    return {"PATH": path}


def test_the_hook_runs_the_git_forge_that_installed_it(project: Path) -> None:
    assert run_forge("hooks", "install", cwd=project).returncode == 0
    hook = project / ".git/hooks/pre-launch"
    # the interpreter of the git-forge that installed it, as pre-commit writes its own
    (python,) = re.findall(r"^python=(.*)$", hook.read_text(), re.M)
    assert os.path.dirname(python) == os.path.dirname(forge_argv()[0])
    bare = without_git_forge_on_path()
    assert (git_hook_env(project, bare).returncode, git_hook_env(project, bare).stderr) == (
        0, "")
    prior_run(project)
    (project / "README.md").write_text("changed\n")
    stopped = git_hook_env(project, bare)
    assert stopped.returncode == 1 and "STOP" in stopped.stderr
    # That interpreter gone: the git-forge on PATH, else one line that says what to do.
    hook.write_text(hook.read_text().replace(f"python={python}\n",
                                             "python=/nonexistent/python3\n"))
    assert "STOP" in git_hook(project).stderr
    lost = git_hook_env(project, bare)
    assert lost.returncode == 1 and lost.stderr == (
        "git-forge pre-launch hook: /nonexistent/python3 is gone and git-forge is not on "
        "PATH; install git-forge, then run git forge hooks install again\n")


def test_a_hooks_path_inside_the_work_tree_holds_no_work_of_its_own(project: Path) -> None:
    """The hook names this machine's git-forge: a file of this clone, not for a commit,
    kept out of git status (info/exclude) so that it never stops a launch itself."""
    git("config", "core.hooksPath", ".githooks", cwd=project)
    exclude = project / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    installed = run_forge("hooks", "install", cwd=project)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.splitlines() == [
        "pre-launch hook installed at .githooks/pre-launch",
        "  it runs this machine's git-forge, so it is no file to commit: .git/info/exclude "
        "keeps it out of git status"]
    assert git("status", "--porcelain", "-uall", cwd=project) == ""
    assert run_forge("preflight", cwd=project).returncode == 0
    assert git_hook(project).returncode == 0
    assert run_forge("hooks", "install", cwd=project).returncode == 0  # once, however often
    assert exclude.read_bytes().count(b"/.githooks/pre-launch") == 1
    assert run_forge("hooks", "uninstall", cwd=project).returncode == 0
    assert exclude.read_bytes() == before
    assert not (project / ".githooks/pre-launch").exists()


def test_install_refuses_a_committed_hook_and_names_the_line_to_add(project: Path) -> None:
    """A team's pre-launch hook committed in an in-tree core.hooksPath: renaming it
    would dirty the tree and stop every launch, so the install refuses and says what
    to add to that hook instead."""
    hook = project / ".githooks" / "pre-launch"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    git("add", ".githooks", cwd=project)
    git("commit", "-qm", "team hook", cwd=project)
    git("config", "core.hooksPath", ".githooks", cwd=project)
    before = snapshot(project, skip_git=False)
    result = run_forge("hooks", "install", cwd=project)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    assert result.stderr == (
        "Error: .githooks/pre-launch is a committed hook: installing would rename it and "
        "leave the tree dirty, which stops every launch; add the line "
        "'git forge preflight || exit $?' to it instead\n")
    assert snapshot(project, skip_git=False) == before
    assert git("status", "--porcelain", "-uall", cwd=project) == ""
    assert run_forge("preflight", cwd=project).returncode == 0


def test_uninstall_refuses_a_foreign_hook(project: Path) -> None:
    hook = project / ".git/hooks/pre-launch"
    hook.write_text("#!/bin/sh\nexit 0\n")
    result = run_forge("hooks", "uninstall", cwd=project)
    assert result.returncode != 0 and result.stderr.startswith("Error:")
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"


def test_only_in_progress_marks() -> None:
    from git_forge.backlog.bookkeeping import only_in_progress_marks

    head = {"items": [{"id": "001", "status": "pending"}, {"id": "002", "status": "done"}]}
    marked = {"items": [{"id": "001", "status": "in_progress"}, {"id": "002", "status": "done"}]}
    enc = lambda doc: json.dumps(doc).encode()  # noqa: E731
    assert only_in_progress_marks(enc(head), enc(marked))
    assert not only_in_progress_marks(enc(head), enc(head))  # no mark: not bookkeeping
    done_marked = {"items": [{"id": "001", "status": "pending"},
                             {"id": "002", "status": "in_progress"}]}
    assert not only_in_progress_marks(enc(head), enc(done_marked))
    extra = {"items": [*marked["items"], {"id": "003", "status": "pending"}]}
    assert not only_in_progress_marks(enc(head), enc(extra))
    assert not only_in_progress_marks(b"{", enc(marked))
    # The mark spelled with an escape is still a mark (the byte check must not skip it).
    escaped = enc(marked).replace(b"in_progress", b"in\\u005fprogress")
    assert b"in_progress" not in escaped and json.loads(escaped) == marked
    assert only_in_progress_marks(enc(head), escaped)


def _whole_tree_output(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """What the whole command tree prints for ``argv`` (help on stdout, usage errors
    as ``UsageError``), in-process."""
    from git_forge.cli.parser import build_parser, parse_command_line
    from git_forge.errors import UsageError

    try:
        parse_command_line(build_parser(prog="git forge"), argv)
    except SystemExit as exc:
        return int(exc.code or 0), capsys.readouterr().out
    except UsageError as exc:
        return exc.exit_code, f"Error: {exc.message}\n"
    raise AssertionError("expected help or a usage error")


@pytest.mark.parametrize("argv", [["preflight", "--help"], ["preflight", "-h"],
                                  ["preflight", "--bogus"], ["preflight", "a", "b"],
                                  ["preflight", "--backlog"], ["preflight", "x", "--backlog"],
                                  ["preflight", "--json", "a", "b"], ["preflight", "--", "a", "b"],
                                  ["preflight", "--json", "--bogus=1"]])
def test_the_fast_dispatch_parses_exactly_like_the_whole_tree(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `preflight` builds only its own parser (hot path); help and usage errors must
    # be the very ones the whole tree gives.
    monkeypatch.setenv("COLUMNS", "100")
    code, expected = _whole_tree_output(argv, capsys)
    result = run_forge(*argv, cwd=tmp_path, env={"COLUMNS": "100"})
    output = result.stdout if code == 0 else result.stderr
    assert (result.returncode, output) == (code, expected)
    assert expected.startswith(("usage: git forge preflight", "Error: "))


def test_a_stray_file_after_a_clean_run_is_not_called_the_runs_work(project: Path) -> None:
    write_state(project / ".forge", RunState(
        status="complete", started_at=STARTED, run_id="run-9", current_item=None,
        blocked_items=["001"], needs_human_items=["002"]))  # both long since answered
    (project / "notes.txt").write_text("mine\n")
    result = run_forge("preflight", cwd=project)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == ("STOP: the working tree has changes that git-forge's last run "
                        f"(run run-9, started {STARTED}) did not make.")
    assert "previous git-forge run left work" not in result.stderr
    assert "  blocked:        none" in lines and "  needs human:    none" in lines
    assert lines[lines.index("Changed outside the run (as git status --porcelain prints "
                             "them):") + 1] == "  ?? notes.txt"
    document = json.loads(run_forge("preflight", "--json", cwd=project).stdout)
    assert document["outside"] == ["?? notes.txt"] and document["touched"] == []


def test_the_clean_answer_in_json_is_the_one_json_helper_prints(project: Path) -> None:
    from git_forge.cli.output import json_text

    result = run_forge("preflight", "--json", cwd=project)
    expected = json_text({"status": "ok", "run": None, "paths": []}) + "\n"
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


def test_outside_a_work_tree_preflight_reports_as_every_command(tmp_path: Path) -> None:
    result = run_forge("preflight", str(tmp_path), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("Error: not a git repository (or any of the parent "
                             f"directories): {tmp_path.resolve()}\n")


def test_the_stop_text_names_the_runs_evidence_from_its_history(project: Path) -> None:
    # The STOP path reads the run's history (item commits since the run's base, a
    # stash naming an item) and says which stranded paths they touched.
    from git_forge.cli.stop import render_stop
    from git_forge.reconcile.preflight import check
    from git_forge.reconcile.stop import explain
    from git_forge.tree.fast_status import porcelain_fast
    from git_forge.workspace import locate

    base = git("rev-parse", "HEAD", cwd=project).strip()
    for item_id, name in (("001", "one.txt"), ("002", "two.txt")):
        (project / name).write_text(f"{item_id}\n")
        git("add", name, cwd=project)
        git("commit", "-qm", f"[forge] {item_id}: work on {name}", cwd=project)
    (project / "one.txt").write_text("changed by hand\n")
    git("stash", "push", "-q", "-m", "forge: abandoned work from item 002", cwd=project)
    prior_run(project, base_commit_hash=base)
    (project / "one.txt").write_text("001 again\n")
    (project / "two.txt").write_text("002 again\n")
    (project / "elsewhere.txt").write_text("x\n")

    workspace = locate(project)
    result = check(workspace.root, workspace.state_dir, workspace.backlog_file,
                   porcelain_fast(project))
    run = result.run or RunState()
    by_git = explain(workspace.root, workspace.state_dir, workspace.backlog_file,
                     result.entries, run)
    reasons = {entry.path: why for entry, why in by_git.touched}
    assert reasons["one.txt"].startswith("touched by item 001's commit ")
    assert reasons["two.txt"].startswith("touched by item 002's commit ")
    text = "\n".join(render_stop(result, by_git, workspace.root)) + "\n"

    out = run_forge("preflight", cwd=project)
    assert (out.returncode, out.stdout, out.stderr) == (1, "", text)


def test_the_launchers_end_as_python_programs_do(project: Path, tmp_path: Path) -> None:
    # The installed launcher, ``python -m git_forge`` and the hook's own ``python -c`` end
    # every command by returning its exit code — the interpreter finalizes, running what
    # was registered at exit — but one: the silent clean answer to the hook's own command
    # line (``git forge preflight``, nothing more), which ends at once. The same check
    # with an option, on a tree that is not clean, or from within a program (``main``
    # called with its words), finalizes.
    import git_forge

    source = Path(git_forge.__file__).resolve().parent.parent
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import atexit\natexit.register(lambda: print('finalized'))\n")
    env = {**os.environ, "PYTHONPATH": f"{hook}{os.pathsep}{source}"}
    in_process = "import sys; from git_forge.cli.main import main; sys.exit(main(sys.argv[1:]))"
    as_the_hook = ("import gc, sys; gc.disable(); from git_forge.cli.main import main; "
                   "sys.exit(main())")
    for launcher in ([sys.executable, str(source / "bin" / "git-forge")],
                     [sys.executable, "-m", "git_forge"], [sys.executable, "-c", as_the_hook],
                     [sys.executable, "-c", in_process]):
        for command, answer in ((["preflight"], ""), (["preflight", "--json"], '{\n  "status"'),
                                (["status"], "loop:"), (["backlog", "add", "--title", "x"], "")):
            out = waiting.run([*launcher, *command], cwd=project, capture_output=True,
                              text=True, env=env)
            assert out.returncode == 0, (launcher, command, out.stderr)
            at_once = command == ["preflight"] and launcher[-1] != in_process
            assert out.stdout.startswith(answer), (launcher, command)
            assert out.stdout.endswith("finalized\n") != at_once, (launcher, command)
        subprocess.run(["git", "-C", str(project), "reset", "-q", "--hard"], check=True)
    (project / "stranded.txt").write_text("x\n")
    out = waiting.run([sys.executable, str(source / "bin" / "git-forge"), "preflight"],
                      cwd=project, capture_output=True, text=True, env=env)
    assert out.returncode == 1 and out.stdout == "finalized\n", out.stderr


def test_a_closed_standard_stream_is_dev_null_as_git_takes_it(project: Path) -> None:
    """Started with stdout closed (``git-forge preflight >&-``), every spelling of the
    clean check answers 0, as the hook's own does, and the other commands run as
    they would: no traceback. With stderr closed too, a refusal is still exit 2."""
    import shlex

    forge = shlex.join(forge_argv())
    for words, code in ((["preflight"], 0), (["preflight", "."], 0),
                        (["preflight", "--json"], 0), (["--version"], 0), (["status"], 0),
                        (["__complete", "items"], 0), (["status", "--bogus"], 2)):
        closed = waiting.run(["sh", "-c", f"exec 1>&-; exec {forge} {shlex.join(words)}"],
                             cwd=project, capture_output=True, text=True)
        assert closed.returncode == code, (words, closed.stderr)
        assert closed.stderr.startswith("Error: ") if code else closed.stderr == "", words
    both = waiting.run(["sh", "-c", f"exec 1>&- 2>&-; exec {forge} status --bogus"],
                       cwd=project, capture_output=True, text=True)
    assert both.returncode == 2
    # an error naming a path the locale cannot encode, stderr closed: still exit 2
    ascii_only = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    named = waiting.run(["sh", "-c", f"exec 2>&-; exec {forge} status {project}/naïve"],
                        cwd=project, capture_output=True, env=ascii_only)
    assert named.returncode == 2


def test_a_relative_git_dir_is_read_from_where_the_command_runs(project: Path) -> None:
    """``GIT_DIR=../.git GIT_WORK_TREE=.. git forge preflight`` from a subdirectory: git
    reads those paths from where it starts, and so does git-forge for each git it
    starts elsewhere."""
    sub = project / "sub"
    sub.mkdir()
    env = {**os.environ, "GIT_DIR": "../.git", "GIT_WORK_TREE": ".."}
    assert waiting.run(["git", "status", "--porcelain"], cwd=sub, env=env,
                       capture_output=True, text=True).stdout == ""
    for words in (["preflight"], ["preflight", "--json"], ["status"]):
        out = run_forge(*words, cwd=sub, env=env)
        assert out.returncode == 0 and out.stderr == "", (words, out.stderr)
    # git reads a relative GIT_INDEX_FILE from the work tree's top (a pre-commit hook
    # gets GIT_INDEX_FILE=.git/index): so does every git git-forge starts there
    index = {**os.environ, "GIT_INDEX_FILE": ".git/index"}
    assert waiting.run(["git", "status", "--porcelain"], cwd=sub, env=index,
                       capture_output=True, text=True).stdout == ""
    out = run_forge("preflight", cwd=sub, env=index)
    assert (out.returncode, out.stderr) == (0, "")
    # GIT_DIR alone: the directory the command starts in is the work tree, as for git,
    # which sees every file of the top as deleted there — not the top's tree
    alone = {**os.environ, "GIT_DIR": "../.git"}
    assert waiting.run(["git", "status", "--porcelain"], cwd=sub, env=alone,
                       capture_output=True, text=True).stdout != ""
    assert run_forge("preflight", cwd=sub, env=alone).returncode == 1
    # where the current directory is gone, the variables are left as they are
    gone = project / "gone"
    gone.mkdir()
    version = waiting.run(["sh", "-c", f"cd {gone} && rmdir {gone} && exec "
                           f"{' '.join(forge_argv())} --version"],
                          env={**os.environ, "GIT_DIR": "../x/.git"}, capture_output=True,
                          text=True)
    assert (version.returncode, version.stderr) == (0, "")

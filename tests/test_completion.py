"""Shell completion: the committed scripts, ``git forge completion``, the ``__complete``
fast path, and the real completion functions run by real shells on a real backlog."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import sys
import termios
from pathlib import Path

import pytest
import waiting
from builders import blocked, item, write_backlog
from helpers import forge_argv, git, load_generator, run_forge, snapshot

ROOT = Path(__file__).resolve().parent.parent
COMPLETIONS = ROOT / "completions"
GIT_BASH_COMPLETION = Path("/usr/share/bash-completion/completions/git")
BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")
OWNER_SCRIPT = Path(__file__).parent / "supervisor_owner.py"
BLOCKED = ["002", "003", "005"]
ALL_IDS = ["001", "002", "003", "004", "005"]
SHARED_REASON = "needs the database schema decision"


@pytest.fixture
def project(git_repo: Path) -> Path:
    """A repository with a backlog (git forge init): five items, three blocked — two
    of them on the same reason, so they form cluster c002."""
    result = run_forge("init", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    write_backlog(git_repo / ".forge", [
        item("001", title="Parse the config file", notes=""),
        blocked("002", SHARED_REASON, title="Store sessions", notes="", deferred=False),
        blocked("003", SHARED_REASON, title="Migrate old rows", notes="", deferred=False),
        item("004", "done", title="Write the changelog", notes=""),
        blocked("005", "flaky network in the integration test", title="Retry uploads",
                notes="", deferred=False),
    ], project="demo")
    return git_repo


@pytest.fixture
def handles(project: Path) -> list[str]:
    """Two finished processes supervised for real (manifests under .forge/proc)."""
    code = json.dumps([sys.executable, "-c", "print('ok')"])
    owner = waiting.run(
        [sys.executable, str(OWNER_SCRIPT), str(project / ".forge" / "proc"),
         str(project / ".forge" / "events.ndjson"), str(project), "wait", code, code],
        capture_output=True, text=True, timeout=60, check=True)
    lines = owner.stdout.splitlines()
    assert lines[-1] == "done"
    return sorted(json.loads(line)["handle"] for line in lines[:-1])


def complete(*args: str, cwd: Path) -> list[str]:
    result = run_forge("__complete", *args, cwd=cwd)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout.splitlines()


# --- the committed scripts ---------------------------------------------------------------------


def test_committed_scripts_are_generated_from_the_current_parser() -> None:
    generator = load_generator()
    for shell, name in generator.SCRIPT_NAMES.items():
        committed = (COMPLETIONS / name).read_text("utf-8")
        assert committed == generator.completion_script(shell), (
            f"completions/{name} is out of date: run python tools/generate_docs.py")


def test_every_command_and_verb_has_a_completion_entry() -> None:
    generator = load_generator()
    paths = generator.command_paths(generator.parser())
    assert ("backlog", "answer") in paths and ("completion",) in paths
    bash = (COMPLETIONS / "git-forge.bash").read_text("utf-8")
    zsh = (COMPLETIONS / "_git-forge").read_text("utf-8")
    fish = (COMPLETIONS / "git-forge.fish").read_text("utf-8")
    for path in paths:
        word = "_".join(part.replace("-", "_") for part in path)
        assert f"_shtab_git_forge_{word}_option_strings=(" in bash, path
        assert f"_shtab_git_forge_{word}_options=(" in zsh, path
        assert f"'_shtab_git_forge_using {' '.join(path)}'" in fish, path
    assert "__complete" not in run_forge("--help", cwd=ROOT).stdout


def test_the_hidden_fast_path_is_in_no_script_or_help_as_a_command() -> None:
    for name in ("git-forge.bash", "_git-forge", "git-forge.fish"):
        text = (COMPLETIONS / name).read_text("utf-8")
        assert "__complete" in text  # called by the dynamic-value functions ...
        assert "_shtab_git_forge___complete" not in text  # ... never offered as a command


@pytest.mark.parametrize("shell, check", [("bash", ["bash", "-n"]), ("zsh", ["zsh", "-n"]),
                                          ("fish", ["fish", "--no-execute"])])
def test_scripts_parse_in_their_shells(shell: str, check: list[str]) -> None:
    if shutil.which(check[0]) is None:
        pytest.skip(f"{shell} is not installed")
    name = {"bash": "git-forge.bash", "zsh": "_git-forge", "fish": "git-forge.fish"}[shell]
    result = waiting.run([*check, str(COMPLETIONS / name)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_completion_command_prints_the_shipped_scripts(tmp_path: Path) -> None:
    for shell, name in (("bash", "git-forge.bash"), ("zsh", "_git-forge"),
                        ("fish", "git-forge.fish")):
        result = run_forge("completion", shell, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout == (COMPLETIONS / name).read_text("utf-8")


def test_completion_command_refuses_an_unknown_shell(tmp_path: Path) -> None:
    result = run_forge("completion", "tcsh", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "tcsh" in lines[0]


# --- the fast path -----------------------------------------------------------------------------


def test_fast_path_lists_item_ids_clusters_and_backlogs(project: Path) -> None:
    assert complete("items", cwd=project) == ALL_IDS
    assert complete("blocked", cwd=project) == BLOCKED
    assert complete("clusters", cwd=project) == ["c002", "c005"]
    assert complete("answerable", cwd=project) == [*BLOCKED, "c002"]
    assert complete("backlogs", cwd=project) == [".forge"]
    assert complete("items", "--describe", cwd=project)[1] == "002\tStore sessions"
    assert complete("clusters", "--describe", cwd=project)[0] == "c002\tcluster of items 002, 003"


def test_decision_revoke_is_offered_only_items_with_an_answer_to_take_back(
        project: Path) -> None:
    """A pending item holding an answer (``backlog answer``) and a blocked item whose
    answer is recorded: those two; a done item ran with its answer, and items never
    answered (or only deferred) have nothing to take back."""
    assert run_forge("backlog", "answer", "005", "Retry three times", cwd=project).returncode == 0
    for args in (("--item", "002", "--answer", "Use SQLite"), ("--item", "003", "--deferred")):
        result = run_forge("decision", "record", "--question", SHARED_REASON, *args, cwd=project)
        assert result.returncode == 0, result.stderr
    assert complete("revocable", cwd=project) == ["002", "005"]
    replies = run_bash(f"source {COMPLETIONS / 'git-forge.bash'}\n"
                       "complete_line _shtab_git_forge git-forge decision revoke ''",
                       cwd=project)
    assert replies == {"git-forge decision revoke ": ["002", "005"]}


def test_fast_path_lists_the_handles_of_real_processes(project: Path, handles) -> None:
    # the proc verbs take an item id too (its latest process): offered first
    assert complete("handles", cwd=project) == ["001", *handles]
    described = complete("handles", "--describe", cwd=project)
    latest = json.loads(run_forge("proc", "show", "001", "--json", cwd=project).stdout)
    assert described[0] == f"001\titem 001's latest process ({latest['handle']}, exited)"
    assert described[1] == f"{handles[0]}\titem 001, exited"


def test_fast_path_follows_backlog_flags_config_and_subdirectories(project: Path) -> None:
    other = project / "plans" / "next"
    other.mkdir(parents=True)
    write_backlog(other, [blocked("010", "why", title="Elsewhere", notes="", deferred=False)],
                  project="demo")
    (project / "src").mkdir()
    assert complete("blocked", cwd=project / "src") == BLOCKED
    assert complete("blocked", "--backlog", "plans/next", cwd=project) == ["010"]
    assert complete("blocked", "--backlog=plans/next", cwd=project / "src") == ["010"]
    assert complete("items", "--backlog-dir", "../plans/next", cwd=project / "src") == ["010"]
    assert complete("backlogs", cwd=project / "src") == [".forge", "plans/next"]
    assert complete("backlog-dirs", cwd=project / "src") == ["../.forge", "../plans/next"]
    # A repository config that moves the backlog is honoured (through the real resolver).
    (project / ".forge.yaml").write_text("backlog: plans/next\n")
    assert complete("items", cwd=project) == ["010"]


def test_fast_path_is_silent_and_writes_nothing_when_nothing_can_be_read(
        project: Path, tmp_path: Path) -> None:
    (project / ".forge" / "backlog.json").write_text('{"items": [ torn')
    before = snapshot(project)
    for kind in ("items", "blocked", "answerable", "clusters", "handles"):
        assert complete(kind, cwd=project) == []
    assert snapshot(project) == before
    nowhere = tmp_path / "not-a-project"
    nowhere.mkdir()
    assert complete("items", cwd=nowhere) == []
    assert complete("backlogs", cwd=nowhere) == []
    assert list(nowhere.iterdir()) == []


def test_fast_path_shows_a_title_that_is_no_text_as_none_however_deep(project: Path) -> None:
    """A TAB leaves the backlog's depth unchecked (it walks nothing): a title nested
    600 levels deep — past git-forge's limit, within the parser's — is offered as no
    title, the item by its id; and the blocked items' clusters, which are built as
    items, are offered none rather than a traceback. Nothing is written."""
    path = project / ".forge" / "backlog.json"
    document = json.loads(path.read_text())
    document["items"][0]["title"] = json.loads("[" * 600 + "]" * 600)
    document["items"][1]["notes"] = json.loads("[" * 600 + "]" * 600)
    path.write_text(json.dumps(document))
    before = snapshot(project)
    assert complete("items", cwd=project) == ALL_IDS
    assert complete("items", "--describe", cwd=project)[:2] == ["001", "002\tStore sessions"]
    assert complete("blocked", cwd=project) == BLOCKED
    assert complete("clusters", cwd=project) == []
    assert snapshot(project) == before


def test_fast_path_reads_only_a_regular_file_and_offers_only_one_word_ids(
        project: Path, tmp_path: Path) -> None:
    """A backlog.json that is a FIFO (no writer) or a device that never ends is no
    backlog to a TAB: no candidates, at once. An id a shell could not offer as one
    candidate — a newline, a tab, an escape, a ``$(…)``, a ``*`` — is not offered: only
    ids, as every command takes them (bash puts a candidate on the line as it is)."""
    path = project / ".forge" / "backlog.json"
    document = json.loads(path.read_text())
    path.unlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero")):
        path.symlink_to(target)
        before = snapshot(project)
        assert complete("items", cwd=project) == []  # run_forge's deadline: no wait
        assert snapshot(project) == before
        path.unlink()
    document["items"][0]["id"] = "a\nb"
    document["items"][1]["id"] = "a\tb"
    document["items"][2]["id"] = "\u001b[2J"
    document["items"][3]["id"] = "$(touch${IFS}pwned)"
    document["items"].append({**document["items"][4], "id": "*"})
    path.write_text(json.dumps(document))
    assert complete("items", cwd=project) == ["005"]


@pytest.mark.parametrize("args", [("nonsense",), (), ("items", "blocked"),
                                  ("items", "--backlog")])
def test_fast_path_refuses_a_malformed_call(project: Path, args: tuple[str, ...]) -> None:
    result = run_forge("__complete", *args, cwd=project)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")


# --- bash, for real ----------------------------------------------------------------------------

needs_git_completion = pytest.mark.skipif(
    not GIT_BASH_COMPLETION.is_file(), reason=f"git's bash completion is not at "
                                              f"{GIT_BASH_COMPLETION}")

BASH_DRIVER = r"""
complete_line() {  # $1: completion function; the rest: the words, the last being completed
  local fn=$1; shift
  COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
  COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  "$fn" 2>/dev/null
  printf '%s\n' "=== $*" "${COMPREPLY[@]}"
}
"""


def run_bash(script: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Run ``script`` in a real non-interactive bash; the candidates per completed line."""
    result = waiting.run(["bash", "--norc", "--noprofile", "-c", BASH_DRIVER + script],
                            cwd=cwd, capture_output=True, text=True, timeout=60,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stderr
    replies: dict[str, list[str]] = {}
    current = None
    for line in result.stdout.splitlines():
        if line.startswith("=== "):
            current = line[4:]
            replies[current] = []
        elif current is not None and line:
            replies[current].append(line)
    return replies


def top_level_commands() -> list[str]:
    generator = load_generator()
    return [path[0] for path in generator.command_paths(generator.parser()) if len(path) == 1]


@needs_git_completion
def test_bash_completes_git_forge_through_gits_own_completion(project: Path, handles) -> None:
    lines = [
        "git forge ", "git forge backlog ", "git forge backlog answer ",
        "git forge backlog unblock 00", "git forge backlog show ", "git forge proc show ",
        "git forge proc wait ", "git forge proc output ", "git forge proc output 0",
        "git forge backlog done ", "git forge backlog drop 00",
        "git forge recover --answer ", "git forge recover --answer c",
        "git forge recover --merge ",
        "git forge backlog list --status ", "git forge backlog answer --backlog ",
        "git -C . forge backlog answer ", "git forge completion ",
    ]
    calls = "\n".join(
        "complete_line __git_wrap__git_main " + " ".join(f"'{w}'" for w in line.split(" "))
        for line in lines)
    replies = run_bash(f"source {GIT_BASH_COMPLETION}\nsource {COMPLETIONS / 'git-forge.bash'}\n"
                       + calls, cwd=project)
    assert sorted(replies["git forge "]) == sorted(top_level_commands())
    assert replies["git forge backlog "] == ["list", "show", "add", "edit", "answer", "unblock",
                                             "done", "drop", "topology"]
    assert replies["git forge backlog answer "] == BLOCKED
    assert replies["git forge backlog unblock 00"] == BLOCKED
    assert replies["git forge backlog show "] == ALL_IDS
    assert replies["git forge proc show "] == ["001", *handles]
    assert replies["git forge proc wait "] == ["001", *handles]
    # proc output takes an item id (its latest process), so TAB offers the ids too
    assert replies["git forge proc output "] == ["001", *handles]
    assert replies["git forge proc output 0"] == [
        value for value in ["001", *handles] if value.startswith("0")]
    assert replies["git forge backlog done "] == ALL_IDS
    assert replies["git forge backlog drop 00"] == ALL_IDS
    assert replies["git forge recover --answer "] == ["002=", "003=", "005=", "c002="]
    assert replies["git forge recover --answer c"] == ["c002="]
    assert replies["git forge recover --merge "] == ["c002", "c005"]
    assert replies["git forge backlog list --status "] == [
        "pending", "in_progress", "done", "blocked", "needs-human", "deferred"]
    assert replies["git forge backlog answer --backlog "] == [".forge"]
    assert replies["git -C . forge backlog answer "] == BLOCKED
    assert replies["git forge completion "] == ["bash", "zsh", "fish"]


def test_bash_completes_the_git_forge_command_itself(project: Path) -> None:
    other = project / "next"
    other.mkdir()
    write_backlog(other, [blocked("010", "why", title="Elsewhere", notes="", deferred=False)],
                  project="demo")
    script = (f"source {COMPLETIONS / 'git-forge.bash'}\n"
              # the function `complete` registered for git-forge, as bash would call it
              "fn=$(complete -p git-forge | sed 's/.* -F \\([^ ]*\\) .*/\\1/')\n"
              "complete_line $fn git-forge ''\n"
              "complete_line $fn git-forge backlog answer ''\n"
              "complete_line $fn git-forge backlog answer --backlog next ''\n"
              "complete_line $fn git-forge backlog answer --json -\n"
              "complete_line $fn git-forge decision record --item ''\n")
    replies = run_bash(script, cwd=project)
    assert sorted(replies["git-forge "]) == sorted(top_level_commands())
    assert replies["git-forge backlog answer "] == BLOCKED
    assert replies["git-forge backlog answer --backlog next "] == ["010"]
    assert "--backlog" in replies["git-forge backlog answer --json -"]
    assert replies["git-forge decision record --item "] == BLOCKED


@needs_git_completion
@pytest.mark.skipif(not BASH_COMPLETION.is_file(), reason="bash-completion is not installed")
def test_bash_completion_loads_the_installed_script_on_demand(project: Path,
                                                               tmp_path: Path) -> None:
    """Installed where bash-completion looks (here: the user dir), nothing needs
    sourcing: `git forge <TAB>` and `git-forge <TAB>` load it on first use."""
    installed = tmp_path / "data" / "bash-completion" / "completions"
    installed.mkdir(parents=True)
    shutil.copy(COMPLETIONS / "git-forge.bash", installed / "git-forge")
    script = (f"source {BASH_COMPLETION}\n"
              "_completion_loader git\n"
              "complete_line __git_wrap__git_main git forge backlog answer ''\n"
              "_completion_loader git-forge\n"
              "complete_line _git_forge_command git-forge backlog show ''\n")
    replies = run_bash(script, cwd=project, env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert replies["git forge backlog answer "] == BLOCKED
    assert replies["git-forge backlog show "] == ALL_IDS


# --- zsh and fish, smoke tests -----------------------------------------------------------------


class Terminal:
    """An interactive shell on a real pseudo-terminal."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.output = b""
        self.seen = 0
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            try:
                os.chdir(cwd)
                os.execvpe(argv[0], argv, {**os.environ, "TERM": "xterm"})
            finally:
                os._exit(127)

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def expect(self, *needles: str, timeout: float = 30) -> str:
        """Wait until every needle has appeared since the last ``expect``; the text since."""
        deadline = waiting.Deadline(timeout)
        while not all(needle.encode() in self.output[self.seen:] for needle in needles):
            if deadline.passed:
                raise AssertionError(f"{needles} did not appear in:\n{self.output!r}")
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.output += os.read(self.fd, 65536)
                except OSError:
                    break
        text = self.output[self.seen:].decode("utf-8", "replace")
        self.seen = len(self.output)
        return text

    def wait_line_editor(self, timeout: float = 30) -> None:
        """Wait until the shell's line editor has the terminal: it turns canonical
        mode off to read key by key, after the prompt is drawn. A key typed before
        that would be the terminal driver's, not the editor's."""
        waiting.wait_for(lambda: not termios.tcgetattr(self.fd)[3] & termios.ICANON, timeout,
                         what="the line editor reading the terminal")

    def close(self) -> None:
        waiting.kill_tree(self.pid)
        waiting.reap(self.pid, 10)
        os.close(self.fd)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_lists_item_ids_for_git_forge_and_git_forge(project: Path) -> None:
    zsh = Terminal(["zsh", "-f", "-i"], project)
    try:
        # The prompt "[%] " is not in the echo of the line that sets it ("[%%] ").
        zsh.send(f"fpath=({COMPLETIONS} $fpath); autoload -Uz compinit; compinit -u -D; "
                 "zstyle ':completion:*' verbose yes; PS1='[%%] '\n")
        zsh.expect("[%] ")
        # Ctrl-D at the end of a line lists the choices (delete-char-or-list).
        zsh.send("git-forge backlog show \x04")
        listed = zsh.expect("Parse the config file", "Retry uploads")
        assert "002  -- Store sessions" in listed
        zsh.send("\x15git forge backlog answer \x04")  # Ctrl-U first; via zsh's own _git
        listed = zsh.expect("Migrate old rows", "Retry uploads")
        assert "Parse the config file" not in listed  # 001 is not blocked, so not listed
    finally:
        zsh.close()


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_git_forge(project: Path) -> None:
    script = (f"source {COMPLETIONS / 'git-forge.fish'}\n"
              "complete -C 'git-forge backlog answer '\necho ===\n"
              "complete -C 'git-forge backlog show 00'\necho ===\n"
              "complete -C 'git-forge recover --merge '\necho ===\n"
              "complete -C 'git-forge recover --answer 00'\necho ===\n"
              # fish 3.6 passes `git forge` on only with the line the script's header gives
              "complete -c git -f -n '__fish_git_using_command forge' "
              "-a '(__fish_git_complete_custom_command forge)'\n"
              "complete -C 'git forge backlog answer '\n")
    # Not --no-config: that also turns off loading fish's own git completion. HOME and
    # XDG_CONFIG_HOME are the test's own, so no user configuration is read.
    result = waiting.run(["fish", "-c", script], cwd=project,
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ,
                                 "PATH": f"{Path(forge_argv()[0]).parent}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    answer, show, merge, answer_flag, via_git = (part.strip().splitlines()
                                    for part in result.stdout.split("===\n"))
    assert answer == ["002\tStore sessions", "003\tMigrate old rows", "005\tRetry uploads"]
    assert [line.split("\t")[0] for line in show] == ALL_IDS
    assert [line.split("\t")[0] for line in merge] == ["c002", "c005"]
    assert [line.split("\t")[0] for line in answer_flag] == ["002=", "003=", "005="]
    assert [line.split("\t")[0] for line in via_git] == BLOCKED


def test_git_sees_forge_as_a_command(project: Path) -> None:
    """`git forge` is git-forge on PATH, which is what every completion relies on."""
    assert git("forge", "__complete", "blocked", cwd=project).splitlines() == BLOCKED


# --- recover --answer ID=TEXT, typed on a real terminal ----------------------------------------

#: Per shell: the command line, and the setup that loads our script (and git's
#: completion), binds Ctrl-T to print the line being edited between [[ ]] and sets the
#: prompt to ">>> ". Neither "[[", "]]" nor ">>> " is in the setup's own text, so its
#: echo is never taken for them.
LINE_SHELLS = {
    "bash": (["bash", "--norc", "--noprofile", "-i"],
             f"source {BASH_COMPLETION}; source {GIT_BASH_COMPLETION}; "
             f"source {COMPLETIONS / 'git-forge.bash'}; "
             "bind -x '\"\\C-t\": printf \"\\n%s%s%s\\n\" \"[\" \"[$READLINE_LINE]\" \"]\"'; "
             "PS1=\"$(printf '%s%s' '>>' '> ')\"\n"),
    "zsh": (["zsh", "-f", "-i"],
            f"fpath=({COMPLETIONS} $fpath); autoload -Uz compinit; compinit -u -D; "
            "show() { zle -I; print -r -- \"[\"\"[$BUFFER]\"\"]\" }; zle -N show; "
            "bindkey '^T' show; PS1=\"$(printf '%s%s' '>>' '> ')\"\n"),
    "fish": (["fish", "-i"],
             f"source {COMPLETIONS / 'git-forge.fish'}; "
             "complete -c git -f -n '__fish_git_using_command forge' "
             "-a '(__fish_git_complete_custom_command forge)'; "
             "bind \\ct 'echo; echo \"[\"\"[\"(commandline)\"]\"\"]\"; commandline -f repaint'; "
             "function fish_prompt; printf '%s%s' '>>' '> '; end\n"),
}


def _line_after_tabs(shell: str, project: Path, typed: str) -> str:
    argv, setup = LINE_SHELLS[shell]
    terminal = Terminal(argv, project)
    try:
        terminal.send(setup)
        terminal.expect(">>> ")
        terminal.wait_line_editor()
        terminal.send(typed + "\x14")
        text = terminal.expect("]]")
        return text[text.rindex("[[") + 2:text.rindex("]]")]
    finally:
        terminal.close()


@pytest.mark.parametrize("shell", sorted(LINE_SHELLS))
def test_an_answer_id_completes_to_one_equals_sign_and_no_more(project: Path,
                                                               shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    if shell == "bash" and not (BASH_COMPLETION.is_file() and GIT_BASH_COMPLETION.is_file()):
        pytest.skip("bash-completion or git's bash completion is not installed")
    # A TAB after the id completes "005="; a second TAB (after the "=", free text
    # follows) changes nothing: once "005=006=" / "005= " came out of it.
    for command in ("git forge", "git-forge"):
        assert _line_after_tabs(shell, project, f"{command} recover --answer 005\t\t") == (
            f"{command} recover --answer 005=")


@pytest.mark.parametrize("shell", sorted(LINE_SHELLS))
def test_nothing_is_offered_after_the_last_argument(project: Path, shell: str) -> None:
    """``proc output`` takes one HANDLE: once it is typed, a TAB offers nothing —
    not the shell's fallback of file names (bash's ``-o default``)."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    if shell == "bash" and not (BASH_COMPLETION.is_file() and GIT_BASH_COMPLETION.is_file()):
        pytest.skip("bash-completion or git's bash completion is not installed")
    (project / "zz-only-file.txt").write_text("a file TAB must not offer here\n")
    for command in ("git forge", "git-forge"):
        typed = f"{command} proc output 001 zz"
        assert _line_after_tabs(shell, project, typed + "\t") == typed


# --- the README's install lines, verbatim ------------------------------------------------------


def readme_completion_block() -> str:
    """The shell block of the README's "Shell completion" section, as written there."""
    text = (ROOT / "README.md").read_text("utf-8")
    section = text[text.index("## Shell completion"):]
    section = section[:section.index("\n## ", 1)]
    start = section.index("```sh\n") + len("```sh\n")
    return section[start:section.index("```", start)]


@needs_git_completion
@pytest.mark.skipif(not BASH_COMPLETION.is_file(), reason="bash-completion is not installed")
def test_the_readmes_install_lines_work_verbatim_in_a_new_home(project: Path,
                                                               tmp_path: Path) -> None:
    home = tmp_path / "new-home"  # nothing in it: no ~/.local, no ~/.config
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("XDG_", "BASH_COMPLETION"))}
    env["HOME"] = str(home)
    block = readme_completion_block()
    assert block.count("git forge completion ") == 3
    result = waiting.run(["sh", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                         text=True)
    assert result.returncode == 0 and result.stderr == "", result.stderr

    # bash-completion itself finds the script there, for git-forge and for git forge
    script = (f"source {BASH_COMPLETION}\n"
              "_completion_loader git\n"
              "complete_line __git_wrap__git_main git forge backlog answer ''\n"
              "_completion_loader git-forge\n"
              "complete_line _git_forge_command git-forge backlog show ''\n")
    replies = run_bash(script, cwd=project, env=env)
    assert replies["git forge backlog answer "] == BLOCKED
    assert replies["git-forge backlog show "] == ALL_IDS
    if shutil.which("zsh"):
        zsh = waiting.run(["zsh", "-f", "-c", "fpath=(~/.zfunc $fpath); autoload -Uz compinit; "
                           "compinit -u -D; print -r -- $_comps[git-forge]"],
                          cwd=project, env=env, capture_output=True, text=True)
        assert zsh.stdout.strip() == "_git-forge", zsh.stderr
    if shutil.which("fish"):
        fish = waiting.run(["fish", "-c", "complete -C 'git-forge backlog show '"],
                           cwd=project, env=env, capture_output=True, text=True)
        assert [line.split("\t")[0] for line in fish.stdout.splitlines()] == ALL_IDS, (
            fish.stderr)

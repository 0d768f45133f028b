"""A cloned repository never makes git-forge write outside it: a symbolic link
committed (``git add -f``) where git-forge keeps its own file or directory — a
lock, a cache, the run's files, the journal, the state, the receipts, the
conflicts, the archive, the processes' records, the items' worktrees, the state
dir itself — is refused by every command that touches it, read-only ones too:
exit 2, one ``Error:`` line naming the link, and nothing changed, outside the
repository or in it. The writers never follow such a link either, wherever it
was made: each is tested on a link it did not expect.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import commit_project, git, run_forge
from test_tree_hostile import outside_digest

from git_forge.atomic import make_ignored_dir
from git_forge.jsonfile import update_json
from git_forge.locks import FileLock
from git_forge.loop.journal import Journal
from git_forge.owned import LinkRefused
from git_forge.supervisor.paths import ProcPaths
from git_forge.tree.worktrees import add_worktree

#: A fake agent, first on PATH: it reads its prompt, leaves one file, says it is done.
AGENT = ('#!/bin/sh\ncat >/dev/null\necho "$FORGE_ITEM_ID" > "done-$FORGE_ITEM_ID.txt"\n'
         "echo FORGE_DONE\n")
HANDLE = "QP1K5Aj4225DNX3aNsf3ng"

ADD = ("backlog", "add", "--title", "Third")
STATUS = ("status",)
STATUS_JSON = ("status", "--json")
LIST_JSON = ("backlog", "list", "--json")
LOOP = ("loop", "run", "--agent", "agent", "--iterations", "2")
PARALLEL = ("loop", "run", "--agent", "agent", "--parallel", "2")
RECOVER = ("recover",)
READERS = (STATUS, STATUS_JSON, LIST_JSON)

#: Each entry, committed as a link to a file ("file") or a directory ("dir") outside
#: the repository, and the commands that write (or create) something there.
ENTRIES: list[tuple[str, str, tuple[tuple[str, ...], ...]]] = [
    (".forge/backlog.json.lock", "file", (ADD, LOOP, PARALLEL, RECOVER)),
    (".forge/state.json", "file", (LOOP, RECOVER, STATUS)),
    (".forge/state.json.lock", "file", (LOOP,)),
    (".forge/events.ndjson", "file", (LOOP, PARALLEL)),
    (".forge/events.ndjson.lock", "file", (LOOP, RECOVER)),
    (".forge/loop.lock", "file", (LOOP, PARALLEL, STATUS)),
    (".forge/loop.run", "file", (LOOP,)),
    (".forge/recover.lock", "file", (RECOVER,)),
    (".forge/receipts.json", "file", (LOOP, STATUS_JSON)),
    (".forge/receipts.json.lock", "file", (LOOP,)),
    (".forge/conflicts.json", "file", (PARALLEL, RECOVER)),
    (".forge/notified.json", "file", (LOOP,)),
    (".forge/forge-decisions.json.lock", "file", (RECOVER,)),
    (".forge/prompt-001.md", "file", (LOOP,)),
    (".forge/cache", "dir", READERS),
    (".forge/cache/status-backlog.json", "file", (STATUS,)),
    (".forge/run", "dir", (LOOP, STATUS_JSON)),
    (".forge/run/receipts.json", "file", (LOOP,)),
    (".forge/proc", "dir", (LOOP, PARALLEL, STATUS)),
    (".forge/proc/supervisor.lock", "file", (LOOP,)),
    (f".forge/proc/{HANDLE}.manifest.json", "file", (LOOP, STATUS)),
    (f".forge/proc/{HANDLE}.spool", "dir", (LOOP,)),
    (".forge/archive", "dir", (LOOP,)),
    (".forge/worktrees", "dir", (PARALLEL, STATUS)),
    (".forge/worktrees/001", "dir", (PARALLEL, STATUS_JSON)),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with two pending items, committed: built once."""
    root = tmp_path_factory.mktemp("state-links") / "repo"
    root.mkdir()
    (root / "README.md").write_text("project\n")
    commit_project(root, ("First", "Second"))
    return root


class Clone:
    """A clone of a repository that committed ``links`` (name → target), beside an
    ``outside`` directory holding a precious file, with the fake agent on PATH."""

    def __init__(self, built: Path, tmp: Path, links: dict[str, str],
                 setup: Callable[[Path], None] | None = None) -> None:
        self.tmp = tmp
        self.outside = tmp / "outside"
        self.outside.mkdir()
        (self.outside / "precious.txt").write_text("precious\n")
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "agent").write_text(AGENT)
        (bin_dir / "agent").chmod(0o755)
        self.env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        source = tmp / "src"
        shutil.copytree(built, source, symlinks=True)
        if setup is not None:
            setup(source)
        for name, target in links.items():
            link = source / name
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)
            elif link.exists() or link.is_symlink():
                link.unlink()
            os.symlink(os.path.relpath(tmp / target, link.parent), link)
            git("add", "-f", name, cwd=source)
        git("add", "-A", cwd=source)
        git("commit", "-q", "--allow-empty", "-m", "links", cwd=source)
        self.root = tmp / "clone"
        git("clone", "-q", str(source), str(self.root), cwd=tmp)

    def state(self) -> tuple[dict[str, tuple], dict[str, tuple], str]:
        """Everything outside the clone, everything in it but .git, and git's status."""
        return (outside_digest(self.tmp, self.root), outside_digest(self.root, self.root / ".git"),
                git("status", "--porcelain", "--ignored", cwd=self.root))

    def run(self, *args: str):
        return run_forge(*args, cwd=self.root, env=self.env)


def refused(clone: Clone, entry: str, commands: tuple[tuple[str, ...], ...]) -> None:
    """Each command exits 2 with one line naming ``entry``, and changes nothing."""
    before = clone.state()
    for command in commands:
        result = clone.run(*command)
        assert (result.returncode, result.stdout) == (2, ""), (command, result.stderr)
        assert result.stderr == (f"Error: {entry} is a symbolic link where git-forge keeps its "
                                 "own files: refusing to follow it (remove the link)\n"), command
        assert clone.state() == before, command


@pytest.mark.parametrize(("entry", "kind", "commands"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_a_committed_link_to_outside_is_refused_before_anything_changes(
        built: Path, tmp_path: Path, entry: str, kind: str,
        commands: tuple[tuple[str, ...], ...]) -> None:
    target = "outside/precious.txt" if kind == "file" else "outside"
    clone = Clone(built, tmp_path, {entry: target})
    assert (clone.root / entry).is_symlink()
    refused(clone, entry, commands)


def test_a_state_dir_that_is_a_link_inside_the_repository_is_refused_too(
        built: Path, tmp_path: Path) -> None:
    # .forge -> plan, where the backlog really is: inside the repository, still a link
    # where git-forge keeps its own directory (git could not commit backlog.json
    # through it either).
    def move(source: Path) -> None:
        git("mv", ".forge", "plan", cwd=source)

    clone = Clone(built, tmp_path, {".forge": "src/plan"}, setup=move)
    assert os.readlink(clone.root / ".forge") == "plan"
    refused(clone, ".forge", (ADD, STATUS, LIST_JSON, LOOP, RECOVER))


def test_without_links_the_same_commands_write_those_entries(built: Path,
                                                             tmp_path: Path) -> None:
    # The cases above refuse what these commands do write on a plain clone.
    clone = Clone(built, tmp_path, {})
    before = outside_digest(tmp_path, clone.root)
    for command in (ADD, STATUS, STATUS_JSON, LIST_JSON):
        assert clone.run(*command).returncode == 0, command
    ran = clone.run(*PARALLEL)
    assert ran.returncode == 0, ran.stderr
    assert clone.run(*RECOVER).returncode == 0
    state = clone.root / ".forge"
    for name in ("backlog.json.lock", "state.json", "events.ndjson", "loop.lock",
                 "recover.lock", "cache/status-backlog.json",
                 "run/receipts.json", "proc/supervisor.lock", "worktrees"):
        assert (state / name).exists(), name
    assert outside_digest(tmp_path, clone.root) == before


def test_decision_record_never_locks_through_a_link(built: Path, tmp_path: Path) -> None:
    # decision takes its backlog dir from the command line, not from a located
    # workspace: the lock file itself is opened without following a link.
    entry = ".forge/forge-decisions.json.lock"
    clone = Clone(built, tmp_path, {entry: "outside/precious.txt"})
    before = clone.state()
    result = clone.run("decision", "record", "--backlog-dir", ".forge", "--item", "001",
                       "--question", "Q", "--answer", "A")
    assert (result.returncode, result.stderr) == (2, (
        f"Error: {entry} is a symbolic link where git-forge keeps its own files: refusing to "
        "follow it (remove the link)\n"))
    assert clone.state() == before


# --- the writers themselves, on a link made after any command looked -------------------------


def _lock(state: Path, outside: Path) -> Callable[[], object]:
    (state / "loop.lock").symlink_to(outside / "precious.txt")
    return lambda: FileLock(state / "loop.lock").acquire(timeout=1)


def _update(state: Path, outside: Path) -> Callable[[], object]:
    (state / "receipts.json.lock").symlink_to(outside / "precious.txt")
    return lambda: update_json(state / "receipts.json", lambda current: {"x": 1}, timeout=1)


def _append(state: Path, outside: Path) -> Callable[[], object]:
    (state / "events.ndjson").symlink_to(outside / "precious.txt")
    return lambda: Journal(state / "events.ndjson", state.parent).append("x")


def _own_torn(state: Path, outside: Path) -> Callable[[], object]:
    # what looks like a torn last line is cut off: never in the file a link points at
    (outside / "torn.txt").write_text("no newline at the end")
    (state / "events.ndjson").symlink_to(outside / "torn.txt")
    return lambda: Journal(state / "events.ndjson", state.parent).own()


def _rotate(state: Path, outside: Path) -> Callable[[], object]:
    (state / "events.ndjson").write_text("{}\n")
    (state / "archive").symlink_to(outside)
    return lambda: Journal(state / "events.ndjson", state.parent).rotate(state / "archive")


def _ignored_dir(state: Path, outside: Path) -> Callable[[], object]:
    (state / "run").symlink_to(outside)
    return lambda: make_ignored_dir(state / "run", b"*\n")


def _proc_root(state: Path, outside: Path) -> Callable[[], object]:
    (state / "proc").symlink_to(outside)
    return lambda: ProcPaths(state / "proc").ensure_root()


def _worktree(state: Path, outside: Path) -> Callable[[], object]:
    (state / "worktrees").mkdir()
    (state / "worktrees" / "001").symlink_to(outside / "empty")
    return lambda: add_worktree(state.parent, state / "worktrees" / "001", "forge/001", "HEAD")


def _worktrees(state: Path, outside: Path) -> Callable[[], object]:
    (state / "worktrees").symlink_to(outside)
    return lambda: add_worktree(state.parent, state / "worktrees" / "001", "forge/001", "HEAD")


WRITERS = [_lock, _update, _append, _own_torn, _rotate, _ignored_dir, _proc_root, _worktree,
           _worktrees]


@pytest.mark.parametrize("write", WRITERS, ids=[w.__name__.strip("_") for w in WRITERS])
def test_a_writer_never_follows_a_link_at_its_own_entry(
        git_repo: Path, tmp_path: Path,
        write: Callable[[Path, Path], Callable[[], object]]) -> None:
    state = git_repo / ".forge"
    state.mkdir()
    outside = tmp_path / "outside"
    (outside / "empty").mkdir(parents=True)
    (outside / "precious.txt").write_text("precious\n")
    act = write(state, outside)
    before = outside_digest(tmp_path, git_repo)
    with pytest.raises(LinkRefused) as refusal:
        act()
    assert refusal.value.exit_code == 2 and "is a symbolic link" in refusal.value.message
    assert outside_digest(tmp_path, git_repo) == before
    assert "forge/001" not in git("branch", "--list", cwd=git_repo)

"""Readers never take git's locks, so a read-only command never makes a run fail.

A plain ``git status`` holds the index's lock while it walks the tree (to write
back a refreshed stat cache); a commit, a ``read-tree`` or an ``update-index`` that
comes meanwhile finds ``index.lock`` and fails. So every git command git-forge
runs has optional locks off, and its pygit2 reads write nothing.

The proof that a read took the lock: a tree whose files were touched (their stat
data stale in the index, their content the same) — ``git status`` then rewrites
the index, and a read with optional locks off leaves it as it was. Then the whole
story: the readers a user (or a prompt, or an editor) runs — ``status --json``,
``preflight``, ``reconcile --json`` (the listing, no decision), the completion of
item ids — in a tight loop beside a parallel run on a 20,000-file checkout, and the
run ends with every item done and on the branch.

Real repositories, the real installed ``git forge``, real agent processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pygit2
import pytest
import waiting
from builders import backlog_repo
from helpers import forge_argv, git, run_forge

from git_forge.layout import item_worktree
from git_forge.tree.fast_status import is_clean, porcelain_fast
from git_forge.tree.git_status import ListingMeanwhile, porcelain
from git_forge.tree.repo import open_repo
from git_forge.tree.worktrees import add_worktree, status

READERS = (
    ("status", "--json"),
    ("preflight",),
    ("reconcile", "--json"),
    ("__complete", "items"),
)


def make_stale(root: Path, *names: str) -> None:
    """Give tracked files an older mtime, their content the same: stale stat data."""
    for name in names:
        info = (root / name).stat()
        os.utime(root / name, ns=(info.st_atime_ns, info.st_mtime_ns - 10**11))


def index_of(tree: Path) -> Path:
    """The index file of the (main or linked) worktree at ``tree``."""
    return Path(git("rev-parse", "--path-format=absolute", "--git-path", "index",
                    cwd=tree).strip())


def file_state(path: Path) -> tuple[int, int, str]:
    """What a rewrite of ``path`` changes: its inode (git renames a new one into
    place), its mtime and its bytes (their digest)."""
    info = path.stat()
    return info.st_ino, info.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def assert_a_plain_git_status_would_rewrite(tree: Path) -> None:
    """The premise: these indexes are stale, and git's own status writes one."""
    before = file_state(index_of(tree))
    git("status", "--porcelain", cwd=tree)
    assert file_state(index_of(tree)) != before


def test_git_reads_leave_a_stale_index_alone(git_repo: Path, tmp_path: Path) -> None:
    tree = add_worktree(git_repo, tmp_path / "item", "forge/001", "main")
    make_stale(git_repo, "README.md")
    make_stale(tree, "README.md")
    indexes = {path: file_state(path) for path in (index_of(git_repo), index_of(tree))}
    repo = open_repo(git_repo)
    assert porcelain(repo) == porcelain_fast(git_repo) == status(git_repo, tree) == []
    assert is_clean(git_repo)
    with ListingMeanwhile(repo) as listing:
        assert listing.entries() == []
    assert {path: file_state(path) for path in indexes} == indexes
    assert_a_plain_git_status_would_rewrite(git_repo)
    assert_a_plain_git_status_would_rewrite(tree)


def test_pygit2_reads_neither_write_the_index_nor_need_its_lock(git_repo: Path) -> None:
    make_stale(git_repo, "README.md")
    (git_repo / "new.txt").write_text("untracked\n")
    index = index_of(git_repo)
    before = file_state(index)
    lock = index.with_name("index.lock")
    lock.write_bytes(b"")  # held by another git
    repository = pygit2.Repository(str(git_repo))
    assert repository.status() == {"new.txt": pygit2.enums.FileStatus.WT_NEW}
    repository.index.read(force=True)
    assert file_state(index) == before and lock.read_bytes() == b""
    lock.unlink()
    repository.status()
    assert file_state(index) == before and not lock.exists()


def test_the_readers_leave_every_index_alone(tmp_path: Path) -> None:
    project = backlog_repo(tmp_path / "repo", "One", "Two")
    tree = add_worktree(project, item_worktree(project / ".forge", "001"), "forge/001", "main")
    (tree / "one.txt").write_text("the item's unfinished work\n")  # stranded: listed
    make_stale(project, "README.md", ".forge/backlog.json")
    make_stale(tree, "README.md", ".forge/backlog.json")
    indexes = {path: file_state(path) for path in (index_of(project), index_of(tree))}
    for argv in READERS:
        result = run_forge(*argv, cwd=project)
        assert "Traceback" not in result.stderr, result.stderr
        assert {path: file_state(path) for path in indexes} == indexes, argv
    assert_a_plain_git_status_would_rewrite(project)
    assert_a_plain_git_status_would_rewrite(tree)


# --- beside a run ----------------------------------------------------------------------------

ITEMS = 6
#: The agent: a little work, one file of its own, done.
AGENT = r'''
import os, time
time.sleep(0.3)
open(f"item-{os.environ['FORGE_ITEM_ID']}.txt", "w").write("work\n")
print("FORGE_DONE")
'''


def build_big(root: Path) -> None:
    """A backlog of ``ITEMS`` items in a repository that vendors a 20,000-file
    submodule at ``vendor/``: its commit made by one ``git fast-import`` (a pack, not
    20,000 loose objects), checked out once, and added where it stands.

    The main checkout's ``git status`` walks all 20,000 files (in the submodule's
    own ``status``, which runs while the main index's lock is held), so a reader
    holds that lock most of the time it runs; the items' worktrees, where git checks
    no submodule out, cost a few files each to make."""
    backlog_repo(root, *[f"Item {n}" for n in range(1, ITEMS + 1)])
    vendor = root / "vendor"
    vendor.mkdir()
    git("init", "-q", "-b", "main", cwd=vendor)
    stream = [b"commit refs/heads/main\ncommitter Forge Tester <tester@example.invalid> "
              b"0 +0000\ndata 12\n20,000 files\n"]
    for directory in range(100):
        for number in range(200):
            content = b"file %d/%d\n" % (directory, number)
            stream.append(b"M 100644 inline src/d%03d/f%03d.txt\ndata %d\n%s\n"
                          % (directory, number, len(content), content))
    waiting.run(["git", "fast-import", "--quiet"], cwd=vendor, input=b"".join(stream),
                check=True)
    git("reset", "-q", "--hard", cwd=vendor)
    git("submodule", "add", "-q", "./vendor", "vendor", cwd=root)
    git("commit", "-qm", "vendor", cwd=root)


def read_until(stop: threading.Event, project: Path, argv: tuple[str, ...],
               results: list[subprocess.CompletedProcess]) -> None:
    """Run ``git forge ARGV`` again and again until ``stop`` is set."""
    while not stop.is_set():
        results.append(waiting.run([*forge_argv(), *argv], cwd=project, capture_output=True,
                                   text=True, timeout=60))


@pytest.mark.timeout(240)
def test_readers_in_a_tight_loop_never_fail_a_parallel_run(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    build_big(project)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    stop = threading.Event()
    results: dict[tuple[str, ...], list[subprocess.CompletedProcess]] = {r: [] for r in READERS}
    readers = [threading.Thread(target=read_until, args=(stop, project, argv, results[argv]),
                                name=" ".join(argv), daemon=True) for argv in READERS]
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent",
                             f"{sys.executable} {agent}", "--parallel", "3"],
                            cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        for reader in readers:
            reader.start()
        out, err = waiting.communicate(loop, timeout=120)
    finally:
        stop.set()
        for reader in readers:
            waiting.join(reader, timeout=90)
    assert "index.lock" not in out + err, out + err
    assert loop.returncode == 0, out + err
    items = json.loads((project / ".forge" / "backlog.json").read_text())["items"]
    assert [item["status"] for item in items] == ["done"] * ITEMS, out + err
    subjects = git("log", "--format=%s", cwd=project)
    assert sorted(re.findall(r"^\[forge\] ([0-9]{3}): ", subjects, re.M)) == [
        f"{n:03d}" for n in range(1, ITEMS + 1)]
    for argv, done in results.items():
        assert done, f"git forge {' '.join(argv)} never ran beside the run"
        for result in done:
            assert "Traceback" not in result.stderr, result.stderr

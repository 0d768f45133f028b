"""A repository copied from a session's template behaves as a fresh build would.

Each build the suite shares is made fresh here, copied the way every test gets
it, and both are asked the same questions: same files (the template's paths
rewritten), same git objects and index, same answers from git and git-forge —
read-only ones writing nothing in the copy — and, after a loop run, the same
outcome of a recovery.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import test_loop
import test_preflight
import test_reconcile
import test_recover
from helpers import git, run_forge, snapshot
from templates import copy_repository

BUILDS: dict[str, Callable[[Path], None]] = {
    "after-run": test_recover.build_after_run,
    "loop-backlog": test_loop.build_backlog,
    "preflight-project": test_preflight.build_project,
    "reconcile-project": test_reconcile.build_project,
}

READ_ONLY = [("status", "--json"), ("preflight", "--json"), ("reconcile", "--json"),
             ("recover", "--plan", "--json")]
AFTER_A_CHANGE = [("status", "--json"), ("backlog", "list", "--json")]
# What differs between two runs of the same build: when and under which random id.
VOLATILE = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z|\b[0-9a-f]{40}\b|"
                      rb"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b")


def not_cached(files: dict[str, bytes]) -> dict[str, bytes]:
    return {rel: data for rel, data in files.items() if not rel.startswith(".forge/cache/")}


def same_but_for(root: Path, text: str | bytes) -> bytes:
    """``text`` with ``root`` written as ROOT (and nothing else changed)."""
    data = text.encode() if isinstance(text, str) else text
    return data.replace(str(root).encode(), b"ROOT")


def answers(root: Path, commands: list[tuple[str, ...]]) -> list[tuple[int, bytes, bytes]]:
    results = [run_forge(*args, cwd=root) for args in commands]
    porcelain = git("status", "--porcelain", "-uall", cwd=root)
    return [(r.returncode, same_but_for(root, r.stdout), same_but_for(root, r.stderr))
            for r in results] + [(0, porcelain.encode(), b"")]


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_a_copy_behaves_as_the_build_it_was_copied_from(name: str, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh" / "repo"
    fresh.parent.mkdir()
    BUILDS[name](fresh)
    copy = copy_repository(fresh, tmp_path / "copy" / "repo")

    # The same files, with the build's own location rewritten and nowhere else mentioned.
    built, copied = snapshot(fresh), snapshot(copy)
    assert sorted(built) == sorted(copied)
    for path, data in built.items():
        assert same_but_for(fresh, data) == same_but_for(copy, copied[path]), path
        assert str(fresh).encode() not in copied[path], path
    # The same history, refs and index (git's stat cache aside).
    for args in (("log", "--all", "--format=%H %T %P %s"), ("ls-files", "-s"),
                 ("for-each-ref",), ("stash", "list")):
        assert git(*args, cwd=copy) == git(*args, cwd=fresh), args

    # The same answers; asking writes nothing in the copy, .git included, but the
    # derived cache of status (.forge/cache/, not user data: keyed on each file's
    # identity, so never carried from one copy to another).
    before = snapshot(copy, skip_git=False)
    assert answers(copy, READ_ONLY) == answers(fresh, READ_ONLY)
    assert not_cached(snapshot(copy, skip_git=False)) == not_cached(before)

    if name != "after-run":
        return
    # The same outcome of a real change: a recovery of the run's questions.
    change = ("recover", "--json", "--answer", "c003=Use SQLite", "--defer", "006")
    results = [run_forge(*change, cwd=root) for root in (fresh, copy)]
    assert [r.returncode for r in results] == [results[0].returncode] * 2
    outputs = [VOLATILE.sub(b"*", same_but_for(root, r.stdout))
               for root, r in zip((fresh, copy), results, strict=True)]
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])  # a real report, not an empty answer
    after = [[(code, VOLATILE.sub(b"*", out), VOLATILE.sub(b"*", err))
              for code, out, err in answers(root, AFTER_A_CHANGE)] for root in (fresh, copy)]
    assert after[0] == after[1]

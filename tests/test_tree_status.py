"""Porcelain status for an opened repository and on the fast path, against real git.

git-forge reads git's porcelain v2; a generator builds many working trees (seeded
random plus hand-written cases) and each is compared with ``git status --porcelain
-uall --no-renames`` in format v1 (with and without ``-z``): the same (path, XY)
entries, the same lines byte for byte, in the same order — zero mismatches.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
import waiting
from builders import submodule_upstream
from tree_helpers import (
    TRICKY_NAMES,
    git_bytes,
    git_status_entries,
    git_status_lines,
    write,
)

from git_forge.tree.errors import GitError
from git_forge.tree.fast_status import is_clean, porcelain_fast
from git_forge.tree.git_status import porcelain
from git_forge.tree.porcelain import StatusEntry, quote_path, render_porcelain_line
from git_forge.tree.repo import open_repo

BASE_FILES = TRICKY_NAMES + [f"pkg/mod{n}.py" for n in range(8)] + ["tool.sh", "lib/deep/a.c"]


def assert_matches_git(root: Path) -> list[StatusEntry]:
    """Both status sources agree with git on entries, lines, -z bytes and order."""
    expected = git_entries(root)
    ours = porcelain(open_repo(root))
    assert ours == expected, _mismatch(ours, expected)
    assert [render_porcelain_line(e) for e in ours] == git_status_lines(root)
    assert porcelain_fast(root) == expected
    assert is_clean(root) is (not expected)
    return ours


def git_entries(root: Path) -> list[StatusEntry]:
    return [StatusEntry(path, xy) for path, xy in git_status_entries(root)]


def _mismatch(ours: list[StatusEntry], expected: list[StatusEntry]) -> str:
    missing = sorted(set(expected) - set(ours))
    extra = sorted(set(ours) - set(expected))
    return f"missing {missing}, extra {extra}, order ok={sorted(ours) == sorted(expected)}"


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One committed repository with tricky names, symlinks, an executable and ignore rules."""
    root = tmp_path_factory.mktemp("status-base") / "repo"
    root.mkdir()
    env = {
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    git_bytes("init", "-q", "-b", "main", cwd=root, env=env)
    for number, name in enumerate(BASE_FILES):
        write(root, name, f"line one of {number}\nline two\n")
    write(root, "tool.sh", "#!/bin/sh\necho hi\n", executable=True)
    write(root, ".gitignore", "*.log\nbuild/\nignored dir/\n")
    os.symlink("plain.txt", root / "link-to-plain")
    os.symlink("pkg", root / "link-to-dir")
    git_bytes("add", "-A", cwd=root, env=env)
    git_bytes("commit", "-q", "-m", "base", cwd=root, env=env)
    return root


def fresh_copy(base: Path, target: Path) -> Path:
    shutil.copytree(base, target, symlinks=True)
    return target


def literal(*args: str) -> list[str]:
    return ["--literal-pathspecs", *args]


def random_tree(root: Path, rng: random.Random) -> None:
    """Apply a random mix of every kind of change git status distinguishes."""
    tracked = [name for name in BASE_FILES]
    rng.shuffle(tracked)
    picks = iter(tracked)
    stage_add: list[str] = []
    stage_rm: list[str] = []
    intent: list[str] = []
    later: list[tuple[str, str]] = []
    for _ in range(rng.randint(4, 14)):
        path = next(picks, None)
        if path is None:
            break
        kind = rng.choice([
            "modify", "stage", "stage+modify", "delete", "rm", "chmod", "to-symlink",
            "rename-by-hand", "rm+recreate", "stage-typechange",
        ])
        full = root / path
        if kind == "modify":
            full.write_bytes(full.read_bytes() + b"changed\n")
        elif kind == "stage":
            full.write_bytes(b"staged\n")
            stage_add.append(path)
        elif kind == "stage+modify":
            full.write_bytes(b"staged\n")
            stage_add.append(path)
            later.append(("append", path))
        elif kind == "delete":
            full.unlink()
        elif kind == "rm":
            full.unlink()
            stage_rm.append(path)
        elif kind == "chmod":
            full.chmod(full.stat().st_mode ^ 0o111)
        elif kind == "to-symlink":
            full.unlink()
            os.symlink("plain.txt", full)
        elif kind == "stage-typechange":
            full.unlink()
            os.symlink("a", full)
            stage_add.append(path)
        elif kind == "rename-by-hand":
            target = root / f"moved/{rng.randint(0, 999)}-{Path(path).name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            full.rename(target)
        elif kind == "rm+recreate":
            stage_rm.append(path)
            later.append(("recreate", path))
    for number in range(rng.randint(0, 6)):
        name = rng.choice(TRICKY_NAMES).replace("/", "_")
        depth = "/".join(f"n{rng.randint(0, 3)}" for _ in range(rng.randint(0, 3)))
        write(root, f"{depth}/new {number} {name}" if depth else f"new {number} {name}")
    for number in range(rng.randint(0, 3)):
        name = f"ita {number}.txt"
        write(root, name, "" if rng.random() < 0.3 else "intent\n")
        intent.append(name)
    for number in range(rng.randint(0, 2)):
        write(root, f"added {number}.txt", "added\n")
        stage_add.append(f"added {number}.txt")
        if rng.random() < 0.5:
            later.append(("delete", f"added {number}.txt"))
    if rng.random() < 0.7:
        write(root, "x.log", "ignored\n")
        write(root, "build/out/y.o", "ignored\n")
        write(root, "ignored dir/inner.txt", "ignored\n")
        write(root, "pkg/sub/trace.log", "ignored\n")
    if rng.random() < 0.3:
        (root / "empty-dir").mkdir(exist_ok=True)
    if stage_add:
        git_bytes(*literal("add", "-A", "--", *stage_add), cwd=root)
    if stage_rm:
        git_bytes(*literal("rm", "-q", "--cached", "--", *stage_rm), cwd=root)
    if intent:
        git_bytes(*literal("add", "-N", "--", *intent), cwd=root)
    for action, path in later:
        full = root / path
        if action == "append":
            full.write_bytes(full.read_bytes() + b"and then modified\n")
        elif action == "recreate":
            full.write_bytes(b"recreated\n")
        elif action == "delete":
            full.unlink()
    if intent and rng.random() < 0.3:
        (root / intent[0]).unlink()


@pytest.mark.parametrize("seed", range(24))
def test_random_trees_match_git(base_repo: Path, tmp_path: Path, seed: int) -> None:
    root = fresh_copy(base_repo, tmp_path / "repo")
    random_tree(root, random.Random(seed))
    entries = assert_matches_git(root)
    assert entries, "every generated tree has changes"


def test_clean_tree_is_empty_everywhere(base_repo: Path, tmp_path: Path) -> None:
    root = fresh_copy(base_repo, tmp_path / "repo")
    write(root, "ignored dir/only-ignored.txt", "x\n")
    (root / "empty").mkdir()
    assert assert_matches_git(root) == []
    assert is_clean(root)


def test_every_tricky_name_untracked_and_modified(base_repo: Path, tmp_path: Path) -> None:
    root = fresh_copy(base_repo, tmp_path / "repo")
    for name in TRICKY_NAMES:
        (root / name).write_bytes(b"modified\n")
        write(root, f"untracked/{name}", "new\n")
    entries = assert_matches_git(root)
    assert {e.path for e in entries if e.xy == " M"} == set(TRICKY_NAMES)
    lines = git_status_lines(root)
    assert ' M "sp ace.txt"' in lines and ' M "new\\nline.txt"' in lines
    assert ' M "\\303\\274n\\303\\257c\\303\\266d\\303\\251.txt"' in lines


def test_intent_to_add_is_space_a_not_am(git_repo: Path) -> None:
    write(git_repo, "ita.txt", "content\n")
    write(git_repo, "ita-empty.txt", "")
    write(git_repo, "ita-gone.txt", "x\n")
    git_bytes("add", "-N", "ita.txt", "ita-empty.txt", "ita-gone.txt", cwd=git_repo)
    (git_repo / "ita-gone.txt").unlink()
    raw = open_repo(git_repo).repository.status()
    assert raw["ita.txt"] != raw["ita-gone.txt"]  # libgit2 reports index additions here
    entries = assert_matches_git(git_repo)
    assert {(e.path, e.xy) for e in entries} == {
        ("ita.txt", " A"), ("ita-empty.txt", " A"), ("ita-gone.txt", " D"),
    }


def test_staged_delete_and_untracked_recreate_are_two_lines(git_repo: Path) -> None:
    git_bytes("rm", "-q", "--cached", "README.md", cwd=git_repo)
    assert [(e.path, e.xy) for e in assert_matches_git(git_repo)] == [
        ("README.md", "D "), ("README.md", "??"),
    ]


def test_nested_repository_listed_as_directory(git_repo: Path) -> None:
    nested = git_repo / "nested"
    nested.mkdir()
    git_bytes("init", "-q", cwd=nested)
    write(nested, "file.txt")
    assert [(e.path, e.xy) for e in assert_matches_git(git_repo)] == [("nested/", "??")]


def test_conflicts_get_gits_two_letter_codes(git_repo: Path) -> None:
    for name in ("both-modified", "deleted-by-them", "deleted-by-us"):
        write(git_repo, name, "base\n")
    git_bytes("add", ".", cwd=git_repo)
    git_bytes("commit", "-q", "-m", "base", cwd=git_repo)
    git_bytes("checkout", "-q", "-b", "other", cwd=git_repo)
    write(git_repo, "both-modified", "theirs\n")
    write(git_repo, "deleted-by-us", "theirs\n")
    write(git_repo, "both-added", "theirs\n")
    (git_repo / "deleted-by-them").unlink()
    git_bytes("add", "-A", cwd=git_repo)
    git_bytes("commit", "-q", "-m", "theirs", cwd=git_repo)
    git_bytes("checkout", "-q", "main", cwd=git_repo)
    write(git_repo, "both-modified", "ours\n")
    write(git_repo, "deleted-by-them", "ours\n")
    write(git_repo, "both-added", "ours\n")
    (git_repo / "deleted-by-us").unlink()
    git_bytes("add", "-A", cwd=git_repo)
    git_bytes("commit", "-q", "-m", "ours", cwd=git_repo)
    merge = waiting.run(["git", "merge", "-q", "other"], cwd=git_repo, capture_output=True)
    assert merge.returncode != 0  # the conflicts are the point
    codes = {(e.path, e.xy) for e in assert_matches_git(git_repo)}
    assert codes == {
        ("both-added", "AA"), ("both-modified", "UU"),
        ("deleted-by-them", "UD"), ("deleted-by-us", "DU"),
    }


def test_typechanges_and_exec_bits(git_repo: Path) -> None:
    write(git_repo, "script", "#!/bin/sh\n")
    write(git_repo, "will-link", "x\n")
    write(git_repo, "staged-link", "x\n")
    git_bytes("add", ".", cwd=git_repo)
    git_bytes("commit", "-q", "-m", "files", cwd=git_repo)
    (git_repo / "script").chmod(0o755)
    (git_repo / "will-link").unlink()
    os.symlink("README.md", git_repo / "will-link")
    (git_repo / "staged-link").unlink()
    os.symlink("README.md", git_repo / "staged-link")
    git_bytes("add", "staged-link", cwd=git_repo)
    codes = {(e.path, e.xy) for e in assert_matches_git(git_repo)}
    assert codes == {("script", " M"), ("will-link", " T"), ("staged-link", "T ")}


@pytest.fixture
def superproject(git_repo: Path, tmp_path: Path) -> Path:
    upstream = submodule_upstream(tmp_path / "upstream")
    git_bytes("submodule", "add", "-q", str(upstream), "vendor/lib", cwd=git_repo)
    git_bytes("commit", "-q", "-m", "add submodule", cwd=git_repo)
    return git_repo


def test_submodule_clean_new_commits_staged_dirty_untracked(superproject: Path) -> None:
    sub = superproject / "vendor/lib"
    assert assert_matches_git(superproject) == []
    write(sub, "lib.txt", "v2\n")
    assert [(e.path, e.xy) for e in assert_matches_git(superproject)] == [("vendor/lib", " M")]
    git_bytes("commit", "-q", "-am", "v2", cwd=sub)
    assert [(e.path, e.xy) for e in assert_matches_git(superproject)] == [("vendor/lib", " M")]
    git_bytes("add", "vendor/lib", cwd=superproject)
    assert [(e.path, e.xy) for e in assert_matches_git(superproject)] == [("vendor/lib", "M ")]
    write(sub, "untracked-inside.txt", "u\n")
    assert [(e.path, e.xy) for e in assert_matches_git(superproject)] == [("vendor/lib", "MM")]


def test_quote_path_follows_git_rules() -> None:
    assert quote_path("plain") == "plain"
    assert quote_path("a b") == '"a b"'
    assert quote_path('q"') == '"q\\""'
    assert quote_path("t\tn\n") == '"t\\tn\\n"'
    assert quote_path("\x7f\x01") == '"\\177\\001"'
    assert quote_path("é", quote_path_fully=True) == '"\\303\\251"'
    assert quote_path("é", quote_path_fully=False) == "é"
    assert quote_path("é\n", quote_path_fully=False) == '"é\\n"'
    assert quote_path(os.fsdecode(b"\xff"), quote_path_fully=True) == '"\\377"'


def test_core_quotepath_false_rendering_matches_git(git_repo: Path) -> None:
    git_bytes("config", "core.quotePath", "false", cwd=git_repo)
    write(git_repo, "ünï.txt")
    write(git_repo, "ünï\ttab.txt")
    lines = git_status_lines(git_repo)
    ours = [render_porcelain_line(e, quote_path_fully=False) for e in porcelain_fast(git_repo)]
    assert ours == lines


def test_fast_path_reports_git_errors_verbatim(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a git repository") as caught:
        porcelain_fast(tmp_path)
    assert caught.value.exit_code == 1


def test_the_spawner_keeps_stdout_whole_and_a_failures_stderr_bounded(git_repo: Path) -> None:
    # git's stdout whole while stderr fills too (neither pipe may stall git), and a
    # failure's stderr as the GitError, exit code 1 — its last TAIL_BYTES (a message,
    # bounded); git started in a subdirectory finds the repository from there.
    from git_forge.capture import TAIL_BYTES
    from git_forge.tree.gitcli import run_git, start_git

    noisy = ("-c", "alias.noisy=!f() { head -c 300000 /dev/zero | tr '\\0' e >&2; "
             "head -c 400000 /dev/zero | tr '\\0' o; exit ${1:-0}; }; f", "noisy")
    assert run_git(noisy, cwd=git_repo) == b"o" * 400_000
    for run in (lambda: run_git((*noisy, "3"), cwd=git_repo),
                lambda: start_git((*noisy, "3"), cwd=git_repo).result()):
        with pytest.raises(GitError) as caught:
            run()
        assert (caught.value.message, caught.value.exit_code) == ("e" * TAIL_BYTES, 1)
    nested = git_repo / "a" / "b"
    nested.mkdir(parents=True)
    assert run_git(("rev-parse", "--show-prefix"), cwd=nested) == b"a/b/\n"
    with pytest.raises(GitError) as unknown:
        run_git(("rev-parse", "--verify", "nope"), cwd=git_repo)
    assert unknown.value.message == "fatal: Needed a single revision"


def test_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git_bytes("init", "-q", cwd=root)
    write(root, "staged.txt")
    write(root, "staged-then-changed.txt")
    write(root, "loose/untracked.txt")
    git_bytes("add", "staged.txt", "staged-then-changed.txt", cwd=root)
    write(root, "staged-then-changed.txt", "changed\n")
    assert [(e.path, e.xy) for e in assert_matches_git(root)] == [
        ("staged-then-changed.txt", "AM"), ("staged.txt", "A "), ("loose/untracked.txt", "??"),
    ]


def test_a_listing_started_meanwhile_is_gits_listing(base_repo: Path, tmp_path: Path) -> None:
    """``ListingMeanwhile`` (the loop's commit step) answers what ``porcelain``
    answers, git's own listing, for a random tree; a failing git is a GitError
    from ``entries``, and a block left without asking still ends git."""
    from git_forge.tree.git_status import ListingMeanwhile

    root = fresh_copy(base_repo, tmp_path / "repo")
    random_tree(root, random.Random(7))
    repo = open_repo(root)
    with ListingMeanwhile(repo) as listing:
        entries = listing.entries()
    assert entries == porcelain(repo) == git_entries(root)
    assert entries  # the random tree is dirty: a listing that came back empty would pass

    with ListingMeanwhile(repo) as unasked:
        pid = unasked._started.pid
    with pytest.raises(ChildProcessError):  # waited for at the block's end, not left running
        os.waitpid(pid, os.WNOHANG)

    # Unlike a plain git status, it leaves a stale stat cache in the index as it is:
    # optional locks are off, so a commit meanwhile never finds the index locked.
    git_bytes("add", "-A", cwd=root)
    name = os.fsdecode(git_bytes("ls-files", "-z", cwd=root).split(b"\0")[0])
    os.utime(root / name, ns=(1, 1))  # a stale stat: content unchanged

    def cached_mtime() -> bytes:  # the name literally: a tricky name may hold a glob
        debug = git_bytes("ls-files", "--debug", "--", name, cwd=root,
                          env={"GIT_LITERAL_PATHSPECS": "1"})
        return next(line.split()[1] for line in debug.splitlines()
                    if line.strip().startswith(b"mtime:"))

    stale = cached_mtime()
    assert stale != b"0:1"
    with ListingMeanwhile(repo) as listing:
        entries = listing.entries()
    assert cached_mtime() == stale
    assert entries == git_entries(root)

    shutil.rmtree(root / ".git" / "objects")  # git can no longer read the repository
    with ListingMeanwhile(repo) as broken, pytest.raises(GitError):
        broken.entries()


def _separate_git_dir(root: Path, tmp_path: Path) -> Path:
    """A work tree whose ``.git`` is a file (``gitdir: …``), its refs packed."""
    moved = tmp_path / "moved"
    moved.mkdir()
    git_bytes("init", "-q", "-b", "main", "--separate-git-dir", str(tmp_path / "elsewhere.git"),
              str(moved), cwd=tmp_path)
    write(moved, "a.txt")
    git_bytes("add", "a.txt", cwd=moved)
    git_bytes("commit", "-qm", "first", cwd=moved)
    git_bytes("pack-refs", "--all", cwd=moved)
    assert (moved / ".git").is_file()
    assert not (tmp_path / "elsewhere.git" / "refs" / "heads" / "main").exists()
    return moved


def test_head_is_read_as_git_reads_it_wherever_the_repository_is(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-launch check's HEAD: a branch (its ref packed, behind a ``.git`` file,
    in a linked worktree, or through ``GIT_DIR``/``GIT_WORK_TREE``), detached, unborn
    — each as git answers it, with the entries of the same listing."""
    from git_forge.tree.fast_status import DETACHED_HEAD, UNBORN_BRANCH, launch_status

    moved = _separate_git_dir(git_repo, tmp_path)
    write(moved, "new.txt")
    assert launch_status(moved) == (None, [StatusEntry("new.txt", "??")])
    git_bytes("checkout", "-q", "--detach", cwd=moved)
    assert launch_status(moved) == (DETACHED_HEAD, [StatusEntry("new.txt", "??")])

    linked = tmp_path / "linked"
    git_bytes("worktree", "add", "-q", "-b", "side", str(linked), cwd=git_repo)
    git_bytes("checkout", "-q", "--detach", cwd=git_repo)  # the main one detached: not this
    assert launch_status(linked) == (None, [])
    git_bytes("checkout", "-q", "--orphan", "fresh", cwd=linked)
    assert launch_status(linked)[0] == UNBORN_BRANCH

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git_bytes("checkout", "-q", "main", cwd=git_repo)
    monkeypatch.setenv("GIT_DIR", str(git_repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(checkout))
    assert launch_status(tmp_path) == (None, [StatusEntry("README.md", " D")])

"""The read-only commands' cache of what they derive from backlog.json
(``backlog/cache.py``): it never changes an output byte — not when it is used,
not when it is stale, torn, forged or unwritable — and never shows in git."""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path

import pytest
from builders import blocked, item, write_backlog
from helpers import git, run_forge, snapshot

#: The commands whose output the cache may serve (or whose checks it may spare), each
#: read as the user sees it.
COMMANDS = (("status", "--json"), ("status",), ("backlog", "list", "--json"),
            ("backlog", "list"), ("backlog", "list", "--status", "needs-human"),
            ("backlog", "list", "--json", "--status", "blocked"), ("backlog", "show", "2"),
            ("backlog", "topology"), ("backlog", "topology", "--cluster", "--verbose"),
            ("backlog", "topology", "--json"))
#: What those commands keep, beside the directory's ``.gitignore``.
KEPT = {"status-backlog.json", "backlog-list.json", "backlog-list-rows.json",
        "backlog-items.txt", "backlog-topology.txt", "backlog-topology-cluster-verbose.txt",
        "backlog-topology.json", "backlog-valid"}


@pytest.fixture
def repo(git_repo: Path) -> Path:
    write_backlog(git_repo / ".forge", [
        item("001", "done"),
        blocked("002", "which db?"),
        item("003", "blocked", deferred=True, dependsOn=["002"]),
        item("004", "pending", dependsOn=["003"], title="Ünïcode \u0085 title"),
        item("005", "pending", dependsOn=["001"]),
    ])
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    return git_repo


def outputs(repo: Path) -> list[tuple[int, str, str]]:
    results = [run_forge(*command, cwd=repo) for command in COMMANDS]
    return [(result.returncode, result.stdout, result.stderr) for result in results]


def uncached(repo: Path) -> list[tuple[int, str, str]]:
    """The outputs with no cache at all (it is removed before every command)."""
    found = []
    for command in COMMANDS:
        shutil.rmtree(repo / ".forge" / "cache", ignore_errors=True)
        result = run_forge(*command, cwd=repo)
        found.append((result.returncode, result.stdout, result.stderr))
    return found


def cache_files(repo: Path) -> dict[str, bytes]:
    directory = repo / ".forge" / "cache"
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_outputs_are_the_same_bytes_with_and_without_the_cache(repo: Path) -> None:
    reference = uncached(repo)
    assert all(code == 0 for code, _out, _err in reference)
    shutil.rmtree(repo / ".forge" / "cache", ignore_errors=True)
    assert outputs(repo) == reference  # written by this pass
    written = cache_files(repo)
    assert set(written) == {".gitignore", *KEPT}
    assert outputs(repo) == reference  # used by this one
    assert cache_files(repo) == written  # a hit rewrites no text
    assert git("status", "--porcelain", "--ignored=no", "-uall", cwd=repo) == ""


def test_a_changed_backlog_is_never_answered_from_the_cache(repo: Path) -> None:
    outputs(repo)
    assert run_forge("backlog", "edit", "005", "--title", "Renamed", cwd=repo).returncode == 0
    assert outputs(repo) == uncached(repo)
    assert "Renamed" in outputs(repo)[2][1]


def test_same_size_and_times_with_other_bytes_is_a_miss(repo: Path) -> None:
    """An in-place edit that keeps the inode and the size and puts the modification
    time back changes the digest (and the change time): the cache is not used."""
    before = outputs(repo)
    path = repo / ".forge" / "backlog.json"
    stat = path.stat()
    data = path.read_bytes()
    assert data.count(b"which db?") == 1
    with open(path, "r+b") as handle:  # in place: same inode, same size
        handle.write(data.replace(b"which db?", b"which DB?"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_size) == (stat.st_ino, stat.st_size)
    changed = outputs(repo)
    assert "which DB?" in changed[2][1] and changed != before
    assert changed == uncached(repo)


def test_a_forged_key_is_a_miss_and_the_cache_is_rewritten(repo: Path) -> None:
    """A cache file naming the file's very identity with another digest, a torn
    file, another version, random bytes: each is ignored, and rewritten."""
    reference = uncached(repo)
    stat = (repo / ".forge" / "backlog.json").stat()
    identity = " ".join(str(value) for value in (stat.st_dev, stat.st_ino, stat.st_size,
                                                 stat.st_mtime_ns, stat.st_ctime_ns))
    other = zlib.crc32((repo / ".forge" / "backlog.json").read_bytes()) ^ 1
    outputs(repo)
    good = cache_files(repo)
    magic = good["backlog-list.json"].split(b"\n", 1)[0]
    assert magic == b"git-forge cache 4"
    forged = {
        "other digest": magic + f"\n{identity} {other:08x}\n[]\n".encode(),
        "other identity": magic + f"\n{identity}1 {other ^ 1:08x}\n[]\n".encode(),
        "torn": good["backlog-list.json"][:-10],
        "other version": good["backlog-list.json"].replace(b"cache 4", b"cache 9", 1),
        "garbage": b"\x00\xff not a cache \n\n\n",
        "empty": b"",
    }
    for what, data in forged.items():
        for name in KEPT:
            (repo / ".forge" / "cache" / name).write_bytes(data)
        assert outputs(repo) == reference, what
        assert cache_files(repo) == good, what


def test_an_invalid_backlog_is_refused_and_never_cached(repo: Path) -> None:
    outputs(repo)
    path = repo / ".forge" / "backlog.json"
    path.write_text(path.read_text().replace('"type": "feature"', '"type": "nonsense"', 1))
    cached_before = cache_files(repo)
    for command in COMMANDS:
        result = run_forge(*command, cwd=repo)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("Error: ") and "invalid type" in result.stderr
    assert cache_files(repo) == cached_before  # nothing cached for those bytes
    path.write_text("{ torn")
    for command in COMMANDS:
        result = run_forge(*command, cwd=repo)
        assert result.returncode == 2 and "is corrupt" in result.stderr
    assert cache_files(repo) == cached_before


def test_a_command_refused_on_its_input_keeps_nothing(repo: Path) -> None:
    """The bytes are marked valid once the command has used them: a refusal leaves
    every file as it was, the cache's too."""
    before = snapshot(repo)
    result = run_forge("backlog", "show", "9", cwd=repo)
    assert (result.returncode, result.stderr) == (2, "Error: Item not found: 9\n")
    assert snapshot(repo) == before
    assert run_forge("backlog", "show", "2", cwd=repo).returncode == 0
    assert set(cache_files(repo)) == {".gitignore", "backlog-valid", "backlog-items.txt"}


def test_the_checks_run_once_per_file_content(repo: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read below stands for a command of its own (the store's memory of the
    bytes it checked is emptied between them): the checks of every item run for the
    first, which marks the bytes valid, and again only for other bytes."""
    from git_forge.backlog import model, store
    from git_forge.backlog.cache import derived_text, read_valid

    checked: list[int] = []
    problem = model.backlog_problem

    def counted(document, **kwargs):  # type: ignore[no-untyped-def]
        checked.append(len(document["items"]))
        return problem(document, **kwargs)

    monkeypatch.setattr(model, "backlog_problem", counted)
    path, state_dir = repo / ".forge" / "backlog.json", repo / ".forge"

    def command(read):  # type: ignore[no-untyped-def]
        store._VALIDATED.clear()
        return read()

    assert command(lambda: read_valid(path, state_dir, lambda s: s.get("2").id)) == "002"
    assert command(lambda: read_valid(path, state_dir, lambda s: len(s.items))) == 5
    assert command(lambda: derived_text(path, state_dir, "test.txt",
                                        lambda s: str(len(s.items)))) == "5"
    assert checked == [5]
    assert run_forge("backlog", "edit", "5", "--title", "Renamed", cwd=repo).returncode == 0
    assert command(lambda: read_valid(path, state_dir, lambda s: s.get("5").title)) == (
        "Renamed")
    assert checked == [5, 5]


def test_an_unwritable_cache_changes_nothing_but_speed(repo: Path) -> None:
    reference = uncached(repo)
    shutil.rmtree(repo / ".forge" / "cache", ignore_errors=True)
    (repo / ".forge" / "cache").write_text("a file where the directory would be\n")
    assert outputs(repo) == reference
    assert (repo / ".forge" / "cache").read_text() == "a file where the directory would be\n"

"""Helpers for the tree-layer tests: raw git output, whole-state snapshots, names."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import waiting

#: File names that break naive code: spaces, quotes, backslashes, control
#: characters, non-ASCII, non-UTF-8 bytes, glob and pathspec-magic look-alikes,
#: and names that are prefixes of others.
TRICKY_NAMES = [
    "plain.txt",
    "sp ace.txt",
    "dir with space/inner file.txt",
    "ünïcödé.txt",
    'q"uote.txt',
    "back\\slash.txt",
    "tab\there.txt",
    "new\nline.txt",
    "*.txt",
    "[ab].txt",
    ":colon.txt",
    "-dash.txt",
    "a",
    "a.txt",
    "dir/x.txt",
    "dir2/x.txt",
    os.fsdecode(b"latin1-\xe9.txt"),
    "deep/er/still/file.md",
]


def git_bytes(*args: str, cwd: Path, env: dict[str, str] | None = None) -> bytes:
    """Run git, return raw stdout; fail the test on a non-zero exit."""
    result = waiting.run(
        ["git", *args], cwd=cwd, capture_output=True, env={**os.environ, **(env or {})},
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr.decode()}")
    return result.stdout


def commit_edits(tree: Path, edits: dict[str, str], subject: str) -> str:
    """What an agent's finished item is: files changed and committed in its worktree;
    the commit's id."""
    for name, text in edits.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    git_bytes("add", "-A", cwd=tree)
    git_bytes("commit", "-qm", subject, cwd=tree)
    return git_bytes("rev-parse", "HEAD", cwd=tree).decode().strip()


def replace_line(text: str, number: int, new: str) -> str:
    """``text`` with its line ``number`` (from 1) replaced by ``new``."""
    lines = text.splitlines(keepends=True)
    lines[number - 1] = new + "\n"
    return "".join(lines)


def git_status_z(root: Path) -> bytes:
    """What ``git status --porcelain -z`` (format v1) prints: the reference."""
    return git_bytes("status", "--porcelain", "-z", "-uall", "--no-renames", cwd=root)


def git_status_entries(root: Path) -> list[tuple[str, str]]:
    """``(path, XY)`` of each record of ``git status --porcelain -z`` (format v1,
    which git-forge does not read: an independent reference), in git's order."""
    return [(os.fsdecode(record[3:]), record[:2].decode("ascii"))
            for record in git_status_z(root).split(b"\0") if record]


def git_status_lines(root: Path) -> list[str]:
    out = git_bytes("status", "--porcelain", "-uall", "--no-renames", cwd=root)
    return os.fsdecode(out).splitlines()


def write(
    root: Path, path: str, data: str | bytes = "content\n", *, executable: bool = False
) -> None:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data.encode() if isinstance(data, str) else data)
    if executable:
        full.chmod(full.stat().st_mode | 0o111)


def worktree_state(root: Path) -> dict[str, tuple]:
    """Every file and symlink under ``root`` (no ``.git`` directory): kind, exec bit,
    bytes or link target."""
    state: dict[str, tuple] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name != ".git"]  # ours and nested ones
        for name in dirs + files:
            full = Path(directory) / name
            rel = os.path.relpath(full, root)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(info.st_mode):
                state[rel] = ("file", bool(info.st_mode & 0o100), full.read_bytes())
    return state


def index_state(root: Path) -> dict[str, bytes]:
    """Per path: its ``git ls-files -s`` records (all stages) and its porcelain
    status records — together they capture staged content, modes, conflict
    stages and intent-to-add flags."""
    state: dict[str, list[bytes]] = {}
    for record in git_bytes("ls-files", "-s", "-z", cwd=root).split(b"\0"):
        if record:
            info, _, path = record.partition(b"\t")
            state.setdefault(os.fsdecode(path), []).append(b"ls " + info)
    for record in git_status_z(root).split(b"\0"):
        if record:
            state.setdefault(os.fsdecode(record[3:]), []).append(b"st " + record[:2])
    return {path: b"|".join(sorted(records)) for path, records in state.items()}


def cached_diff(root: Path, *paths: str) -> bytes:
    """``git diff --cached`` (of ``paths`` only, when given)."""
    return git_bytes("diff", "--cached", "--no-renames", "--binary", "--", *paths, cwd=root)


def whole_state(root: Path) -> tuple[dict, dict]:
    return worktree_state(root), index_state(root)


def assert_only_paths_changed(
    before: tuple[dict, dict], after: tuple[dict, dict], paths: set[str]
) -> None:
    """Nothing outside ``paths`` (or directories emptied by them) changed — byte for byte."""
    for label, old, new in (("working tree", before[0], after[0]), ("index", before[1], after[1])):
        for path in set(old) | set(new):
            if path in paths:
                continue
            assert old.get(path) == new.get(path), f"{label}: {path!r} changed"


#: Paths of the busy tree, by the change each carries.
BUSY_MODIFIED = TRICKY_NAMES  # tracked, modified in the working tree only
BUSY_OTHER_CHANGES = {
    "staged-other.txt": "MM",
    "other.txt": "M ",
    "gone.txt": " D",
    "gone-staged.txt": "D ",
    "tool.sh": " M",  # executable bit dropped
    "link": " M",  # symlink retargeted
    "ita.txt": " A",
    "untracked/new file.txt": "??",
    "a.txt.new": "??",
    "*.new": "??",
    "dir3/z": "??",
    "added.txt": "A ",
}


def make_busy_repo(root: Path) -> Path:
    """A repository whose tree holds every kind of change at once, on tricky names."""
    root.mkdir(parents=True)
    git_bytes("init", "-q", "-b", "main", cwd=root)
    committed = TRICKY_NAMES + [
        "staged-other.txt", "other.txt", "gone.txt", "gone-staged.txt", "dir/y.txt", "dir2/y.txt",
    ]
    for number, name in enumerate(committed):
        write(root, name, f"committed {number}\n")
    write(root, "tool.sh", "#!/bin/sh\n", executable=True)
    write(root, ".gitignore", "*.log\n")
    os.symlink("plain.txt", root / "link")
    git_bytes("add", "-A", cwd=root)
    git_bytes("commit", "-q", "-m", "base commit", cwd=root)

    for name in BUSY_MODIFIED:
        (root / name).write_bytes((root / name).read_bytes() + b"modified\n")
    write(root, "staged-other.txt", "staged\n")
    write(root, "other.txt", "staged only\n")
    write(root, "added.txt", "added and staged\n")
    git_bytes("add", "staged-other.txt", "other.txt", "added.txt", cwd=root)
    write(root, "staged-other.txt", "staged\nthen modified\n")
    (root / "gone.txt").unlink()
    git_bytes("rm", "-q", "gone-staged.txt", cwd=root)
    (root / "tool.sh").chmod(0o644)
    (root / "link").unlink()
    os.symlink("a.txt", root / "link")
    write(root, "ita.txt", "intent to add\n")
    git_bytes("add", "-N", "ita.txt", cwd=root)
    for name in ("untracked/new file.txt", "a.txt.new", "*.new", "dir3/z"):
        write(root, name, f"untracked {name}\n")
    write(root, "debug.log", "ignored\n")
    return root

"""commit_paths commits exactly its paths and leaves every other byte alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import submodule_upstream
from helpers import git
from tree_helpers import (
    assert_only_paths_changed,
    cached_diff,
    git_bytes,
    whole_state,
    worktree_state,
    write,
)

from git_forge.tree.commit import commit_paths
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import porcelain
from git_forge.tree.repo import open_repo

# Globs, prefixes of other names, special characters, a deletion, an untracked
# file, an exec-bit change, a retargeted symlink, a staged+modified file.
CHOSEN = [
    "*.txt", "[ab].txt", "a", "dir/x.txt", "sp ace.txt", "new\nline.txt", 'q"uote.txt',
    os.fsdecode(b"latin1-\xe9.txt"), "gone.txt", "untracked/new file.txt", "tool.sh", "link",
    "staged-other.txt",
]


def head_paths(root: Path) -> set[str]:
    out = git_bytes("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "HEAD~1", "HEAD",
                    cwd=root)
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def test_commits_exactly_the_named_paths(busy: Path) -> None:
    before = whole_state(busy)
    others = ["other.txt", "added.txt", "gone-staged.txt"]
    staged_before = cached_diff(busy, *others)
    commit_id = commit_paths(open_repo(busy), CHOSEN, "[forge] 003: the item")

    assert git("rev-parse", "HEAD", cwd=busy).strip() == commit_id
    assert head_paths(busy) == set(CHOSEN)
    for path in CHOSEN:
        kind = before[0].get(path)
        if kind is None:
            assert git("cat-file", "-e", f"HEAD:{path}", cwd=busy, check=False) == ""
            assert git_bytes("ls-tree", "-z", "HEAD", "--", path, cwd=busy) == b""
        elif kind[0] == "link":
            assert git_bytes("cat-file", "blob", f"HEAD:{path}", cwd=busy) == kind[1].encode()
        else:
            assert git_bytes("cat-file", "blob", f"HEAD:{path}", cwd=busy) == kind[2]
    mode = git_bytes("ls-tree", "HEAD", "tool.sh", cwd=busy).split()[0]
    assert mode == b"100644"  # the executable bit was dropped in the working tree
    assert git_bytes("ls-tree", "HEAD", "link", cwd=busy).split()[0] == b"120000"

    after = whole_state(busy)
    assert_only_paths_changed(before, after, set(CHOSEN))
    assert after[0] == before[0]  # committing changes no working-tree byte
    # The committed paths are clean now; the other staged changes are still staged.
    assert not {e.path for e in porcelain(open_repo(busy))} & set(CHOSEN)
    assert staged_before.count(b"diff --git") == 3
    assert cached_diff(busy, *others) == staged_before


def test_reflog_and_identity_as_git_writes_them(busy: Path) -> None:
    commit_paths(open_repo(busy), ["a"], "[forge] 001: first\n\nbody  \n")
    assert git("reflog", "-1", "--format=%gs", cwd=busy).strip() == "commit: [forge] 001: first"
    assert git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", cwd=busy) == (
        "Forge Tester <tester@example.invalid>|Forge Tester <tester@example.invalid>|"
        "[forge] 001: first\n\nbody\n\n"
    )


def test_author_and_committer_from_the_environment(
    busy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Agent Smith")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "@1700000000 +0100")
    commit_paths(open_repo(busy), ["a"], "msg")
    assert git("log", "-1", "--format=%an|%ad|%cn", "--date=raw", cwd=busy).strip() == (
        "Agent Smith|1700000000 +0100|Forge Tester"
    )


def test_first_commit_on_an_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    write(root, "one.txt", "1\n")
    write(root, "two.txt", "2\n")
    commit_paths(open_repo(root), ["one.txt"], "first")
    assert git("log", "--format=%s", cwd=root) == "first\n"
    assert git("ls-tree", "--name-only", "HEAD", cwd=root) == "one.txt\n"
    assert git("reflog", "-1", "--format=%gs", cwd=root).strip() == "commit (initial): first"
    assert git("status", "--porcelain", cwd=root) == "?? two.txt\n"


def test_detached_head_advances(busy: Path) -> None:
    git("checkout", "-q", "--detach", cwd=busy)
    commit_id = commit_paths(open_repo(busy), ["a"], "detached work")
    assert git("rev-parse", "HEAD", cwd=busy).strip() == commit_id
    assert git("rev-parse", "main", cwd=busy).strip() != commit_id


def test_nothing_to_commit_is_refused(busy: Path) -> None:
    before = whole_state(busy)
    head = git("rev-parse", "HEAD", cwd=busy)
    with pytest.raises(GitError, match="nothing to commit: dir2/y.txt match HEAD"):
        commit_paths(open_repo(busy), ["dir2/y.txt"], "nothing")
    assert git("rev-parse", "HEAD", cwd=busy) == head
    assert whole_state(busy) == before
    commit_paths(open_repo(busy), ["dir2/y.txt"], "empty on purpose", allow_empty=True)
    assert git("rev-parse", "HEAD~1", cwd=busy) == head


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["../outside"], "not a path inside the working tree"),
        ([".git/config"], "not a path inside the working tree"),
        (["/etc/passwd"], "not a path inside the working tree"),
        (["dir"], "is a directory"),
        ([], "no paths given"),
    ],
)
def test_bad_paths_are_refused(busy: Path, paths: list[str], message: str) -> None:
    before = whole_state(busy)
    with pytest.raises(GitError, match=message):
        commit_paths(open_repo(busy), paths, "x")
    assert whole_state(busy) == before


def test_nested_repository_and_symlinked_parent_are_refused(busy: Path) -> None:
    nested = busy / "nested"
    nested.mkdir()
    git("init", "-q", cwd=nested)
    write(nested, "f.txt")
    with pytest.raises(GitError, match="nested git repository"):
        commit_paths(open_repo(busy), ["nested/"], "x")
    os.symlink("dir", busy / "via-link")
    with pytest.raises(GitError, match="beyond a symbolic link"):
        commit_paths(open_repo(busy), ["via-link/x.txt"], "x")


def test_refused_during_a_merge(busy: Path) -> None:
    (busy / ".git" / "MERGE_HEAD").write_text(git("rev-parse", "HEAD", cwd=busy))
    with pytest.raises(GitError, match="merge"):
        commit_paths(open_repo(busy), ["a"], "x")


def test_clean_filter_paths_are_hashed_by_git(git_repo: Path) -> None:
    """libgit2 runs no external filters; such paths get what `git add` would store."""
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=git_repo)
    git("config", "filter.upper.smudge", "cat", cwd=git_repo)
    write(git_repo, ".gitattributes", "*.up filter=upper\n")
    write(git_repo, "shout.up", "quiet words\n")
    commit_paths(open_repo(git_repo), [".gitattributes", "shout.up"], "filtered")
    assert git("show", "HEAD:shout.up", cwd=git_repo) == "QUIET WORDS\n"
    assert git("status", "--porcelain", cwd=git_repo) == ""


def test_crlf_conversion_like_git_add(git_repo: Path) -> None:
    write(git_repo, ".gitattributes", "*.txt text eol=crlf\n")
    write(git_repo, "dos.txt", b"one\r\ntwo\r\n")
    commit_paths(open_repo(git_repo), [".gitattributes", "dos.txt"], "crlf")
    assert git_bytes("cat-file", "blob", "HEAD:dos.txt", cwd=git_repo) == b"one\ntwo\n"
    assert git("status", "--porcelain", cwd=git_repo) == ""


def test_submodule_path_records_its_checked_out_commit(git_repo: Path, tmp_path: Path) -> None:
    upstream = submodule_upstream(tmp_path / "upstream")
    git("submodule", "add", "-q", str(upstream), "lib", cwd=git_repo)
    git("commit", "-q", "-m", "submodule", cwd=git_repo)
    write(git_repo / "lib", "lib.txt", "v2\n")
    git("commit", "-q", "-am", "v2", cwd=git_repo / "lib")
    before = worktree_state(git_repo)
    commit_paths(open_repo(git_repo), ["lib"], "bump lib")
    checked_out = git("rev-parse", "HEAD", cwd=git_repo / "lib")
    assert git("rev-parse", "HEAD:lib", cwd=git_repo) == checked_out
    assert git("status", "--porcelain", cwd=git_repo) == ""
    assert worktree_state(git_repo) == before


def test_no_hooks_run(busy: Path) -> None:
    hook = busy / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    commit_paths(open_repo(busy), ["a"], "hooks do not run")
    assert git("log", "-1", "--format=%s", cwd=busy).strip() == "hooks do not run"


def test_a_held_index_lock_refuses_before_anything_changes(busy: Path) -> None:
    (busy / ".git" / "index.lock").write_bytes(b"")
    before = whole_state_without_lock(busy)
    head = git("rev-parse", "HEAD", cwd=busy)
    with pytest.raises(GitError, match="index.lock exists: another git process"):
        commit_paths(open_repo(busy), ["a"], "x")
    assert git("rev-parse", "HEAD", cwd=busy) == head
    assert whole_state_without_lock(busy) == before


def whole_state_without_lock(root: Path) -> tuple[dict, dict]:
    return worktree_state(root), cached_diff(root)  # git reads the index despite the lock


def test_a_file_replaced_by_a_directory_commits_as_deleted(busy: Path) -> None:
    (busy / "a").unlink()
    write(busy, "a/inner.txt", "inner\n")
    commit_paths(open_repo(busy), ["a", "a/inner.txt"], "file to directory")
    assert git("ls-tree", "-r", "--name-only", "HEAD", "--", "a", cwd=busy) == "a/inner.txt\n"


def test_a_stale_cached_index_is_never_written_back(busy: Path) -> None:
    """pygit2 caches the index; git changing it under us must not be undone."""
    repo = open_repo(busy)
    assert "dir2/x.txt" in repo.repository.index  # the cached copy is loaded now
    git("add", "dir2/x.txt", cwd=busy)  # staged by git, possibly within the same second
    commit_paths(repo, ["a"], "after git staged something")
    assert git("diff", "--cached", "--name-only", "--", "dir2/x.txt", cwd=busy) == "dir2/x.txt\n"


@pytest.mark.parametrize("limit", [0, 1 << 20], ids=["streamed", "read-whole"])
def test_small_and_large_files_store_git_s_own_blob(git_repo: Path, monkeypatch,
                                                     limit: int) -> None:
    """A file up to the in-memory limit is read whole, a larger one streamed: both
    store the blob ``git hash-object`` names, and no temporary file is left."""
    from git_forge.tree import worktree

    monkeypatch.setattr(worktree, "BLOB_IN_MEMORY_LIMIT", limit)
    contents = {"empty.txt": b"", "small.txt": b"one line\n",
                "binary.bin": bytes(range(256)) * 4096}
    for name, data in contents.items():
        (git_repo / name).write_bytes(data)
    commit_paths(open_repo(git_repo), list(contents), "blobs")
    for name in contents:
        expected = git("hash-object", name, cwd=git_repo).strip()
        assert git("rev-parse", f"HEAD:{name}", cwd=git_repo).strip() == expected
        assert git_bytes("cat-file", "blob", f"HEAD:{name}", cwd=git_repo) == contents[name]
    objects = git_repo / ".git" / "objects"
    assert not [p.name for p in objects.iterdir() if p.is_file()]  # no streamed leftovers


def test_a_commit_for_a_branch_lands_there_or_nowhere(git_repo: Path) -> None:
    write(git_repo, "work.txt", "work\n")
    git("switch", "-q", "-c", "elsewhere", cwd=git_repo)
    before = whole_state(git_repo)
    with pytest.raises(GitError, match="HEAD is on elsewhere, not on branch main"):
        commit_paths(open_repo(git_repo), ["work.txt"], "[forge] 001: one", branch="main")
    assert whole_state(git_repo) == before
    git("switch", "-q", "main", cwd=git_repo)
    made = commit_paths(open_repo(git_repo), [], "[forge] 002: nothing", allow_empty=True,
                        branch="main")
    assert git("rev-parse", "main", cwd=git_repo).strip() == made
    assert git("rev-parse", "elsewhere", cwd=git_repo) == git("rev-parse", "main~1",
                                                              cwd=git_repo)
    assert git("show", "--name-only", "--format=", made, cwd=git_repo) == ""


@pytest.mark.parametrize("file_mode", ["true", "false"])
def test_an_executable_bit_counts_as_core_file_mode_says(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch, file_mode: str) -> None:
    """``git -c core.fileMode=false`` (what git hands a subcommand) keeps the mode
    git knew; true commits the new one — as git add would."""
    write(git_repo, "run.sh", "#!/bin/sh\n")
    write(git_repo, "tool.sh", "#!/bin/sh\n", executable=True)
    git("add", "run.sh", "tool.sh", cwd=git_repo)
    git("commit", "-qm", "scripts", cwd=git_repo)
    os.chmod(git_repo / "run.sh", 0o755)
    os.chmod(git_repo / "tool.sh", 0o644)
    write(git_repo, "tool.sh", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fileMode'='{file_mode}'")
    commit_paths(open_repo(git_repo), ["run.sh", "tool.sh"], "modes")
    modes = {line.split()[-1]: line.split()[0] for line in
             git("ls-tree", "HEAD", "run.sh", "tool.sh", cwd=git_repo).splitlines()}
    kept = file_mode == "false"
    assert modes == {"run.sh": "100644" if kept else "100755",
                     "tool.sh": "100755" if kept else "100644"}
    assert git("status", "--porcelain", cwd=git_repo) == ""

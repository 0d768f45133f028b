"""A commit hashes files in-process only where ``git add`` would store their bytes
as they are; wherever an attribute or ``core.autocrlf`` could apply, git hashes
them — and either way the committed blob is the one ``git add`` stores."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import git
from tree_helpers import git_bytes, whole_state, write

from git_forge.tree.checkin import stored_as_on_disk
from git_forge.tree.commit import commit_paths
from git_forge.tree.errors import GitError
from git_forge.tree.repo import open_repo

PATH = "sub/dir/notes.txt"
CONTENT = "mixed Case\r\nline two\r\n"
RULE = "*.txt filter=upper text eol=lf\n"


def _repo_config(root: Path) -> None:
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=root)


def info_attributes(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, ".git/info/attributes", RULE)


def nested_attributes(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "sub/.gitattributes", RULE)


def attributes_only_in_the_index(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "sub/dir/.gitattributes", RULE)
    git("add", "sub/dir/.gitattributes", cwd=root)
    (root / "sub/dir/.gitattributes").unlink()


def test_attributes_deleted_but_still_in_the_index_are_refused(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git add reads them from the index, git hash-object does not: the commit
    cannot match git's, so it is refused before anything changes."""
    _setup(git_repo, attributes_only_in_the_index, monkeypatch)
    assert _what_git_add_stores(git_repo, tmp_path / "copy") != CONTENT.encode()
    before = whole_state(git_repo)
    with pytest.raises(GitError, match=r"sub/dir/\.gitattributes is deleted .* still in the index"):
        commit_paths(open_repo(git_repo), [PATH], "refused")
    assert whole_state(git_repo) == before


def global_attributes_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = root.parent / "global-attributes"
    target.write_text(RULE)
    git("config", "core.attributesFile", str(target), cwd=root)


def xdg_default_attributes(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = root.parent / "xdg"
    write(xdg, "git/attributes", RULE)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))


def autocrlf_from_the_command_line(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.autocrlf'='input'")


def autocrlf_in_the_repository(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git("config", "core.autocrlf", "true", cwd=root)


def bare_autocrlf_in_the_repository(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``autocrlf`` written without ``= value``: git reads it as true."""
    with open(root / ".git" / "config", "a", encoding="utf-8") as config:
        config.write("[core]\n\tautocrlf\n")


Source = Callable[[Path, pytest.MonkeyPatch], None]
SOURCES: dict[str, Source] = {
    "info/attributes": info_attributes,
    "a parent directory's .gitattributes": nested_attributes,
    "core.attributesFile": global_attributes_file,
    "XDG attributes": xdg_default_attributes,
    "git -c core.autocrlf": autocrlf_from_the_command_line,
    "core.autocrlf in the repository": autocrlf_in_the_repository,
    "a bare core.autocrlf": bare_autocrlf_in_the_repository,
}


def _what_git_add_stores(root: Path, copy: Path) -> bytes:
    """The blob ``git add`` stores for PATH, in a copy of the repository."""
    shutil.copytree(root, copy, symlinks=True)
    git("add", "--", PATH, cwd=copy)
    return git_bytes("cat-file", "blob", f":{PATH}", cwd=copy)


def _setup(root: Path, source: Source | None,
           monkeypatch: pytest.MonkeyPatch) -> None:
    _repo_config(root)
    write(root, PATH, CONTENT)
    if source is not None:
        source(root, monkeypatch)


@pytest.mark.parametrize("name", list(SOURCES))
def test_any_attribute_source_sends_the_file_to_git(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _setup(git_repo, SOURCES[name], monkeypatch)
    repo = open_repo(git_repo)
    assert not stored_as_on_disk(repo, [PATH])
    expected = _what_git_add_stores(git_repo, tmp_path / "copy")
    assert expected != CONTENT.encode()  # the source really converts the file

    commit_paths(open_repo(git_repo), [PATH], "converted")
    assert git_bytes("cat-file", "blob", f"HEAD:{PATH}", cwd=git_repo) == expected


def test_with_nothing_that_converts_the_bytes_are_stored_as_they_are(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(git_repo, None, monkeypatch)
    write(git_repo, "other/.gitattributes", RULE)  # not above PATH: it does not apply
    repo = open_repo(git_repo)
    assert stored_as_on_disk(repo, [PATH])
    expected = _what_git_add_stores(git_repo, tmp_path / "copy")
    assert expected == CONTENT.encode()

    commit_id = commit_paths(repo, [PATH], "as is")
    blob = git("rev-parse", f"{commit_id}:{PATH}", cwd=git_repo).strip()
    assert blob == git("hash-object", PATH, cwd=git_repo).strip()
    assert git_bytes("cat-file", "blob", blob, cwd=git_repo) == expected
    git("fsck", "--strict", "--no-progress", cwd=git_repo)


def test_autocrlf_false_keeps_the_fast_path(git_repo: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    _setup(git_repo, None, monkeypatch)
    git("config", "core.autocrlf", "false", cwd=git_repo)
    repo = open_repo(git_repo)
    assert stored_as_on_disk(repo, [PATH])


def test_a_commit_records_each_files_stat_as_git_add_does(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without refreshing, git sees the committed files unchanged from their stat
    (an entry without it reads as modified until git hashes the file again) — and a
    later change is still seen."""
    _setup(git_repo, None, monkeypatch)
    write(git_repo, "tool.sh", "#!/bin/sh\n", executable=True)
    (git_repo / "link").symlink_to("tool.sh")
    commit_paths(open_repo(git_repo), [PATH, "tool.sh", "link"], "three")
    assert git("diff-files", "--name-only", cwd=git_repo) == ""
    assert git("status", "--porcelain", cwd=git_repo) == ""
    write(git_repo, PATH, CONTENT + "more\n")
    assert git("status", "--porcelain", cwd=git_repo) == f" M {PATH}\n"

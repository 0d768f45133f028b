"""The blob a commit stores for a file is the one ``git add`` stores: git hashes
every file, so whatever attribute source or setting converts it — a clean filter,
end-of-line conversion, ``ident``, ``working-tree-encoding``, ``core.autocrlf``,
from any file or ``git -c`` — the committed blob is git's."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import git
from tree_helpers import git_bytes, whole_state, write

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


def relative_attributes_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative to the work tree's top, for git (a copy of git's rules looked for it
    where git-forge ran, found nothing and stored the bytes unconverted)."""
    write(root, "attributes", RULE)
    git("config", "core.attributesFile", "attributes", cwd=root)


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


def ident_rule(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, PATH, "$Id: stale $\r\n")
    write(root, ".gitattributes", "*.txt ident\n")


def eol_rule(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, ".gitattributes", "*.txt eol=lf\n")


def encoding_rule(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, PATH, CONTENT.encode("utf-16"))
    write(root, ".gitattributes", "*.txt working-tree-encoding=UTF-16\n")


def filter_from_the_command_line(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule in the tree, the filter's command only in ``git -c``, a value with
    spaces and quotes."""
    git("config", "--unset", "filter.upper.clean", cwd=root)
    write(root, ".gitattributes", "*.txt filter=upper\n")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS",
                       "'filter.upper.clean'='sed \"s/Case/'\\''CASE'\\''/\"'")


Source = Callable[[Path, pytest.MonkeyPatch], None]
SOURCES: dict[str, Source] = {
    "info/attributes": info_attributes,
    "a parent directory's .gitattributes": nested_attributes,
    "core.attributesFile": global_attributes_file,
    "a relative core.attributesFile": relative_attributes_file,
    "XDG attributes": xdg_default_attributes,
    "git -c core.autocrlf": autocrlf_from_the_command_line,
    "core.autocrlf in the repository": autocrlf_in_the_repository,
    "a bare core.autocrlf": bare_autocrlf_in_the_repository,
    "ident": ident_rule,
    "eol": eol_rule,
    "working-tree-encoding": encoding_rule,
    "a clean filter from git -c": filter_from_the_command_line,
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
def test_a_converted_file_is_committed_as_git_add_stores_it(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _setup(git_repo, SOURCES[name], monkeypatch)
    on_disk = (git_repo / PATH).read_bytes()
    expected = _what_git_add_stores(git_repo, tmp_path / "copy")
    assert expected != on_disk  # the source really converts the file

    commit_paths(open_repo(git_repo), [PATH], "converted")
    assert git_bytes("cat-file", "blob", f"HEAD:{PATH}", cwd=git_repo) == expected


def test_with_nothing_that_converts_the_bytes_are_stored_as_they_are(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(git_repo, None, monkeypatch)
    write(git_repo, "other/.gitattributes", RULE)  # not above PATH: it does not apply
    expected = _what_git_add_stores(git_repo, tmp_path / "copy")
    assert expected == CONTENT.encode()

    commit_id = commit_paths(open_repo(git_repo), [PATH], "as is")
    blob = git("rev-parse", f"{commit_id}:{PATH}", cwd=git_repo).strip()
    assert blob == git("hash-object", PATH, cwd=git_repo).strip()
    assert git_bytes("cat-file", "blob", blob, cwd=git_repo) == expected
    git("fsck", "--strict", "--no-progress", cwd=git_repo)


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

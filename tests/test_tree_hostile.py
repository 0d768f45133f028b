"""Hostile trees: every tree operation does what git does for the same paths,
never writes outside the working tree, or refuses before changing anything.

Each case builds one dirty tree, copies it, lets git-forge act on one copy and
plain git (``git stash push -u -- PATHS``, ``git checkout HEAD -- PATHS``,
``git add -A``) on the other, and compares working-tree bytes, modes and
links, the index, ``git status --porcelain -uall --no-renames`` and the
commit or stash trees. Every file around the repositories (the targets of
the links) is hashed before and after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import submodule_upstream
from helpers import git
from tree_helpers import git_bytes, git_status_entries, git_status_z, worktree_state, write

from git_forge.tree.commit import commit_paths
from git_forge.tree.discard import discard_paths, restore_discarded
from git_forge.tree.errors import GitError
from git_forge.tree.fast_status import porcelain_fast
from git_forge.tree.git_status import porcelain
from git_forge.tree.porcelain import StatusEntry
from git_forge.tree.repo import open_repo
from git_forge.tree.stash import stash_paths
from git_forge.tree.worktree import refusals, restore_to_head

LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


def outside_digest(tmp: Path, *repos: Path) -> dict[str, tuple]:
    """Every file, link and directory under ``tmp`` except inside ``repos``: its
    kind and a hash of its bytes (or its target)."""
    skip = {repo.resolve() for repo in repos}
    found: dict[str, tuple] = {}
    for directory, dirs, files in os.walk(tmp):
        dirs[:] = [d for d in dirs if (Path(directory) / d).resolve() not in skip
                   or os.path.islink(Path(directory) / d)]
        for name in dirs + files:
            full = Path(directory) / name
            rel = full.relative_to(tmp).as_posix()
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(info.st_mode):
                found[rel] = ("file", info.st_mode & 0o777,
                              hashlib.sha256(full.read_bytes()).hexdigest())
            else:
                found[rel] = ("dir",)
    return found


def index_records(root: Path) -> bytes:
    return git_bytes("ls-files", "-s", "-z", cwd=root)


def assert_same_as_git(ours: Path, theirs: Path) -> None:
    assert worktree_state(ours) == worktree_state(theirs)
    assert index_records(ours) == index_records(theirs)
    assert git_status_z(ours) == git_status_z(theirs)


def statuses_agree(root: Path) -> list[tuple[str, str]]:
    """The one status source, through both entry points, equals git's."""
    expected = [StatusEntry(path, xy) for path, xy in git_status_entries(root)]
    assert porcelain(open_repo(root)) == expected
    assert porcelain_fast(root) == expected
    return [(entry.path, entry.xy) for entry in expected]


class Case:
    """A committed base, a dirty tree built on it, and two copies of it."""

    def __init__(self, tmp: Path, committed: Callable[[Path], None],
                 dirty: Callable[[Path], None]) -> None:
        self.tmp = tmp
        base = tmp / "base"
        base.mkdir()
        git("init", "-q", "-b", "main", cwd=base)
        committed(base)
        git("add", "-A", cwd=base)
        git("commit", "-q", "-m", "base", cwd=base)
        dirty(base)
        self.ours, self.theirs = tmp / "ours", tmp / "theirs"
        shutil.copytree(base, self.ours, symlinks=True)
        shutil.copytree(base, self.theirs, symlinks=True)
        shutil.rmtree(base)
        self.outside = outside_digest(tmp, self.ours, self.theirs)

    def changed_paths(self) -> list[str]:
        return [path for path, _ in statuses_agree(self.ours)]

    def assert_outside_untouched(self) -> None:
        assert outside_digest(self.tmp, self.ours, self.theirs) == self.outside


def _outside_targets(root: Path) -> None:
    (root.parent / "outside.txt").write_text("precious\n")
    (root.parent / "outdir").mkdir(exist_ok=True)
    (root.parent / "outdir" / "f.txt").write_text("outside dir\n")


def base_files(root: Path) -> None:
    _outside_targets(root)
    write(root, "config.txt", "repo content\n")
    write(root, "README.md", "readme\n")
    write(root, "sub/f.txt", "in sub\n")
    write(root, "back\\slash.txt", "backslash\n")
    os.symlink("README.md", root / "link")


def symlinks_everywhere(root: Path) -> None:
    (root / "config.txt").unlink()
    os.symlink("../outside.txt", root / "config.txt")  # a tracked file replaced by a link out
    os.symlink("../outdir", root / "ext")  # an untracked link to a directory outside
    os.symlink("no-such-target", root / "dangling")  # untracked, dangling
    os.symlink("README.md", root / "inner-link")  # untracked, to a file inside
    (root / "link").unlink()
    os.symlink("../outside.txt", root / "link")  # a tracked link retargeted outside


def odd_names(root: Path) -> None:
    write(root, "back\\slash.txt", "backslash, changed\n")
    write(root, "new\nline.txt", "newline\n")
    write(root, "trailing space ", "space\n")
    write(root, "tab\there ", "tab\n")
    (root / "README.md").unlink()
    os.symlink("sub/f.txt", root / "README.md")  # a file turned into a link


def directory_replaced_by_link(root: Path) -> None:
    shutil.rmtree(root / "sub")
    os.symlink("../outdir", root / "sub")  # sub/f.txt is now beyond a link


DIRTY = {"symlinks": symlinks_everywhere, "odd names": odd_names}


def git_stash(root: Path, paths: list[str]) -> None:
    git("stash", "push", "-q", "-u", "-m", "m", "--", *paths, cwd=root, env=LITERAL)


def stash_trees(root: Path) -> tuple[str, str]:
    worktree = git("rev-parse", "stash@{0}^{tree}", cwd=root).strip()
    untracked = git("rev-parse", "--verify", "-q", "stash@{0}^3^{tree}", cwd=root,
                    check=False).strip()
    return worktree, untracked


@pytest.mark.parametrize("kind", sorted(DIRTY))
def test_stash_matches_git_stash_and_never_writes_through_a_link(tmp_path: Path,
                                                                 kind: str) -> None:
    case = Case(tmp_path, base_files, DIRTY[kind])
    paths = case.changed_paths()
    stash_paths(open_repo(case.ours), paths, "m")
    git_stash(case.theirs, paths)
    assert_same_as_git(case.ours, case.theirs)
    assert stash_trees(case.ours) == stash_trees(case.theirs)
    assert statuses_agree(case.ours) == []
    case.assert_outside_untouched()


@pytest.mark.parametrize("kind", sorted(DIRTY))
def test_discard_puts_back_what_git_does_and_restore_brings_it_all_back(tmp_path: Path,
                                                                        kind: str) -> None:
    case = Case(tmp_path, base_files, DIRTY[kind])
    paths = case.changed_paths()
    before = worktree_state(case.ours)
    saved = discard_paths(open_repo(case.ours), paths)
    git_stash(case.theirs, paths)  # git's way of putting exactly these paths back
    assert_same_as_git(case.ours, case.theirs)
    case.assert_outside_untouched()
    # The safety ref holds the links as links: restoring makes them links again.
    assert restore_discarded(open_repo(case.ours), saved.ref)
    assert worktree_state(case.ours) == before
    case.assert_outside_untouched()


def test_the_reported_reproducer_leaves_the_outside_file_alone(tmp_path: Path) -> None:
    case = Case(tmp_path, base_files, symlinks_everywhere)
    stash_paths(open_repo(case.ours), ["config.txt"], "m")
    assert (tmp_path / "outside.txt").read_text() == "precious\n"
    assert (case.ours / "config.txt").read_text() == "repo content\n"
    assert not (case.ours / "config.txt").is_symlink()
    git_stash(case.theirs, ["config.txt"])
    assert_same_as_git(case.ours, case.theirs)
    assert git("show", "stash@{0}:config.txt", cwd=case.ours) == "../outside.txt"


def test_a_directory_replaced_by_a_link_is_put_back_as_git_checkout_does(
    tmp_path: Path,
) -> None:
    case = Case(tmp_path, base_files, directory_replaced_by_link)
    assert case.changed_paths() == ["sub/f.txt", "sub"]
    # git stash refuses outright ("beyond a symbolic link"); git clean + checkout is
    # git's way of putting these two paths back.
    restore_to_head(open_repo(case.ours), ["sub", "sub/f.txt"])
    git("clean", "-fq", "--", "sub", cwd=case.theirs)
    git("checkout", "HEAD", "--", "sub/f.txt", cwd=case.theirs)
    assert_same_as_git(case.ours, case.theirs)
    case.assert_outside_untouched()
    assert (tmp_path / "outdir" / "f.txt").read_text() == "outside dir\n"


def test_a_link_on_the_way_is_never_written_through(tmp_path: Path) -> None:
    case = Case(tmp_path, base_files, directory_replaced_by_link)
    repo = open_repo(case.ours)
    before = worktree_state(case.ours)
    # Only the path below the link: putting it back would destroy the link, unnamed.
    for action in (lambda: stash_paths(repo, ["sub/f.txt"], "m"),
                   lambda: discard_paths(repo, ["sub/f.txt"]),
                   lambda: restore_to_head(repo, ["sub/f.txt"])):
        with pytest.raises(GitError, match="would also remove sub"):
            action()
        assert worktree_state(case.ours) == before
    # Both named: stashed, the link removed (not followed), the directory back.
    stash_paths(repo, ["sub", "sub/f.txt"], "m")
    assert (case.ours / "sub" / "f.txt").read_text() == "in sub\n"
    assert git("show", "stash@{0}^3:sub", cwd=case.ours) == "../outdir"
    case.assert_outside_untouched()


def test_a_commit_stores_links_and_deletions_below_them_as_git_add_does(tmp_path: Path) -> None:
    def dirty(root: Path) -> None:
        symlinks_everywhere(root)
        directory_replaced_by_link(root)
        odd_names(root)

    case = Case(tmp_path, base_files, dirty)
    paths = case.changed_paths()
    commit_paths(open_repo(case.ours), paths, "m")
    git("add", "-A", cwd=case.theirs)
    git("commit", "-q", "-m", "m", cwd=case.theirs)
    tree = lambda root: git("rev-parse", "HEAD^{tree}", cwd=root).strip()  # noqa: E731
    assert tree(case.ours) == tree(case.theirs)
    assert_same_as_git(case.ours, case.theirs)
    case.assert_outside_untouched()


def test_restoring_a_safety_ref_never_writes_below_a_new_link(tmp_path: Path) -> None:
    case = Case(tmp_path, base_files, lambda root: write(root, "sub/f.txt", "edited\n"))
    saved = discard_paths(open_repo(case.ours), ["sub/f.txt"])
    shutil.rmtree(case.ours / "sub")
    os.symlink("../outdir", case.ours / "sub")
    before = worktree_state(case.ours)
    with pytest.raises(GitError, match="refusing to restore"):
        restore_discarded(open_repo(case.ours), saved.ref)
    assert worktree_state(case.ours) == before
    case.assert_outside_untouched()


@pytest.mark.parametrize("source", ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "git -c"])
def test_status_honours_every_ignore_source(git_repo: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            source: str) -> None:
    excludes = tmp_path / "excludes"
    excludes.write_text("secret.env\n")
    write(git_repo, "secret.env", "TOKEN=x\n")
    write(git_repo, "code.py", "code\n")
    if source == "GIT_CONFIG_GLOBAL":  # a file libgit2 never reads
        elsewhere = tmp_path / "elsewhere.gitconfig"
        shutil.copy(os.environ["GIT_CONFIG_GLOBAL"], elsewhere)
        elsewhere.write_text(elsewhere.read_text() + f"[core]\n\texcludesFile = {excludes}\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(elsewhere))
    elif source == "GIT_CONFIG_COUNT":
        for name, value in {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.excludesFile",
                            "GIT_CONFIG_VALUE_0": str(excludes)}.items():
            monkeypatch.setenv(name, value)
    else:  # what `git -c core.excludesFile=… forge …` hands its subcommand
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.excludesFile'='{excludes}'")
    assert statuses_agree(git_repo) == [("code.py", "??")]


# --- filters ---------------------------------------------------------------------------------


def rot13_filter() -> None:
    """A clean/smudge pair configured where libgit2 does not look: GIT_CONFIG_GLOBAL."""
    rot = "tr a-zA-Z n-za-mN-ZA-M"
    git("config", "--global", "filter.rot.clean", rot, cwd="/")
    git("config", "--global", "filter.rot.smudge", rot, cwd="/")


def filtered_base(root: Path) -> None:
    write(root, ".gitattributes", "*.rot filter=rot\n")
    write(root, "secret.rot", "plain words\n")
    write(root, "other.txt", "other\n")


def test_filters_run_as_git_runs_them(tmp_path: Path) -> None:
    rot13_filter()
    case = Case(tmp_path, filtered_base, lambda root: write(root, "secret.rot", "new words\n"))
    assert git("show", "HEAD:secret.rot", cwd=case.ours) == "cynva jbeqf\n"  # cleaned
    # Touched but unchanged: git says clean, and so does every status here.
    (case.ours / "other.txt").write_text("other\n")
    os.utime(case.ours / "secret.rot", ns=(1, 1))
    assert case.changed_paths() == ["secret.rot"]
    # Put back: the smudged content, as git checkout writes it (not the raw blob).
    discard_paths(open_repo(case.ours), ["secret.rot"])
    assert (case.ours / "secret.rot").read_text() == "plain words\n"
    git_stash(case.theirs, ["secret.rot"])
    assert_same_as_git(case.ours, case.theirs)
    # Committed cleaned, as git add does.
    write(case.ours, "secret.rot", "third words\n")
    write(case.theirs, "secret.rot", "third words\n")
    commit_paths(open_repo(case.ours), ["secret.rot"], "m")
    git("commit", "-q", "-am", "m", cwd=case.theirs)
    assert git("rev-parse", "HEAD^{tree}", cwd=case.ours) == git(
        "rev-parse", "HEAD^{tree}", cwd=case.theirs)
    assert statuses_agree(case.ours) == []
    case.assert_outside_untouched()


# --- sparse checkouts ------------------------------------------------------------------------


def sparse_base(root: Path) -> None:
    for name in ("cone/a.txt", "out/b.txt", "out/deep/c.txt", "top.txt"):
        write(root, name, f"{name}\n")


def make_sparse(root: Path) -> None:
    git("sparse-checkout", "set", "--cone", "cone", cwd=root)
    write(root, "cone/a.txt", "changed in the cone\n")
    write(root, "cone/new.txt", "new in the cone\n")


def test_sparse_checkout_commit_and_stash_touch_only_the_changed_paths(tmp_path: Path) -> None:
    case = Case(tmp_path, sparse_base, make_sparse)
    assert not (case.ours / "out").exists()
    paths = case.changed_paths()
    assert paths == ["cone/a.txt", "cone/new.txt"]  # the out-of-cone files are not " D"
    commit_paths(open_repo(case.ours), paths, "m")
    git("add", "-A", cwd=case.theirs)
    git("commit", "-q", "-m", "m", cwd=case.theirs)
    assert git("ls-tree", "-r", "--name-only", "HEAD", cwd=case.ours) == (
        "cone/a.txt\ncone/new.txt\nout/b.txt\nout/deep/c.txt\ntop.txt\n")
    assert git("rev-parse", "HEAD^{tree}", cwd=case.ours) == git(
        "rev-parse", "HEAD^{tree}", cwd=case.theirs)
    assert_same_as_git(case.ours, case.theirs)
    case.assert_outside_untouched()


def test_sparse_checkout_stash_and_discard_leave_out_of_cone_files_out(tmp_path: Path) -> None:
    case = Case(tmp_path, sparse_base, make_sparse)
    paths = case.changed_paths()
    stash_paths(open_repo(case.ours), paths, "m")
    git_stash(case.theirs, paths)
    assert_same_as_git(case.ours, case.theirs)
    assert not (case.ours / "out").exists()
    # Naming an out-of-cone path that matches HEAD neither writes nor deletes it.
    write(case.ours, "cone/a.txt", "again\n")
    discard_paths(open_repo(case.ours), ["cone/a.txt", "out/b.txt"])
    assert not (case.ours / "out").exists()
    assert statuses_agree(case.ours) == []
    assert "out/b.txt" in git("ls-files", cwd=case.ours)
    case.assert_outside_untouched()


# --- what cannot be done as git would: refused before anything changes -----------------------


@pytest.fixture
def with_submodule(tmp_path: Path) -> Path:
    upstream = submodule_upstream(tmp_path / "upstream")
    root = tmp_path / "super"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    write(root, "README.md", "readme\n")
    git("add", ".", cwd=root)
    git("commit", "-q", "-m", "base", cwd=root)
    git("submodule", "add", "-q", str(upstream), "vendor/lib", cwd=root)
    git("commit", "-q", "-m", "add submodule", cwd=root)
    return root


def test_a_submodule_s_own_changes_are_refused_with_the_git_command(with_submodule: Path) -> None:
    root = with_submodule
    write(root, "vendor/lib/lib.txt", "v2, uncommitted inside\n")
    write(root, "README.md", "changed\n")
    assert statuses_agree(root) == [("README.md", " M"), ("vendor/lib", " M")]
    repo = open_repo(root)
    before = worktree_state(root), index_records(root)
    for action in ("commit", "stash", "discard"):
        found = dict(refusals(repo, ["README.md", "vendor/lib"], action))
        assert list(found) == ["vendor/lib"]
        assert "git -C vendor/lib status" in found["vendor/lib"]
    with pytest.raises(GitError, match="vendor/lib is a submodule"):
        stash_paths(repo, ["README.md", "vendor/lib"], "m")
    with pytest.raises(GitError, match="uncommitted inside it"):
        commit_paths(repo, ["README.md", "vendor/lib"], "m")
    assert (worktree_state(root), index_records(root)) == before
    assert git("stash", "list", cwd=root) == ""


def test_a_submodule_s_new_commit_is_committed_as_git_add_does(with_submodule: Path,
                                                               tmp_path: Path) -> None:
    root = with_submodule
    write(root, "vendor/lib/lib.txt", "v2\n")
    git("commit", "-q", "-am", "v2", cwd=root / "vendor/lib")
    theirs = tmp_path / "theirs"
    shutil.copytree(root, theirs, symlinks=True)
    commit_paths(open_repo(root), ["vendor/lib"], "bump")
    git("add", "-A", cwd=theirs)
    git("commit", "-q", "-m", "bump", cwd=theirs)
    assert git("rev-parse", "HEAD^{tree}", cwd=root) == git("rev-parse", "HEAD^{tree}",
                                                            cwd=theirs)
    assert statuses_agree(root) == []


def test_a_nested_repository_holding_only_git_is_listed_and_refused_by_name(
    git_repo: Path,
) -> None:
    git("init", "-q", "nested", cwd=git_repo)  # nothing but .git
    assert statuses_agree(git_repo) == [("nested/", "??")]
    repo = open_repo(git_repo)
    for action in ("commit", "stash", "discard"):
        [(path, why)] = refusals(repo, ["nested/"], action)
        assert path == "nested/" and "nested git repository" in why
        assert "git -C nested status" in why and ".git/info/exclude" in why


def test_special_files_are_refused(git_repo: Path) -> None:
    os.mkfifo(git_repo / "README.md.fifo")
    (git_repo / "README.md").unlink()
    os.mkfifo(git_repo / "README.md")
    before = worktree_state(git_repo)
    for action in (lambda r: commit_paths(r, ["README.md"], "m"),
                   lambda r: stash_paths(r, ["README.md"], "m"),
                   lambda r: discard_paths(r, ["README.md"])):
        with pytest.raises(GitError, match="not a regular file"):
            action(open_repo(git_repo))
    assert worktree_state(git_repo) == before


@pytest.mark.parametrize("lock", ["refs/heads/main.lock", "index.lock", "HEAD.lock"])
def test_a_stale_lock_is_named_before_a_commit_changes_anything(git_repo: Path,
                                                                lock: str) -> None:
    write(git_repo, "README.md", "changed\n")
    (git_repo / ".git" / lock).write_text("")
    head = git("rev-parse", "HEAD", cwd=git_repo)
    index = index_records(git_repo)
    with pytest.raises(GitError) as refused:
        commit_paths(open_repo(git_repo), ["README.md"], "m")
    assert f".git/{lock} exists" in refused.value.message
    assert f"rm {git_repo / '.git' / lock}" in refused.value.message
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert index_records(git_repo) == index

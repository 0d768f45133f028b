"""Test isolation: every test gets its own HOME, git identity and config.

We do not use pytest-git: it is dormant (pulls GitPython and pytest-shutil, warns
under pytest 9, fails to import under ``-W error``) and does not isolate ``HOME``
or set an identity. These fixtures do, and also point libgit2's global-config
search path at the test's HOME (libgit2 reads it once per process).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pygit2
import pytest
from builders import init_repository
from templates import Templates
from tree_helpers import make_busy_repo

IDENTITY = {
    "GIT_AUTHOR_NAME": "Forge Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.invalid",
    "GIT_COMMITTER_NAME": "Forge Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.invalid",
}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile git-forge once, so that the hundreds of ``git forge`` processes the
    suite starts read bytecode instead of compiling every module anew — which they
    would where ``PYTHONDONTWRITEBYTECODE`` is set (Python then never writes a cache
    itself). Up-to-date files are skipped, so this costs nothing the second time."""
    import compileall

    import git_forge

    compileall.compile_dir(str(Path(git_forge.__file__).parent), quiet=1)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("home")
    (home / ".config").mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Forge Tester\n\temail = tester@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        "[protocol \"file\"]\n\tallow = always\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("NO_COLOR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    # `git forge` must find this checkout's git-forge, as a user's PATH would.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    previous = pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL]
    pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL] = str(home)
    yield home
    pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL] = previous


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real repository on branch main with one commit (README.md)."""
    return init_repository(tmp_path / "repo")


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    """Repositories built once per session; ``templates.copy(name, build, dest)``."""
    return Templates(tmp_path_factory.mktemp("templates"))


@pytest.fixture
def busy(templates: Templates, tmp_path: Path) -> Path:
    """A repository whose tree holds every kind of change at once (``make_busy_repo``)."""
    return templates.copy("busy", make_busy_repo, tmp_path / "busy")

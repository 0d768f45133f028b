"""Repositories that cost seconds to build are built once per session and copied
into each test that needs one.

A copy must behave exactly as a fresh build in the test's own directory would:
everything is copied with its modes and times (symlinks as symlinks), every
absolute path of the template recorded outside git's own directory and the
output spools (``projectPath`` in the journal, a process manifest's ``cwd``) is
rewritten to the copy's, and git's index is refreshed so that the first
``git status`` in the copy does not rewrite it (the inodes of a copy are new).
``test_templates.py`` compares copies with fresh builds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import waiting

#: Builds the repository at the path it is given; what it returns is kept (``result``).
Build = Callable[[Path], Any]


def _rewritten_paths(root: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` in every file under ``root`` but ``.git`` and spools."""
    for path in root.rglob("*"):
        relative = path.relative_to(root).parts
        if relative[0] == ".git" or any(part.endswith(".spool") for part in relative[:-1]):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old in data:
            path.write_bytes(data.replace(old, new))


def copy_repository(template: Path, dest: Path) -> Path:
    """``template`` copied to ``dest`` (which must not exist), made to be at ``dest``."""
    shutil.copytree(template, dest, symlinks=True)
    _rewritten_paths(dest, str(template).encode(), str(dest).encode())
    if (dest / ".git").is_dir():
        waiting.run(["git", "update-index", "-q", "--refresh"], cwd=dest, capture_output=True)
    return dest


class Templates:
    """Each named build runs once (in the first test that asks for it, with that
    test's isolated environment); every request gets a fresh copy of it. The
    directory around the template is the build's own (for files beside it)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[str, Path] = {}
        self._results: dict[str, Any] = {}

    def copy(self, name: str, build: Build, dest: Path) -> Path:
        template = self._built.get(name)
        if template is None:
            template = self.root / name / dest.name
            if template.parent.exists():  # an earlier build failed half-way
                shutil.rmtree(template.parent)
            template.parent.mkdir(parents=True)
            self._results[name] = build(template)
            self._built[name] = template
        return copy_repository(template, dest)

    def result(self, name: str) -> Any:
        """What the build of ``name`` returned (it must have run: ``copy`` first)."""
        return self._results[name]

"""Whether ``git add`` would store files' bytes exactly as they are on disk.

git converts a file on its way into the object store only through attributes
(``filter``, ``text``/``eol``/``crlf``, ``ident``, ``working-tree-encoding``)
or ``core.autocrlf``. When no attributes file can apply to a path and
``core.autocrlf`` is off, the blob ``git add`` stores is the bytes on disk, so a
commit can hash them in-process instead of starting ``git hash-object`` — one
process fewer per loop iteration.

Anything that cannot be ruled out sends the paths to git: an attributes file
wherever git reads one (the system file, ``core.attributesFile`` or its XDG
default, ``info/attributes``, a ``.gitattributes`` in the work tree or the index
in any directory above a path), ``GIT_ATTR_SOURCE``, ``attr.tree``, or an
``core.autocrlf`` that is anything but false. A file that exists counts, whatever
it holds: reading attributes the way git does is git's job.

The system file is ``$(prefix)/etc/gitattributes`` for the git on ``PATH``
(``/usr/bin/git`` → ``/usr/etc/gitattributes``) and ``/etc/gitattributes`` (where
distributions put ``sysconfdir``); both are checked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Container, Iterable
from functools import cache

from git_forge.tree.gitconfig import config_values
from git_forge.tree.repo import Repo

_FALSE = {"false", "no", "off", "0"}
_TRUE = {"true", "yes", "on", "1"}
ATTRIBUTES = ".gitattributes"


@cache
def _system_files() -> tuple[str, ...]:
    """The system attributes files git may read (see the module's docstring)."""
    files = ["/etc/gitattributes"]
    git = shutil.which("git")
    if git:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(git)))
        files.append(os.path.join(prefix, "etc", "gitattributes"))
    return tuple(files)


def _global_file(configured: str | None) -> str | None:
    """``core.attributesFile`` (``~/`` expanded), else its XDG default."""
    home = os.environ.get("HOME", "")
    if configured:
        if configured.startswith("~/") and home:
            return os.path.join(home, configured[2:])
        return configured
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "git", "attributes")
    return os.path.join(home, ".config", "git", "attributes") if home else None


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def _directories(paths: Iterable[str]) -> set[str]:
    """Every directory above each path, the root as ``""``."""
    found = {""}
    for path in paths:
        parent = path.rpartition("/")[0]
        while parent and parent not in found:
            found.add(parent)
            parent = parent.rpartition("/")[0]
    return found


def attributes_only_in_the_index(
    repo: Repo, paths: Iterable[str], index_paths: Container[str]
) -> list[str]:
    """The ``.gitattributes`` above ``paths`` that are in the index but gone from the
    work tree. ``git add`` reads such a file from the index; ``git hash-object``
    does not, so no commit made with it can match git's: the caller refuses."""
    workdir = os.fspath(repo.workdir)
    found = []
    for directory in sorted(_directories(paths)):
        name = f"{directory}/{ATTRIBUTES}" if directory else ATTRIBUTES
        if name in index_paths and not _exists(os.path.join(workdir, name)):
            found.append(name)
    return found


def stored_as_on_disk(repo: Repo, paths: Iterable[str]) -> bool:
    """True when ``git add`` would store every one of ``paths`` byte for byte.

    A ``.gitattributes`` in the index but gone from the work tree is not looked
    for: a caller refuses it first (``attributes_only_in_the_index``), and
    ``git hash-object`` does not read it either.
    """
    if os.environ.get("GIT_ATTR_SOURCE"):
        return False
    # A bare ``autocrlf`` (no ``= value``) is true to git, and so converts.
    found = config_values(repo, ("core.autocrlf", "core.attributesFile", "attr.tree"),
                          bare="true")
    autocrlf = found["core.autocrlf"]
    if autocrlf is not None and autocrlf.strip().lower() not in _FALSE:
        return False
    if found["attr.tree"] is not None:
        return False
    nosystem = (os.environ.get("GIT_ATTR_NOSYSTEM") or "").strip().lower() in _TRUE
    candidates = [] if nosystem else list(_system_files())
    global_file = _global_file(found["core.attributesFile"])
    if global_file:
        candidates.append(global_file)
    candidates.append(os.path.join(repo.common_dir, "info", "attributes"))
    if any(_exists(candidate) for candidate in candidates):
        return False
    workdir = os.fspath(repo.workdir)
    for directory in _directories(paths):
        name = f"{directory}/{ATTRIBUTES}" if directory else ATTRIBUTES
        if _exists(os.path.join(workdir, name)):
            return False
    return True

"""Dynamic completion values: item ids, cluster ids, process handles, backlog dirs.

The shell completion scripts are static (generated from the parser); only the values
that live in the project's files come from here, through ``git forge __complete KIND``
on every TAB. So this module is on a hot path and stays lean: it reads
``backlog.json`` and the ``proc/`` directory with plain ``json``/``os`` (read-only —
completion never writes, never locks, never runs git), and loads the layered
configuration only when a config file could move the backlog or state directory.
Anything unreadable yields no candidates rather than an error: a TAB must never
print into the operator's prompt.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import TYPE_CHECKING, cast

from git_forge.backlog.ids import ID_PATTERN
from git_forge.errors import ForgeError
from git_forge.layout import (
    BACKLOG_FILE,
    DECISIONS_FILE,
    DEFAULT_BACKLOG_DIR,
    DEFAULT_STATE_DIR,
    FEATURE_FORGE_CONFIG,
    MANIFEST_SUFFIX,
    PROC_DIR,
    REPO_CONFIG,
    USER_CONFIG,
    find_root_path,
    state_directory_path,
    user_config_dir,
)
from git_forge.parsing import DocumentTooComplex, check_depth, load_json

if TYPE_CHECKING:
    from git_forge.backlog.item import BacklogItemJSON

#: What ``__complete`` can list; the completion scripts name these.
KINDS: tuple[str, ...] = (
    "items",        # every item id                       (backlog show/edit)
    "blocked",      # blocked item ids                    (backlog answer/unblock, --item)
    "answerable",   # blocked ids + multi-item clusters   (recover --answer/--defer)
    "clusters",     # cluster ids of the blocked items    (recover --merge)
    "revocable",    # ids with an answer to take back     (decision revoke)
    "handles",      # item ids with a process, then handles (proc show/output/wait/stop)
    "backlogs",     # backlog dirs, relative to the root  (--backlog)
    "backlog-dirs",  # backlog dirs, relative to the cwd  (decision --backlog-dir)
)

#: A config file matters to completion only if it sets one of these keys.
_LOCATION_KEY = re.compile(r"^\s*(backlog|stateDir)\s*:", re.MULTILINE)
#: Directories never searched for backlogs: git's own, and trees of other tools.
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                        ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_BACKLOG_SEARCH_DEPTH = 3
#: At most this many directories are looked into, so a TAB outside a repository
#: (in a home directory, say) stays fast.
_BACKLOG_SEARCH_BUDGET = 2000


def _file_bytes(path: str) -> bytes:
    """The bytes of the regular file at ``path``. Anything else — a FIFO, a device such
    as ``/dev/zero`` or the terminal, a directory — is an ``OSError`` at once: a TAB
    never waits on a file, nor reads one without end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return handle.read()


def _sets_location(path: str) -> bool:
    try:
        text = _file_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return bool(_LOCATION_KEY.search(text))


def _config_matters(root: str) -> bool:
    """Whether a config layer could move the backlog or state dir away from the defaults
    (then the real resolver, ``workspace.locate``, decides)."""
    if (os.path.isfile(os.path.join(root, FEATURE_FORGE_CONFIG))
            or _sets_location(os.path.join(root, REPO_CONFIG))):
        return True
    return _sets_location(os.path.join(user_config_dir(), USER_CONFIG))  # user_config_path


def _directories(start: str, backlog: str | None, backlog_dir: str | None) -> tuple[str, str]:
    """(backlog dir, state dir) the commands would use, resolved the way they resolve them."""
    if backlog_dir is not None:  # decision verbs: --backlog-dir is relative to the cwd
        directory = os.path.normpath(os.path.join(start, backlog_dir))
        return directory, state_directory_path(directory, DEFAULT_STATE_DIR)
    root = find_root_path(start)
    if _config_matters(root):
        from git_forge.workspace import locate  # common-case boundary: no config file

        try:
            workspace = locate(root, backlog)
            return os.fspath(workspace.backlog_dir), os.fspath(workspace.state_dir)
        except ForgeError:
            pass
    directory = os.path.normpath(os.path.join(root, backlog or DEFAULT_BACKLOG_DIR))
    return directory, state_directory_path(directory, DEFAULT_STATE_DIR)


def _items(backlog_dir: str) -> list[BacklogItemJSON]:
    """The backlog's items with an id, unvalidated (a TAB reads the file as it is):
    their other fields are read tolerantly. Nothing here walks the document: a TAB
    looks at an item's id, status, answer and title, text or nothing, so the depth
    is left unchecked (``limit_depth=False``; ARCHITECTURE.md, "What is measured, and
    where") until the clusters' rows build items from the blocked ones."""
    try:
        document = load_json(_file_bytes(os.path.join(backlog_dir, BACKLOG_FILE)), BACKLOG_FILE,
                             limit_depth=False)
    except (OSError, ValueError, DocumentTooComplex):
        return []
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list):
        return []
    return cast("list[BacklogItemJSON]",
                [item for item in items if isinstance(item, dict) and _an_id(item.get("id"))])


def _an_id(value: object) -> bool:
    """Whether ``value`` is an item id, as every command takes one (``backlog.ids``):
    nothing else is offered — bash puts a candidate on the command line as it is, and
    one holding ``$(…)``, a ``*`` or a newline would be the shell's to run or split."""
    return isinstance(value, str) and ID_PATTERN.match(value) is not None


def _revocable(items: list[BacklogItemJSON], state_dir: str) -> list[BacklogItemJSON]:
    """The items ``decision revoke`` can take an answer back from: pending with an
    answer waiting for its next attempt, or blocked with an answer recorded last
    (``recovery.revoke`` has the exact rule). A done item ran with its answer."""
    answered: set[object] = set()
    try:
        document = load_json(_file_bytes(os.path.join(state_dir, DECISIONS_FILE)),
                             DECISIONS_FILE)
        entries = document.get("decisions") if isinstance(document, dict) else None
        latest = {entry.get("itemId"): entry for entry in entries or ()
                  if isinstance(entry, dict)}
        answered = {item_id for item_id, entry in latest.items()
                    if entry.get("answer") is not None}
    except (OSError, ValueError, AttributeError, TypeError, DocumentTooComplex):
        pass
    return [item for item in items
            if (item.get("status") == "pending" and item.get("humanAnswer") is not None)
            or (item.get("status") == "blocked" and item["id"] in answered)]


def _one_line(text: object) -> str:
    """A title as one line; one that is not text (an invalid backlog) is none."""
    return " ".join(text.split()) if isinstance(text, str) else ""


def _item_rows(items: list[BacklogItemJSON]) -> list[tuple[str, str]]:
    return [(item["id"], _one_line(item.get("title"))) for item in items]


def _cluster_rows(blocked: list[BacklogItemJSON], *,
                  multi_only: bool) -> list[tuple[str, str]]:
    # common-case boundary: a TAB on an item id clusters nothing
    from git_forge.backlog.errors import BacklogError
    from git_forge.backlog.item import Item
    from git_forge.backlog.topology import cluster_blocked

    try:
        check_depth(blocked, BACKLOG_FILE)
        clusters = cluster_blocked([Item.from_json(item) for item in blocked])
    except (BacklogError, DocumentTooComplex):
        return []
    return [(cluster["clusterId"], "cluster of items " + ", ".join(cluster["memberIds"]))
            for cluster in clusters if not multi_only or len(cluster["memberIds"]) > 1]


def _handle_rows(state_dir: str) -> list[tuple[str, str]]:
    """What the ``proc`` verbs take: the id of each item that has a process (it names
    the item's latest one), then every handle (the shell sorts them as it shows them)."""
    try:
        names = sorted(entry.name for entry in os.scandir(os.path.join(state_dir, PROC_DIR))
                       if entry.name.endswith(MANIFEST_SUFFIX))
    except OSError:
        return []
    rows = []
    latest: dict[str, tuple[str, str, str]] = {}  # item id → (created, handle, state)
    for name in names:
        handle = name[: -len(MANIFEST_SUFFIX)]
        try:
            manifest = load_json(_file_bytes(os.path.join(state_dir, PROC_DIR, name)), name)
            origin = manifest.get("origin") or {}
            item_id, state = origin.get("item_id"), manifest.get("state")
            described = f"item {item_id or '-'}, {state}"
            created = str(manifest.get("created_at") or "")
        except (OSError, ValueError, AttributeError, DocumentTooComplex):
            item_id, described = None, ""
        if isinstance(item_id, str) and item_id and (
                item_id not in latest or (created, handle) > latest[item_id][:2]):
            latest[item_id] = (created, handle, str(state))
        rows.append((handle, described))
    items = [(item_id, f"item {item_id}'s latest process ({handle}, {state})")
             for item_id, (_, handle, state) in sorted(latest.items())]
    return items + rows


def _backlog_rows(root: str, relative_to: str) -> list[tuple[str, str]]:
    """Directories under ``root`` that hold a backlog.json, a few levels deep."""
    found: list[str] = []
    level = [root]
    budget = _BACKLOG_SEARCH_BUDGET
    for _ in range(_BACKLOG_SEARCH_DEPTH):
        below = []
        for directory in level[:budget]:
            budget -= 1
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name in _SKIP_DIRS or not entry.is_dir(follow_symlinks=False):
                    continue
                if os.path.isfile(os.path.join(entry.path, BACKLOG_FILE)):
                    found.append(entry.path)
                below.append(entry.path)
        level = below
    return [(os.path.relpath(path, relative_to), "backlog")
            for path in sorted(found, key=lambda path: path.split(os.sep))]  # as Paths sort


def candidate_rows(
    kind: str,
    start: os.PathLike[str] | str = ".",
    *,
    backlog: str | None = None,
    backlog_dir: str | None = None,
) -> list[tuple[str, str]]:
    """(value, one-line description) pairs of ``kind`` for the project containing
    ``start``; ``backlog``/``backlog_dir`` are the ``--backlog``/``--backlog-dir``
    given on the command line being completed. Raises ``ValueError`` for an unknown kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown completion kind {kind!r} (expected one of {', '.join(KINDS)})")
    here = os.path.realpath(start)
    if kind == "backlogs":
        root = find_root_path(here)
        return _backlog_rows(root, root)
    if kind == "backlog-dirs":
        return _backlog_rows(find_root_path(here), here)
    directory, state_dir = _directories(here, backlog, backlog_dir)
    if kind == "handles":
        return _handle_rows(state_dir)
    items = _items(directory)
    if kind == "items":
        return _item_rows(items)
    if kind == "revocable":
        return _item_rows(_revocable(items, state_dir))
    blocked = [item for item in items if item.get("status") == "blocked"]
    if kind == "blocked":
        return _item_rows(blocked)
    if kind == "clusters":
        return _cluster_rows(blocked, multi_only=False)
    return _item_rows(blocked) + _cluster_rows(blocked, multi_only=True)  # answerable

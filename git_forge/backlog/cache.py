"""What a read-only command derives from backlog.json, kept for the next one.

``status`` and ``backlog list|show|topology`` would read the whole backlog every
time: parse, the depth check, validation, the topology — a cost that grows with the
items, where the command's own work is constant (what the cache saves at 5,000 items
is in ARCHITECTURE.md, "What is measured, and where"). Most runs find the very file
the previous one read, so the text a command derives from it (status's facts, the
listing and its rows, the topology, every item on a line of its own for ``show``) is
kept in ``{stateDir}/cache/`` and used again — under rules that make it unable to
change an output byte:

* it is keyed on the file's identity as it was read (``store.file_identity``, the
  test the loop's held backlog uses too) *and* a checksum of the bytes read
  (CRC-32): a kept text is used only when both match what is read now. What it
  holds is a function of those bytes alone (the command's derivation from the
  validated document), so a match means the same output. The checksum is there for
  what the identity cannot tell: a same-size rewrite in place within one tick of a
  coarse clock. It guards against accident, not an adversary — whoever can write
  backlog.json can write its cache too — so it is CRC-32, not a cryptographic
  digest;
* it is written only after the bytes passed every check the store makes, so
  using it skips the checks only for bytes that passed them; an invalid or
  corrupt backlog is never cached and is refused as the store refuses it; nor is
  anything kept for a command refused on its input (``backlog show`` of an id that
  names no item): a refusal leaves every file as it was;
* anything unexpected in a cache file — torn, truncated, another version, other
  bytes — is a miss: the text is derived again and the file rewritten. It is not
  user data, so it is never refused, and a cache that cannot be written (a
  read-only checkout, a full disk) is simply not written;
* it is written through ``atomic_write`` (not durably: a power loss may bring back
  an older cache, which its key then rejects), into a directory that ignores
  itself (its own ``.gitignore``), so it never shows in ``git status`` whatever
  the backlog dir's ignore rules say.

The first thing derived is that the file is valid: its checks (``model.backlog_problem``
over every item, the depth of the document) cost more than parsing it, so they are
made once per file content — by a derivation, or by a read-only command that needs
the document itself (``read_valid``: ``backlog list --json --status``). Bytes found
valid are marked so under the same key (``backlog-valid``, which holds no text), and
a reader that finds the mark parses them as the store parses bytes it checked before.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from zlib import crc32

from git_forge.atomic import atomic_write, make_ignored_dir
from git_forge.backlog.store import BacklogStore, Snapshot, file_identity, remember_valid
from git_forge.errors import StoreError
from git_forge.layout import CACHE_DIR

TYPE_CHECKING = False  # the TypeVar only for the checker
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

#: What makes git ignore the cache directory (``layout.CACHE_DIR``).
_IGNORE = b"# git-forge's derived caches: never tracked\n*\n"
#: The first line of every cache file; a file of another version is a miss. Version 2:
#: JSON outputs escape the bidirectional overrides (a version-1 text holds them raw).
#: Version 4: the key is the identity and the checksum alone.
_MAGIC = b"git-forge cache 4"
#: The cache file that marks the bytes of its key valid (its text is empty).
_VALID = "backlog-valid"


def _key(stat: os.stat_result, raw: bytes) -> bytes:
    """The identity of the file as read and the checksum of what was read."""
    identity = " ".join(map(str, file_identity(stat)))
    return f"{identity} {crc32(raw):08x}".encode("ascii")


def _kept(path: str, key: bytes) -> str | None:
    """The text kept at ``path`` under ``key``, or ``None`` (absent, unreadable, torn,
    another version or another key)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    head = _MAGIC + b"\n" + key + b"\n"
    if not data.startswith(head) or data[-1:] != b"\n":
        return None  # every complete cache file ends with the newline written after its text
    try:
        return data[len(head):-1].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _keep(directory: str, path: str, key: bytes, text: str) -> None:
    """Write the cache file; any failure leaves the cache unwritten, nothing else."""
    try:
        make_ignored_dir(directory, _IGNORE)
        atomic_write(path, _MAGIC + b"\n" + key + b"\n" + text.encode("utf-8") + b"\n",
                     durable=False)
    except (OSError, StoreError, UnicodeEncodeError):
        pass


def _read(backlog_file: Path) -> tuple[bytes, bytes]:
    """The file's bytes and their key, or the store's refusal to read it."""
    try:
        with open(backlog_file, "rb") as handle:
            stat = os.fstat(handle.fileno())  # of exactly the bytes read next
            raw = handle.read()
    except OSError as exc:
        raise BacklogStore(backlog_file).unreadable(exc) from (
            None if isinstance(exc, FileNotFoundError) else exc)
    return raw, _key(stat, raw)


def _use(backlog_file: Path, state_dir: Path, raw: bytes, key: bytes,
         use: Callable[[Snapshot], T], keep: bool = True) -> T:
    """``use`` the snapshot of ``raw`` (read under ``key``), its checks skipped when
    the cache marks the bytes valid, and marked once ``use`` has returned (``keep``)."""
    directory = os.path.join(os.fspath(state_dir), CACHE_DIR)
    path = os.path.join(directory, _VALID)
    marked = _kept(path, key) is not None
    if marked:
        remember_valid(backlog_file, raw)  # the store parses them without the checks
    result = use(Snapshot(raw, BacklogStore(backlog_file).validated(raw)))
    if keep and not marked and os.path.isdir(state_dir):
        _keep(directory, path, key, "")
    return result


def read_valid(backlog_file: Path, state_dir: Path, use: Callable[[Snapshot], T], *,
               keep: bool = True) -> T:
    """``use(snapshot)`` of the backlog ``backlog_file`` holds now, its checks made
    once per file content (the module docstring); the store's refusal for a
    missing, corrupt or invalid backlog. The bytes are marked valid only once
    ``use`` has returned: a command refused on its input leaves every file as it was.
    Without ``keep`` nothing is written (a watcher's reads)."""
    raw, key = _read(backlog_file)
    return _use(backlog_file, state_dir, raw, key, use, keep)


def derived(backlog_file: Path, state_dir: Path, name: str,
            derive: Callable[[Snapshot], str], use: Callable[[str], T], *,
            keep: bool = True) -> T:
    """``use(text)``, ``text`` being ``derive(snapshot)`` for the backlog
    ``backlog_file`` holds now — kept under ``name`` in the state dir's cache and used
    again while the file is the same file with the same bytes. A missing, corrupt or
    invalid backlog is the store's refusal, exactly as ``BacklogStore.snapshot()``
    raises it. What is derived is kept once ``use`` has returned: a command refused
    on its input leaves every file as it was. Without ``keep``, a kept text is used
    but nothing is written (a watcher's reads)."""
    raw, key = _read(backlog_file)
    directory = os.path.join(os.fspath(state_dir), CACHE_DIR)
    path = os.path.join(directory, name)
    kept = _kept(path, key)
    if kept is not None:
        return use(kept)
    text, result = _use(backlog_file, state_dir, raw, key,
                        lambda snapshot: _used(derive(snapshot), use), keep)
    if keep and os.path.isdir(state_dir):
        _keep(directory, path, key, text)
    return result


def _used(text: str, use: Callable[[str], T]) -> tuple[str, T]:
    return text, use(text)


def derived_text(backlog_file: Path, state_dir: Path, name: str,
                 derive: Callable[[Snapshot], str], *, keep: bool = True) -> str:
    """``derived`` for a caller that takes the text as it is."""
    return derived(backlog_file, state_dir, name, derive, lambda text: text, keep=keep)

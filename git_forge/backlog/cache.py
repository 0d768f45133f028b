"""What a read-only command derives from backlog.json, kept for the next one.

``status`` and ``backlog list --json`` read the whole backlog every time: parse,
the depth check, validation, the topology — tens of milliseconds per thousand
items, where the command's own work is constant. Most runs find the very file
the previous one read, so the text a command derives from it (its summary and
topology, its listing) is kept in ``{stateDir}/cache/`` and used again — under
rules that make it unable to change an output byte:

* it is keyed on the file's identity as it was read — device, inode, size,
  modification and change times, the same test ``held.py`` uses — *and* a
  checksum of the bytes read (CRC-32): a kept text is used only when both match
  what is read now. What it holds is a function of those bytes alone (the command's
  derivation from the validated document), so a match means the same output.
  The checksum is there for what the identity cannot tell: a same-size rewrite
  in place within one tick of a coarse clock. It guards against accident, not an
  adversary — whoever can write backlog.json can write its cache too — so it is
  CRC-32, not a cryptographic digest: BLAKE2b cost 3.8 ms of a 5,000-item
  ``status``, CRC-32 0.9 ms;
* it is written only after the bytes passed every check the store makes, so
  using it skips the checks only for bytes that passed them; an invalid or
  corrupt backlog is never cached and is refused as the store refuses it;
* anything unexpected in a cache file — torn, truncated, another version, other
  bytes — is a miss: the text is derived again and the file rewritten. It is not
  user data, so it is never refused, and a cache that cannot be written (a
  read-only checkout, a full disk) is simply not written;
* it is written through ``atomic_write`` (not durably: a power loss may bring back
  an older cache, which its key then rejects), into a directory that ignores
  itself (its own ``.gitignore``), so it never shows in ``git status`` whatever
  the backlog dir's ignore rules say.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from git_forge.backlog.store import Snapshot

#: The cache directory under the state dir, and what makes git ignore it.
CACHE_DIR = "cache"
_IGNORE = b"# git-forge's derived caches: never tracked\n*\n"
#: The first line of every cache file; a file of another version is a miss. Version 2:
#: JSON outputs escape the bidirectional overrides (a version-1 text holds them raw).
_MAGIC = b"git-forge cache 2"


def _key(stat: os.stat_result, raw: bytes) -> bytes:
    """The identity of the file as read and the checksum of what was read."""
    from zlib import crc32

    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    return (" ".join(map(str, identity)) + f" {crc32(raw):08x}").encode("ascii")


def read_backlog(path: Path) -> tuple[bytes, bytes]:
    """backlog.json's bytes and their key, read from one open file; the store's
    refusal when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 22):
                chunks.append(chunk)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        from git_forge.backlog.store import BacklogStore

        raise BacklogStore(path).unreadable(exc) from (
            None if isinstance(exc, FileNotFoundError) else exc)
    raw = b"".join(chunks)
    return raw, _key(stat, raw)


def _kept(path: str, key: bytes) -> str | None:
    """The text kept at ``path`` for ``key``, or ``None`` (absent, unreadable, torn,
    another version, another key)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    start = len(_MAGIC) + 1
    end = data.find(b"\n", start)
    if not data.startswith(_MAGIC + b"\n") or data[start:end] != key or data[-1:] != b"\n":
        return None  # every complete cache file ends with the newline written after its text
    try:
        return data[end + 1:-1].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _keep(directory: str, path: str, key: bytes, text: str) -> None:
    """Write the cache file; any failure leaves the cache unwritten, nothing else."""
    from git_forge.atomic import atomic_write
    from git_forge.errors import StoreError

    try:
        if not os.path.isdir(directory):
            os.mkdir(directory)
        ignore = os.path.join(directory, ".gitignore")
        if not os.path.exists(ignore):
            atomic_write(ignore, _IGNORE, durable=False)
        atomic_write(path, _MAGIC + b"\n" + key + b"\n" + text.encode("utf-8") + b"\n",
                     durable=False)
    except (OSError, StoreError, UnicodeEncodeError):
        pass


def derived_text(backlog_file: Path, state_dir: Path, name: str,
                 derive: Callable[[Snapshot], str]) -> str:
    """``derive(snapshot)`` for the backlog ``backlog_file`` holds now — kept under
    ``name`` in the state dir's cache and used again while the file is the same
    file with the same bytes. A missing, corrupt or invalid backlog is the store's
    refusal, exactly as ``BacklogStore.snapshot()`` raises it."""
    raw, key = read_backlog(backlog_file)
    directory = os.path.join(os.fspath(state_dir), CACHE_DIR)
    path = os.path.join(directory, name)
    text = _kept(path, key)
    if text is not None:
        return text
    from git_forge.backlog.store import BacklogStore, Snapshot

    text = derive(Snapshot(raw, BacklogStore(backlog_file).validated(raw)))
    if os.path.isdir(state_dir):
        _keep(directory, path, key, text)
    return text

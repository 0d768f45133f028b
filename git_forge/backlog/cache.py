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
* a file that a read found holding the kept bytes, when it had gone unchanged for
  a while (``SETTLED_NS``) before the cache file was written, cannot change again
  without a new change time, so from then on its kept text is used on its identity
  alone, without reading it — git's own rule for its index, where an entry is
  trusted by its stat data unless the file changed too close to the moment the
  index was written ("racy git"), both times set by the same file system. Reading
  and checksumming a 5,000-item backlog was the one cost of ``status`` that grew
  with the backlog. (A settled file that opens but then fails to read is answered
  from its kept text, as git trusts an index entry without reading its file.);
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

from git_forge.layout import CACHE_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from git_forge.backlog.store import Snapshot

#: What makes git ignore the cache directory (``layout.CACHE_DIR``).
_IGNORE = b"# git-forge's derived caches: never tracked\n*\n"
#: The first line of every cache file; a file of another version is a miss. Version 2:
#: JSON outputs escape the bidirectional overrides (a version-1 text holds them raw).
#: Version 3: the key says whether the file was found settled.
_MAGIC = b"git-forge cache 3"
#: How long backlog.json must have gone unchanged (by its change time) before a read
#: that found its bytes the kept ones, for its identity alone to prove it unchanged
#: since: far more than any file system's timestamp tick (two seconds on FAT).
SETTLED_NS = 3_000_000_000


def _identity(stat: os.stat_result) -> bytes:
    return " ".join(map(str, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns,
                              stat.st_ctime_ns))).encode("ascii")


def _key(identity: bytes, raw: bytes) -> bytes:
    """The identity of the file as read and the checksum of what was read."""
    from zlib import crc32

    return identity + f" {crc32(raw):08x}".encode("ascii")


class _Kept:
    """A cache file: its key (``identity``, then the checksum), whether its backlog was
    found settled, its text, and when and on which file system it was written."""

    __slots__ = ("identity", "key", "settled", "text", "written_ns", "device")

    def __init__(self, identity: bytes, key: bytes, settled: bool, text: str,
                 stat: os.stat_result) -> None:
        self.identity, self.key, self.settled, self.text = identity, key, settled, text
        self.written_ns, self.device = stat.st_mtime_ns, stat.st_dev


def _settled(backlog: os.stat_result, kept: _Kept) -> bool:
    """Whether a read that found the kept bytes proves the backlog settled: it had
    gone unchanged for ``SETTLED_NS`` before the cache file was written, so before
    this read. Then any later change gives it a later change time — which every
    write and every ``utime`` sets, and no writer can set back — and a later
    ``stat`` that finds the same identity finds the same bytes. git's rule for its
    index ("racy git"), and like git's it compares two times the same file system
    set (the cache file's and the backlog's), never the local clock: a file server's
    clock may be seconds away from it. A file changed within a tick of being read
    could change again within that tick, same size, same times: its bytes are
    checked every time until it has settled."""
    return (backlog.st_dev == kept.device
            and backlog.st_ctime_ns < kept.written_ns - SETTLED_NS)


def _read_rest(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 22):
        chunks.append(chunk)
    return b"".join(chunks)


def _kept(path: str) -> _Kept | None:
    """What is kept at ``path``, or ``None`` (absent, unreadable, torn, another
    version, a key line not of this version's shape)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            stat = os.fstat(handle.fileno())
    except OSError:
        return None
    start = len(_MAGIC) + 1
    end = data.find(b"\n", start)
    if not data.startswith(_MAGIC + b"\n") or end < 0 or data[-1:] != b"\n":
        return None  # every complete cache file ends with the newline written after its text
    key, _, flag = data[start:end].rpartition(b" ")
    identity = key.rpartition(b" ")[0]
    if flag not in (b"0", b"1") or not identity:
        return None
    try:
        text = data[end + 1:-1].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return _Kept(identity, key, flag == b"1", text, stat)


def _keep(directory: str, path: str, key: bytes, settled: bool, text: str) -> None:
    """Write the cache file; any failure leaves the cache unwritten, nothing else."""
    from git_forge.atomic import atomic_write, make_ignored_dir
    from git_forge.errors import StoreError

    try:
        make_ignored_dir(directory, _IGNORE)
        atomic_write(path, _MAGIC + b"\n" + key + (b" 1\n" if settled else b" 0\n")
                     + text.encode("utf-8") + b"\n", durable=False)
    except (OSError, StoreError, UnicodeEncodeError):
        pass


def derived_text(backlog_file: Path, state_dir: Path, name: str,
                 derive: Callable[[Snapshot], str]) -> str:
    """``derive(snapshot)`` for the backlog ``backlog_file`` holds now — kept under
    ``name`` in the state dir's cache and used again while the file is the same
    file with the same bytes. A missing, corrupt or invalid backlog is the store's
    refusal, exactly as ``BacklogStore.snapshot()`` raises it.

    The file is opened (so an unreadable one is refused as ever) and its identity
    taken; a kept text whose file was found settled is used on that identity alone,
    without reading a byte: what makes the start-up of ``status`` flat in backlog
    size. Otherwise the bytes are read and their checksum compared."""
    directory = os.path.join(os.fspath(state_dir), CACHE_DIR)
    path = os.path.join(directory, name)
    kept = _kept(path)
    try:
        fd = os.open(backlog_file, os.O_RDONLY | os.O_CLOEXEC)
        try:
            stat = os.fstat(fd)  # of exactly the bytes read next
            identity = _identity(stat)
            if kept is not None and kept.settled and kept.identity == identity:
                return kept.text
            raw = _read_rest(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        from git_forge.backlog.store import BacklogStore

        raise BacklogStore(backlog_file).unreadable(exc) from (
            None if isinstance(exc, FileNotFoundError) else exc)
    key = _key(identity, raw)
    if kept is not None and kept.key == key:
        if os.path.isdir(state_dir):
            # Found settled: the next answer reads no byte. Not yet: written again, so
            # that a later read has a later time of this file system's to prove it by.
            _keep(directory, path, key, _settled(stat, kept), kept.text)
        return kept.text
    from git_forge.backlog.store import BacklogStore, Snapshot

    text = derive(Snapshot(raw, BacklogStore(backlog_file).validated(raw)))
    if os.path.isdir(state_dir):
        _keep(directory, path, key, False, text)
    return text

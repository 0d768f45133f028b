"""The one atomic-replace and sidecar-lock implementation every store uses.

Two guarantees, and nothing else in the project writes files another way:

* ``atomic_write`` — temp file in the destination's directory → write → flush →
  fsync → ``os.replace`` → fsync the directory. A crash at any instant leaves
  either the old bytes or the new ones; on failure the temp file is removed and
  the destination is byte-for-byte unchanged.
* ``locked`` — an exclusive portalocker lock on a *sidecar* ``<file>.lock``,
  never on the file being replaced (``os.replace`` swaps the inode out from
  under such a lock and writers lose records). The holder writes who it is into
  the sidecar so a waiter that times out can say who holds it.

A file that exists but does not parse is never overwritten: ``read_json``
raises ``StoreError`` naming the file, and ``update_json`` stops before writing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from git_forge.clock import wire_now
from git_forge.errors import ForgeError, os_error_text
from git_forge.exit_codes import EXIT_ERROR
from git_forge.jsonenc import dumps_indented

# Re-exported: callers find every lock helper here; the probes live apart so the
# pre-launch hot path can use them without this module's imports.
from git_forge.lockprobe import lock_is_held, read_lock_holder  # noqa: F401
from git_forge.parsing import DocumentTooComplex, load_json

T = TypeVar("T")

#: How long a read-modify-write waits for a sidecar lock before naming the holder.
DEFAULT_LOCK_TIMEOUT = 30.0


class StoreError(ForgeError):
    """A durable file could not be read, parsed, locked or written."""


def write_failure(what: Path | str, exc: OSError) -> str:
    """How a failed write is told, the same everywhere: a full disk says so plainly.
    (A failed write is the machine's failure, not the input's: exit 1.)"""
    if exc.errno == errno.ENOSPC:
        return f"no space left on device while writing {what}"
    if exc.errno == errno.EDQUOT:
        return f"disk quota exceeded while writing {what}"
    return f"cannot write {what}: {os_error_text(exc)}"


def sidecar_lock_path(path: Path) -> Path:
    """``backlog.json`` → ``backlog.json.lock``: the stable file that is locked."""
    return path.with_name(path.name + ".lock")


def _default_file_mode() -> int:
    """0666 minus this process's umask, read without changing the umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new entry in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path | str, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves old or new, never half.

    ``mode`` sets the permission bits of the new file; without it an existing
    file keeps its mode and a new one gets 0666 minus the umask.
    """
    path = Path(path)
    directory = path.parent
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = _default_file_mode()
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc
        raise
    try:
        fsync_directory(directory)
    except OSError as exc:
        raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc


def dumps_json(document: Any, *, indent: int | None = 2) -> bytes:
    """Serialize the way every git-forge file is written: UTF-8, not ASCII-escaped,
    a trailing newline; ``indent=None`` gives compact JSON."""
    if indent is None:
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    else:
        text = dumps_indented(document, indent)  # json.dumps(indent=…)'s bytes, faster
    return (text + "\n").encode("utf-8")


def write_json(
    path: Path | str, document: Any, *, indent: int | None = 2, mode: int | None = None
) -> None:
    """Atomically write ``document`` as JSON (see ``dumps_json``). Text that is not
    valid Unicode (a command-line argument holding bytes that are not UTF-8 arrives
    as surrogate escapes) is refused before anything is written."""
    try:
        data = dumps_json(document, indent=indent)
    except UnicodeEncodeError as exc:
        raise StoreError(f"refusing to write {path}: it would hold text that is not valid "
                         "UTF-8 (bytes that are not UTF-8 in an argument or a file)") from exc
    atomic_write(path, data, mode=mode)


_MISSING: Any = object()


def read_json(path: Path | str, *, default: Any = _MISSING) -> Any:
    """Parse a JSON file; a file that exists but does not parse is a ``StoreError``.

    ``default`` is returned when the file does not exist; without it a missing
    file is a ``StoreError`` too.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if default is not _MISSING:
            return default
        raise StoreError(f"{path} does not exist") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {os_error_text(exc)}") from exc
    try:
        return load_json(raw.decode("utf-8"), path)
    except DocumentTooComplex as exc:
        raise StoreError(exc.message) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(
            f"{path} is corrupt (not valid JSON: {exc}); refusing to touch it"
        ) from exc


def _holder_label() -> str:
    """Who holds a lock, for the message a timed-out waiter prints."""
    import socket  # only a lock holder needs it; readers (the pre-launch check) do not

    started = wire_now()
    command = " ".join(Path(sys.argv[0]).name.split() + sys.argv[1:3]) if sys.argv else "?"
    return f"pid {os.getpid()} on {socket.gethostname()} ({command}) since {started}"


class FileLock:
    """An exclusive advisory lock on exactly ``path`` (created if needed).

    Used directly for long-lived locks (the loop lock) and, through ``locked``,
    on the sidecar of a file that is about to be replaced.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._handle: Any = None
        self._previous_label = b""

    @property
    def held(self) -> bool:
        return self._handle is not None

    def try_acquire(self, *, holder: str | None = None, patience: float = 0.0) -> bool:
        """Take the lock if it is free. ``patience`` retries for that many seconds:
        a ``lock_is_held`` probe holds a shared lock for an instant, and a caller
        deciding "someone else is running" should not mistake it for a holder."""
        deadline = time.monotonic() + patience
        while not self._try_once(holder):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def _try_once(self, holder: str | None) -> bool:
        if self._handle is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot lock {self.path}: {os_error_text(exc)}") from exc
        # Imported here, not at the top: ``import portalocker`` costs ~20 ms (it
        # reads its own package metadata), and the pre-launch hot path reads JSON
        # through this module without ever taking a lock.
        import portalocker

        handle = os.fdopen(fd, "r+b")
        try:
            portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except (portalocker.LockException, BlockingIOError):
            handle.close()
            return False
        except BaseException:
            handle.close()
            raise
        try:  # the label only informs a waiter: a full disk must not cost the lock
            handle.seek(0)
            self._previous_label = handle.read()
            handle.seek(0)
            handle.truncate()
            handle.write((holder or _holder_label()).encode("utf-8"))
            handle.flush()
        except OSError:
            pass
        self._handle = handle
        return True

    def acquire(self, *, timeout: float = DEFAULT_LOCK_TIMEOUT, holder: str | None = None) -> None:
        """Wait up to ``timeout`` seconds; then fail naming who holds the lock."""
        deadline = time.monotonic() + timeout
        delay = 0.002
        while not self._try_once(holder):
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"{self.path} is held by {read_lock_holder(self.path) or 'another process'}"
                    f" (waited {timeout:g}s)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def release(self, *, restore_label: bool = False) -> None:
        """Unlock. ``restore_label`` puts back the label the file held before this
        holder wrote its own — for a holder that refused and changed nothing, so
        that not even the lock file's bytes differ afterwards."""
        if self._handle is None:
            return
        import portalocker  # already imported by ``try_acquire``

        handle, self._handle = self._handle, None
        try:
            if restore_label:
                with contextlib.suppress(OSError):
                    handle.seek(0)
                    handle.truncate()
                    handle.write(self._previous_label)
                    handle.flush()
            portalocker.unlock(handle)
        finally:
            handle.close()

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def locked(path: Path | str, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the sidecar lock of ``path`` for a whole read-modify-write cycle."""
    lock = FileLock(sidecar_lock_path(Path(path)))
    lock.acquire(timeout=timeout)
    try:
        yield
    finally:
        lock.release()


def _remove_stale_temp_files(path: Path) -> None:
    """Temp files of a writer killed mid-write. Only a lock holder writes temp
    files for a locked file, so under the lock every one of them is stale."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()


def update_json(
    path: Path | str,
    mutate: Callable[[Any], T],
    *,
    indent: int | None = 2,
    mode: int | None = None,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> T:
    """Read-modify-write ``path`` under its sidecar lock.

    ``mutate`` receives the parsed document (``None`` when the file does not
    exist yet), changes it in place or builds a new one, and returns the
    document to write. If it raises, nothing is written. A corrupt file is
    refused before ``mutate`` runs.
    """
    path = Path(path)
    with locked(path, timeout=timeout):
        _remove_stale_temp_files(path)
        current = read_json(path, default=None)
        if current is None and path.exists():
            raise StoreError(f"{path} is corrupt (it holds JSON null); refusing to touch it")
        document = mutate(current)
        write_json(path, document, indent=indent, mode=mode)
        return document

"""The one way git-forge replaces a file: whole, or not at all.

``atomic_write`` — temp file in the destination's directory → write → flush →
fsync → ``os.replace`` → fsync the directory. A crash at any instant leaves
either the old bytes or the new ones; on failure the temp file is removed and
the destination is byte-for-byte unchanged. Nothing else in the project writes
a file another way (``locks`` guards a read-modify-write, ``jsonfile`` encodes
and decodes the documents). The two files that are appended to instead (the
events journal, the spool's segments) share the primitives below it:
``write_all``, ``fsync_directory`` and ``write_failure``.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from git_forge.errors import StoreError, os_error_text
from git_forge.exit_codes import EXIT_ERROR
from git_forge.owned import make_dir


def write_failure(what: Path | str, exc: OSError) -> str:
    """How a failed write is told, the same everywhere: a full disk says so plainly.
    (A failed write is the machine's failure, not the input's: exit 1.)"""
    if exc.errno == errno.ENOSPC:
        return f"no space left on device while writing {what}"
    if exc.errno == errno.EDQUOT:
        return f"disk quota exceeded while writing {what}"
    return f"cannot write {what}: {os_error_text(exc)}"


def default_file_mode() -> int:
    """0666 minus this process's umask, read without changing the umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


def write_all(fd: int, *buffers: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``buffers`` to ``fd``, in order: ``os.write`` may write
    less than it was given (a pipe, a signal, a nearly full disk), and retries
    an interrupted call itself (PEP 475), so what is left is sent again."""
    for buffer in buffers:
        view = memoryview(buffer)
        while len(view):
            view = view[os.write(fd, view):]


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new entry in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: The longest file name the file systems git-forge runs on take, in bytes (NAME_MAX).
NAME_MAX = 255


def temp_name(name: str, tail: str) -> str:
    """``.<name><tail>``: the name of a temp file beside ``name``, with ``name`` cut
    short (in bytes, as the file system counts them) so that the whole is never
    longer than ``NAME_MAX`` — git creates a file whose own name is 255 bytes, and
    a temp file beside it must be creatable too. A cut inside a character is
    harmless: the bytes are kept as they are (surrogate escapes)."""
    room = NAME_MAX - 1 - len(os.fsencode(tail))
    encoded = os.fsencode(name)
    if len(encoded) > room:
        name = os.fsdecode(encoded[:room])
    return f".{name}{tail}"


def _create_temp(directory: Path, name: str) -> tuple[int, str]:
    """A new file ``.<name>.<8 random letters>.tmp`` in ``directory`` (``name`` cut
    short: ``temp_name``), opened for writing, mode 0600 (``tempfile.mkstemp``)."""
    import tempfile  # common-case boundary: a read command writes nothing

    letters = "x" * 8  # the length of mkstemp's random part
    prefix = temp_name(name, f".{letters}.tmp").removesuffix(f"{letters}.tmp")
    return tempfile.mkstemp(suffix=".tmp", prefix=prefix, dir=directory)


def make_ignored_dir(directory: Path | str, rules: bytes) -> None:
    """``directory`` (its parent exists), holding a ``.gitignore`` of ``rules`` that
    ignore everything in it, itself included: git-forge's own directories that no
    project's ignore rules need to know of. The rules are not written durably: a
    power cut costs at most files shown untracked."""
    directory = Path(directory)
    try:
        make_dir(directory)  # never a link: the rules would be written where it points
    except OSError as exc:
        raise StoreError(write_failure(directory, exc), exit_code=EXIT_ERROR) from exc
    ignore = directory / ".gitignore"
    if not ignore.exists():
        atomic_write(ignore, rules, durable=False)


def make_durable(path: Path | str) -> None:
    """Make a file that is already in place durable, with its name: for a writer
    that finds the replace of one killed before its fsyncs (``atomic_write``'s
    own, after the rename), and for a version written with ``durable=False`` that
    must now survive a power cut. Another thread may replace the file meanwhile: when
    the name no longer holds the file synced, the newer one is made durable in turn
    (every replace is a new file, and the one held open cannot be reused), so the
    name on disk always holds bytes that are."""
    path = Path(path)
    try:
        while True:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
                fsync_directory(path.parent)
                held, named = os.fstat(fd), os.stat(path)
            finally:
                os.close(fd)
            if (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino):
                return
    except OSError as exc:
        raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc


def atomic_write(
    path: Path | str, data: bytes, *, mode: int | None = None, durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves old or new, never half.

    ``mode`` sets the permission bits of the new file; without it an existing
    file keeps its mode and a new one gets 0666 minus the umask.

    ``durable=False`` skips the two fsyncs: the replace is still atomic for every
    reader and survives the writer being killed (the kernel holds the bytes), but
    a power loss may bring back the previous version. Use it only for a version
    that a later durable write, or restore after a crash, supersedes anyway — the
    caller's docstring says which.
    """
    path = Path(path)
    directory = path.parent
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = default_file_mode()
    try:
        fd, tmp_name = _create_temp(directory, path.name)
    except OSError as exc:
        raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc
        raise
    if not durable:
        return
    try:
        fsync_directory(directory)
    except OSError as exc:
        raise StoreError(write_failure(path, exc), exit_code=EXIT_ERROR) from exc


def remove_stale_temp_files(path: Path) -> None:
    """Temp files ``atomic_write`` left for ``path`` when its writer was killed
    mid-write. Only a lock holder writes temp files for a locked file, so under
    the lock every one of them is stale."""
    for stale in path.parent.glob(temp_name(path.name, ".????????.tmp")):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()

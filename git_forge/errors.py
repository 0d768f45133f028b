"""The root of every error git-forge reports to its operator.

Each layer raises its own subclass (``StoreError`` for files, ``BacklogError``,
``RunnerError``, ``GitError``, ``ProcessError`` …) so callers can tell where a
failure came from; the CLI catches ``ForgeError`` once, prints ``Error: <msg>``
on one line and exits with ``exit_code``.
"""

from __future__ import annotations

import errno

from git_forge.exit_codes import EXIT_USAGE


class ForgeError(Exception):
    """A failure the operator should read: one line, and a meaningful exit code.

    ``exit_code`` defaults to 2 (usage error, refusal or unreadable input), which
    is what almost every refusal in the specs asks for. A failure of the machine
    rather than of the input (a crashed git, a full disk) uses 1.
    """

    exit_code: int = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class UsageError(ForgeError):
    """The command line itself is wrong (a bad flag value, a missing argument)."""


class StoreError(ForgeError):
    """A durable file could not be read, parsed, locked or written (``atomic``,
    ``locks`` and ``jsonfile`` share it: none of the three is above the others)."""


#: What the commonest file-system failures mean, in the words a message uses.
_OS_ERROR_WORDS: dict[int, str] = {
    errno.ENOENT: "no such file", errno.EACCES: "permission denied",
    errno.EPERM: "permission denied", errno.EISDIR: "is a directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system", errno.EEXIST: "already exists",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "file name too long",
}


def os_error_text(exc: OSError) -> str:
    """An ``OSError`` as the end of a message (``cannot read X: no such file``):
    plain words, never Python's ``[Errno 2] …: 'X'`` (the caller names the file)."""
    words = _OS_ERROR_WORDS.get(exc.errno) if exc.errno is not None else None
    if words is None and exc.strerror:
        words = exc.strerror[:1].lower() + exc.strerror[1:]
    return words or str(exc) or type(exc).__name__

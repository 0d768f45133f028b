"""The root of every error git-forge reports to its operator.

Each layer raises its own subclass (``StoreError`` for files, ``BacklogError``,
``RunnerError``, ``GitError``, ``ProcessError`` …) so callers can tell where a
failure came from; the CLI catches ``ForgeError`` once, prints ``Error: <msg>``
on one line and exits with ``exit_code``.
"""

from __future__ import annotations

#: Exit codes shared by every command (the forge-session.py / rauf convention).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


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

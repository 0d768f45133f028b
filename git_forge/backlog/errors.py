"""The backlog layer's one error type."""

from git_forge.errors import ForgeError


class BacklogError(ForgeError):
    """A backlog refusal (exit 2): invalid item, illegal transition, corrupt backlog.json."""

"""The reconcile layer's one error type."""

from git_forge.errors import ForgeError


class ReconcileError(ForgeError):
    """A reconciliation refusal (exit 2): an unknown group, an unconfirmed discard,
    a commit that would record a corrupt backlog.json."""

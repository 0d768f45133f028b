"""The tree layer's one error type."""

from git_forge.errors import ForgeError


class GitError(ForgeError):
    """Anything the repository refused or git failed at.

    Refusals (not a repository, a bare repository, no identity, a path that
    cannot be committed) keep the default exit code 2. A git command that
    failed carries git's stderr verbatim and exit code 1: the machine failed,
    not the input.
    """

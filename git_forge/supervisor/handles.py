"""Opaque process handles: 16 random bytes as unpadded URL-safe base64 (22 characters).

A handle becomes part of file names, so validation is strict and happens before
any path is built: anything that is not exactly a canonical handle is
``not_found`` and never reaches the filesystem.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets

HANDLE_LENGTH = 22
_HANDLE_RE = re.compile(r"[A-Za-z0-9_-]{22}")


def mint_handle() -> str:
    """A new handle. It never begins with ``-``, so it is always a safe CLI argument."""
    while True:
        handle = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode("ascii")
        if not handle.startswith("-"):
            return handle


def is_valid_handle(value: object) -> bool:
    """True for exactly the strings ``mint_handle`` can return."""
    if not isinstance(value, str) or not _HANDLE_RE.fullmatch(value) or value.startswith("-"):
        return False
    try:
        raw = base64.urlsafe_b64decode(value + "==")
    except (binascii.Error, ValueError):
        return False
    # Canonical form only: the two spare bits of the last character must be zero.
    return len(raw) == 16 and base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == value


def require_handle(value: object) -> str:
    """``value`` if it is a valid handle, else ``not_found`` (without touching any file)."""
    from git_forge.supervisor.lifecycle import ProcessError

    if not is_valid_handle(value):
        raise ProcessError("not_found", "no such process handle")
    return value  # type: ignore[return-value]

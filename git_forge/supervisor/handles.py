"""Opaque process handles: 16 random bytes as unpadded URL-safe base64 (22 characters).

A handle becomes part of file names, so validation is strict and happens before
any path is built: anything that is not exactly a canonical handle is
``not_found`` and never reaches the filesystem.
"""

from __future__ import annotations

import base64
import os
import re

from git_forge.supervisor.lifecycle import ProcessError

HANDLE_LENGTH = 22
#: Canonical unpadded URL-safe base64 of 16 bytes, not starting with ``-``: the
#: last character carries 2 spare bits that must be zero (one of ``A Q g w``).
_HANDLE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{20}[AQgw]")


def mint_handle() -> str:
    """A new handle. It never begins with ``-``, so it is always a safe CLI argument."""
    while True:
        handle = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")
        if not handle.startswith("-"):
            return handle


def is_valid_handle(value: object) -> bool:
    """True for exactly the strings ``mint_handle`` can return (one regular
    expression: restore checks every name in a process root)."""
    return isinstance(value, str) and _HANDLE_RE.fullmatch(value) is not None


def require_handle(value: object) -> str:
    """``value`` if it is a valid handle, else ``not_found`` (without touching any file)."""
    if not is_valid_handle(value):
        raise ProcessError("not_found", "no such process handle")
    return value  # type: ignore[return-value]

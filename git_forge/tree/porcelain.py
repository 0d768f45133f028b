"""Porcelain status entries and the exact line ``git status --porcelain`` prints.

No pygit2: the status (``git_status.py`` for an opened repository,
``fast_status.py`` on the hot path — both git itself) produces these entries,
and the pre-launch STOP message prints paths exactly as git prints them.
"""

import functools
import os
from typing import NamedTuple

from git_forge.tree.errors import GitError
from git_forge.tree.gitconfig import config_flag

UNTRACKED = "??"


class StatusEntry(NamedTuple):
    """One line of ``git status --porcelain -uall --no-renames``.

    ``path`` is the real path relative to the repository root, decoded from the
    file system's bytes the way Python does (``os.fsdecode``), never quoted. An
    untracked nested repository keeps git's trailing ``/``. ``xy`` is git's
    two-letter code (``" M"``, ``"A "``, ``"??"``, ``"UU"`` …). Ordered by path
    then code.
    """

    path: str
    xy: str

    @property
    def untracked(self) -> bool:
        return self.xy == UNTRACKED


# git's quote.c: these bytes get a C escape; other control bytes and DEL get
# octal, and so do bytes >= 0x80 while core.quotePath is true (the default).
_C_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f",
              13: b"\\r", 0x22: b'\\"', 0x5C: b"\\\\"}


#: Bytes git never escapes: printable ASCII except ``"`` and ``\\``.
_PLAIN = bytes(byte for byte in range(0x20, 0x7F) if byte not in _C_ESCAPES)


def quote_path(path: str, *, quote_path_fully: bool | None = None) -> str:
    """``path`` as ``git status --porcelain`` prints it (git's ``quote_path``).

    C-style quoting when a byte needs it (control characters, ``"``, ``\\``,
    DEL, and bytes >= 0x80 unless ``core.quotePath`` is false), and the whole
    path in double quotes when it contains a space — git's short and porcelain
    formats quote those too. ``quote_path_fully`` is ``core.quotePath``; by
    default git's own setting, asked only for a path that holds such a byte.

    Kept here rather than asked of git: the paths come from ``git status -z``
    (raw, the only form that reads back exactly), and a second listing without
    ``-z`` to print them would cost a whole ``git status`` more.
    """
    raw = os.fsencode(path)
    if not raw.translate(None, _PLAIN):  # the common case, without a loop per byte
        return f'"{path}"' if b" " in raw else path
    if quote_path_fully is None and max(raw) >= 0x80:
        quote_path_fully = _quote_path_setting()
    parts: list[bytes] = []
    escaped = False
    for byte in raw:
        if byte in _C_ESCAPES:
            parts.append(_C_ESCAPES[byte])
            escaped = True
        elif byte < 0x20 or byte == 0x7F or (byte >= 0x80 and quote_path_fully is not False):
            parts.append(b"\\%03o" % byte)
            escaped = True
        else:
            parts.append(bytes([byte]))
    if escaped or b" " in raw:
        return os.fsdecode(b'"' + b"".join(parts) + b'"')
    return path


@functools.cache
def _quote_path_setting() -> bool:
    """``core.quotePath`` as git reads it where git-forge runs (``git -c`` included),
    once per process; true (git's default) when git cannot say."""
    try:
        return config_flag("core.quotePath") is not False
    except GitError:
        return True


def render_porcelain_line(entry: StatusEntry, *, quote_path_fully: bool | None = None) -> str:
    """The line git prints for ``entry`` (no newline): ``XY PATH``, path quoted as git does."""
    return f"{entry.xy} {quote_path(entry.path, quote_path_fully=quote_path_fully)}"


def parse_status_z(data: bytes) -> tuple[dict[str, str], list[StatusEntry]]:
    """The headers (``branch.oid``, ``branch.head`` … with ``--branch``) and the
    entries of ``git status --porcelain=v2 -z`` output, in git's order.

    Porcelain v2 is git's format for programs: every field fixed, paths raw
    (no quoting), ``.`` where v1 prints a space in ``XY``, and no translated
    words (an unborn branch is ``branch.oid (initial)``, a detached HEAD
    ``branch.head (detached)``). A rename or copy (not produced with
    ``--no-renames``, handled anyway) is followed by its source path as a
    record of its own, which is skipped; ignored entries are skipped.
    """
    headers: dict[str, str] = {}
    entries: list[StatusEntry] = []
    records = data.split(b"\0")
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        kind = record[:1]
        if kind == b"#":
            name, _, value = os.fsdecode(record[2:]).partition(" ")
            headers[name] = value
        elif kind == b"?":
            entries.append(StatusEntry(os.fsdecode(record[2:]), UNTRACKED))
        elif kind in _FIELDS:
            fields = record.split(b" ", _FIELDS[kind])
            entries.append(StatusEntry(os.fsdecode(fields[-1]),
                                       fields[1].decode("ascii").replace(".", " ")))
            if kind == b"2":
                index += 1
    return headers, entries


#: How many fields come before the path in each kind of changed entry: ordinary,
#: renamed or copied, unmerged.
_FIELDS = {b"1": 8, b"2": 9, b"u": 10}

"""git-forge's JSON files: how a document is encoded, read, written and updated.

Every write goes through ``atomic.atomic_write``; a read-modify-write holds the
file's sidecar lock (``locks.locked``). A file that exists but does not parse is
never overwritten: ``read_json`` raises ``StoreError`` naming the file, and
``update_json`` stops before writing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from git_forge.errors import StoreError, os_error_text
from git_forge.jsonenc import dumps_indented
from git_forge.parsing import DocumentTooComplex, load_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def dumps_json(document: Any, *, indent: int | None = 2) -> bytes:
    """Serialize the way every git-forge file is written: UTF-8, not ASCII-escaped,
    a trailing newline; ``indent=None`` gives compact JSON. NaN and the infinities
    are refused (``ValueError``): they are not JSON, and no reader should meet them."""
    if indent is None:
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    else:
        text = dumps_indented(document, indent)
    return (text + "\n").encode("utf-8")


def unencodable(path: Path | str) -> str:
    """Why a document holding text that is not valid Unicode is not written (a
    command-line argument holding bytes that are not UTF-8 arrives as surrogates)."""
    return (f"refusing to write {path}: it would hold text that is not valid UTF-8 "
            "(bytes that are not UTF-8 in an argument or a file)")


def write_json(
    path: Path | str, document: Any, *, indent: int | None = 2, mode: int | None = None,
    durable: bool = True, encode: Callable[[Any], bytes] | None = None,
) -> bytes:
    """Atomically write ``document`` as JSON (see ``dumps_json``; ``encode``: a
    caller's encoder giving the same bytes faster) and return the bytes written.
    Text that is not valid Unicode (a command-line argument holding bytes that are
    not UTF-8 arrives as surrogate escapes) is refused before anything is written."""
    try:
        data = encode(document) if encode is not None else dumps_json(document, indent=indent)
    except UnicodeEncodeError as exc:
        raise StoreError(unencodable(path)) from exc
    except ValueError as exc:  # NaN or an infinity: json.dumps would write what is not JSON
        raise StoreError(f"refusing to write {path}: {exc}") from exc
    from git_forge.atomic import atomic_write  # common-case boundary: a reader writes none

    atomic_write(path, data, mode=mode, durable=durable)
    return data


_MISSING: Any = object()


def read_json(path: Path | str, *, default: Any = _MISSING, limit_depth: bool = True) -> Any:
    """Parse a JSON file; a file that exists but does not parse is a ``StoreError``.

    ``default`` is returned when the file does not exist; without it a missing
    file is a ``StoreError`` too. ``limit_depth``: see ``parsing.load_json``.
    """
    found = read_json_bytes(path, limit_depth=limit_depth)
    if found is not None:
        return found[1]
    if default is not _MISSING:
        return default
    raise StoreError(f"{path} does not exist")


def read_json_bytes(path: Path | str, *, limit_depth: bool = True
                    ) -> tuple[bytes, Any] | None:
    """The file's bytes and their document (``None`` when there is no file), for a
    later ``read_known``; refused as ``read_json`` refuses."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {os_error_text(exc)}") from exc
    return raw, _parsed(path, raw, limit_depth)


def _parsed(path: Path, raw: bytes, limit_depth: bool = True) -> Any:
    try:
        return load_json(raw.decode("utf-8"), path, limit_depth=limit_depth)
    except DocumentTooComplex as exc:
        raise StoreError(exc.message) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(
            f"{path} is corrupt (not valid JSON: {exc}); refusing to touch it"
        ) from exc


def read_document(path: Path | str) -> Any:
    """``path``'s document (``None`` when there is no file), refused as ``update_json``
    refuses it: a file that does not parse, or one that holds JSON null (no document
    to update). For a check made before the writes that will need the file."""
    return _not_null(read_json(path, default=None), Path(path))


def _not_null(document: Any, path: Path) -> Any:
    if document is None and path.exists():
        raise StoreError(f"{path} is corrupt (it holds JSON null); refusing to touch it")
    return document


def read_known(path: Path | str, known: tuple[bytes, Any]) -> Any:
    """``read_json(path, default=None)``, but ``known``'s document for ``known``'s bytes."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return read_json(path, default=None)  # its own refusal or its default
    return known[1] if raw == known[0] else read_json(path, default=None)


def update_json(
    path: Path | str,
    mutate: Callable[[Any], T],
    *,
    indent: int | None = 2,
    mode: int | None = None,
    timeout: float | None = None,
    durable: bool = True,
    on_write: Callable[[bytes], None] | None = None,
    known: tuple[bytes, Any] | None = None,
    encode: Callable[[Any], bytes] | None = None,
) -> T:
    """Read-modify-write ``path`` under its sidecar lock (``timeout``: the lock's,
    ``locks.DEFAULT_LOCK_TIMEOUT`` when ``None``; ``durable``: see
    ``atomic.atomic_write``; ``on_write`` is handed the bytes written, still under
    the lock; ``known``: bytes the caller read before and the document it parsed
    from them — when the file still holds exactly those bytes, ``mutate`` is handed
    that document instead of a second parse of a large file; ``encode``: see
    ``write_json``).

    ``mutate`` receives the parsed document (``None`` when the file does not
    exist yet), changes it in place or builds a new one, and returns the
    document to write. If it raises, nothing is written. A corrupt file is
    refused before ``mutate`` runs.
    """
    path = Path(path)
    # common-case boundary: a read command writes nothing, locks nothing
    from git_forge.atomic import remove_stale_temp_files
    from git_forge.locks import DEFAULT_LOCK_TIMEOUT, locked

    with locked(path, timeout=DEFAULT_LOCK_TIMEOUT if timeout is None else timeout):
        remove_stale_temp_files(path)
        current = _not_null(read_known(path, known) if known is not None else read_json(
            path, default=None), path)
        document = mutate(current)
        data = write_json(path, document, indent=indent, mode=mode, durable=durable,
                          encode=encode)
        if on_write is not None:
            on_write(data)
        return document

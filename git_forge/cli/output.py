"""Rendering shared by every command: JSON, colour, the one-line error.

One JSON helper (``emit_json``) so every ``--json`` output has the same shape:
2-space indent, UTF-8 not ASCII-escaped — the format feature-forge's verbs use.
Colour only on a terminal and never with ``NO_COLOR`` (https://no-color.org).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

_STYLES = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36", "dim": "2"}


def emit_json(document: Any, stream: TextIO | None = None) -> None:
    """Print a JSON document the way every ``--json`` output is printed."""
    print(json.dumps(document, indent=2, ensure_ascii=False), file=stream or sys.stdout)


def color_enabled(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, never with ``NO_COLOR`` or ``TERM=dumb``."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, stream: TextIO | None = None) -> str:
    """``text`` in ``style`` when colour is enabled for ``stream``, else unchanged."""
    if not color_enabled(stream):
        return text
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def error(message: str) -> None:
    """The one-line error every refusal prints on stderr."""
    print(f"Error: {message}", file=sys.stderr)


def note(message: str) -> None:
    """A remark beside a command's output, on stderr so that stdout stays its data."""
    print(f"note: {message}", file=sys.stderr)


def warn(message: str) -> None:
    print(f"{paint('warning', 'yellow', sys.stderr)}: {message}", file=sys.stderr)

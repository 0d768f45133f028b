"""Runner version strings: parse them and compare with a minimum.

recovery.md, settled details: strip one leading ``v``; split on ``.``; take the
first three parts; each must be a plain integer (``0.14.0-rc1`` is a miss);
missing parts are 0 (``0.14`` is 0.14.0). A miss is not an error: the caller
takes the degraded path.
"""

from __future__ import annotations

Version = tuple[int, int, int]


def parse_version(text: object) -> Version | None:
    """``"v0.14"`` → ``(0, 14, 0)``; anything that is not that shape → ``None``."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".")[:3]
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    numbers = [int(part) for part in parts] + [0, 0, 0]
    return (numbers[0], numbers[1], numbers[2])


def is_answer_capable(version: str | None, minimum: str) -> bool:
    """True when ``version`` parses and is at least ``minimum``."""
    parsed = parse_version(version)
    floor = parse_version(minimum)
    return parsed is not None and floor is not None and parsed >= floor

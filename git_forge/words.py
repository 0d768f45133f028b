"""Numbers as a person reads them, the same in every message.

A count with its noun in the right number (``1 item``, ``2 items``), a duration in
the unit the flags take but seconds under a minute (``3 seconds``, not ``0.05
min``), an amount of US dollars with the digits it needs (``$0.001``, not
``$0.00``), and a size in bytes (``512 B``, ``2.9 KiB``).
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 item``, ``0 items``, ``3 items`` (``plural`` where ``s`` is not it)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def duration(minutes: float) -> str:
    """A duration given in minutes, in words: ``3 seconds`` under a minute (``1.2
    seconds`` under ten), else minutes (``1 minute``, ``1.5 minutes``, ``30
    minutes``) — the unit ``--timeout`` and the ``loop.*Minutes`` keys take."""
    if minutes < 1:
        seconds = minutes * 60
        shown = round(seconds, 1) if seconds < 10 else round(seconds)
        return f"{shown:g} second" + ("" if shown == 1 else "s")
    shown = round(minutes, 2)
    return f"{shown:g} minute" + ("" if shown == 1 else "s")


def usd(amount: float) -> str:
    """``$0.42``, ``$1.50``: cents, and more digits for an amount below ten cents,
    down to its first two significant ones (``$0.001``, ``$0.0012``), so that a cap
    of a tenth of a cent never reads as ``$0.00``."""
    digits = 2
    while digits < 8 and 0 < abs(amount) < 10 ** (1 - digits):
        digits += 1
    text = f"{amount:.{digits}f}"
    if digits > 2:  # the digits added for a small amount, without trailing zeros
        whole, _, fraction = text.partition(".")
        text = f"{whole}.{fraction.rstrip('0').ljust(2, '0')}"
    return f"${text}"


def clock(seconds: float | None) -> str:
    """A time on a clock's face: ``1:02:03``, ``2:03`` (whole seconds, rounded down),
    or ``—`` when it is not known."""
    if seconds is None:
        return "—"
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def size(count: int) -> str:
    """An amount of output: ``512 B`` under a KiB, else ``2.9 KiB`` (one decimal)."""
    return f"{count / 1024:.1f} KiB" if count >= 1024 else f"{count} B"

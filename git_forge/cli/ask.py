"""Asking the operator on a terminal: one question at a time, safe defaults.

Used by ``reconcile`` and ``recover`` when stdin and stdout are a TTY. Input is
read line by line from stdin; an empty line takes the default; end of input is
the safe answer (leave / defer). Ctrl-C is left to the caller, which treats it
as cancel-early and still records what it must.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from git_forge.cli.output import paint, terminal_text


def interactive() -> bool:
    """Questions are asked only when both ends are a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _read(prompt: str) -> str | None:
    try:
        # On a terminal ``input`` writes its prompt past sys.stdout (and so past
        # the boundary): the prompt is made safe here.
        return input(terminal_text(prompt))
    except EOFError:
        return None


def choose(prompt: str, options: Sequence[tuple[str, str]], default: str) -> str:
    """Pick one of ``options`` ((key, label) pairs) by its key or label."""
    labels = " / ".join(
        f"[{key}]{label[len(key):]}" if label.startswith(key) else f"[{key}] {label}"
        for key, label in options
    )
    while True:
        answer = _read(f"{prompt} {labels} (default: {default}) ")
        if answer is None:
            return default
        answer = answer.strip().lower()
        if not answer:
            return default
        for key, label in options:
            if answer in (key, label):
                return label
        print(paint(f"Please answer one of: {labels}", "yellow"))


def confirm(prompt: str) -> bool:
    """A yes/no question whose default is no."""
    answer = _read(f"{prompt} [y/N] ")
    return answer is not None and answer.strip().lower() in ("y", "yes")


def text(prompt: str) -> str | None:
    """Free text; ``None`` at end of input."""
    answer = _read(prompt)
    return None if answer is None else answer.strip()

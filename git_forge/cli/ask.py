"""Asking the operator on a terminal: one question at a time, safe defaults.

Used by ``reconcile`` and ``recover`` when stdin and stdout are a TTY. Input is
read line by line from stdin; an empty line takes the default. Ctrl-C is left to
the caller, which treats it as cancel-early and still records what it must — and
end of input (Ctrl-D) is the same: ``InputClosed`` is a ``KeyboardInterrupt``. An
operator who closed the input can answer nothing more, so taking each prompt's
default instead (recover's is to commit its backlog change) would act for them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from git_forge.cli.output import paint, terminal_text


def interactive() -> bool:
    """Questions are asked only when both ends are a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


class InputClosed(KeyboardInterrupt):
    """End of input at a prompt: the dialogue is cancelled, as by Ctrl-C."""


def _read(prompt: str) -> str:
    try:
        # On a terminal ``input`` writes its prompt past sys.stdout (and so past
        # the boundary): the prompt is made safe here.
        return input(terminal_text(prompt))
    except EOFError:
        raise InputClosed from None


def choose(prompt: str, options: Sequence[tuple[str, str]], default: str) -> str:
    """Pick one of ``options`` ((key, label) pairs) by its key or label."""
    labels = " / ".join(
        f"[{key}]{label[len(key):]}" if label.startswith(key) else f"[{key}] {label}"
        for key, label in options
    )
    while True:
        answer = _read(f"{prompt} {labels} (default: {default}) ").strip().lower()
        if not answer:
            return default
        for key, label in options:
            if answer in (key, label):
                return label
        print(paint(f"Please answer one of: {labels}", "yellow"))


def confirm(prompt: str) -> bool:
    """A yes/no question whose default is no."""
    return _read(f"{prompt} [y/N] ").strip().lower() in ("y", "yes")


def text(prompt: str) -> str:
    """Free text, stripped."""
    return _read(prompt).strip()

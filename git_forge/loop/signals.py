"""Reading an agent's final signal from its output.

The agent ends with one of ``FORGE_DONE``, ``FORGE_BLOCKED: <reason>`` or
``FORGE_NEEDS_HUMAN: <reason>`` (the rauf runner's ``RAUF_`` spellings are
accepted too). The signal is the output's final line — trailing blank lines
aside, and a closing code fence right after it, since models wrap the line in
one. A signal line followed by anything else is no signal: the agent's prompt
asks it to *end* with the line, and prose after it ("The tests still fail; I
could not finish") is the agent taking it back. So an agent quoting the
protocol, or a signal it means to print later, is not misread.

Models answer in Markdown, so a signal line is the signal *as Markdown writes
it*; its grammar (each line stripped of surrounding white space):

* any number of list or quote markers, each followed by white space (``-``,
  ``*``, ``+``, ``1.``, ``1)``) or not (``>``);
* the keyword, wrapped or not in one emphasis or code-span run (``**``, ``__``,
  ``*``, ``_``, a backtick, or a mix such as ``**``+backtick) that closes with
  the same run reversed;
* ``DONE``: nothing more but a period, inside or outside the wrapper;
* ``BLOCKED`` / ``NEEDS_HUMAN``: nothing more (no reason given), or a colon and
  the reason — the colon inside the wrapper or outside it, the reason inside it
  (then the wrapper closes the line) or after it.

So ```FORGE_DONE```, ``**FORGE_DONE**``, ``FORGE_DONE.``, ``- FORGE_DONE``,
``> FORGE_DONE``, ``__FORGE_DONE__``, ``**FORGE_BLOCKED:** reason``,
``**FORGE_BLOCKED**: reason`` and ```FORGE_NEEDS_HUMAN: which?``` are signals.
The line is the signal and nothing else: a keyword inside prose ("I would have
printed FORGE_DONE once…"), followed by words ("FORGE_DONE once the tests
pass") or by a wrapper that does not close where the line ends (the protocol
quoted as ```FORGE_BLOCKED: <reason>` — you cannot proceed``) is not; nor is a
reason that is a placeholder in angle brackets (``FORGE_NEEDS_HUMAN: <question>``,
the protocol restated), which asks nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

SignalKind = Literal["done", "blocked", "needs_human", "none"]

_KINDS: dict[str, SignalKind] = {
    "DONE": "done", "BLOCKED": "blocked", "NEEDS_HUMAN": "needs_human"}

#: List and quote markers (``- ``, ``1. ``, ``> ``), the wrapper's opening run, the
#: keyword, and what follows it.
_SIGNAL = re.compile(r"(?:(?:[-*+]|\d{1,9}[.)])\s+|>\s*)*"
                     r"(?P<open>[*_`]{0,4})(?:FORGE|RAUF)_(?P<kind>DONE|BLOCKED|NEEDS_HUMAN)"
                     r"(?P<rest>.*)")


@dataclass(frozen=True)
class Signal:
    kind: SignalKind
    reason: str | None = None


NO_SIGNAL = Signal("none")


#: A code fence's line (``` or ~~~, with no info string: a closing one).
_FENCE = re.compile(r"(?:`{3,}|~{3,})")
#: A reason that is a placeholder: ``<reason>``, ``<question>``.
_PLACEHOLDER = re.compile(r"<[^<>]*>")


def parse_signal(text: str) -> Signal:
    """The signal ``text``'s final line is, or ``NO_SIGNAL``: blank lines at the
    end are skipped, and one closing code fence right after the signal line."""
    lines = text.rstrip().splitlines()
    if len(lines) >= 2 and _FENCE.fullmatch(lines[-1].strip()):
        lines.pop()
    return (signal_of(lines[-1]) if lines else None) or NO_SIGNAL


def signal_of(line: str) -> Signal | None:
    """The signal ``line`` is, by the module's grammar, or ``None``."""
    signal = _signal_of(line)
    if signal is not None and signal.reason and _PLACEHOLDER.fullmatch(signal.reason):
        return None
    return signal


def _signal_of(line: str) -> Signal | None:
    match = _SIGNAL.fullmatch(line.strip())
    if match is None:
        return None
    kind = _KINDS[match["kind"]]
    close = match["open"][::-1]
    rest = match["rest"]
    if rest in (close, close + ".", "." + close):  # no reason given
        return Signal(kind)
    if kind == "done":
        return None
    if close and rest.startswith(close + ":"):  # **FORGE_BLOCKED**: reason
        return Signal(kind, rest[len(close) + 1:].strip())
    if not rest.startswith(":"):
        return None
    inner = rest[1:]
    if not close:  # FORGE_BLOCKED: reason
        return Signal(kind, inner.strip())
    if inner.startswith(close):  # **FORGE_BLOCKED:** reason
        return Signal(kind, inner[len(close):].strip())
    for end in (close, close + "."):  # `FORGE_BLOCKED: reason`
        if inner.endswith(end) and len(inner) > len(end):
            return Signal(kind, inner[:-len(end)].strip())
    return None

"""Internal codes in plain words, for people.

The supervisor's errors carry a stable code (``process: spawn_failed: …``): it is
the contract of ``--json`` and of the files, and it stays there. A person reading
a terminal gets words instead (``could not start the agent: …``). This is the one
place that maps the codes; every human rendering of a message passes through
``plain``, every ``--json`` output keeps the code.
"""

from __future__ import annotations

import re

#: Code → what it means, for a sentence of its own. ``None``: the cause the error
#: carries already says it all, and only stands alone.
PROCESS_WORDS: dict[str, str | None] = {
    "invalid_arguments": "invalid arguments",
    "invalid_settings": "invalid supervisor setting",
    "invalid_transition": "a process state change that is not allowed",
    "manifest_conflict": "a process record would lose what it already holds",
    "process_quota_exceeded": "no room for another process",
    "spawn_failed": "could not start the agent",
    "process_setup_failed": "could not create the process's records",
    "not_found": "no such process",
    "stdin_closed": "the process's standard input is closed",
    "cursor_ahead": "the cursor is beyond the output",
    "supervisor_shutting_down": "the loop is shutting down and starts no more processes",
    "supervisor_busy": "another running loop owns these processes",
    "owner_gone": "no running loop owns this process",
    "wait_timeout": "timed out waiting",
    "manifest_corrupt": "a process record is corrupt",
    "spool_corrupt": "a process's stored output is corrupt",
    "teardown_failed": "could not stop every process of the tree",
}

#: Codes whose cause is a whole sentence already ("cursor 9 is beyond 3 bytes").
_CAUSE_ALONE = frozenset({"invalid_arguments", "not_found", "cursor_ahead", "owner_gone",
                          "manifest_corrupt", "spool_corrupt"})

_CODED = re.compile(r"process: ([a-z_]+)(?:: )?")


def process_words(code: str, cause: object = None) -> str:
    """The plain sentence for a supervisor error ``code`` with its ``cause``."""
    words = PROCESS_WORDS.get(code, code.replace("_", " "))
    text = "" if cause in (None, "") else str(cause)
    if not text:
        return words or code
    if code in _CAUSE_ALONE:
        return text
    return f"{words}: {text}"


def plain(message: str) -> str:
    """``message`` with every ``process: <code>[: cause]`` in plain words (the
    cause is the rest of the message, as ``ProcessError`` writes it)."""
    found = _CODED.search(message)
    if found is None or found.group(1) not in PROCESS_WORDS:
        return message
    rest = message[found.end():] if found.group(0).endswith(": ") else ""
    return message[:found.start()] + process_words(found.group(1), rest)

"""The runner contract: the one interface recovery, status and topology talk to.

A runner owns a backlog and answers four questions (list, answer, unblock,
version); a runner program can also ``launch`` its own loop. The embedded
runner does it in-process on ``backlog.json``; the external runner runs a
rauf-compatible program. Callers catch ``RunnerError``
only: whatever failed underneath, its message is the runner's own words.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from git_forge.backlog.item import Item
from git_forge.errors import ForgeError


class RunnerError(ForgeError):
    """A runner call failed; the message quotes the runner's error verbatim.

    ``exit_status`` and ``stderr``/``stdout`` are kept for reports that need
    them apart from the one-line message.
    """

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        argv: list[str] | None = None,
        exit_status: int | None = None,
        stdout: str = "",
        stderr: str = "",
    ) -> None:
        super().__init__(message, exit_code=exit_code)
        self.argv = argv
        self.exit_status = exit_status
        self.stdout = stdout
        self.stderr = stderr


class Change(NamedTuple):
    """One change recovery applies: ``answer`` the item with ``text``, or ``unblock``
    it when ``text`` is ``None``."""

    item_id: str
    text: str | None


class ChangeFailed(Exception):
    """The runner refused ``item_id``'s change with ``error`` (its words, verbatim)."""

    def __init__(self, item_id: str, error: RunnerError) -> None:
        super().__init__(f"item {item_id}: {error.message}")
        self.item_id = item_id
        self.error = error


class Runner(ABC):
    """What every runner provides (formats.md, "Runner contract outputs")."""

    #: "embedded" or "external".
    kind: str

    @abstractmethod
    def list_items(self) -> list[Item]:
        """Every backlog item, as the runner reports them."""

    def derived(self, state_dir: Path, name: str, derive: Callable[[list[Item]], str], *,
                keep: bool = True) -> str:
        """``derive(self.list_items())``: text a command computes from the whole item
        list. The embedded runner keeps it between commands (``backlog/cache.py``),
        keyed on backlog.json's identity and bytes — without ``keep``, uses what is
        kept and writes nothing; here, it is computed each time."""
        return derive(self.list_items())

    def read_items(self, state_dir: Path) -> list[Item]:
        """``list_items()`` for a reader that writes nothing (``watch``): the embedded
        runner skips the backlog's checks where a command marked its bytes valid."""
        return self.list_items()

    @abstractmethod
    def answer(self, item_id: str, text: str) -> Mapping[str, object]:
        """blocked → pending with the answer threaded into the next prompt;
        ``{"answered": id, "status": "pending"}`` (``AnsweredJSON``; a runner
        program's object is read as it printed it)."""

    @abstractmethod
    def unblock(self, item_id: str | None = None) -> Mapping[str, object]:
        """blocked → pending (every blocked item when ``item_id`` is None);
        ``{"unblockedCount": n, "unblockedIds": [...]}`` (``UnblockedJSON``; a
        runner program's object is read as it printed it)."""

    @abstractmethod
    def version(self) -> str | None:
        """The runner's version string, or ``None`` when it cannot be told."""

    @abstractmethod
    def answer_capable(self) -> bool:
        """Whether ``answer`` threads the text into the next prompt."""

    def answers_every_kind(self) -> bool:
        """Whether recovery answers (rather than unblocks) plain blocked and deferred
        items too. recovery.md's dispatch table unblocks them: that is the contract
        with an external runner, which may thread ``humanAnswer`` for needs-human
        items only. A runner that threads it for every item says so here."""
        return False

    def probe_version(self) -> tuple[str | None, str | None]:
        """``(version, None)``, or ``(None, why)`` when the version cannot be told —
        the why is what a report says about an unknown version."""
        version = self.version()
        return (version, None) if version else (None, "no version")

    def launch(self) -> int:
        """Run the runner's own loop in the foreground and return its exit status.
        Only a runner program has a loop of its own; the embedded loop is
        ``git forge loop run``."""
        raise RunnerError(f"the {self.kind} runner has no loop of its own to launch: "
                          "run `git forge loop run`")

    def apply_changes(
        self, changes: Sequence[Change], accepted: Callable[[list[str]], None]
    ) -> None:
        """Make ``changes`` in order, calling ``accepted(ids)`` as soon as the runner
        has them — here after every single call, so the caller's bookkeeping (the
        decision stamp) follows each one. The first refused change raises
        ``ChangeFailed`` and nothing after it is attempted; an exception from
        ``accepted`` stops the calls too."""
        for change in changes:
            try:
                if change.text is None:
                    self.unblock(change.item_id)
                else:
                    self.answer(change.item_id, change.text)
            except RunnerError as exc:
                raise ChangeFailed(change.item_id, exc) from exc
            accepted([change.item_id])

    def describe(self) -> str:
        """A short label for reports."""
        return self.kind

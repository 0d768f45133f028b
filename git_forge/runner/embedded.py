"""The embedded runner: the runner contract served in-process from backlog.json."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from git_forge import __version__
from git_forge.backlog.store import BacklogStore
from git_forge.errors import ForgeError
from git_forge.layout import backlog_file
from git_forge.runner.base import Change, ChangeFailed, Runner, RunnerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    from git_forge.backlog.item import Item
    from git_forge.backlog.store import AnsweredJSON, Snapshot, UnblockedJSON

    T = TypeVar("T")


def _as_runner_error(call: Callable[[], T]) -> T:
    """Backlog refusals become ``RunnerError`` with the same words and exit code."""
    try:
        return call()
    except RunnerError:
        raise
    except ForgeError as exc:
        raise RunnerError(exc.message, exit_code=exc.exit_code, stderr=exc.message) from exc


class EmbeddedRunner(Runner):
    """Always answer-capable: ``answer`` writes ``humanAnswer``, which the
    embedded loop threads into the item's next prompt — whatever the item's kind,
    so recovery answers plain blocked and deferred items too, and the operator's
    text reaches the agent instead of staying in the decision record."""

    kind = "embedded"

    def __init__(self, backlog_dir: Path) -> None:
        self.backlog_dir = Path(backlog_dir)
        self.store = BacklogStore.in_dir(self.backlog_dir)
        #: What this runner last read or wrote: the next call that finds the file
        #: holding the same bytes uses its document instead of parsing them again
        #: (one recover pass lists, applies and lists again).
        self._seen: Snapshot | None = None

    def list_items(self) -> list[Item]:
        self._seen = _as_runner_error(lambda: self.store.snapshot(self._seen))
        return self._seen.items

    def derived(self, state_dir: Path, name: str, derive: Callable[[list[Item]], str], *,
                keep: bool = True) -> str:
        # common-case boundary: the cache and its writer only where a command derives (status)
        from git_forge.backlog.cache import derived_text

        return _as_runner_error(lambda: derived_text(
            backlog_file(self.backlog_dir), state_dir, name,
            lambda snapshot: derive(snapshot.items), keep=keep))

    def read_items(self, state_dir: Path) -> list[Item]:
        # common-case boundary: as derived's
        from git_forge.backlog.cache import read_valid

        return _as_runner_error(lambda: read_valid(
            backlog_file(self.backlog_dir), state_dir, lambda snapshot: snapshot.items,
            keep=False))

    def _wrote(self, snapshot: Snapshot) -> None:
        self._seen = snapshot

    def answer(self, item_id: str, text: str) -> AnsweredJSON:
        return _as_runner_error(lambda: self.store.answer(item_id, text))

    def unblock(self, item_id: str | None = None) -> UnblockedJSON:
        return _as_runner_error(lambda: self.store.unblock(item_id))

    def apply_changes(
        self, changes: Sequence[Change], accepted: Callable[[list[str]], None]
    ) -> None:
        """Every change in one write of backlog.json (``BacklogStore.answer_all``),
        then ``accepted`` once for all the changes made. Call by call, a hundred
        answers rewrote the whole file a hundred times. A refusal keeps the
        changes before it (written, then accepted) and stops, as a call-by-call
        pass would; a failure of the write itself is the first change's."""
        if not changes:
            return
        try:
            done, refusal = _as_runner_error(
                lambda: self.store.answer_all([(c.item_id, c.text) for c in changes],
                                              known=self._seen, wrote=self._wrote))
        except RunnerError as exc:
            raise ChangeFailed(changes[0].item_id, exc) from exc
        if done:
            accepted(done)
        if refusal is not None:
            failed = changes[len(done)].item_id
            raise ChangeFailed(failed, RunnerError(refusal.message, exit_code=refusal.exit_code,
                                                   stderr=refusal.message)) from refusal

    def version(self) -> str:
        return __version__

    def answer_capable(self) -> bool:
        return True

    def answers_every_kind(self) -> bool:
        return True

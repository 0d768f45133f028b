"""What a run keeps about its agent between iterations: the event its waits
sleep on, the circuit breaker, the notifier, the session a retry resumes, and
what its attempts cost so far."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from git_forge.agents.receipt import Totals
from git_forge.loop.breaker import Breaker
from git_forge.loop.notify import Notifier

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.loop.receipts import LedgerWriter


def _silent() -> Notifier:
    return Notifier((), Path(), "", Path(), lambda event, why: None)


@dataclass
class AgentState:
    """The run's hold on its agent across iterations."""

    #: Set by a signal (Ctrl-C, SIGTERM): every wait of the run sleeps on it.
    wake: threading.Event = field(default_factory=threading.Event)
    breaker: Breaker = field(default_factory=lambda: Breaker(3))
    notifier: Notifier = field(default_factory=_silent)
    #: ``(item id, session id)`` of the last attempt: what a retry of it resumes.
    last_session: tuple[str, str] | None = None
    #: Attempts in a row that met a limit whose announced end had passed.
    limits_after_reset: int = 0
    #: What this run's attempts cost so far.
    spent: Totals = field(default_factory=Totals)
    #: Adds each attempt's receipt to ``receipts.json`` (made at the first receipt).
    ledger: LedgerWriter | None = None

    def session_for(self, item_id: str, enabled: bool) -> str | None:
        """The session a retry of ``item_id`` resumes: the previous attempt's, only
        when that attempt was on this item (never across items)."""
        if not enabled or self.last_session is None or self.last_session[0] != item_id:
            return None
        return self.last_session[1]

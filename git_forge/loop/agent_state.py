"""What a run keeps about its agent between iterations: the event its waits
sleep on, the circuit breaker, the notifier, the session a retry resumes, and
what its attempts cost so far."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from git_forge.agents.receipt import Session, Totals
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
    #: Each item's last attempt's session: what a retry of the item resumes.
    sessions: dict[str, Session] = field(default_factory=dict)
    #: Attempts in a row that met a limit whose announced end had passed.
    limits_after_reset: int = 0
    #: What this run's attempts cost so far.
    spent: Totals = field(default_factory=Totals)
    #: Adds each attempt's receipt to ``receipts.json`` (made at the first receipt).
    ledger: LedgerWriter | None = None

    def session_for(self, item_id: str, enabled: bool) -> Session | None:
        """The session a retry of ``item_id`` resumes: its previous attempt's (never
        another item's), when it reported one."""
        return self.sessions.get(item_id) if enabled else None

    def remember(self, item_id: str, session: Session | None) -> None:
        """``item_id``'s attempt ended in ``session`` (``None``: none to resume)."""
        if session is None:
            self.sessions.pop(item_id, None)
        else:
            self.sessions[item_id] = session

"""What a run keeps about its agent between iterations: the event its waits
sleep on, the circuit breaker, the notifier, the session a retry resumes, and
what its attempts cost so far."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
    #: Each item's last attempt's session, by the agent that ran it (``True``: the
    #: fallback agent): what a retry of the item on that agent resumes.
    sessions: dict[tuple[str, bool], Session] = field(default_factory=dict)
    #: While the agent's usage limit lasts, the items run on the fallback agent
    #: (``loop.onLimit: fallback``): when it lifts.
    fallback_until: datetime | None = None
    #: Attempts in a row that met a limit whose announced end had passed.
    limits_after_reset: int = 0
    #: What this run's attempts cost so far.
    spent: Totals = field(default_factory=Totals)
    #: Adds each attempt's receipt to ``receipts.json`` (made at the first receipt).
    ledger: LedgerWriter | None = None

    def on_fallback(self) -> bool:
        """Whether an attempt starting now runs on the fallback agent: the agent's
        usage limit has not lifted yet."""
        if self.fallback_until is not None and datetime.now(UTC) >= self.fallback_until:
            self.fallback_until = None
        return self.fallback_until is not None

    def session_for(self, item_id: str, enabled: bool, fallback: bool = False
                    ) -> Session | None:
        """The session a retry of ``item_id`` resumes: its previous attempt's on the same
        agent (never another item's, never the other agent's), when it reported one."""
        return self.sessions.get((item_id, fallback)) if enabled else None

    def remember(self, item_id: str, session: Session | None, fallback: bool = False) -> None:
        """``item_id``'s attempt ended in ``session`` (``None``: none to resume)."""
        if session is None:
            self.sessions.pop((item_id, fallback), None)
        else:
            self.sessions[(item_id, fallback)] = session

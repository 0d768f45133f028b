"""``git forge watch``: one frame of a run, read from the files the loop already writes.

A watcher is a reader only: state.json, the lock's liveness, the process manifests
and the ends of their spools, the backlog, the receipts and the journal's tail —
no lock taken, nothing written (``status``'s backlog cache included), so a watcher
beside a running loop can neither slow it nor make it fail. The terminal view
(``cli/watch_app.py``) and ``watch --once`` render the same frame.
"""

from datetime import UTC, datetime
from typing import TypedDict

from git_forge.agents.profiles import PROFILES
from git_forge.agents.receipt import TotalsJSON
from git_forge.agents.streams import StreamReader, TextSink
from git_forge.backlog.model import WaitingItemJSON, selectable_items, waiting_items
from git_forge.clock import parse_stamp
from git_forge.layout import EVENTS_FILE
from git_forge.loop.control import output_tails
from git_forge.loop.journal import tail_events
from git_forge.runner.base import Runner
from git_forge.safetext import clean, safe_text
from git_forge.status_report import StatusJSON, loop_status
from git_forge.workspace import Workspace

#: How many items of the queue a frame names (it counts them all).
QUEUE_SHOWN = 10
#: How many of the journal's latest outcomes a frame shows, and how much of its end
#: is read for them.
RECENT_SHOWN = 8
JOURNAL_TAIL_BYTES = 64 * 1024
#: The journal events a frame's "recent" shows: what happened to items.
RECENT_EVENTS = ("item_completed", "item_blocked", "needs_human", "merge_conflict",
                 "usage_limit_wait", "usage_limit_resumed", "agent_escaped", "loop_started",
                 "loop_completed", "loop_paused", "loop_cancelled", "loop_error",
                 "circuit_breaker", "branch_left")


class WatchAgentJSON(TypedDict):
    """One running agent (or verification gate) of the live run."""

    handle: str
    itemId: str | None
    title: str | None
    startedAt: str | None
    elapsedSeconds: float | None
    outputBytes: int
    #: Its output's last line, as safe text ('' before its first).
    lastLine: str
    #: What the item's finished attempts cost in this run (``None``: nothing reported).
    costUsd: float | None
    worktree: str | None
    gate: str | None
    #: The profile whose structured stream it prints (``claude``), else ``None``.
    stream: str | None


class QueuedJSON(TypedDict):
    id: str
    title: str


class RecentJSON(TypedDict):
    """One of the journal's latest events about items and the run."""

    type: str
    timestamp: str | None
    itemId: str | None
    text: str


class WatchJSON(TypedDict):
    """A frame of ``git forge watch`` (``--once --json``)."""

    project: str
    loopState: str
    loopAlive: bool
    endedWithoutShutdown: bool
    runId: str | None
    iteration: int | None
    maxIterations: int | None
    startedAt: str | None
    elapsedSeconds: float | None
    sandbox: str | None
    agents: list[WatchAgentJSON]
    #: The items that start next, in the order the loop takes them (at most
    #: ``QUEUE_SHOWN``), and how many can start in all.
    queue: list[QueuedJSON]
    queued: int
    mergeQueue: list[str]
    waiting: list[WaitingItemJSON]
    #: This run's totals so far (attempts, tokens, cost), ``None`` before any.
    totals: TotalsJSON | None
    #: A usage-limit wait: when it lifts, and the seconds left now.
    waitingUntil: str | None
    secondsLeft: float | None
    verifyFailures: dict[str, str]
    recent: list[RecentJSON]
    backlog: dict[str, int]
    error: str | None


def _moment(stamp: str | None) -> datetime | None:
    try:
        return parse_stamp(stamp) if stamp else None
    except ValueError:
        return None


def _cost(totals: TotalsJSON | None) -> float | None:
    return totals["costUsd"] if totals is not None else None


def _seconds_since(stamp: str | None, now: datetime) -> float | None:
    moment = _moment(stamp)
    return None if moment is None else max(0.0, (now - moment).total_seconds())


def watch_frame(workspace: Workspace, runner: Runner,
                now: datetime | None = None) -> WatchJSON:
    """The run as it is now, from its files (see the module's docstring)."""
    now = now or datetime.now(UTC)
    status: StatusJSON = loop_status(workspace, runner, item_costs=True, keep=False)
    items = runner.read_items(workspace.state_dir)
    by_id = {item.id: item for item in items}
    costs = status["costs"]
    run_items: dict[str, TotalsJSON] = (costs.get("runItems") if costs else None) or {}
    live = status["loopState"] in ("starting", "running") and status["liveness"]["loopAlive"]
    agents = status["agents"] if status["liveness"]["loopAlive"] else []
    tails = output_tails(workspace.state_dir, [agent["handle"] for agent in agents])
    queue = selectable_items(items)
    until = status["waitingUntil"]
    lifts = _moment(until)
    summary = status["backlogSummary"]
    return {
        "project": str(workspace.root),
        "loopState": status["loopState"],
        "loopAlive": status["liveness"]["loopAlive"],
        "endedWithoutShutdown": status["liveness"]["endedWithoutShutdown"],
        "runId": status["liveness"]["runId"],
        "iteration": status["iteration"],
        "maxIterations": status["maxIterations"],
        "startedAt": status["startedAt"],
        "elapsedSeconds": _seconds_since(status["startedAt"], now) if live else None,
        "sandbox": status["sandbox"],
        "agents": [{
            "handle": agent["handle"],
            "itemId": agent["itemId"],
            "title": by_id[agent["itemId"]].title if agent["itemId"] in by_id else None,
            "startedAt": agent["startedAt"],
            "elapsedSeconds": _seconds_since(agent["startedAt"], now),
            "outputBytes": agent["outputBytes"],
            "lastLine": last_line(tails.get(agent["handle"], b""), agent["stream"]),
            "costUsd": _cost(run_items.get(agent["itemId"] or "")),
            "worktree": agent["worktree"],
            "gate": agent["gate"],
            "stream": agent["stream"],
        } for agent in agents],
        "queue": [{"id": item.id, "title": item.title} for item in queue[:QUEUE_SHOWN]],
        "queued": len(queue),
        "mergeQueue": status["mergeQueue"],
        "waiting": waiting_items(items),
        "totals": costs.get("run") if costs else None,
        "waitingUntil": until if lifts is not None and lifts > now else None,
        "secondsLeft": (lifts - now).total_seconds() if lifts is not None and lifts > now
        else None,
        "verifyFailures": status["verifyFailures"],
        "recent": recent_events(workspace),
        "backlog": {key: value for key, value in summary.items() if isinstance(value, int)},
        "error": status["error"],
    }


def stream_reader(stream: str | None, said: TextSink) -> StreamReader | None:
    """The reader of ``stream``'s profile (``claude``), handing ``said`` the text
    ``loop run --follow`` shows; ``None`` for output that is no structured stream."""
    profile = PROFILES.get(stream) if stream is not None else None
    return profile.reader(said) if profile is not None and profile.structured else None


def readable(data: bytes, stream: str | None) -> str:
    """What a person reads of ``data``, an agent's output: a structured stream's
    (``stream``: its profile, such as ``claude``) text as ``loop run --follow`` shows
    it, decoded by the profile's own reader (a line cut by where ``data`` starts is
    skipped); any other output as it is. Safe text."""
    said: list[str] = []
    reader = stream_reader(stream, said.append)
    if reader is None:
        return safe_text(data, final=True).text
    newline = data.find(b"\n")
    reader.feed(data[newline + 1:] if newline >= 0 else b"")
    return clean("\n".join(said))


def last_line(tail: bytes, stream: str | None = None) -> str:
    """The last line with something on it (a line redrawn with carriage returns shows
    what it said last)."""
    lines = readable(tail, stream).replace("\r", "\n").split("\n")
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def recent_events(workspace: Workspace) -> list[RecentJSON]:
    """The latest events about items and the run, newest last, from the journal's end."""
    events = tail_events(workspace.state_dir / EVENTS_FILE, JOURNAL_TAIL_BYTES)
    return [_recent(event) for event in events
            if event.get("type") in RECENT_EVENTS][-RECENT_SHOWN:]


def _text(event: dict[str, object], *names: str) -> str:
    return next((value for name in names
                 if isinstance(value := event.get(name), str) and value), "")


def _recent(event: dict[str, object]) -> RecentJSON:
    kind = str(event["type"])  # one of RECENT_EVENTS
    item_id = value if isinstance(value := event.get("itemId"), str) else None
    if kind == "item_completed":
        text = "done " + _text(event, "commit")[:12]
        if event.get("uncommitted"):
            text += ", but not all of it committed"
    elif kind in ("item_blocked", "needs_human"):
        text = ("needs a human: " if kind == "needs_human" else "blocked: ") + _text(
            event, "reason")
    elif kind == "merge_conflict":
        text = "merge conflict" + (": " + _text(event, "failedCheck")
                                   if event.get("failedCheck") else "")
    elif kind == "usage_limit_wait":
        text = f"usage limit until {_text(event, 'until')}: {_text(event, 'reason')}"
    else:
        text = kind.replace("_", " ") + (f": {_text(event, 'status', 'reason', 'error')}"
                                         if _text(event, "status", "reason", "error") else "")
    stamp = event.get("timestamp")
    return {"type": kind, "timestamp": stamp if isinstance(stamp, str) else None,
            "itemId": item_id, "text": text}

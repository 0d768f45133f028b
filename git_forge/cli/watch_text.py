"""What ``git forge watch`` says of a frame (``watch_report.watch_frame``), in words:
the lines ``--once`` prints and the pieces the terminal view (``cli/watch_app.py``)
shows, so that both say the same thing the same way."""

from __future__ import annotations

import unicodedata

from git_forge.agents.receipt import Totals
from git_forge.cli.output import one_line, paint
from git_forge.cli.status import run_status_words
from git_forge.safetext import clean
from git_forge.watch_report import WatchAgentJSON, WatchJSON
from git_forge.words import clock, size, usd

#: The fewest columns a frame is cut to (a narrower terminal wraps what is left).
NARROWEST = 20


def _columns(character: str) -> int:
    """The columns a character takes on a terminal: two for a wide East Asian one,
    none for a combining mark, else one."""
    if unicodedata.combining(character):
        return 0
    return 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1


def _width(text: str) -> int:
    return sum(map(_columns, text))


def _fit(line: str, width: int | None) -> str:
    """``line`` cut to ``width`` terminal columns with an ellipsis (a narrow terminal
    stays readable: one row, one line); ``None``: whole."""
    if width is None or _width(line) <= width:
        return line
    used = 0
    for index, character in enumerate(line):
        used += _columns(character)
        if used > width - 1:  # the ellipsis takes the last column
            return line[:index] + "…"
    return line


def run_line(frame: WatchJSON) -> str:
    """The run in one line: its state, iteration, elapsed, and whether the loop lives."""
    state = frame["loopState"]
    if frame["endedWithoutShutdown"]:
        words = "stopped — the loop ended without shutting down (git forge recover)"
    elif state == "idle":
        words = "no run yet"
    else:
        words = run_status_words(state)
    parts = [f"loop: {words}"]
    if frame["runId"]:
        parts.append(f"run {frame['runId']}")
    if frame["iteration"] is not None and frame["maxIterations"]:
        parts.append(f"iteration {frame['iteration']}/{frame['maxIterations']}")
    if frame["elapsedSeconds"] is not None:
        parts.append(f"{clock(frame['elapsedSeconds'])} elapsed")
    if frame["sandbox"]:
        parts.append(f"sandboxed ({frame['sandbox']})")
    return " · ".join(parts)


def totals_line(frame: WatchJSON) -> str:
    """This run's totals, and the backlog's counts."""
    backlog = frame["backlog"]
    counts = (f"backlog: {backlog.get('done', 0)} done, {backlog.get('pending', 0)} pending, "
              f"{backlog.get('inProgress', 0)} in progress, {backlog.get('blocked', 0)} blocked")
    totals = frame["totals"]
    if totals is None:
        return counts
    return f"spent: {Totals.from_json(totals).describe()} · {counts}"


def limit_line(frame: WatchJSON) -> str | None:
    """A usage-limit wait and its countdown, while there is one; with no loop alive,
    when the recorded limit lifts (a run started before then waits for it)."""
    if frame["secondsLeft"] is None:
        return None
    left = clock(frame["secondsLeft"])
    if not frame["loopAlive"]:
        return (f"the agent's usage limit lifts at {frame['waitingUntil']} (in {left}): "
                "a run started before then waits for it")
    return f"waiting for the agent's usage limit until {frame['waitingUntil']} — {left} left"


AGENT_COLUMNS = ("item", "title", "elapsed", "output", "cost", "last line")
#: The most columns a title takes in an agent's row (a gate's command line is long).
TITLE_COLUMNS = 40


def agent_cells(agent: WatchAgentJSON) -> tuple[str, ...]:
    """One running agent's row (a gate's title is its command)."""
    title = f"check: {agent['gate']}" if agent["gate"] else (agent["title"] or "")
    cost = usd(agent["costUsd"]) if agent["costUsd"] is not None else "—"
    who = agent["itemId"] or ("baseline" if agent["gate"] else agent["handle"])
    return (who, _fit(one_line(title), TITLE_COLUMNS), clock(agent["elapsedSeconds"]),
            size(agent["outputBytes"]), cost, one_line(agent["lastLine"]))


def detail_lines(frame: WatchJSON) -> list[str]:
    """What the frame holds beside the agents: the queue, the merge queue, the items
    waiting on a decision, the gates' failures and the latest events."""
    lines: list[str] = []
    if frame["queue"]:
        more = frame["queued"] - len(frame["queue"])
        named = ", ".join(f"{entry['id']} {one_line(entry['title'])}" for entry in frame["queue"])
        lines.append(f"queue ({frame['queued']}): {named}" + (f", and {more} more" if more else ""))
    else:
        lines.append("queue: empty")
    if frame["mergeQueue"]:
        lines.append(f"merge queue: {', '.join(frame['mergeQueue'])}")
    if frame["waiting"]:
        lines.append(f"waiting on a decision ({len(frame['waiting'])}):")
        for entry in frame["waiting"]:
            reason = f": {one_line(entry['reason'] or '')}" if entry.get("reason") else ""
            lines.append(f"  {entry['id']}  {entry['kind']}{reason}")
    for item_id, why in frame["verifyFailures"].items():
        lines.append(f"verify failed: {item_id}: {one_line(why)}")
    if frame["recent"]:
        lines.append("recent:")
        for event in frame["recent"]:
            when = (event["timestamp"] or "")[11:19]
            who = f"{event['itemId']} " if event["itemId"] else ""
            lines.append(f"  {when}  {who}{one_line(event['text'])}")
    if frame["error"]:
        lines.append(f"error: {one_line(frame['error'])}")
    return lines


def agent_table(frame: WatchJSON) -> list[str]:
    """The running agents as aligned rows under a header row (a long title is cut)."""
    rows = [AGENT_COLUMNS, *(agent_cells(agent) for agent in frame["agents"])]
    widths = [max(_width(row[column]) for row in rows) for column in range(len(AGENT_COLUMNS))]

    def cell(text: str, width: int) -> str:
        text = _fit(text, width)
        return text + " " * (width - _width(text))

    return ["  ".join(cell(text, widths[index]) for index, text in enumerate(row)).rstrip()
            for row in rows]


def render_frame(frame: WatchJSON, width: int | None) -> list[str]:
    """One frame as lines of text (``--once``), each cut to ``width`` columns."""
    styled: list[tuple[str, str | None]] = [(run_line(frame), "bold"),
                                            (totals_line(frame), None)]
    limit = limit_line(frame)
    if limit:
        styled.append((limit, "yellow"))
    if frame["agents"]:
        header, *rows = agent_table(frame)
        styled += [(header, "dim"), *((row, None) for row in rows)]
    else:
        styled.append(("agents: none running", None))
    styled += [(line, None) for line in detail_lines(frame)]
    cut = [(_fit(clean(text), width), style) for text, style in styled]
    return [paint(text, style) if style else text for text, style in cut]

"""``git forge loop run|stop`` — the embedded loop runner.

``loop run`` exit codes: 0 every item done, or the iteration budget spent with
work still selectable; 1 error (the circuit breaker too); 2 refused (pre-launch
check, lock held, bad arguments); 3 paused for a human; 4 stopped at the agent's
usage limit or at ``--max-cost``; 5 ended with nothing selectable while blocked
items remain or pending items wait on a dependency cycle; 130 stopped (signal or
``loop stop``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from git_forge.agents.receipt import Totals
from git_forge.backlog.topology import id_key
from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json, is_terminal, json_text, one_line, own, paint, warn
from git_forge.cli.plain import plain
from git_forge.cli.status import run_status_words
from git_forge.cli.stop import explain_stop, render_dirty, render_stop
from git_forge.errors import UsageError
from git_forge.interrupts import stop_on_signals
from git_forge.loop import engine
from git_forge.loop.control import request_stop
from git_forge.loop.engine import LoopRefused
from git_forge.loop.launch import launch_external
from git_forge.loop.options import LoopFlags, loop_options
from git_forge.loop.summary import left_words
from git_forge.words import clock, counted, size
from git_forge.workspace import locate

if TYPE_CHECKING:
    import argparse

    from git_forge.agents.receipt import TotalsJSON
    from git_forge.backlog.item import Item
    from git_forge.loop.engine import LoopResult
    from git_forge.loop.journal import EventJSON
    from git_forge.loop.options import LoopOptions
    from git_forge.loop.progress import RunningAgent
    from git_forge.reconcile.preflight import Preflight
    from git_forge.workspace import Workspace

#: Back to the start of the live line and erase it (git-forge's own sequence).
ERASE_LINE = "\r" + own("\x1b[K")


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "The embedded loop runner: runs an agent on each ready backlog item under "
        "a crash-safe supervisor, commits done items and keeps the tree clean.")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    run = verbs.add_parser(
        "run", help="run the loop",
        description="Run the pre-launch check, then iterate: select the next ready item, "
                    "start the agent with the item's prompt on stdin, read its final signal "
                    "(FORGE_DONE / FORGE_BLOCKED: … / FORGE_NEEDS_HUMAN: …) and act on it. "
                    "Exit: 0 done or budget spent, 1 error (or the circuit breaker), 2 refused, "
                    "3 paused for a human, 4 stopped at a usage limit, --max-cost, "
                    "--max-tokens or --max-duration, "
                    "5 ended with blocked items or a dependency cycle, 130 stopped.")
    add_location(run)
    run.add_argument("--agent", metavar="CMD",
                     help="claude, codex, gemini, qwen, copilot or opencode (built-in profiles: "
                          "git forge agents), or "
                          "the agent command line, split once, never through a shell; "
                          "{prompt_file} is replaced by a file holding the prompt "
                          "(default: loop.agent)")
    run.add_argument("--agent-arg", action="append", metavar="ARG", dest="agent_args",
                     help="an extra flag for the agent, after the profile's own "
                          "(repeatable; write a flag as --agent-arg=--model; "
                          "default: loop.agentArgs)")
    run.add_argument("--iterations", type=int, metavar="N",
                     help="agent starts in this run, retries included (default: loop.iterations)")
    run.add_argument("--retries", type=int, metavar="N",
                     help="retries of an item that gives no signal (default: loop.retries)")
    run.add_argument("--timeout", type=float, metavar="MIN",
                     help="minutes an agent may run, fractions allowed "
                          "(default: loop.timeoutMinutes)")
    run.add_argument("--idle-timeout", type=float, metavar="MIN", dest="idle_timeout",
                     help="end an agent that writes nothing for this many minutes, then "
                          "retry or defer as usual (default: loop.idleTimeoutMinutes)")
    run.add_argument("--max-cost", type=float, metavar="USD", dest="max_cost",
                     help="start no iteration once this run's agents have cost this much "
                          "(exit 4; default: loop.maxCostUsd)")
    run.add_argument("--max-tokens", type=int, metavar="N", dest="max_tokens",
                     help="start no iteration once this run's agents have used N tokens, in "
                          "and out: a cap for agents that report no cost (exit 4; default: "
                          "loop.maxTokens)")
    run.add_argument("--max-duration", type=float, metavar="MIN", dest="max_duration",
                     help="start no iteration once the run is MIN minutes old; the agents "
                          "running then finish (exit 4; default: loop.maxDurationMinutes)")
    run.add_argument("--on-limit", choices=("wait", "stop", "fallback"), dest="on_limit",
                     help="at the agent's usage limit: wait until it lifts and go on, stop "
                          "(exit 4), or retry the item at once on --fallback-agent, which runs "
                          "the items until the limit lifts (default: loop.onLimit, wait)")
    run.add_argument("--fallback-agent", metavar="CMD", dest="fallback_agent",
                     help="the agent a usage limit falls back to (--on-limit fallback): a "
                          "profile's name or a command line (default: loop.fallbackAgent)")
    run.add_argument("--fallback-agent-arg", action="append", metavar="ARG",
                     dest="fallback_agent_args",
                     help="an extra flag for the fallback agent (repeatable; default: "
                          "loop.fallbackAgentArgs)")
    run.add_argument("--max-consecutive-failures", type=int, metavar="N",
                     dest="max_consecutive_failures",
                     help="stop the run (exit 1) when N attempts in a row fail the same way "
                          "on at least two items, or on one when the failure is the agent's "
                          "(not logged in, not found) (default: loop.maxConsecutiveFailures, 3)")
    run.add_argument("--notify", metavar="CMD",
                     help="a command run with one JSON event on stdin when the run waits on a "
                          "limit, pauses, trips the breaker, ends with items waiting, or is "
                          "stopped (split once, no shell; default: loop.notify)")
    run.add_argument("--prompt-file", metavar="FILE",
                     help="text prepended to every prompt (default: loop.promptFile)")
    run.add_argument("--pause-on-needs-human", action="store_true", default=None,
                     help="stop (exit 3) at the first item that needs a human")
    run.add_argument("--parallel", type=int, metavar="N",
                     help="run up to N agents at once, each in a worktree of its own "
                          "(.forge/worktrees/<id>, branch forge/<id>), integrating each "
                          "done item onto the branch as it finishes (default: loop.parallel)")
    run.add_argument("--verify", action="append", metavar="CMD",
                     help="a check run in the item's tree after its agent says done, before "
                          "anything is committed: a failure is a failed attempt, retried "
                          "with the failure in the prompt (repeatable; each split once, no "
                          "shell; {report} stands for a JUnit XML file it writes; "
                          "default: loop.verify)")
    run.add_argument("--no-verify", action="store_true", dest="no_verify",
                     help="run no check this run, whatever loop.verify says")
    run.add_argument("--sandbox", choices=("none", "bwrap", "auto"),
                     help="run each agent and check under bubblewrap: it may write its own tree "
                          "(and the git parts a commit there needs), a private /tmp and its "
                          "program's own files, nothing else; auto: bwrap where it works here "
                          "(default: loop.sandbox, none)")
    run.add_argument("--sandbox-net", choices=("shared", "none"), dest="sandbox_net",
                     help="a sandboxed agent's network: the machine's, or none "
                          "(default: loop.sandboxNet, shared)")
    run.add_argument("--sandbox-writable", action="append", metavar="PATH",
                     dest="sandbox_writable",
                     help="one more path a sandboxed agent may write (repeatable; "
                          "default: loop.sandboxWritable)")
    run.add_argument("--follow", action="store_true",
                     help="stream the agent's output, whole lines in order (lines it cannot "
                          "keep up with are skipped, and said)")
    run.add_argument("--ndjson", action="store_true", help="stream the journal as NDJSON")
    run.add_argument("--json", action="store_true",
                     help="print the run's summary as JSON at the end (no progress lines)")
    run.add_argument("--force", action="store_true",
                     help="launch despite the pre-launch check, a detached HEAD or an unborn "
                          "branch (work already in the tree is left alone)")
    run.set_defaults(func=run_loop)

    stop = verbs.add_parser("stop", help="ask a running loop to stop gracefully",
                            description="Ask the loop running on this backlog to stop: its "
                                        "agents are terminated (grace, then kill) and the run "
                                        "ends with state 'stopped'. Exit 1 when none runs.")
    add_location(stop)
    stop.add_argument("--json", action="store_true", help='print {"requested": true|false}')
    stop.set_defaults(func=stop_loop)


class TerminalProgress:
    """One live status line on a terminal, plain lines elsewhere, or NDJSON.

    A reader that goes away (``loop run --ndjson | head -1``) stops the run the way
    ``loop stop`` does: ``on_closed`` is called once, and nothing more is written."""

    def __init__(self, *, follow: bool, ndjson: bool, silent: bool = False,
                 stream: TextIO | None = None,
                 on_closed: Callable[[], None] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.follow = follow
        self.ndjson = ndjson
        self.silent = silent
        self.live = not ndjson and not silent and is_terminal(self.stream)
        self.line = ""
        self.max = 0
        self.number = 0
        self.item = ""
        self.on_closed = on_closed
        self.closed = False

    def _emit(self, *parts: str) -> None:
        """Write and flush; a closed reader ends the output (and asks the run to stop)."""
        if self.closed:
            return
        try:
            for part in parts:
                self.stream.write(part)
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())  # the final flush stays quiet
            if self.on_closed is not None:
                self.on_closed()

    def _erase(self) -> str:
        """What takes the live lines off the screen (the cursor ends where they began)."""
        rows = self.line.count("\n")
        return ERASE_LINE if not rows else "\r" + own(f"\x1b[{rows}A") + own("\x1b[J")

    def _write(self, text: str) -> None:
        if self.silent:
            return
        parts = []
        if self.live and self.line:
            parts.append(self._erase())
        parts.append(text + "\n")
        if self.live and self.line:
            parts.append(self.line)
        self._emit(*parts)

    def started(self, run_id: str, max_iterations: int) -> None:
        if not self.ndjson:
            self._write(f"loop {run_id}: up to {counted(max_iterations, 'iteration')}")

    def iteration(self, number: int, max_iterations: int, item: Item) -> None:
        self.number, self.max = number, max_iterations
        self.item = f"{item.id} {one_line(item.title)}"
        if not self.ndjson and not self.live:
            self._write(f"[{number}/{max_iterations}] {self.item}")

    def tick(self, elapsed: float, output_bytes: int) -> None:
        if not self.live:
            return
        erase = self._erase() if self.line else ERASE_LINE
        self.line = paint(f"[{self.number}/{self.max}] {self.item} — {elapsed:.0f}s, "
                          f"{size(output_bytes)}", "dim")
        self._emit(erase + self.line)

    def output(self, text: str) -> None:
        """Whole lines of the agent's output behind the gutter, written at once."""
        if self.follow and not self.ndjson:
            self._write("\n".join(f"  | {line}"  # blank lines too
                                   for line in text.removesuffix("\n").split("\n")))

    def finished(self, item: Item, outcome: str, detail: str) -> None:
        if self.ndjson:
            return
        style = {"done": "green", "retry": "yellow"}.get(outcome, "red")
        if self.live and self.line:
            self._emit(self._erase())
            self.line = ""
        self._write(f"  {item.id} {paint(outcome, style)}: {detail}")

    def event(self, event: EventJSON) -> None:
        if self.ndjson:
            self._emit(json_text(event, indent=None) + "\n")

    def note(self, text: str) -> None:
        if not self.ndjson:
            self._write(f"  note: {plain(text)}")

    def limit_wait(self, until: str, reason: str) -> None:
        if self.ndjson:
            return

        if self.live:
            self._emit(ERASE_LINE)
            self.line = ""
        self._write(f"  waiting for the agent's usage limit until {until}: {plain(reason)} "
                    "(git forge loop stop or Ctrl-C to stop)")

    def countdown(self, seconds_left: float) -> None:
        """A live countdown on a terminal; nothing elsewhere (the wait was said once).
        At 0 the wait is over and its line leaves the screen: a note written after
        it (the item's work kept, the run stopped) must not bring it back."""
        if not self.live:
            return
        if seconds_left <= 0:
            if self.line:
                self._emit(self._erase())
                self.line = ""
            return
        left = clock(int(seconds_left + 0.999))  # rounded up: its last second shows 0:01
        self.line = paint(f"waiting for the usage limit to lift — {left} left", "dim")
        self._emit(ERASE_LINE + self.line)
    def agents(self, running: Sequence[RunningAgent], queued: Sequence[str]) -> None:
        """Items in parallel: on a terminal, a live line per running agent (item,
        elapsed, bytes of output, worktree) and one for the merge queue."""
        if not self.live:
            return

        rows = [paint(f"  {agent.item.id} {one_line(plain(agent.item.title))} — "
                      f"{agent.elapsed:.0f}s, "
                      f"{size(agent.output_bytes)}, {_relative(agent.worktree)}", "dim")
                for agent in running]
        if queued:
            rows.append(paint(f"  merge queue: {', '.join(queued)}", "dim"))
        erase = self._erase() if self.line else ""
        self.line = "\n".join(rows)
        self._emit(erase + self.line)

    def close(self) -> None:
        if self.live and self.line:
            self._emit(self._erase())
            self.line = ""


def _relative(path: Path) -> str:
    """A worktree as the operator would type it from where they stand."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


#: The flags only the embedded runner reads: an error when ``loopRunner.bin`` is set.
EMBEDDED_ONLY = ("agent", "agent_args", "iterations", "retries", "timeout", "idle_timeout",
                 "max_cost", "max_tokens", "max_duration", "on_limit", "fallback_agent",
                 "fallback_agent_args", "max_consecutive_failures",
                 "notify", "prompt_file", "pause_on_needs_human", "parallel", "verify",
                 "no_verify", "sandbox", "sandbox_net", "sandbox_writable", "follow", "ndjson",
                 "json")


def _flags(args: Args) -> LoopFlags:
    return LoopFlags(agent=args.agent, iterations=args.iterations, retries=args.retries,
                     timeout_minutes=args.timeout, prompt_file=args.prompt_file,
                     pause_on_needs_human=args.pause_on_needs_human, force=args.force,
                     agent_args=args.agent_args, idle_minutes=args.idle_timeout,
                     max_cost_usd=args.max_cost, max_tokens=args.max_tokens,
                     max_duration_minutes=args.max_duration, on_limit=args.on_limit,
                     fallback_agent=args.fallback_agent,
                     fallback_agent_args=args.fallback_agent_args,
                     max_consecutive_failures=args.max_consecutive_failures,
                     notify=args.notify, follow=args.follow and not args.ndjson,
                     parallel=args.parallel, verify=args.verify, no_verify=args.no_verify,
                     sandbox=args.sandbox, sandbox_net=args.sandbox_net,
                     sandbox_writable=args.sandbox_writable)


def _refuse_embedded_flags(args: Args, runner_bin: str) -> None:
    given = [name for name in EMBEDDED_ONLY if getattr(args, name) not in (None, False)]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UsageError(f"{flag} is for the embedded runner; loopRunner.bin is {runner_bin}")


def _print_refusal(workspace: Workspace, preflight: Preflight) -> None:
    """What the pre-launch check found, as ``git forge preflight`` shows it."""
    lines = (render_stop(preflight, explain_stop(workspace, preflight), workspace.root)
             if preflight.status == "stop" else render_dirty(preflight))
    print("\n".join(lines), file=sys.stderr)


def run_loop(args: Args) -> int:
    workspace = locate(args.path, args.backlog)
    runner_bin = workspace.config.runner_bin
    if runner_bin is None:
        return _run_embedded(args, workspace, loop_options(workspace, _flags(args)))
    _refuse_embedded_flags(args, runner_bin)
    try:
        return launch_external(workspace, force=args.force)
    except LoopRefused as exc:
        _print_refusal(workspace, exc.preflight)
        return exc.exit_code


def _run_embedded(args: Args, workspace: Workspace, options: LoopOptions) -> int:
    for warning in options.warnings():
        warn(one_line(warning))
    stop = threading.Event()
    with stop_on_signals(stop, signal.SIGINT, signal.SIGTERM):
        progress = TerminalProgress(follow=args.follow, ndjson=args.ndjson,
                                    silent=args.json and not args.ndjson, on_closed=stop.set)
        try:
            result = engine.run_loop(workspace, options, progress, stop)
        except LoopRefused as exc:
            _print_refusal(workspace, exc.preflight)
            return exc.exit_code
        finally:
            progress.close()
    if progress.closed:  # the reader went away: the run stopped, nobody to tell
        return result.exit_code
    if args.json and not args.ndjson:
        emit_json({"status": result.status, "exitCode": result.exit_code,
                   "runId": result.run_id, "message": result.message or None,
                   "state": result.state.to_json(), "backlogSummary": result.backlog,
                   "waiting": result.waiting, "costs": result.costs,
                   "uncommitted": result.uncommitted})
    elif not args.ndjson:
        print("\n".join(render_summary(result)))
        if result.message:
            print(result.message, file=sys.stderr if result.exit_code else sys.stdout)
    return result.exit_code


_KIND_WORDS = {"needs-human": "needs a human", "deferred": "deferred", "blocked": "blocked"}


def render_summary(result: LoopResult) -> list[str]:
    """This run's outcome, then the whole backlog: every item that waits on a
    decision, since when and why — this run's or an earlier one's."""
    state = result.state
    lines = [f"{run_status_words(result.status)}: this run {len(state.completed_items)} done, "
             f"{len(state.needs_human_items)} "
             f"{'needs' if len(state.needs_human_items) == 1 else 'need'} a human, "
             f"{len(state.blocked_items)} blocked, "
             f"{len(state.deferred_items)} deferred"]
    for left in result.uncommitted:  # done, but not all of its agent's changes committed
        lines.append(f"  {left['itemId']}  done, but {left_words(left)}")
    if result.costs and _reported(result.costs["run"]):  # a generic agent reports nothing
        lines.extend(render_costs(result.costs["run"], result.costs.get("items") or {}))
    checks = result.costs["run"].get("verify") if result.costs else None
    if checks:  # the verification gates run after this run's attempts (loop.verify)
        failed = f", {checks['failed']} failed" if checks["failed"] else ""
        lines.append(f"verify: {counted(checks['runs'], 'check')} after its attempts"
                     f"{failed}, {checks['durationMs'] / 1000:.1f} s")
    if state.sandbox:
        lines.append(f"sandbox: {state.sandbox} — each agent could write only its own tree")
    backlog = result.backlog
    if backlog:
        parts = [f"{backlog['done']} done", f"{backlog['pending']} pending"]
        if backlog["inProgress"]:
            parts.append(f"{backlog['inProgress']} in progress")
        if result.waiting:
            parts.append(f"{len(result.waiting)} waiting on a decision")
        lines.append(f"backlog: {counted(backlog['total'], 'item')} — {', '.join(parts)}")
    for entry in result.waiting:
        since = f" since {entry['since']}" if entry.get("since") else ""
        reason = f": {entry['reason']}" if entry.get("reason") else ""
        lines.append(f"  {entry['id']}  {_KIND_WORDS.get(entry['kind'], entry['kind'])}"
                     f"{since}{reason}")
    return lines


def _reported(totals: TotalsJSON) -> bool:
    tokens = totals.get("tokens") or {}
    return totals.get("costUsd") is not None or any(tokens.values())


def render_costs(run: TotalsJSON, items: dict[str, TotalsJSON]) -> list[str]:
    """``spent: 4 attempts, 12.3k tokens in / 4.1k out, $0.42``, then one line per item."""
    lines = [f"spent: {Totals.from_json(run).describe()}"]

    for item_id, totals in sorted(items.items(), key=lambda pair: id_key(pair[0])):
        lines.append(f"  {item_id}  {Totals.from_json(totals).describe()}")
    return lines


def stop_loop(args: Args) -> int:
    workspace = locate(args.path, args.backlog)
    requested = request_stop(workspace.state_dir)
    if args.json:
        emit_json({"requested": requested})
    elif requested:
        print("asked the running loop to stop")
    else:
        print("Error: no loop is running on this backlog", file=sys.stderr)
    return 0 if requested else 1

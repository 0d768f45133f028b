"""One iteration: take the item, start the agent on its prompt, wait for it while
following its output, and read what it came to as an ``AgentResult``.

Nothing here decides what the result means for the item (that is
``outcomes``): an iteration ends when the agent has ended, or when a stop
request ended the wait, and the only failures it raises itself are the ones
after which no run can go on (a stale git lock before the item is taken, an
agent whose output cannot be recorded).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from git_forge.atomic import atomic_write
from git_forge.backlog.item import Item
from git_forge.exit_codes import LOOP_ERROR, LOOP_REFUSED
from git_forge.layout import PROMPT_FILES
from git_forge.loop.context import RunContext
from git_forge.loop.errors import LoopError
from git_forge.loop.prompt import build_prompt
from git_forge.loop.signals import NO_SIGNAL, Signal, parse_signal
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.render import safe_text
from git_forge.tree.errors import GitError

#: An agent's last error line is cut to this many characters in a reason.
ERROR_LINE_LIMIT = 200
#: How often the loop looks for a stop request while an agent runs.
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class AgentResult:
    """What one agent start came to, all an outcome needs to act on."""

    handle: str
    #: The agent's final signal (``NO_SIGNAL`` when it timed out or was stopped).
    signal: Signal
    exit_code: int | None
    #: The supervisor's terminal state (``exited``, ``timed_out`` …).
    state: str
    timed_out: bool
    #: The attempt in words, for a reason when it gave no signal (``what_happened``).
    what_happened: str
    #: A stop request ended the wait: the agent is being ended, nothing is settled.
    stopped: bool = False


def run_iteration(run: RunContext, item: Item, number: int) -> AgentResult:
    """One agent start for ``item`` (iteration ``number``), until it ends or a stop."""
    handle = start_agent(run, item, number)
    manifest, stopped = _wait(run, handle)
    return agent_result(run, item, handle, manifest, stopped)


def start_agent(run: RunContext, item: Item, number: int, *,
                worktree: Path | None = None) -> str:
    """Take ``item`` (in progress, journaled, told) and start its agent; the handle.

    ``worktree``: the item's own linked worktree (items run in parallel) — the
    agent runs there, with ``FORGE_WORKTREE`` naming it, and only this item's
    prompt file is replaced (the others belong to agents still running).
    """
    item_id = item.id
    options = run.options
    if worktree is None:
        try:  # before the item is taken: a stale lock would fail its commit after the agent ran
            run.repo.check_unlocked()
        except GitError as exc:
            raise LoopError(f"cannot take item {item_id}: {exc.message}",
                            exit_code=LOOP_REFUSED) from exc
        remove_prompt_files(run.workspace.state_dir)
    else:  # the item commits in its worktree; the main checkout's locks are the merges'
        remove_prompt_files(run.workspace.state_dir, item_id)
    if item.status != "in_progress":
        item = run.store.transition(item_id, "in_progress")
    run.save(iteration=number, current_item=item_id)
    run.journal.append("iteration_start", iteration=number, itemId=item_id)
    run.journal.append("item_selected", itemId=item_id, title=item.title,
                       priority=item.priority)
    run.progress.iteration(number, options.iterations, item)
    prompt_text = options.prompt_file.read_text(encoding="utf-8") if options.prompt_file else None
    prompt = build_prompt(item, project_description=run.store.description(),
                          prompt_file_text=prompt_text)
    run.journal.sync()  # the item's start is on disk before its agent is
    try:
        return run.supervisor.start({"run_id": run.state.run_id},
                                    {"item_id": item_id, "iteration": number},
                                    _prepare(run, item, prompt, number, worktree))
    except ProcessError as exc:
        if exc.code == "process_setup_failed":  # its manifest or spool cannot be written
            raise LoopError(str(exc.cause), exit_code=LOOP_ERROR) from exc
        raise


def agent_result(run: RunContext, item: Item, handle: str, manifest: Manifest,
                 stopped: bool) -> AgentResult:
    """What the ended (or stopped) agent came to; its signal is journaled."""
    failure = run.supervisor.storage_error(handle)
    if failure is not None:  # its output could not be recorded: the run cannot go on
        raise LoopError(str(failure.cause), exit_code=LOOP_ERROR)
    result = _result_of(run, handle, manifest, stopped)
    if not stopped:
        signal = result.signal
        fields = {"reason": signal.reason} if signal.reason is not None else {}
        run.journal.append("signal_parsed", itemId=item.id, signal=signal.kind, **fields)
    return result


def remove_prompt_files(state_dir: Path, item_id: str | None = None) -> None:
    """The ``{prompt_file}`` copies of the prompt (they hold the human's answer):
    gone once their agent has ended, never left in the tree or committed. With
    ``item_id``, that item's only."""
    pattern = PROMPT_FILES if item_id is None else PROMPT_FILES.replace("*", item_id)
    for path in state_dir.glob(pattern):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _prepare(run: RunContext, item: Item, prompt: str, number: int,
             worktree: Path | None = None) -> PreparedProcess:
    argv = list(run.options.agent)
    encoded = prompt.encode("utf-8")
    stdin: bytes | None = encoded
    if any("{prompt_file}" in arg for arg in argv):
        prompt_path = run.workspace.state_dir / f"prompt-{item.id}.md"
        atomic_write(prompt_path, encoded, mode=0o600, durable=False)  # gone after the agent
        argv = [arg.replace("{prompt_file}", str(prompt_path)) for arg in argv]
        stdin = None
    env = {**os.environ, "FORGE_ITEM_ID": item.id, "FORGE_ITERATION": str(number),
           "FORGE_RUN_ID": run.state.run_id or ""}
    if worktree is not None:  # git there finds the worktree from its own .git file
        env["FORGE_WORKTREE"] = str(worktree)
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
            env.pop(name, None)
    timeout = run.options.timeout_minutes * 60 if run.options.timeout_minutes else None
    return PreparedProcess(argv=argv, cwd=worktree or run.workspace.root, env=env, stdin=stdin,
                           timeout=timeout)


def _wait(run: RunContext, handle: str) -> tuple[Manifest, bool]:
    """Wait for the agent, following its output; ``(manifest, stopped)``."""
    started = time.monotonic()
    cursor = 0
    while True:
        try:
            manifest = run.supervisor.wait(handle, timeout=POLL_SECONDS)
            done = True
        except ProcessError as exc:
            if exc.code != "wait_timeout":
                raise
            manifest, done = run.supervisor.snapshot(handle), False
        try:
            rendered = run.supervisor.render(handle, cursor, 32 * 1024)
        except ProcessError as exc:
            if exc.code != "cursor_ahead":
                raise
            # The spool lost bytes it had shown (it could not write them: a full
            # disk). Nothing more can be followed; the storage error ends the run.
            rendered = None
        if rendered is not None:
            if rendered.output:
                run.progress.output(rendered.output)
            cursor = rendered.next_cursor
            run.progress.tick(time.monotonic() - started, rendered.total_bytes)
        if done:
            return manifest, False
        if run.stop():
            return manifest, True


def _result_of(run: RunContext, handle: str, manifest: Manifest, stopped: bool) -> AgentResult:
    """The result as the manifest and the agent's output tell it. A timed-out
    agent's signal does not count: it was cut off, whatever it printed."""
    timed_out = manifest.state == "timed_out"
    signal = NO_SIGNAL if stopped or timed_out else _signal_of(run, handle)
    exit_code = manifest.result.exit_code
    why = what_happened(exit_code, manifest.state, timed_out, run.options.timeout_minutes,
                        _last_error_line(run, handle))
    return AgentResult(handle=handle, signal=signal, exit_code=exit_code, state=manifest.state,
                       timed_out=timed_out, what_happened=why, stopped=stopped)


def _signal_of(run: RunContext, handle: str) -> Signal:
    """The signal from the end of the agent's *stdout*, on its own: stderr written
    around or after it can neither split the signal line nor push it out of view."""
    return parse_signal(safe_text(run.supervisor.tail(handle, "stdout"), final=True).text)


def _last_error_line(run: RunContext, handle: str) -> str | None:
    """The agent's last non-empty stderr line (safe text, trimmed), if any."""
    text = safe_text(run.supervisor.tail(handle, "stderr"), final=True).text
    for line in reversed(text.splitlines()):
        line = " ".join(line.split())
        if line:
            return line if len(line) <= ERROR_LINE_LIMIT else line[:ERROR_LINE_LIMIT] + "…"
    return None


def what_happened(exit_code: int | None, state: str, timed_out: bool,
                  timeout_minutes: float | None, error_line: str | None) -> str:
    """One attempt that gave no signal, in words: ``exit 1: RuntimeError: model
    overloaded``, ``ended without a signal``, ``timed out after 10 min``. A deferral
    reason starts with it and adds little else, so that a crash and a timeout never
    cluster as one question (topology clusters by the words reasons share)."""
    if timed_out:
        what = f"timed out after {timeout_minutes:g} min"
    elif exit_code == 0:
        what = "ended without a signal"
    elif exit_code is not None:
        what = f"exit {exit_code}"
    else:
        what = f"ended without an exit code ({state})"
    return f"{what}: {error_line}" if error_line else what

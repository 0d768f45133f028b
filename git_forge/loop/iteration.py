"""One attempt: take the item, start the agent on its prompt (``start_agent``), and
once it ended read what it came to as an ``AgentResult`` (``agent_result``).

Watching the agent meanwhile is the engine's (``slots``), and what the result
means for the item is ``outcomes``'. The only failures raised here are the ones
after which no run can go on (a stale git lock before the item is taken, an
agent whose output cannot be recorded).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from git_forge.agents.classify import Classified, Verdict, error_line
from git_forge.agents.receipt import Receipt, Session
from git_forge.atomic import atomic_write
from git_forge.backlog.item import Item
from git_forge.clock import parse_stamp
from git_forge.exit_codes import LOOP_ERROR, LOOP_REFUSED
from git_forge.layout import PROMPT_FILES
from git_forge.loop import limits_wait
from git_forge.loop.attempt import Attempt, stderr_lines
from git_forge.loop.context import RunContext
from git_forge.loop.errors import LoopError
from git_forge.loop.options import program_found
from git_forge.loop.prompt import EarlierWork, build_prompt
from git_forge.loop.signals import Signal
from git_forge.reconcile import messages
from git_forge.reconcile.conflicts import conflict_of
from git_forge.safetext import safe_text
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.supervisor.process import PreparedProcess
from git_forge.tree.errors import GitError
from git_forge.tree.history import kept_list
from git_forge.tree.porcelain import StatusEntry, quote_path
from git_forge.words import duration

#: An agent's last error line is cut to this many characters in a reason.
ERROR_LINE_LIMIT = 200


@dataclass(frozen=True)
class AgentResult:
    """What one agent start came to, all an outcome needs to act on."""

    handle: str
    #: The agent's final signal (``NO_SIGNAL`` when it timed out or idled).
    signal: Signal
    exit_code: int | None
    #: The supervisor's terminal state (``exited``, ``timed_out`` …).
    state: str
    timed_out: bool
    #: The attempt in words, for a reason when it gave no signal (``what_happened``).
    what_happened: str
    #: What the attempt was beyond its signal (a usage limit, a classified failure).
    verdict: Classified = field(default_factory=lambda: Classified(Verdict.RAN))
    receipt: Receipt | None = None
    #: The idle backstop ended it (``--idle-timeout``).
    idle: bool = False
    #: The last lines of its stderr (for the circuit breaker's message).
    stderr_lines: tuple[str, ...] = ()
    #: git's listing of the tree, taken as soon as the agent's tree ended (``None``:
    #: not taken; whoever needs one lists the tree then).
    listed: list[StatusEntry] | None = None
    #: What its stream reported that was not kept, and why (``Facts.refused``).
    refused: dict[str, str] = field(default_factory=dict)
    #: The session a retry of the item resumes (``None``: a fresh one).
    session: Session | None = None
    #: It ran on the fallback agent (``loop.onLimit: fallback``).
    fallback: bool = False
    #: Its last error line (stderr's last ``error:`` line, else its last line).
    error: str | None = None

    def failure_signature(self) -> str | None:
        """What the circuit breaker compares: a classified failure's exit code and
        kind, or — for any agent, a plain command line too — an attempt that gave
        no signal, exited non-zero on its own and said why: its exit code and its
        last error line, its white space collapsed and any address (which may
        differ between attempts of the same failure) left out. Numbers stay: an
        item's id or test's name in the line is what tells two failures apart. An
        exit code with no words says too little to blame the agent rather than the
        item, and a cut-off attempt is the backstop's. Besides addresses (a URL, an
        IPv4 address), a log line's timestamp and a request's id (a UUID, a long run
        of hex digits) are left out: they differ between attempts of one failure."""
        verdict = self.verdict
        if verdict.verdict is Verdict.FAILED and verdict.kind:
            return verdict.signature(self.exit_code)
        if (self.signal.kind != "none" or self.timed_out or self.idle or not self.error
                or self.exit_code in (0, None)
                or verdict.verdict not in (Verdict.RAN, Verdict.FAILED)):
            return None
        error = _ADDRESS.sub("<address>", self.error)
        return f"exit {self.exit_code}: {_MOMENT.sub('<time>', _TOKEN.sub('<id>', error))}"


#: An address in an error line (a request's URL may differ between attempts).
_ADDRESS = re.compile(r"\b\w+://\S+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
#: A moment in an error line (a log line's timestamp): a date with its time, or a time.
_MOMENT = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
                     r"(?:Z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?")
#: A request's or a process's id: a UUID, or a run of 12 or more hex digits.
_TOKEN = re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"
                    r"|\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{12,}\b")


def start_agent(run: RunContext, item: Item, number: int, *,
                worktree: Path | None = None,
                running: tuple[str, ...] | None = None) -> tuple[str, Attempt]:
    """Take ``item`` (in progress, journaled, told) and start its agent; the handle
    and the attempt that reads its stream.

    ``worktree``: the item's own linked worktree (items run in parallel) — the
    agent runs there, with ``FORGE_WORKTREE`` naming it, and only this item's
    prompt file is replaced (the others belong to agents still running).
    ``running``: with several agents at once, the items whose agents run already;
    state.json names them and this one after them (``runningItems``, the first as
    ``currentItem``) in the one write that takes the item.
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
        # Not fsynced: after a power cut the agent's durable manifest (written before it
        # starts, naming the item) is what restore reads, and it sets the item back to
        # pending whether or not this mark survived.
        item = run.store.transition(item_id, "in_progress", durable=False)
    if running is None:
        run.save(iteration=number, current_item=item_id)
    else:
        now = (*running, item_id)
        run.save(iteration=number, current_item=now[0], running_items=now)
    run.journal.append("iteration_start", iteration=number, itemId=item_id)
    run.journal.append("item_selected", itemId=item_id, title=item.title,
                       priority=item.priority)
    run.progress.iteration(number, options.iterations, item)
    prompt_text = options.prompt_file.read_text(encoding="utf-8") if options.prompt_file else None
    limited = run.agent.fallback_until is not None
    fallback = run.agent.on_fallback()
    if limited and not fallback:
        run.progress.note(f"the agent's usage limit has lifted: {item_id} runs on "
                          f"{options.profile.name if options.profile.named else options.agent[0]}"
                          " again")
    session = run.agent.session_for(item_id, options.resume_sessions, fallback)
    prompt = build_prompt(item, project_description=run.store.description(),
                          prompt_file_text=prompt_text,
                          conflict=conflict_of(run.workspace.state_dir, item_id),
                          earlier=earlier_work(run, item_id, resumed=session is not None),
                          verify_failure=run.verify_failures.pop(item_id, None))
    run.journal.sync()  # the item's start is on disk before its agent is
    attempt = Attempt(options.profile_of(fallback), follow=options.follow, resumed=session,
                      where=f"git forge proc output {item_id}",
                      agent=options.profile_of(fallback).name if options.fallback_agent
                      else None, fallback=fallback)
    try:
        # the stream's format, for a reader of its output (``watch``): a profile's name
        stream = {"stream": attempt.profile.name} if attempt.profile.structured else {}
        handle = run.supervisor.start({"run_id": run.state.run_id},
                                      {"item_id": item_id, "iteration": number, **stream},
                                      _prepare(run, item, prompt, number, attempt, worktree))
    except ProcessError as exc:
        # No agent works on the item: it goes back to pending before the run ends.
        if run.store.get(item_id).status == "in_progress":
            run.store.transition(item_id, "pending")
        if running is None:
            run.save(current_item=None)
        else:
            run.save(current_item=next(iter(running), None), running_items=running)
        if exc.code == "process_setup_failed":  # its manifest or spool cannot be written
            raise LoopError(str(exc.cause), exit_code=LOOP_ERROR) from exc
        raise
    return handle, attempt


def earlier_work(run: RunContext, item_id: str, *, resumed: bool) -> EarlierWork:
    """What became of ``item_id``'s earlier attempts' changes: kept under its
    abandoned-work refs (newest first, whichever run kept them), and whether this
    attempt resumes the session whose changes are still in the tree (``outcomes.again``).
    Refs that cannot be read are left unsaid: the attempt starts all the same."""
    refs = messages.abandoned_refs(item_id)
    try:  # git is asked only for an item with work kept: a start runs no git but its own
        kept = kept_list(run.repo.workdir, refs) if run.repo.has_refs(refs) else []
    except GitError:
        kept = []
    return EarlierWork(resumed, tuple((entry.ref, tuple(quote_path(p) for p in entry.paths))
                                      for entry in reversed(kept)), refs)


def agent_result(run: RunContext, item: Item, handle: str, manifest: Manifest,
                 attempt: Attempt, *, idle: bool = False,
                 listed: list[StatusEntry] | None = None) -> AgentResult:
    """What the ended agent came to; its signal is journaled."""
    failure = run.supervisor.storage_error(handle)
    if failure is not None:  # its output could not be recorded: the run cannot go on
        raise LoopError(str(failure.cause), exit_code=LOOP_ERROR)
    result = _result_of(run, handle, manifest, idle, attempt, listed)
    removed = manifest.sandbox_removed
    if removed:  # the supervisor took them away as the agent ended
        run.progress.note(f"item {item.id}: its agent made {', '.join(removed)}, which git or "
                          "the next run would read outside the sandbox: removed")
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
             attempt: Attempt, worktree: Path | None = None) -> PreparedProcess:
    argv = program_found(run.options.argv(attempt.resumed.session_id if attempt.resumed
                                          else None, fallback=attempt.fallback),
                         run.workspace.root)
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
    cwd = worktree or run.workspace.root
    env, sandbox = run.prepared(argv, cwd, env)
    return PreparedProcess(argv=argv, cwd=cwd, env=env, stdin=stdin, timeout=timeout,
                           observe=attempt.observe if attempt.reader is not None else None,
                           receipt=attempt.make_receipt, sandbox=sandbox)


def _result_of(run: RunContext, handle: str, manifest: Manifest, idle: bool,
               attempt: Attempt, listed: list[StatusEntry] | None = None) -> AgentResult:
    """The result as the manifest and the agent's output tell it. The signal is read
    from the end of the agent's *stdout* on its own (stderr written around or after
    it can neither split the signal line nor push it out of view), or from a
    structured agent's final result text. A timed-out or idle agent's signal does
    not count: it was cut off, whatever it printed."""
    timed_out = manifest.state == "timed_out"
    exit_code = manifest.result.exit_code
    stdout = run.supervisor.tail(handle, "stdout")
    stderr = run.supervisor.tail(handle, "stderr")
    # What the agent said is read as of when it said it (its end): in a parallel run,
    # an agent's end is read only after a wait another one began — maybe past midnight,
    # when its "try again at 11:59 PM" would be tomorrow's — and whether its limit was
    # reported after its announced end is a matter of when it said so.
    ended = parse_stamp(manifest.finished_at) if manifest.finished_at else None
    signal, verdict = attempt.read(stdout, stderr, exit_code, timed_out or idle, now=ended)
    verdict = limits_wait.after_its_reset(run, verdict, ended)
    failure = verdict.kind if verdict.verdict is Verdict.FAILED and verdict.kind else None
    lines = stderr_lines(stderr)
    error = _trim(error_line(safe_text(stderr, final=True).text))
    why = what_happened(exit_code, manifest.state, timed_out, run.options.timeout_minutes,
                        failure or error,
                        idle_minutes=run.options.idle_minutes if idle else None,
                        failed=failure is not None)
    receipt = attempt.receipt
    if receipt is None and manifest.terminal:  # the gate could not ask (a failed save)
        attempt.make_receipt(manifest)
        receipt = attempt.receipt
    return AgentResult(handle=handle, signal=signal, exit_code=exit_code, state=manifest.state,
                       timed_out=timed_out, what_happened=why,
                       verdict=verdict, receipt=receipt, idle=idle,
                       stderr_lines=tuple(lines), listed=listed,
                       refused=dict(attempt.facts().refused), session=attempt.ended_in(),
                       fallback=attempt.fallback,
                       error=error)


def _trim(line: str | None) -> str | None:
    if line is None or len(line) <= ERROR_LINE_LIMIT:
        return line
    return line[:ERROR_LINE_LIMIT] + "…"


def what_happened(exit_code: int | None, state: str, timed_out: bool,
                  timeout_minutes: float | None, error_line: str | None, *,
                  idle_minutes: float | None = None, failed: bool = False) -> str:
    """One attempt that gave no signal, in words: ``exit 1: RuntimeError: model
    overloaded``, ``ended without a signal``, ``timed out after 10 minutes``, ``idle
    for 30 seconds``, ``exit 0: API Error: Rate limit reached`` (an attempt that ``failed``
    whatever its exit code). A deferral reason starts with it and adds little else,
    so that a crash and a timeout never cluster as one question (topology clusters
    by the words reasons share)."""
    if timed_out:
        what = f"timed out after {duration(timeout_minutes or 0)}"
    elif idle_minutes is not None:
        what = f"idle for {duration(idle_minutes)}"
    elif exit_code == 0 and not failed:
        what = "ended without a signal"
    elif exit_code is not None:
        what = f"exit {exit_code}"
    else:
        what = f"ended without an exit code ({state})"
    return f"{what}: {error_line}" if error_line else what

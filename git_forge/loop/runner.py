"""The embedded loop: pick a ready item, run the agent on it, act on its signal.

One run, in order (runner.md): the pre-launch check → the loop lock → rotate
the journal and restore the supervisor (a process a crashed run left
``running`` becomes ``lost_on_restore`` and its item goes back to pending) →
iterate → end. The runner keeps the tree clean on its own account: a done item
is committed with its work; a blocked, needs-human or deferred outcome stashes
the agent's leftovers (only those paths) and commits the backlog change alone.

Rendering is not done here: the caller passes a ``Progress`` whose hooks it
implements (a live line on a terminal, plain lines, or the journal as NDJSON).
"""

from __future__ import annotations

import copy
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from git_forge.atomic import FileLock, atomic_write, locked
from git_forge.backlog.bookkeeping import describe_changes
from git_forge.backlog.model import cycle_through, id_key, kind, select_next, summarize
from git_forge.backlog.store import BacklogStore
from git_forge.clock import utc_now
from git_forge.errors import ForgeError
from git_forge.layout import ARCHIVE_DIR, EVENTS_FILE, PROC_DIR, PROMPT_FILES, tree_lock_path
from git_forge.loop import control
from git_forge.loop.journal import Journal
from git_forge.loop.process_events import ProcessEventPublisher
from git_forge.loop.prompt import build_prompt
from git_forge.loop.signals import Signal, parse_signal
from git_forge.loop.state import RunState, write_state
from git_forge.reconcile import messages
from git_forge.reconcile.preflight import Preflight, check, stranded
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.render import safe_text
from git_forge.supervisor.supervisor import Supervisor
from git_forge.tree.commit import commit_paths
from git_forge.tree.errors import GitError
from git_forge.tree.fast_status import DETACHED_HEAD, UNBORN_BRANCH, head_blob
from git_forge.tree.identity import author_and_committer
from git_forge.tree.porcelain import quote_path
from git_forge.tree.repo import Repo, open_repo
from git_forge.tree.stash import stash_paths
from git_forge.tree.status import porcelain
from git_forge.tree.worktree import Action, refusals
from git_forge.workspace import Workspace

# Exit codes of `git forge loop run` (runner.md, settled details).
EXIT_DONE = 0
EXIT_ERROR = 1
EXIT_REFUSED = 2
EXIT_PAUSED = 3
EXIT_BLOCKED = 5
EXIT_STOPPED = 130

#: An agent's last error line is cut to this many characters in a reason.
ERROR_LINE_LIMIT = 200
#: How long taking the loop lock retries (a status probe holds it for an instant).
LOCK_PATIENCE = 0.05
#: How often the loop looks for a stop request while an agent runs.
POLL_SECONDS = 0.25


class LoopError(ForgeError):
    """The loop refused to start (exit 2) or failed (exit 1)."""


class LoopRefused(LoopError):
    """The pre-launch check said STOP; ``preflight`` carries what it found."""

    def __init__(self, message: str, preflight: Preflight) -> None:
        super().__init__(message, exit_code=EXIT_REFUSED)
        self.preflight = preflight


@dataclass(frozen=True)
class LoopOptions:
    agent: list[str]
    iterations: int = 50
    retries: int = 2
    timeout_minutes: float | None = 30.0
    pause_on_needs_human: bool = False
    force: bool = False
    prompt_file: Path | None = None


class Progress(Protocol):
    """What the loop tells its caller as it goes. A caller renders it (the CLI's
    ``TerminalProgress``) or leaves hooks out by extending ``NullProgress``."""

    def started(self, run_id: str, max_iterations: int) -> None: ...
    def iteration(self, number: int, max_iterations: int, item: dict[str, Any]) -> None: ...
    def tick(self, elapsed: float, output_bytes: int) -> None: ...
    def output(self, text: str) -> None: ...
    def finished(self, item: dict[str, Any], outcome: str, detail: str) -> None: ...
    def event(self, event: dict[str, Any]) -> None: ...
    def note(self, text: str) -> None: ...


class NullProgress:
    """A ``Progress`` that tells nobody: the loop's default, and a base whose
    hooks a caller overrides only where it wants to hear."""

    def started(self, run_id: str, max_iterations: int) -> None:
        return None

    def iteration(self, number: int, max_iterations: int, item: dict[str, Any]) -> None:
        return None

    def tick(self, elapsed: float, output_bytes: int) -> None:
        return None

    def output(self, text: str) -> None:
        return None

    def finished(self, item: dict[str, Any], outcome: str, detail: str) -> None:
        return None

    def event(self, event: dict[str, Any]) -> None:
        return None

    def note(self, text: str) -> None:
        return None


@dataclass
class LoopResult:
    exit_code: int
    status: str
    run_id: str
    state: RunState
    message: str = ""
    #: The whole backlog at the end (``backlogSummary`` counts), not only this run.
    backlog: dict[str, int] = field(default_factory=dict)
    #: Every item waiting on a decision, this run's or an earlier one's.
    waiting: list[dict[str, Any]] = field(default_factory=list)


def waiting_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocked items, in id order: ``{id, kind, since, reason}`` (``since`` is
    when the item was blocked, ``None`` for one blocked before that was recorded)."""
    waiting = [{"id": str(item.get("id")), "kind": kind(item), "since": item.get("blockedAt"),
                "reason": item.get("blockedReason")}
               for item in items if item.get("status") == "blocked"]
    return sorted(waiting, key=lambda entry: id_key(entry["id"]))


def _result(run: _Run, code: int, status: str, message: str = "") -> LoopResult:
    items = run.store.items()
    return LoopResult(code, status, run.state.runId or "", run.state, message,
                      summarize(items), waiting_items(items))


class _Journal(Journal):
    """The run's journal, also handing each appended event to the progress."""

    def __init__(self, path: Path, project: Path, progress: Progress) -> None:
        super().__init__(path, project)
        self.progress = progress

    def append(self, type: str, event_id: str | None = None, **fields: Any):  # noqa: A002
        event = super().append(type, event_id, **fields)
        if event is not None:
            self.progress.event(event)
        return event


@dataclass
class _Run:
    """Everything one run carries between iterations."""

    workspace: Workspace
    options: LoopOptions
    progress: Progress
    repo: Repo
    store: BacklogStore
    journal: _Journal
    supervisor: Supervisor
    state: RunState
    stop: Callable[[], bool]
    preexisting: frozenset[str] = frozenset()
    attempts: dict[str, int] = field(default_factory=dict)
    #: Paths the run could not commit or stash as git would (path → why): left in
    #: the tree for reconcile, and never swept into a later item's commit.
    kept_back: dict[str, str] = field(default_factory=dict)

    @property
    def backlog_rel(self) -> str:
        return self.workspace.relative(self.workspace.backlog_file)

    def save(self, **changes: Any) -> None:
        for key, value in changes.items():
            setattr(self.state, key, value)
        write_state(self.workspace.state_dir, self.state)



def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)


def check_agent(argv: list[str], root: Path, env: Mapping[str, str] | None = None) -> None:
    """Refuse an agent that cannot start before any item is taken: found the way
    the start will look for it (a name along PATH; a path from the repository
    root, where the agent runs), a file, executable."""
    command = argv[0]
    if "{prompt_file}" in command:
        return  # only known once the prompt is written
    path_list = (env if env is not None else os.environ).get("PATH", os.defpath)
    if "/" in command:
        candidate: str | None = command if os.path.isabs(command) else str(root / command)
    else:
        candidate = shutil.which(command, path=path_list)
        if candidate is None:
            directories = [Path(d) / command for d in path_list.split(os.pathsep) if d]
            candidate = next((str(p) for p in directories if p.exists()), None)
    if candidate is None or not os.path.exists(candidate):
        raise LoopError(f"agent command not found: {command}")
    if os.path.isdir(candidate):
        raise LoopError(f"agent command is a directory: {command}")
    if not os.access(candidate, os.X_OK):
        raise LoopError(f"agent command is not executable: {command}")


def _refuse_beside_live_work(workspace: Workspace, *, own_lock: bool = False) -> None:
    """Refuse to start while another loop runs on this backlog or owns this work
    tree, or while an agent of an earlier run still lives (it would be a second
    agent writing into the tree)."""
    if not own_lock:
        live = control.live_loop(workspace.state_dir) or control.tree_owner(workspace.root)
        if live is not None:
            raise LoopError(control.running_message(live), exit_code=EXIT_REFUSED)
    orphans = control.orphaned_agents(workspace.state_dir)
    if orphans:
        raise LoopError(control.orphan_message(orphans[0]), exit_code=EXIT_REFUSED)


def _take_loop_locks(workspace: Workspace, holder: str) -> list[FileLock]:
    """The backlog's loop lock, then the work tree's (held for the whole run)."""
    paths = [control.loop_lock_path(workspace.state_dir)]
    tree_lock = tree_lock_path(workspace.root)
    if tree_lock is not None:
        paths.append(tree_lock)
    taken: list[FileLock] = []
    for path in paths:
        lock = FileLock(path)
        if not lock.try_acquire(holder=holder, patience=LOCK_PATIENCE):
            for held in reversed(taken):
                held.release()
            _refuse_beside_live_work(workspace)  # names the run that won the race
            raise LoopError(f"{path} is held by another process", exit_code=EXIT_REFUSED)
        taken.append(lock)
    return taken


def _refuse_unless_forced(repo: Repo, workspace: Workspace, force: bool) -> frozenset[str]:
    """The pre-launch check and the HEAD refusals; returns the paths that were
    dirty before the run (only possible with ``--force``), which the run leaves alone."""
    if repo.is_unborn and not force:
        raise LoopError(UNBORN_BRANCH, exit_code=EXIT_REFUSED)
    if repo.is_detached and not force:
        raise LoopError(DETACHED_HEAD, exit_code=EXIT_REFUSED)
    result = check(workspace.root, workspace.state_dir, workspace.backlog_file)
    if result.status == "ok":
        return frozenset()
    if not force:
        raise LoopRefused("the pre-launch check stopped this launch", result)
    return frozenset(entry.path for entry in result.entries)


def _restore(run: _Run) -> None:
    """Reconcile the processes a crashed run left, and put its items back."""
    report = run.supervisor.restore()
    if report.orphans:  # appeared since the check at start: never start beside one
        orphan = report.orphans[0]
        raise LoopError(control.orphan_message(
            control.OrphanedAgent(orphan.handle, control.item_of(orphan))), exit_code=EXIT_REFUSED)
    lost = {owner: m.handle for m in report.reconciled if (owner := control.item_of(m))}
    for error in report.errors:
        run.progress.note(f"restore: process {error.handle}: {error.error}")
    reset = []
    for item in run.store.items():
        if item.get("status") != "in_progress":
            continue
        item_id = str(item["id"])
        if item_id in lost:
            note = f"process {lost[item_id]} lost when a run crashed; back to pending"
            notes = "\n".join(filter(None, [str(item.get("notes") or ""), note]))
            run.store.transition(item_id, "pending", notes=notes)
            reset.append(item_id)
        else:  # a crashed run's bookkeeping mark: nothing to note
            run.store.transition(item_id, "pending")
    if reset and run.backlog_rel in _dirty(run):
        _commit(run, [run.backlog_rel], messages.process_lost(reset))
    for item_id in reset:
        run.progress.note(f"item {item_id}: its process was lost in a crash; back to pending")


def _commit(run: _Run, paths: list[str], message: str, *, allow_empty: bool = False) -> str:
    """Commit ``paths`` holding backlog.json's lock: a ``backlog add`` from another
    terminal may rewrite it at any moment, and the commit must read it whole."""
    with locked(run.store.path):
        return commit_paths(run.repo, paths, message, allow_empty=allow_empty)


def _commit_queued_backlog(run: _Run) -> None:
    """Backlog changes made through git-forge's own commands since the last commit
    (``backlog add``, ``answer``, ``edit`` …) are the run's input: commit them first,
    as ``[forge] backlog: …``, so every item commit holds only its own change. (The
    pre-launch check let them through only because they are a valid backlog.)"""
    if run.backlog_rel not in _dirty(run):
        return
    work = run.store.path.read_bytes()
    summary = describe_changes(head_blob(run.workspace.root, run.backlog_rel), work)
    _commit(run, [run.backlog_rel], messages.backlog_queued(summary))
    run.progress.note(f"committed the backlog's queued changes ({summary})")


def _dirty(run: _Run) -> list[str]:
    """Changed paths the run may act on: the stranded work the pre-launch check
    sees (one filter: no state files, no crash bookkeeping), less what was
    dirty before the run (``--force``) and what the run had to leave alone —
    but backlog.json whenever it changed, the run's own bookkeeping."""
    workspace = run.workspace
    entries = stranded(porcelain(run.repo), workspace.root, workspace.state_dir,
                       workspace.backlog_file, keep_backlog=True)
    paths = []
    for entry in entries:
        path = entry.path.rstrip("/")  # a nested repository is listed as "dir/"
        if path != run.backlog_rel and (entry.path in run.preexisting
                                        or path in run.kept_back):
            continue
        paths.append(path)
    return list(dict.fromkeys(paths))


def _actionable(run: _Run, item_id: str, paths: list[str], action: Action) -> list[str]:
    """The ``paths`` that ``action`` can handle as git would. The others are kept
    back for the rest of the run, each with why and the git command to use,
    which the progress is told: the run goes on without them."""
    refused = dict(refusals(run.repo, paths, action)) if paths else {}
    verb = "committed" if action == "commit" else "stashed"
    for path, why in refused.items():
        run.kept_back[path] = why
        run.progress.note(f"item {item_id}: {quote_path(path)} left in the tree, not {verb}:"
                          f" {why}")
    return [path for path in paths if path not in refused]


def _remove_prompt_files(run: _Run) -> None:
    """The ``{prompt_file}`` copies of the prompt (they hold the human's answer):
    gone once their agent has ended, never left in the tree or committed."""
    for path in run.workspace.state_dir.glob(PROMPT_FILES):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _prepare(run: _Run, item: dict[str, Any], prompt: str, number: int) -> PreparedProcess:
    argv = list(run.options.agent)
    encoded = prompt.encode("utf-8")
    stdin: bytes | None = encoded
    if any("{prompt_file}" in arg for arg in argv):
        prompt_path = run.workspace.state_dir / f"prompt-{item['id']}.md"
        atomic_write(prompt_path, encoded, mode=0o600)
        argv = [arg.replace("{prompt_file}", str(prompt_path)) for arg in argv]
        stdin = None
    env = {**os.environ, "FORGE_ITEM_ID": str(item["id"]), "FORGE_ITERATION": str(number),
           "FORGE_RUN_ID": run.state.runId or ""}
    timeout = run.options.timeout_minutes * 60 if run.options.timeout_minutes else None
    return PreparedProcess(argv=argv, cwd=run.workspace.root, env=env, stdin=stdin,
                           timeout=timeout)


def _wait(run: _Run, handle: str) -> tuple[Any, bool]:
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


def _signal_of(run: _Run, handle: str) -> Signal:
    """The signal from the end of the agent's *stdout*, on its own: stderr written
    around or after it can neither split the signal line nor push it out of view."""
    return parse_signal(safe_text(run.supervisor.tail(handle, "stdout"), final=True).text)


def _last_error_line(run: _Run, handle: str) -> str | None:
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


def deferral_reason(what: str, attempts: int) -> str:
    return f"{what} — deferred after {attempts} attempt" + ("s" if attempts != 1 else "")


def _block(run: _Run, item: dict[str, Any], reason: str, *, needs_human: bool = False,
           deferred: bool = False) -> None:
    """Stash the agent's leftovers, mark the item blocked, commit that alone.

    A leftover git-forge cannot stash as git would (a submodule's own changes,
    a nested repository, …) stays in the tree, named in the item's notes and
    the journal; the item keeps the agent's reason and the run goes on. Only a
    failed bookkeeping commit ends the run (the repository refuses commits).
    """
    _remove_prompt_files(run)
    item_id = str(item["id"])
    leftovers = [p for p in _dirty(run) if p != run.backlog_rel]
    stashable = _actionable(run, item_id, leftovers, "stash")
    stashed = False
    if stashable:
        try:
            stash_paths(run.repo, stashable, messages.abandoned_work(item_id))
            stashed = True
        except GitError as exc:
            for path in stashable:
                run.kept_back[path] = f"the stash failed: {exc.message}"
            run.progress.note(f"item {item_id}: its leftover changes could not be stashed "
                              f"and stay in the tree: {exc.message}")
    left = [path for path in leftovers if path in run.kept_back]
    fields: dict[str, Any] = {}
    if left:
        listed = ", ".join(quote_path(path) for path in left)
        note = f"left in the tree, not stashed: {listed} (see git forge reconcile)"
        fields["notes"] = "\n".join(filter(None, [str(run.store.get(item_id).get("notes")
                                                       or ""), note]))
    run.store.transition(item_id, "blocked", blockedReason=reason, needsHuman=needs_human,
                         deferred=deferred, **fields)
    subject = reason.splitlines()[0] if reason else "no reason given"
    try:
        _commit(run, [run.backlog_rel], messages.item_blocked(item_id, subject),
                allow_empty=True)
    except GitError as exc:
        run.journal.append("item_blocked", itemId=item_id, reason=reason)
        raise LoopError(f"item {item_id} is blocked, but its bookkeeping commit failed: "
                        f"{exc.message}", exit_code=EXIT_ERROR) from exc
    extra = {"leftInTree": left} if left else {}
    if needs_human:
        run.journal.append("needs_human", None, itemId=item_id, reason=reason, **extra)
        run.state.needsHumanItems.append(item_id)
    else:
        run.journal.append("item_blocked", None, itemId=item_id, reason=reason, **extra)
        (run.state.deferredItems if deferred else run.state.blockedItems).append(item_id)
    if stashed:
        run.progress.note(f"item {item_id}: its leftover changes were stashed "
                          f"({messages.abandoned_work(item_id)})")


def _complete(run: _Run, item: dict[str, Any]) -> str | None:
    """Mark the item done and commit it with its work; the commit id.

    A changed path git-forge cannot commit as git would stays in the tree (see
    ``_actionable``). If the commit itself fails, the item is never left done
    without one: its entry goes back to what it was and it is blocked with the
    reason (``None`` is returned).
    """
    _remove_prompt_files(run)
    item_id = str(item["id"])
    before = copy.deepcopy(run.store.get(item_id))
    run.store.transition(item_id, "done")
    paths = _actionable(run, item_id, _dirty(run), "commit")
    try:
        commit = _commit(run, paths, messages.item_done(item_id, item.get("title", "")),
                         allow_empty=True)
    except GitError as exc:
        _put_back(run, before)
        _block(run, before, f"the agent signalled done, but the commit failed: {exc.message}")
        return None
    run.journal.append("item_completed", itemId=item_id, title=item.get("title"), commit=commit)
    run.state.completedItems.append(item_id)
    return commit


def _put_back(run: _Run, saved: dict[str, Any]) -> None:
    """Return one item's entry to ``saved`` (undoing a ``done`` whose commit failed)."""
    item_id = str(saved["id"])

    def restore(document: dict[str, Any]) -> None:
        items = document["items"]
        for index, current in enumerate(items):
            if str(current.get("id")) == item_id:
                items[index] = copy.deepcopy(saved)

    run.store.update(restore)


def _iterate(run: _Run, item: dict[str, Any], number: int) -> str:
    """One agent start for ``item``; returns the outcome name."""
    item_id = str(item["id"])
    options = run.options
    try:  # before the item is taken: a stale lock would fail its commit after the agent ran
        run.repo.check_unlocked()
    except GitError as exc:
        raise LoopError(f"cannot take item {item_id}: {exc.message}",
                        exit_code=EXIT_REFUSED) from exc
    _remove_prompt_files(run)
    if item.get("status") != "in_progress":
        item = run.store.transition(item_id, "in_progress")
    run.save(iteration=number, currentItem=item_id)
    run.journal.append("iteration_start", iteration=number, itemId=item_id)
    run.journal.append("item_selected", itemId=item_id, title=item.get("title"),
                       priority=item.get("priority"))
    run.progress.iteration(number, options.iterations, item)
    document = run.store.load()
    prompt_text = options.prompt_file.read_text(encoding="utf-8") if options.prompt_file else None
    prompt = build_prompt(item, project_description=str(document.get("description") or ""),
                          prompt_file_text=prompt_text)
    try:
        handle = run.supervisor.start({"run_id": run.state.runId},
                                      {"item_id": item_id, "iteration": number},
                                      _prepare(run, item, prompt, number))
    except ProcessError as exc:
        if exc.code == "process_setup_failed":  # its manifest or spool cannot be written
            raise LoopError(str(exc.cause), exit_code=EXIT_ERROR) from exc
        raise
    manifest, stopped = _wait(run, handle)
    failure = run.supervisor.storage_error(handle)
    if failure is not None:  # its output could not be recorded: the run cannot go on
        raise LoopError(str(failure.cause), exit_code=EXIT_ERROR)
    if stopped:
        return "stopped"
    signal = _signal_of(run, handle)
    timed_out = manifest.state == "timed_out"
    if timed_out:
        signal = Signal("none")
    fields = {"reason": signal.reason} if signal.reason is not None else {}
    run.journal.append("signal_parsed", itemId=item_id, signal=signal.kind, **fields)

    if signal.kind == "done":
        commit = _complete(run, item)
        if commit is None:  # the commit failed: _complete blocked the item instead
            reason = str(run.store.get(item_id).get("blockedReason"))
            run.save(lastSignal="blocked", currentItem=None)
            run.progress.finished(item, "blocked", reason)
            return "blocked"
        run.save(lastSignal="clean", currentItem=None)
        run.progress.finished(item, "done", commit[:12])
        return "done"
    if signal.kind in ("blocked", "needs_human"):
        reason = signal.reason or "no reason given"
        _block(run, item, reason, needs_human=signal.kind == "needs_human")
        run.save(lastSignal=signal.kind, currentItem=None)
        run.progress.finished(item, signal.kind.replace("_", "-"), reason)
        return signal.kind
    attempts = run.attempts[item_id] = run.attempts.get(item_id, 0) + 1
    why = what_happened(manifest.result.exit_code, manifest.state, timed_out,
                        options.timeout_minutes, _last_error_line(run, handle))
    if attempts <= options.retries:
        run.save(lastSignal="error")
        run.progress.finished(item, "retry", f"{why}; no signal; attempt {attempts} of "
                                             f"{options.retries + 1}")
        return "retry"
    reason = deferral_reason(why, attempts)
    _block(run, item, reason, deferred=True)
    run.save(lastSignal="error", currentItem=None)
    run.progress.finished(item, "deferred", reason)
    return "deferred"


def _summary_exit(run: _Run) -> tuple[str, int]:
    _remove_prompt_files(run)
    items = run.store.items()
    if all(item.get("status") == "done" for item in items):
        return "complete", EXIT_DONE
    if select_next(items) is not None:
        return "iterations_complete", EXIT_DONE
    # Nothing selectable and not all done: blocked items, or a dependency cycle
    # (pending items that can never become ready) — both are genuine blocks.
    return "complete", EXIT_BLOCKED


def _cycles(items: list[dict[str, Any]]) -> list[list[str]]:
    """The dependency cycles among the items not done, each once, lowest id first."""
    waiting: list[Mapping[str, Any]] = [item for item in items if item.get("status") != "done"]
    found: list[list[str]] = []
    seen: set[str] = set()
    for item in sorted(waiting, key=lambda entry: id_key(entry.get("id"))):
        item_id = str(item.get("id"))
        if item_id in seen:
            continue
        cycle = cycle_through(waiting, item_id)
        if cycle:
            found.append(cycle)
            seen.update(cycle)
    return found


def _summary_message(run: _Run, code: int) -> str:
    """What the operator is told at the end: why nothing more could run."""
    items = run.store.items()
    if code != EXIT_BLOCKED and not any(item.get("status") == "blocked" for item in items):
        return ""
    if code == EXIT_BLOCKED and not any(item.get("status") == "blocked" for item in items):
        cycles = _cycles(items)
        on_cycle = {item_id for cycle in cycles for item_id in cycle}
        pending = sorted((str(item.get("id")) for item in items
                          if item.get("status") != "done"), key=id_key)
        waiting = [item_id for item_id in pending if item_id not in on_cycle]
        if not cycles:
            return (f"nothing can run: items {', '.join(waiting)} wait on items that are "
                    "not done: see git forge backlog topology")
        shown = "; ".join(" → ".join([*cycle, cycle[0]]) for cycle in cycles)
        text = (f"nothing can run: dependency cycle {shown} — items "
                f"{', '.join(sorted(on_cycle, key=id_key))} stay pending")
        if waiting:
            text += f", and {', '.join(waiting)} wait on them"
        return text + "; break the cycle with git forge backlog edit ID --depends-on IDS"
    return "run git forge recover to answer them"


def run_loop(workspace: Workspace, options: LoopOptions, progress: Progress | None = None,
             stop_event: threading.Event | None = None) -> LoopResult:
    """Run the loop until nothing is selectable, the budget is spent, or a stop."""
    progress = NullProgress() if progress is None else progress
    stop_event = stop_event or threading.Event()
    if not options.agent:
        raise LoopError("no agent to run: pass --agent CMD or set loop.agent in .forge.yaml")
    if options.iterations < 1 or options.retries < 0:
        raise LoopError("--iterations must be at least 1 and --retries at least 0")
    check_agent(options.agent, workspace.root)
    repo = open_repo(workspace.root)
    state_dir = workspace.state_dir
    _refuse_beside_live_work(workspace)
    preexisting = _refuse_unless_forced(repo, workspace, options.force)
    author_and_committer(repo)  # no identity is a clear error before any work
    store = BacklogStore.in_dir(workspace.backlog_dir)
    store.load()
    state_dir.mkdir(parents=True, exist_ok=True)

    run_id, started = new_run_id(), utc_now()
    locks = _take_loop_locks(workspace, control.holder_label(run_id, started, os.getpid()))
    supervisor = None
    try:
        _refuse_beside_live_work(workspace, own_lock=True)
        control.arm_stop_token(state_dir, run_id)
        journal = _Journal(state_dir / EVENTS_FILE, workspace.root, progress)
        journal.rotate(state_dir / ARCHIVE_DIR)
        supervisor = Supervisor(
            SupervisorConfig.from_settings(workspace.config.section("supervisor")),
            ManifestStore(state_dir / PROC_DIR), lifecycle=ProcessEventPublisher(journal))
        state = RunState(status="starting", maxIterations=options.iterations, startedAt=started,
                         runId=run_id, baseCommitHash=repo.head_commit_id())
        run = _Run(workspace, options, progress, repo, store, journal, supervisor, state,
                   stop=lambda: stop_event.is_set() or control.stop_requested(state_dir),
                   preexisting=preexisting)
        run.save()
        _restore(run)
        _commit_queued_backlog(run)
        run.save(status="running")
        journal.append("loop_started", runId=run_id, maxIterations=options.iterations,
                       baseCommitHash=state.baseCommitHash, agent=list(options.agent))
        progress.started(run_id, options.iterations)
        return _loop(run)
    except ForgeError as exc:
        if supervisor is not None and state_dir.joinpath("state.json").exists():
            _record_error(workspace, run_id, exc.message)
        raise
    finally:
        if supervisor is not None:
            try:
                supervisor.shutdown()
            except ProcessError as exc:
                progress.note(f"shutdown: {exc}")
        control.disarm_stop_token(state_dir)
        for lock in reversed(locks):
            lock.release()


def _record_error(workspace: Workspace, run_id: str, message: str) -> None:
    from git_forge.loop.state import read_state

    try:
        document = read_state(workspace.state_dir) or {}
    except ForgeError:
        return
    if document.get("runId") != run_id or document.get("status") == "error":
        return
    state = RunState(**{**document, "status": "error", "error": message})
    try:  # best effort: on a full disk the error itself is what the operator must see
        write_state(workspace.state_dir, state)
        Journal(workspace.state_dir / EVENTS_FILE, workspace.root).append("loop_error",
                                                                          error=message)
    except ForgeError:
        pass


def _loop(run: _Run) -> LoopResult:
    retry: dict[str, Any] | None = None
    number = run.state.iteration
    while number < run.options.iterations:
        if run.stop():
            return _stopped(run)
        item = retry or select_next(run.store.items())
        if item is None:
            break
        number += 1
        outcome = _iterate(run, item, number)
        if outcome == "stopped":
            return _stopped(run)
        retry = run.store.get(str(item["id"])) if outcome == "retry" else None
        if outcome == "needs_human" and run.options.pause_on_needs_human:
            run.save(status="paused_human")
            run.journal.append("loop_paused", itemId=str(item["id"]))
            return _result(run, EXIT_PAUSED, "paused_human",
                           "paused for a human decision: run git forge recover")
    if retry is not None:  # the budget ran out in the middle of an item's retries
        run.store.transition(str(retry["id"]), "pending")
        run.save(currentItem=None)
    status, code = _summary_exit(run)
    run.save(status=status, currentItem=None)
    run.journal.append("loop_completed", status=status,
                       completed=len(run.state.completedItems))
    return _result(run, code, status, _summary_message(run, code))


def _stopped(run: _Run) -> LoopResult:
    """A stop request or signal: every agent tree ends, the item goes back to pending."""
    try:
        run.supervisor.shutdown()
    except ProcessError as exc:
        run.progress.note(f"shutdown: {exc}")
    if run.state.currentItem:
        item = run.store.get(run.state.currentItem)
        if item.get("status") == "in_progress":
            run.store.transition(run.state.currentItem, "pending")
    run.save(status="stopped")
    run.journal.append("loop_cancelled", itemId=run.state.currentItem)
    return _result(run, EXIT_STOPPED, "stopped",
                   "stopped; any work the agent left is in the tree for git forge reconcile")

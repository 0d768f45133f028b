"""One run of the loop, from the refusals before it to the summary after it.

In order (runner.md): the pre-launch refusals (a live loop or an earlier run's
agent, an agent that cannot start, a detached or unborn HEAD, the pre-launch
check) → the loop locks → the stop token, the journal rotated and the
supervisor restored (a process a crashed run left ``running`` becomes
``lost_on_restore`` and its item goes back to pending) → the backlog's queued
changes committed → the engine (``slots``) runs the items where the agents run
(``places``: the main checkout for one agent, each item's worktree for more) →
end (status, exit code, summary). Whatever ends the run, its agents end and its
locks are released.
"""

import gc
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from git_forge.backlog.bookkeeping import describe_changes
from git_forge.backlog.held import HeldBacklog
from git_forge.backlog.store import BacklogStore
from git_forge.clock import compact_stamp, wire_now, wire_stamp
from git_forge.errors import ForgeError
from git_forge.exit_codes import LOOP_LIMIT, LOOP_REFUSED
from git_forge.layout import ARCHIVE_DIR, EVENTS_FILE, PROC_DIR, tree_lock_path
from git_forge.locks import FileLock
from git_forge.loop import control, limits_wait, notify, receipts, sandboxing
from git_forge.loop.agent_run import Ending
from git_forge.loop.agent_state import AgentState
from git_forge.loop.breaker import Breaker
from git_forge.loop.context import PathMark, RunContext, commit, dirty, path_mark
from git_forge.loop.errors import LoopError, LoopRefused
from git_forge.loop.iteration import remove_prompt_files
from git_forge.loop.journal import EventJSON, Journal
from git_forge.loop.notify import Notifier
from git_forge.loop.options import LoopOptions, rooted_path
from git_forge.loop.places import MainCheckout, Worktrees
from git_forge.loop.process_events import ProcessEventPublisher
from git_forge.loop.progress import NullProgress, Progress
from git_forge.loop.slots import Engine, costs
from git_forge.loop.state import RunState, read_state, write_state
from git_forge.loop.summary import LoopResult, final_message, final_status, loop_result
from git_forge.reconcile import messages
from git_forge.reconcile.conflicts import read_conflicts
from git_forge.reconcile.preflight import check
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.supervisor import Supervisor
from git_forge.tree.fast_status import DETACHED_HEAD, UNBORN_BRANCH, head_blob
from git_forge.tree.gitcli import distrust_trees
from git_forge.tree.identity import author_and_committer
from git_forge.tree.repo import Repo, open_repo
from git_forge.workspace import Workspace

#: How long taking the loop lock retries (a status probe holds it for an instant).
LOCK_PATIENCE = 0.05


class LoopSandboxJSON(TypedDict):
    """How a run's agents are sandboxed, as ``loop_started`` says it (events.md)."""

    kind: str
    network: bool


class SandboxedFields(TypedDict, total=False):
    """``loop_started``'s ``sandbox``, when the agents run in one."""

    sandbox: LoopSandboxJSON


def run_loop(workspace: Workspace, options: LoopOptions, progress: Progress | None = None,
             stop_event: threading.Event | None = None) -> LoopResult:
    """Run the loop until nothing is selectable, the budget is spent, or a stop."""
    progress = NullProgress() if progress is None else progress
    stop_event = stop_event or threading.Event()
    if not options.agent:
        raise LoopError("no agent to run: pass --agent claude (or codex, or an agent command "
                        "line), or set loop.agent in .forge.yaml and commit it")
    if options.iterations < 1 or options.retries < 0:
        raise LoopError("--iterations must be at least 1 and --retries at least 0")
    check_agent(options.argv(), workspace.root)
    if options.fallback_agent:  # the agent a limit falls back to must start too
        check_agent(options.argv(fallback=True), workspace.root, what="fallback agent")
    for command in options.verify:  # a gate that cannot start fails no item: it is refused
        check_agent(list(command.argv), workspace.root, what="verification")
    sandbox, sandbox_note = sandboxing.chosen(options)
    distrust_trees(sandbox is not None)
    repo = open_repo(workspace.root)
    state_dir = workspace.state_dir
    _refuse_beside_live_work(workspace)
    preexisting = _refuse_unless_forced(repo, workspace, options.force)
    author_and_committer(repo)  # no identity is a clear error before any work
    store = HeldBacklog(BacklogStore.in_dir(workspace.backlog_dir))
    store.load()  # read and validated once; re-read only when another writer changes it
    history = _refuse_corrupt_state(state_dir, options)
    state_dir.mkdir(parents=True, exist_ok=True)

    recorded, discarded = _recorded_wait(workspace, options.limit_wait_max_minutes)
    run_id, started = new_run_id(), wire_now()
    locks = _take_loop_locks(workspace, control.holder_label(run_id, started, os.getpid()))
    supervisor = None
    journal: Journal | None = None
    try:
        _refuse_beside_live_work(workspace, own_lock=True)
        receipts.fold_runs(state_dir, history)  # the last run's sums in: ours start anew
        control.arm_stop_token(state_dir, run_id)
        journal = _Journal(state_dir / EVENTS_FILE, workspace.root, progress)
        journal.rotate(state_dir / ARCHIVE_DIR)
        journal.own()  # the loop lock makes this run its one writer
        config = SupervisorConfig.from_settings(workspace.config.section("supervisor"))
        if options.parallel > 1:  # the quota is the number of agents at once, and the
            # merge queue's own check of the gates (one at a time, beside every slot)
            merge_checks = 1 if options.verify else 0
            config = replace(config, max_processes=options.parallel + merge_checks)
        supervisor = Supervisor(config, ManifestStore(state_dir / PROC_DIR),
                                lifecycle=ProcessEventPublisher(journal))
        if store.select_next() is not None:  # an agent will start: its watchdog boots
            supervisor.warm_up()             # beside restore and the rest of start-up
        state = RunState(status="starting", iteration=0, max_iterations=options.iterations,
                         started_at=started, run_id=run_id,
                         base_commit_hash=repo.head_commit_id(),
                         sandbox="bwrap" if sandbox is not None else None)
        run = RunContext(workspace, options, progress, repo, store, journal, supervisor, state,
                         stop=lambda: stop_event.is_set() or control.stop_requested(state_dir),
                         branch=repo.branch_name, preexisting=preexisting,
                         agent=_agent_state(options, state_dir, run_id, workspace.root,
                                            journal, stop_event),
                         sandbox=sandbox)
        run.save()
        _restore(run)
        supervisor.prune()  # the processes of runs beyond supervisor.keepRuns
        _commit_queued_backlog(run)
        run.save(status="running")
        sandboxed: SandboxedFields = ({"sandbox": {"kind": "bwrap", "network": sandbox.network}}
                                     if sandbox is not None else {})
        journal.append("loop_started", runId=run_id, maxIterations=options.iterations,
                       baseCommitHash=state.base_commit_hash, agent=options.argv(),
                       profile=options.profile.name, **sandboxed)
        progress.started(run_id, options.iterations)
        if sandbox_note is not None:
            progress.note(sandbox_note)
        if discarded is not None:
            journal.append("usage_limit_discarded", reason=discarded)
            progress.note(discarded)
        # What start-up built (modules, the held backlog) lives as long as the run:
        # out of the collector's sight, each collection walks only what an
        # iteration allocates.
        gc.freeze()
        # Where the agents run is the one thing the number of them decides.
        place = (Worktrees(run, options.parallel) if options.parallel > 1 else
                 MainCheckout(run))
        try:
            return _iterate(Engine(run, place), recorded)
        finally:
            place.close()
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
        if journal is not None:
            try:
                journal.close()  # durable before the locks go
            except ForgeError as exc:
                progress.note(f"journal: {exc.message}")
        control.disarm_stop_token(state_dir)
        distrust_trees(False)
        store.close()
        for lock in reversed(locks):
            lock.release()


def new_run_id() -> str:
    return f"{compact_stamp()}-{os.urandom(3).hex()}"


def _recorded_wait(workspace: Workspace, max_minutes: float
                   ) -> tuple[datetime | None, str | None]:
    """A usage limit an earlier run was waiting out (state.json's ``waitingUntil``),
    while it is still ahead: this run waits for it before its first iteration. Or
    why one that no run could have written is discarded (the new state drops it)."""
    try:
        previous = read_state(workspace.state_dir)
    except ForgeError:
        return None, None
    value = previous.waiting_until if previous else None
    until, why = limits_wait.recorded_wait(value, max_minutes)
    if why is None:
        return until, None
    shown = value if value is None or len(value) <= 40 else value[:39] + "…"
    return None, f"discarded the recorded usage limit wait (waitingUntil {shown!r}): {why}"


def _agent_state(options: LoopOptions, state_dir: Path, run_id: str, root: Path,
                 journal: Journal, wake: threading.Event) -> AgentState:
    def failed(event: str, why: str) -> None:
        journal.append("notify_failed", event=event, error=why)

    return AgentState(wake=wake, breaker=Breaker(options.max_consecutive_failures),
                      notifier=Notifier(options.notify, state_dir, run_id, root, failed))


# --- before the run: the refusals and the locks ----------------------------------------------


def check_agent(argv: list[str], root: Path, env: Mapping[str, str] | None = None, *,
                what: str = "agent") -> None:
    """Refuse an agent (or a verification gate, ``what``) that cannot start before
    any item is taken: found the way the start will look for it (a name along
    PATH; a path from the repository root, where it runs), a file, executable."""
    command = argv[0]
    if "{prompt_file}" in command:
        return  # only known once the prompt is written
    path_list = rooted_path(root, (env if env is not None else os.environ).get(
        "PATH", os.defpath))
    if "/" in command:
        candidate: str | None = command if os.path.isabs(command) else str(root / command)
    else:
        candidate = shutil.which(command, path=path_list)
        if candidate is None:
            directories = [Path(d) / command for d in path_list.split(os.pathsep) if d]
            candidate = next((str(p) for p in directories if p.exists()), None)
    if candidate is None or not os.path.exists(candidate):
        raise LoopError(f"{what} command not found: {command}")
    if os.path.isdir(candidate):
        raise LoopError(f"{what} command is a directory: {command}")
    if not os.access(candidate, os.X_OK):
        raise LoopError(f"{what} command is not executable: {command}")


def _refuse_beside_live_work(workspace: Workspace, *, own_lock: bool = False) -> None:
    """Refuse to start while another loop runs on this backlog or owns this work
    tree, or while an agent of an earlier run still lives (it would be a second
    agent writing into the tree)."""
    blocker = (control.orphan_blocker if own_lock else control.launch_blocker)(
        workspace.state_dir, workspace.root)
    if blocker is not None:
        raise LoopError(blocker, exit_code=LOOP_REFUSED)


def _refuse_corrupt_state(state_dir: Path, options: LoopOptions) -> tuple[bytes, Any] | None:
    """Every state file the run will write to is read and checked now, before any
    item is taken: one found corrupt in the middle of the run (at a parallel item's
    first conflict, at the first receipt) would end it with items half done. A
    corrupt one is refused, as a corrupt backlog is, and never rewritten. (state.json
    is the run's own, rewritten whole at its start; the journal and the supervisor's
    records are read as evidence, which tolerates a torn or unreadable entry.)
    Returns what ``receipts.check_ledger`` read, for the run start's fold."""
    history = receipts.check_ledger(state_dir)
    read_conflicts(state_dir)
    if options.notify:
        notify.check_record(state_dir)
    return history


def _take_loop_locks(workspace: Workspace, holder: str) -> list[FileLock]:
    """The backlog's loop lock, then the work tree's (held for the whole run; its
    label also names the run's state dir, where its agents' liveness locks are)."""
    labelled = [(control.loop_lock_path(workspace.state_dir), holder)]
    tree_lock = tree_lock_path(workspace.root)
    if tree_lock is not None:
        labelled.append((tree_lock, control.tree_holder_label(
            holder, workspace.root, workspace.state_dir)))
    taken: list[FileLock] = []
    for path, label in labelled:
        lock = FileLock(path)
        if not lock.try_acquire(holder=label, patience=LOCK_PATIENCE):
            for held in reversed(taken):
                held.release()
            _refuse_beside_live_work(workspace)  # names the run that won the race
            raise LoopError(f"{path} is held by another process", exit_code=LOOP_REFUSED)
        taken.append(lock)
    return taken


def _refuse_unless_forced(repo: Repo, workspace: Workspace,
                          force: bool) -> dict[str, PathMark]:
    """The pre-launch check and the HEAD refusals; returns the paths that were
    dirty before the run (only possible with ``--force``), which the run leaves alone,
    each with how it looks now."""
    if repo.is_unborn and not force:
        raise LoopError(UNBORN_BRANCH, exit_code=LOOP_REFUSED)
    if repo.is_detached and not force:
        raise LoopError(DETACHED_HEAD, exit_code=LOOP_REFUSED)
    result = check(workspace.root, workspace.state_dir, workspace.backlog_file)
    if result.status == "ok":
        return {}
    if not force:
        raise LoopRefused("the pre-launch check stopped this launch", result)
    return {entry.path: path_mark(workspace.root, entry.path) for entry in result.entries}


# --- the start of the run: the journal, restore, the queued backlog ---------------------------


class _Journal(Journal):
    """The run's journal, also handing each appended event to the progress."""

    def __init__(self, path: Path, project: Path, progress: Progress) -> None:
        super().__init__(path, project)
        self.progress = progress

    def append(self, type: str, event_id: str | None = None,  # noqa: A002
               **fields: Any) -> EventJSON | None:
        event = super().append(type, event_id, **fields)
        if event is not None:
            self.progress.event(event)
        return event


def _restore(run: RunContext) -> None:
    """Reconcile the processes a crashed run left, and put its items back."""
    report = run.supervisor.restore()
    if report.orphans:  # appeared since the check at start: never start beside one
        orphan = report.orphans[0]
        raise LoopError(control.orphan_message(control.orphaned_agent(
            run.workspace.state_dir, orphan.handle, control.item_of(orphan))),
            exit_code=LOOP_REFUSED)
    lost = {owner: m.handle for m in report.reconciled if (owner := control.item_of(m))}
    for error in report.errors:
        run.progress.note(f"restore: process {error.handle}: {error.error}")
    reset = []
    for item in run.store.items():
        if item.status != "in_progress":
            continue
        item_id = item.id
        if item_id in lost:
            note = f"process {lost[item_id]} lost when a run crashed; back to pending"
            notes = "\n".join(filter(None, [item.notes, note]))
            run.store.transition(item_id, "pending", notes=notes)
            reset.append(item_id)
        else:  # a crashed run's bookkeeping mark: nothing to note
            run.store.transition(item_id, "pending")
    if reset and run.backlog_rel in dirty(run):
        commit(run, [run.backlog_rel], messages.process_lost(reset))
    for item_id in reset:
        run.progress.note(f"item {item_id}: its process was lost in a crash; back to pending")


def _commit_queued_backlog(run: RunContext) -> None:
    """Backlog changes made through git-forge's own commands since the last commit
    (``backlog add``, ``answer``, ``edit`` …) are the run's input: commit them first,
    as ``[forge] backlog: …``, so every item commit holds only its own change. (The
    pre-launch check let them through only because they are a valid backlog.)"""
    if run.backlog_rel not in dirty(run):
        return
    work = run.store.path.read_bytes()
    summary = describe_changes(head_blob(run.workspace.root, run.backlog_rel), work)
    commit(run, [run.backlog_rel], messages.backlog_queued(summary))
    run.progress.note(f"committed the backlog's queued changes ({summary})")


# --- the iterations and the end --------------------------------------------------------------


def _iterate(engine: Engine, recorded: datetime | None) -> LoopResult:
    """The run's items through the engine, after the usage limit an earlier run
    recorded (``recorded``), while it is still ahead: waited out, or the run ends."""
    run = engine.run
    if recorded is not None:
        if run.options.on_limit == "stop":
            stamp = wire_stamp(recorded)
            run.save(waiting_until=stamp)
            return engine.ended(Ending(LOOP_LIMIT, "stopped", (
                f"stopped: the agent's usage limit an earlier run met lifts at {stamp}: "
                "come back then")))
        if not limits_wait.wait_out(run, recorded, "a usage limit an earlier run recorded",
                                    None, "recorded"):
            return engine.stopped()
    return engine.go() or _end(run)


def _end(run: RunContext) -> LoopResult:
    """Nothing more to run, or the budget spent: the run's status and result."""
    remove_prompt_files(run.workspace.state_dir)
    status, code = final_status(run.store.items())
    run.save(status=status, current_item=None)
    run.journal.append("loop_completed", status=status,
                       completed=len(run.state.completed_items))
    items = run.store.items()
    ended = loop_result(items, run.state, code, status, final_message(items, code),
                        costs(run), list(run.uncommitted.values()))
    if ended.waiting:
        ids = [entry["id"] for entry in ended.waiting]
        run.agent.notifier.send(notify.WAITING, ",".join(ids), itemIds=ids,
                                items=ended.waiting)
    return ended


def _record_error(workspace: Workspace, run_id: str, message: str) -> None:
    """Mark this run's state.json ``error`` and journal why (best effort)."""
    try:
        state = read_state(workspace.state_dir)
    except ForgeError:
        return
    if state is None or state.run_id != run_id or state.status == "error":
        return
    try:  # best effort: on a full disk the error itself is what the operator must see
        write_state(workspace.state_dir, state._replace(status="error", error=message))
        Journal(workspace.state_dir / EVENTS_FILE, workspace.root).append("loop_error",
                                                                          error=message)
    except ForgeError:
        pass

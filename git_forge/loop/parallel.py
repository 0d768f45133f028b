"""Items in parallel (``loop run --parallel N``): up to N agents at once, each in a
linked worktree of its own, each done item integrated onto the loop's branch as
it finishes.

* **Selection** is the serial loop's (``select_next``): a pending item whose
  in-backlog dependencies are all done. Here an item is marked done only as its
  commit is integrated, so "done" means "done and merged": a dependent item
  starts on a tip that holds its dependencies' work.
* **Each item** gets ``{stateDir}/worktrees/<id>`` on branch ``forge/<id>`` at the
  loop branch's current tip; its agent runs there (``FORGE_WORKTREE`` names it).
  The supervisor's process quota is N. While every slot is taken, the worktree of
  the item that would start next is made ahead (``worktree_prep``), so a freed
  slot starts its agent at once; one never used is removed at the end.
* **Done**: the worktree's changes are committed there (``[forge] <id>: <title>``,
  exactly its paths, never backlog.json or state files), then the merge queue
  replays that commit onto the tip and fast-forwards the branch (completion
  order: the loop integrates each item the moment it finishes). A conflict
  changes nothing: the item is blocked ``needsHuman`` with the paths and the
  items it collided with, its branch and worktree are kept, and the conflict is
  recorded (``reconcile.conflicts``) for recover's two answers. The worktree
  is removed only once the commit is integrated and the tree clean.
* **Blocked, needs-human, deferred**: the agent's leftovers are stashed from its
  worktree (``forge: abandoned work from item <id>``, the one stash list), then
  the emptied worktree is removed. A retry (no signal, attempts left) reruns the
  agent in the same worktree.
* **Containment**: after every agent that ends, the main checkout is compared
  with how the loop last left it; a change is reported as ``an agent wrote
  outside its worktree`` (the item blocked when it ran alone), never committed.
* **Threads**: the git work of an ended agent (containment, the commit in its
  worktree, the merge, the stash of a blocked item's leftovers) is done by the
  merge thread (``merging``), one job at a time in the order the agents ended,
  while this thread goes on watching and starting agents; every change to the
  backlog, the journal, the run's state and the progress is made here.
* **Bookkeeping**: the items' statuses are written to backlog.json as they
  change and committed once, when the run ends, stops or pauses
  (``[forge] backlog: 001, 003 done; …``), so each item is one commit on the
  branch. A crash leaves a valid backlog.json, which the next run commits first.
* **Stop** (``loop stop``, a signal): every agent ends as in a serial run, each
  running item goes back to pending, and every worktree stays for reconcile.
* **Real agents** (``agent_run``, as in a serial run): each ended attempt's receipt
  is added up; a usage limit is waited out on this thread — no new agent starts
  meanwhile, running ones go on — and the item reruns in its worktree without the
  attempt counting; the circuit breaker, a limit no wait lifts or ``--on-limit
  stop`` end the run as a stop does, with their exit code; ``--max-cost`` lets the
  running agents finish and starts no other; ``--idle-timeout`` ends an agent
  whose output stopped growing that long.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_forge.backlog.item import Item
from git_forge.backlog.model import select_next
from git_forge.exit_codes import LOOP_PAUSED, LOOP_REFUSED, LOOP_STOPPED
from git_forge.layout import item_worktree
from git_forge.loop import agent_run
from git_forge.loop.agent_run import Ending, Step
from git_forge.loop.attempt import Attempt
from git_forge.loop.context import RunContext, commit, dirty
from git_forge.loop.errors import LoopError
from git_forge.loop.iteration import (
    AgentResult,
    agent_result,
    remove_prompt_files,
    start_agent,
)
from git_forge.loop.merging import (
    CommitFailed,
    Crashed,
    Finished,
    Job,
    Kind,
    Merged,
    MergeWorker,
    Noted,
    Result,
    Seen,
)
from git_forge.loop.outcomes import Outcome, deferral_reason
from git_forge.loop.progress import RunningAgent
from git_forge.loop.summary import LoopResult, loop_result
from git_forge.loop.worktree_prep import WorktreePreparer
from git_forge.owned import make_dir
from git_forge.reconcile import messages
from git_forge.reconcile.conflicts import clear_conflict, record_conflict
from git_forge.reconcile.merge_queue import Conflicted, Integrated, Refused, tidy
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.tree.errors import GitError
from git_forge.tree.worktrees import add_worktree, worktree_at

#: How long one look at the running agents waits for the first of them.
POLL_SECONDS = 0.05
#: How much of an agent's output one look reads (``--follow``).
READ_BYTES = 32 * 1024


@dataclass
class _Agent:
    """One running agent: its item, process, worktree and how far it was read."""

    item: Item
    handle: str
    tree: Path
    number: int
    started: float
    #: Reads the agent's stream (its receipt; a structured agent's final text).
    attempt: Attempt
    cursor: int = 0
    output_bytes: int = 0
    #: When its output last grew (``--idle-timeout``), and whether that ended it.
    heard_at: float = 0.0
    idle: bool = False


@dataclass
class _Run:
    """A parallel run's moving parts, beside the ``RunContext`` every loop carries."""

    run: RunContext
    worker: MergeWorker
    onto: str
    #: The loop branch's tip as the merges left it (new worktrees start there).
    tip: str
    number: int
    #: Makes the next item's worktree while the agents run (``worktree_prep``).
    preparer: WorktreePreparer
    running: dict[str, _Agent] = field(default_factory=dict)
    retry: list[str] = field(default_factory=list)
    #: Items marked done whose commit the merge thread has not integrated yet (with
    #: the item as it was before): not "done and merged", so nothing waits on them less.
    merging: dict[str, Item] = field(default_factory=dict)
    #: The items whose agents ran since the last job was handed to the merge thread.
    ran: set[str] = field(default_factory=set)
    pause: bool = False
    #: The run ends now (the circuit breaker, a limit no wait lifts, ``--on-limit stop``).
    ending: Ending | None = None
    #: ``--max-cost`` reached: nothing more starts; the run ends once the rest settle.
    spent: Ending | None = None

    @property
    def root(self) -> Path:
        return self.run.workspace.root

    @property
    def state_dir(self) -> Path:
        return self.run.workspace.state_dir


def run_parallel(run: RunContext) -> LoopResult | None:
    """Run items in parallel until nothing more can start and every agent has
    settled; a ``LoopResult`` when the run stopped or paused, ``None`` when it
    ran out of work or budget (the session then ends it as any run)."""
    if run.repo.branch_name is None or run.repo.is_unborn:
        raise LoopError("--parallel needs a branch with a commit to integrate onto; check "
                        "one out first", exit_code=LOOP_REFUSED)
    workspace = run.workspace
    onto = str(run.repo.branch_name)
    worker = MergeWorker(workspace.root, workspace.state_dir, workspace.backlog_file,
                         run.backlog_rel, onto)
    state = _Run(run, worker, onto, str(run.repo.head_commit_id()), run.state.iteration or 0,
                 WorktreePreparer(workspace.root))
    try:
        _check_ignored(state)
        while True:
            if run.stop():
                return _stopped(state)
            _apply_all(state, worker.results())
            for agent, manifest in _look(state, wait=bool(state.running)):
                del state.running[agent.item.id]
                _ended(state, agent, manifest)
                if state.ending is not None:
                    return _ended_run(state, state.ending)
            if not state.pause and state.spent is None:
                _start_what_can(state)
            if state.running:
                continue
            if worker.outstanding:  # nothing runs: wait for the merges (they may free work)
                _apply_all(state, worker.results(wait=POLL_SECONDS))
                continue
            if state.pause:
                return _paused(state)
            if state.spent is not None:
                return _ended_run(state, state.spent)
            break
    finally:
        worker.close()
        _drop_unused_worktrees(state)
    for item_id in state.retry:  # the budget ran out in the middle of an item's retries
        run.store.transition(item_id, "pending")
    _commit_bookkeeping(run)
    return None


def _check_ignored(state: _Run) -> None:
    """The worktrees live in the state dir, which git must ignore (``git forge init``
    writes the rule); say so once when it does not."""
    from git_forge.tree.worktrees import is_ignored

    holder = item_worktree(state.state_dir, "000").parent
    make_dir(holder)  # a pattern for directories matches only one
    if not is_ignored(state.root, holder):
        state.run.progress.note(f"{state.run.workspace.relative(holder)}/ is not ignored by "
                                "git: run git forge init to add the rule")


# --- starting ---------------------------------------------------------------------------------


def _start_what_can(state: _Run) -> None:
    """Fill the free slots: retries first (in their own worktrees), then the next
    selectable items — an item being merged counts as not done yet — while the
    iteration budget lasts."""
    run = state.run
    started = False
    while len(state.running) < run.options.parallel and state.number < run.options.iterations:
        state.spent = agent_run.over_budget(run)
        if state.spent is not None:  # --max-cost: the running agents finish, nothing starts
            return
        if state.retry:
            item = run.store.get(state.retry.pop(0))
        else:
            found = _next_item(state)
            if found is None:
                return
            item = found
        tree = _worktree_for(state, item)
        if tree is None:
            continue
        state.number += 1
        handle, attempt = start_agent(run, item, state.number, worktree=tree)
        started_at = time.monotonic()
        state.running[item.id] = _Agent(run.store.get(item.id), handle, tree, state.number,
                                        started_at, attempt, heard_at=started_at)
        state.ran.add(item.id)
        run.save(running_items=tuple(state.running))
        started = True
    if started and len(state.running) >= run.options.parallel:
        _prepare_next(state)


def _next_item(state: _Run) -> Item | None:
    """The item that starts next: the serial rule, an item being merged counted as
    not done yet."""
    items = state.run.store.items()
    if state.merging:
        items = [i.with_changes(status="in_progress") if i.id in state.merging else i
                 for i in items]
    return select_next(items)


def _prepare_next(state: _Run) -> None:
    """Have the worktree of the item that would start next made while the agents
    run, so that a freed slot starts it at once (``worktree_prep``)."""
    if state.retry or state.number >= state.run.options.iterations:
        return
    found = _next_item(state)
    if found is None or state.preparer.asked(found.id):
        return
    path = item_worktree(state.state_dir, found.id)
    if not path.exists():
        state.preparer.prepare(found.id, path, messages.item_branch(found.id), state.tip)


def _drop_unused_worktrees(state: _Run) -> None:
    """Remove the worktrees made for items that did not start: clean, on a branch the
    loop's branch contains (``tidy`` keeps any that is not)."""
    for made in state.preparer.close():
        with contextlib.suppress(GitError):
            tidy(state.root, state.state_dir, made.item_id, state.onto)


def _worktree_for(state: _Run, item: Item) -> Path | None:
    """The item's worktree: the one it has (a retry's), else a new one at the tip.
    What a run before left is cleared when nothing is in it; otherwise the item is
    blocked with the reason (``None``)."""
    path = item_worktree(state.state_dir, item.id)
    branch = messages.item_branch(item.id)
    made = state.preparer.take(item.id)
    if made is not None:  # made ahead, at the tip it knew then
        tip = made.tip
    else:
        if path.exists():
            existing = worktree_at(state.root, path)
            if existing is not None and not existing.missing:
                return path
        tip = state.tip
        try:
            add_worktree(state.root, path, branch, tip)
        except GitError:  # its branch, or a registration, left by a run before
            kept = tidy(state.root, state.state_dir, item.id, state.onto)
            if kept is not None:
                _block(state, item, f"its worktree or branch {branch} holds work from before: "
                       f"{kept}; see git forge reconcile", needs_human=True)
                return None
            add_worktree(state.root, path, branch, tip)
    state.run.journal.append("worktree_added", itemId=item.id, path=str(path), branch=branch,
                             commit=tip)
    return path


# --- watching ---------------------------------------------------------------------------------


def _look(state: _Run, *, wait: bool) -> list[tuple[_Agent, Manifest]]:
    """One look at every running agent: its output read (and followed), and those that
    ended with their manifests. ``wait``: up to ``POLL_SECONDS`` for the first one."""
    run = state.run
    ended: list[tuple[_Agent, Manifest]] = []
    idle_limit = run.options.idle_minutes * 60 if run.options.idle_minutes else None
    running = list(state.running.values())
    settled = set(run.supervisor.wait_any([agent.handle for agent in running],
                                          POLL_SECONDS if wait else 0))
    for agent in running:
        if agent.handle in settled:
            ended.append((agent, run.supervisor.wait(agent.handle)))
        heard = agent.output_bytes
        _read(run, agent)
        moment = time.monotonic()
        if agent.output_bytes != heard:
            agent.heard_at = moment
        elif idle_limit is not None and not agent.idle and moment - agent.heard_at >= idle_limit:
            agent.idle = True  # silent too long: end its tree, then the usual retry or deferral
            run.supervisor.stop(agent.handle, "terminate")
    now = time.monotonic()
    run.progress.agents([RunningAgent(a.item, now - a.started, a.output_bytes, a.tree)
                         for a in state.running.values()], tuple(state.merging))
    return ended


def _read(run: RunContext, agent: _Agent) -> None:
    try:
        rendered = run.supervisor.render(agent.handle, agent.cursor, READ_BYTES)
    except ProcessError as exc:
        if exc.code != "cursor_ahead":
            raise
        return  # bytes lost to a full disk: the storage error ends the run at its end
    if rendered.output:
        lines = rendered.output.rstrip("\n").split("\n")
        run.progress.output("".join(f"[{agent.item.id}] {line}\n" for line in lines))
    agent.cursor = rendered.next_cursor
    agent.output_bytes = rendered.total_bytes


# --- an agent ended: what its signal means (here), the git work (the merge thread) ------------


def _ended(state: _Run, agent: _Agent, manifest: Manifest) -> None:
    run = state.run
    run.save(current_item=next(iter(state.running), None), running_items=tuple(state.running))
    result = agent_result(run, agent.item, agent.handle, manifest, False, agent.attempt,
                          idle=agent.idle)
    remove_prompt_files(state.state_dir, agent.item.id)
    step = agent_run.after_attempt(run, agent.item, result)  # receipt, limit, breaker
    if isinstance(step, Ending):
        state.ending = step
        return
    if step is not Step.SETTLE:  # a limit waited out (RETRY), or a stop during the wait
        if step is Step.RETRY:  # the attempt does not count: the same worktree again
            state.number -= 1
            state.retry.append(agent.item.id)
        _hand_over(state, "contain", agent.item, agent.tree)
        return
    item = run.store.get(agent.item.id)
    kind = result.signal.kind
    if kind == "done":
        state.merging[item.id] = item
        run.store.transition(item.id, "done")  # done first: a crash now leaves forge/<id>
        _hand_over(state, "done", item, agent.tree)
    elif kind in ("blocked", "needs_human"):
        _block(state, item, result.signal.reason or "no reason given",
               needs_human=kind == "needs_human")
        _hand_over(state, "leftovers", item, agent.tree)
    else:
        _no_signal(state, item, agent, result)


def _hand_over(state: _Run, kind: Kind, item: Item, tree: Path) -> None:
    state.run.journal.sync()  # what led to the job is on disk before its git work is
    ran = tuple(sorted(state.ran | set(state.running)))
    state.worker.submit(Job(kind, item.id, item.title, tree, ran))
    state.ran = set(state.running)


def _no_signal(state: _Run, item: Item, agent: _Agent, result: AgentResult) -> None:
    """Retry in the same worktree while attempts are left, then defer."""
    run = state.run
    attempts = run.attempts[item.id] = run.attempts.get(item.id, 0) + 1
    why = result.what_happened
    if attempts <= run.options.retries:
        state.retry.append(item.id)
        run.save(last_signal="error")
        run.progress.finished(item, Outcome.RETRY.label,
                              f"{why}; no signal; attempt {attempts} of "
                              f"{run.options.retries + 1}")
        _hand_over(state, "contain", item, agent.tree)
        return
    _block(state, item, deferral_reason(why, attempts), deferred=True)
    _hand_over(state, "leftovers", item, agent.tree)


def _apply_all(state: _Run, results: list[Result]) -> None:
    for result in results:
        _apply(state, result)


def _apply(state: _Run, result: Result) -> None:
    """What a job of the merge thread came to, for the item, the journal and the progress."""
    run = state.run
    job = result.job
    if isinstance(result, Crashed):
        raise result.error
    if isinstance(result, Noted):
        run.progress.note(result.text)
    elif isinstance(result, Seen):
        escape = result.escape
        run.journal.append("agent_escaped", itemId=escape.item_id,
                           paths=[entry.path for entry in escape.entries],
                           headMoved=escape.head_moved is not None, ran=list(escape.ran))
        run.progress.note(f"{escape.reason} — left in the main checkout for git forge "
                          "reconcile")
        if result.names_own_item:
            _blame(state, job, escape.reason)
    elif isinstance(result, CommitFailed):
        _undone(state, job.item_id, f"the agent signalled done, but the commit in its "
                f"worktree failed: {result.reason}")
    elif isinstance(result, Merged):
        _merged(state, result)
    elif isinstance(result, Finished):
        state.merging.pop(job.item_id, None)


def _blame(state: _Run, job: Job, reason: str) -> None:
    """The item whose agent alone wrote outside its worktree: blocked with that reason."""
    run = state.run
    if job.item_id in state.retry:
        state.retry.remove(job.item_id)
    if job.item_id in state.merging:
        _undone(state, job.item_id, reason)
    elif run.store.get(job.item_id).status == "in_progress":
        _block(state, run.store.get(job.item_id), reason)


def _undone(state: _Run, item_id: str, reason: str, *, needs_human: bool = False,
            note: str | None = None) -> None:
    """A done item whose commit did not make it onto the branch: never left done."""
    before = state.merging.pop(item_id, None)
    if before is None:
        return
    state.run.store.replace(before)
    _block(state, before, reason, needs_human=needs_human, note=note)


def _merged(state: _Run, result: Merged) -> None:
    run = state.run
    outcome = result.outcome
    item_id = result.job.item_id
    if isinstance(outcome, Integrated):
        state.merging.pop(item_id, None)
        state.tip = outcome.tip
        commits = outcome.commits or (result.commit,)
        run.journal.append("item_integrated", itemId=item_id, commits=list(outcome.commits),
                           tip=outcome.tip)
        run.journal.append("item_completed", itemId=item_id, title=result.job.title,
                           commit=commits[-1])
        run.state = run.state._replace(completed_items=(*run.state.completed_items, item_id))
        clear_conflict(state.state_dir, item_id)  # a retried conflict landed
        if outcome.kept:
            run.progress.note(f"item {item_id}: its worktree is kept: {outcome.kept}")
        run.save(last_signal="clean")
        run.progress.finished(run.store.get(item_id), Outcome.DONE.label, commits[-1][:12])
    elif isinstance(outcome, Conflicted):
        run.journal.append("merge_conflict", itemId=item_id, paths=list(outcome.paths),
                           collidedWith=list(outcome.collided_with), commit=outcome.commit)
        # the record, not the reason's words, makes it a conflict question for recover
        record_conflict(state.state_dir, outcome, state.onto, result.job.tree)
        _undone(state, item_id, conflict_reason(outcome), needs_human=True)
    else:
        assert isinstance(outcome, Refused)
        _undone(state, item_id, f"the agent signalled done, but its commit could not be "
                f"integrated: {outcome.reason}")


def conflict_reason(conflict: Conflicted) -> str:
    """A conflict's ``needsHuman`` reason: what collided, and where its two answers
    are (recover offers them; nothing here drops any work)."""
    return (f"{conflict.reason}. Retry it on the new tip or resolve it by hand: "
            "git forge recover")


def _block(state: _Run, item: Item, reason: str, *, needs_human: bool = False,
           deferred: bool = False, note: str | None = None) -> Outcome:
    """Mark the item blocked (its worktree is the merge thread's to clear or keep)."""
    run = state.run
    fields: dict[str, Any] = {}
    if note is not None:
        fields["notes"] = "\n".join(filter(None, [run.store.get(item.id).notes, note]))
    run.store.transition(item.id, "blocked", blocked_reason=reason, needs_human=needs_human,
                         deferred=deferred, **fields)
    current = run.state
    if needs_human:
        outcome = Outcome.NEEDS_HUMAN
        run.journal.append("needs_human", None, itemId=item.id, reason=reason)
        run.state = current._replace(needs_human_items=(*current.needs_human_items, item.id))
        if run.options.pause_on_needs_human:
            state.pause = True
    else:
        outcome = Outcome.DEFERRED if deferred else Outcome.BLOCKED
        run.journal.append("item_blocked", None, itemId=item.id, reason=reason)
        run.state = (current._replace(deferred_items=(*current.deferred_items, item.id))
                     if deferred else
                     current._replace(blocked_items=(*current.blocked_items, item.id)))
    run.save(last_signal="error" if deferred else outcome.value)
    run.progress.finished(item, outcome.label, reason)
    return outcome


# --- ending -----------------------------------------------------------------------------------


def _commit_bookkeeping(run: RunContext) -> None:
    """The statuses this run wrote, committed as one bookkeeping commit (the items'
    work is on the branch already, a commit each)."""
    if run.backlog_rel not in dirty(run):
        return
    current = run.state
    message = messages.items_settled([
        ("done", list(current.completed_items)),
        ("need a human" if len(current.needs_human_items) > 1 else "needs a human",
         list(current.needs_human_items)),
        ("blocked", list(current.blocked_items)),
        ("deferred", list(current.deferred_items)),
    ])
    commit(run, [run.backlog_rel], message)


def _wind_down(state: _Run) -> None:
    """How a parallel run ends early: every agent ends; the agents that had ended
    are still merged (their work is done); each running item goes back to pending;
    the worktrees stay."""
    run = state.run
    try:
        run.supervisor.shutdown()
    except ProcessError as exc:
        run.progress.note(f"shutdown: {exc}")
    run.save(running_items=())
    while state.worker.outstanding:
        _apply_all(state, state.worker.results(wait=POLL_SECONDS))
    for item in run.store.items():  # running, ended but not settled, or between retries
        if item.status == "in_progress":
            run.store.transition(item.id, "pending")
    _commit_bookkeeping(run)
    remove_prompt_files(state.state_dir)


def _stopped(state: _Run) -> LoopResult:
    """A stop request or signal (see ``_wind_down``)."""
    run = state.run
    _wind_down(state)
    run.save(status="stopped", current_item=None)
    run.journal.append("loop_cancelled", itemId=None, running=sorted(state.running))
    return loop_result(run.store.items(), run.state, LOOP_STOPPED, "stopped",
                       "stopped; the agents' worktrees are kept for git forge reconcile")


def _ended_run(state: _Run, ending: Ending) -> LoopResult:
    """The run ends at the circuit breaker, a usage limit or ``--max-cost``: wound
    down as a stop is, with the ending's code, status and message."""
    run = state.run
    _wind_down(state)
    agent_run.record_ending(run, ending)
    return loop_result(run.store.items(), run.state, ending.code, ending.status,
                       ending.message)


def _paused(state: _Run) -> LoopResult:
    run = state.run
    for item_id in state.retry:
        run.store.transition(item_id, "pending")
    _commit_bookkeeping(run)
    run.save(status="paused_human", current_item=None, running_items=())
    run.journal.append("loop_paused", itemId=run.state.needs_human_items[-1])
    return loop_result(run.store.items(), run.state, LOOP_PAUSED, "paused_human",
                       "paused for a human decision: run git forge recover")

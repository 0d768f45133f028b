"""Items in parallel (``loop run --parallel N``): up to N agents at once, each in a
linked worktree of its own, each done item integrated onto the loop's branch as
it finishes.

* **Selection** is the serial loop's (``select_next``): a pending item whose
  in-backlog dependencies are all done. Here an item is marked done only as its
  commit is integrated, so "done" means "done and merged": a dependent item
  starts on a tip that holds its dependencies' work.
* **Each item** gets ``{stateDir}/worktrees/<id>`` on branch ``forge/<id>`` at the
  loop branch's current tip; its agent runs there (``FORGE_WORKTREE`` names it).
  The supervisor's process quota is N.
* **Done**: the worktree's changes are committed there (``[forge] <id>: <title>``,
  exactly its paths, never backlog.json or state files), then the merge queue
  replays that commit onto the tip and fast-forwards the branch (completion
  order: the loop integrates each item the moment it finishes). A conflict
  changes nothing: the item is blocked ``needsHuman`` with the paths and the
  items it collided with, and its branch and worktree are kept. The worktree
  is removed only once the commit is integrated and the tree clean.
* **Blocked, needs-human, deferred**: the agent's leftovers are stashed from its
  worktree (``forge: abandoned work from item <id>``, the one stash list), then
  the emptied worktree is removed. A retry (no signal, attempts left) reruns the
  agent in the same worktree.
* **Containment**: after every agent that ends, the main checkout is compared
  with how the loop last left it; a change is reported as ``an agent wrote
  outside its worktree`` (the item blocked when it ran alone), never committed.
* **Bookkeeping**: the items' statuses are written to backlog.json as they
  change and committed once, when the run ends, stops or pauses
  (``[forge] backlog: 001, 003 done; …``), so each item is one commit on the
  branch. A crash leaves a valid backlog.json, which the next run commits first.
* **Stop** (``loop stop``, a signal): every agent ends as in a serial run, each
  running item goes back to pending, and every worktree stays for reconcile.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from git_forge.backlog.item import Item
from git_forge.backlog.model import select_next
from git_forge.exit_codes import LOOP_PAUSED, LOOP_REFUSED, LOOP_STOPPED
from git_forge.layout import item_worktree
from git_forge.loop.containment import Baseline, Escape, escaped, take_baseline
from git_forge.loop.context import RunContext, commit, dirty
from git_forge.loop.errors import LoopError
from git_forge.loop.iteration import (
    AgentResult,
    agent_result,
    remove_prompt_files,
    start_agent,
)
from git_forge.loop.outcomes import Outcome, deferral_reason
from git_forge.loop.progress import RunningAgent
from git_forge.loop.summary import LoopResult, loop_result
from git_forge.reconcile import messages
from git_forge.reconcile.item_trees import tree_changes
from git_forge.reconcile.merge_queue import Conflicted, Integrated, MergeQueue, Refused, tidy
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.tree.commit import commit_paths
from git_forge.tree.errors import GitError
from git_forge.tree.repo import open_repo
from git_forge.tree.stash import stash_paths
from git_forge.tree.worktree import refusals
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
    cursor: int = 0
    output_bytes: int = 0


class _Run:
    """A parallel run's moving parts, beside the ``RunContext`` every loop carries."""

    def __init__(self, run: RunContext) -> None:
        self.run = run
        workspace = run.workspace
        self.root, self.state_dir = workspace.root, workspace.state_dir
        self.onto = str(run.repo.branch_name)
        #: The loop branch's tip, as the loop last moved it (new worktrees start there).
        self.tip = str(run.repo.head_commit_id())
        self.queue = MergeQueue(self.root, self.state_dir, self.onto)
        self.running: dict[str, _Agent] = {}
        self.retry: list[str] = []
        self.number = run.state.iteration or 0
        self.baseline = self._baseline()
        self.ran: set[str] = set()
        self.pause = False
        #: Agents that ended, oldest first, waiting for the loop to act on them.
        self.ended: deque[tuple[_Agent, Manifest]] = deque()

    def _baseline(self) -> Baseline:
        workspace = self.run.workspace
        return take_baseline(self.root, workspace.state_dir, workspace.backlog_file,
                             ignore=(self.run.backlog_rel,))


def run_parallel(run: RunContext) -> LoopResult | None:
    """Run items in parallel until nothing more can start and every agent has
    settled; a ``LoopResult`` when the run stopped or paused, ``None`` when it
    ran out of work or budget (the session then ends it as any run)."""
    if run.repo.branch_name is None or run.repo.is_unborn:
        raise LoopError("--parallel needs a branch with a commit to integrate onto; check "
                        "one out first", exit_code=LOOP_REFUSED)
    state = _Run(run)
    _check_ignored(state)
    while True:
        if run.stop():
            return _stopped(state)
        _fill(state, wait=not state.ended)
        if state.ended:
            _settle(state, *state.ended.popleft())
        elif not state.running:
            break
        if state.pause and not state.running and not state.ended:
            return _paused(state)
    for item_id in state.retry:  # the budget ran out in the middle of an item's retries
        run.store.transition(item_id, "pending")
    _commit_bookkeeping(run)
    return None


def _check_ignored(state: _Run) -> None:
    """The worktrees live in the state dir, which git must ignore (``git forge init``
    writes the rule); say so once when it does not."""
    from git_forge.tree.worktrees import is_ignored

    holder = item_worktree(state.state_dir, "000").parent
    holder.mkdir(parents=True, exist_ok=True)  # a pattern for directories matches only one
    if not is_ignored(state.root, holder):
        state.run.progress.note(f"{state.run.workspace.relative(holder)}/ is not ignored by "
                                "git: run git forge init to add the rule")


# --- starting ---------------------------------------------------------------------------------


def _fill(state: _Run, *, wait: bool = False) -> None:
    """Take in the agents that ended and fill their slots. Called between the steps of
    the merge work too, so that no slot waits for it: the merge queue is one item at
    a time, the agents are not."""
    for agent, manifest in _look(state, wait=wait):
        del state.running[agent.item.id]
        state.ended.append((agent, manifest))
    if not state.pause:
        _start_what_can(state)


def _start_what_can(state: _Run) -> None:
    """Fill the free slots: retries first (in their own worktrees), then the next
    selectable items, while the iteration budget lasts."""
    run = state.run
    while len(state.running) < run.options.parallel and state.number < run.options.iterations:
        if state.retry:
            item = run.store.get(state.retry.pop(0))
        else:
            found = select_next(run.store.items())
            if found is None:
                return
            item = found
        tree = _worktree_for(state, item)
        if tree is None:
            continue
        state.number += 1
        handle = start_agent(run, item, state.number, worktree=tree)
        state.running[item.id] = _Agent(run.store.get(item.id), handle, tree, state.number,
                                        time.monotonic())
        state.ran.add(item.id)


def _worktree_for(state: _Run, item: Item) -> Path | None:
    """The item's worktree: the one it has (a retry, or what a run before left clean),
    else a new one at the tip. ``None`` when its branch holds commits not on the
    loop's branch and no worktree: the item is blocked with the commands."""
    path = item_worktree(state.state_dir, item.id)
    branch = messages.item_branch(item.id)
    if path.exists():  # a retry's, or what a run before left
        existing = worktree_at(state.root, path)
        if existing is not None and not existing.missing:
            return path
    tip = state.tip
    try:
        add_worktree(state.root, path, branch, tip)
    except GitError:  # its branch, or a registration, left by a run before
        kept = tidy(state.root, state.state_dir, item.id, state.onto)
        if kept is not None:
            _block(state, item, None, f"its worktree or branch {branch} holds work from "
                   f"before: {kept}; see git forge reconcile", needs_human=True)
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
    for index, agent in enumerate(list(state.running.values())):
        try:
            manifest = run.supervisor.wait(agent.handle,
                                           timeout=POLL_SECONDS if wait and not index else 0)
            ended.append((agent, manifest))
        except ProcessError as exc:
            if exc.code != "wait_timeout":
                raise
        _read(run, agent)
    now = time.monotonic()
    run.progress.agents([RunningAgent(a.item, now - a.started, a.output_bytes, a.tree)
                         for a in state.running.values()], state.queue.waiting)
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


# --- settling ---------------------------------------------------------------------------------


def _settle(state: _Run, agent: _Agent, manifest: Manifest) -> None:
    """The agent ended: contain, then act on its signal."""
    run = state.run
    result = agent_result(run, agent.item, agent.handle, manifest, False)
    remove_prompt_files(state.state_dir, agent.item.id)
    escape = _contain(state)
    item = run.store.get(agent.item.id)
    if escape is not None and escape.item_id == item.id:
        _block(state, item, agent, escape.reason)
    elif result.signal.kind == "done":
        _done(state, item, agent)
    elif result.signal.kind in ("blocked", "needs_human"):
        reason = result.signal.reason or "no reason given"
        outcome = _block(state, item, agent, reason,
                         needs_human=result.signal.kind == "needs_human")
        if outcome is Outcome.NEEDS_HUMAN and run.options.pause_on_needs_human:
            state.pause = True
    else:
        _no_signal(state, item, agent, result)
    if escape is not None:  # reported once: what follows is measured from here
        state.baseline = state._baseline()
    state.ran = set(state.running)
    run.save(current_item=next(iter(state.running), None))


def _contain(state: _Run) -> Escape | None:
    """Report a change an agent made in the main checkout (naming the item when it
    was the only one that ran since the loop last changed the checkout itself)."""
    run = state.run
    workspace = run.workspace
    found = escaped(state.baseline, state.root, workspace.state_dir, workspace.backlog_file,
                    sorted(state.ran), ignore=(run.backlog_rel,))
    if found is None:
        return None
    run.journal.append("agent_escaped", itemId=found.item_id,
                       paths=[entry.path for entry in found.entries],
                       headMoved=found.head_moved is not None, ran=list(found.ran))
    run.progress.note(f"{found.reason} — left in the main checkout for git forge reconcile")
    return found


def _done(state: _Run, item: Item, agent: _Agent) -> None:
    """Commit the worktree's changes there, mark the item done, integrate it."""
    run = state.run
    try:
        commit_id = _commit_in_worktree(state, item, agent.tree)
    except GitError as exc:
        _block(state, item, None, f"the agent signalled done, but the commit in its "
               f"worktree failed: {exc.message}")
        return
    _fill(state)  # a slot freed meanwhile is filled before the merge
    before = run.store.get(item.id)
    run.store.transition(item.id, "done")  # done first: a crash now leaves forge/<id> listed
    state.queue.push(item.id)
    outcome = state.queue.next()
    if isinstance(outcome, Integrated):
        # a fast-forward moves only clean paths (a dirty one in the way refuses it)
        state.baseline = replace(state.baseline, head=outcome.tip)
        state.tip = outcome.tip
        commits = outcome.commits or (commit_id,)
        run.journal.append("item_integrated", itemId=item.id, commits=list(outcome.commits),
                           tip=outcome.tip)
        run.journal.append("item_completed", itemId=item.id, title=item.title,
                           commit=commits[-1])
        run.state = replace(run.state, completed_items=(*run.state.completed_items, item.id))
        if outcome.kept:
            run.progress.note(f"item {item.id}: its worktree is kept: {outcome.kept}")
        run.save(last_signal="clean")
        run.progress.finished(item, Outcome.DONE.label, commits[-1][:12])
        return
    run.store.replace(before)  # never left done without its commit on the branch
    if isinstance(outcome, Conflicted):
        run.journal.append("merge_conflict", itemId=item.id, paths=list(outcome.paths),
                           collidedWith=list(outcome.collided_with), commit=outcome.commit)
        note = (f"a previous attempt's commit {outcome.commit[:12]} conflicted with the "
                f"branch in {', '.join(outcome.paths)}; start from the current tip")
        _block(state, item, None, conflict_reason(outcome, state.onto, agent.tree),
               needs_human=True, note=note)
    else:
        assert isinstance(outcome, Refused)
        _block(state, item, None, f"the agent signalled done, but its commit could not be "
               f"integrated: {outcome.reason}")


def conflict_reason(conflict: Conflicted, onto: str, tree: Path) -> str:
    """A conflict as a question with its two answers: retry on the new tip, or
    resolve by hand."""
    branch = messages.item_branch(conflict.item_id)
    return (f"{conflict.reason}. Retry on the new tip: drop it (git worktree remove --force "
            f"{tree} && git branch -D {branch}) and answer; or resolve by hand: "
            f"git -C {tree} rebase {onto}, then git forge reconcile --integrate "
            f"{conflict.item_id}")


def _commit_in_worktree(state: _Run, item: Item, tree: Path) -> str:
    """Commit exactly the agent's changes in its worktree (none is an empty commit, as
    a serial done item with no work has one); what git-forge cannot commit as git
    would stays there, and so does the worktree."""
    run = state.run
    workspace = run.workspace
    changes = tree_changes(state.root, tree, workspace.state_dir, workspace.backlog_file)
    paths = [entry.path.rstrip("/") for entry in changes if entry.path != run.backlog_rel]
    repo = open_repo(tree)
    refused = dict(refusals(repo, paths, "commit")) if paths else {}
    for path, why in refused.items():
        run.progress.note(f"item {item.id}: {path} left in its worktree, not committed: {why}")
    run.journal.sync()
    return commit_paths(repo, [p for p in paths if p not in refused],
                        messages.item_done(item.id, item.title), allow_empty=True)


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
        return
    _block(state, item, agent, deferral_reason(why, attempts), deferred=True)


def _block(state: _Run, item: Item, agent: _Agent | None, reason: str, *,
           needs_human: bool = False, deferred: bool = False,
           note: str | None = None) -> Outcome:
    """Mark the item blocked. With ``agent``: its leftovers are stashed from its
    worktree first, and the worktree removed when nothing is left in it; without,
    the worktree and branch are kept as they are (a conflict, a failed commit)."""
    run = state.run
    if agent is not None:
        _stash_leftovers(state, item, agent.tree)
    fields = {}
    if note is not None:
        fields["notes"] = "\n".join(filter(None, [run.store.get(item.id).notes, note]))
    run.store.transition(item.id, "blocked", blocked_reason=reason, needs_human=needs_human,
                         deferred=deferred, **fields)
    current = run.state
    if needs_human:
        outcome = Outcome.NEEDS_HUMAN
        run.journal.append("needs_human", None, itemId=item.id, reason=reason)
        run.state = replace(current, needs_human_items=(*current.needs_human_items, item.id))
    else:
        outcome = Outcome.DEFERRED if deferred else Outcome.BLOCKED
        run.journal.append("item_blocked", None, itemId=item.id, reason=reason)
        run.state = (replace(current, deferred_items=(*current.deferred_items, item.id))
                     if deferred else
                     replace(current, blocked_items=(*current.blocked_items, item.id)))
    run.save(last_signal="error" if deferred else outcome.value)
    run.progress.finished(item, outcome.label, reason)
    return outcome


def _stash_leftovers(state: _Run, item: Item, tree: Path) -> None:
    """The agent's leftovers into the stash list, then its worktree and branch away
    when that left them holding nothing."""
    run = state.run
    workspace = run.workspace
    try:
        changes = tree_changes(state.root, tree, workspace.state_dir, workspace.backlog_file)
        paths = [e.path.rstrip("/") for e in changes if e.path != run.backlog_rel]
        if paths:
            repo = open_repo(tree)
            stashable = [p for p in paths if p not in dict(refusals(repo, paths, "stash"))]
            if stashable:
                stash_paths(repo, stashable, messages.abandoned_work(item.id))
                run.progress.note(f"item {item.id}: its leftover changes were stashed "
                                  f"({messages.abandoned_work(item.id)})")
    except GitError as exc:
        run.progress.note(f"item {item.id}: its leftover changes could not be stashed: "
                          f"{exc.message}")
    kept = tidy(state.root, state.state_dir, item.id, state.onto)
    if kept is not None:
        run.progress.note(f"item {item.id}: its worktree is kept for git forge reconcile: "
                          f"{kept}")


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


def _stopped(state: _Run) -> LoopResult:
    """Every agent ends; each running item goes back to pending; the worktrees stay."""
    run = state.run
    try:
        run.supervisor.shutdown()
    except ProcessError as exc:
        run.progress.note(f"shutdown: {exc}")
    for item in run.store.items():  # running, ended but not settled, or between retries
        if item.status == "in_progress":
            run.store.transition(item.id, "pending")
    _commit_bookkeeping(run)
    remove_prompt_files(state.state_dir)
    run.save(status="stopped", current_item=None)
    run.journal.append("loop_cancelled", itemId=None, running=sorted(state.running))
    return loop_result(run.store.items(), run.state, LOOP_STOPPED, "stopped",
                       "stopped; the agents' worktrees are kept for git forge reconcile")


def _paused(state: _Run) -> LoopResult:
    run = state.run
    for item_id in state.retry:
        run.store.transition(item_id, "pending")
    _commit_bookkeeping(run)
    run.save(status="paused_human", current_item=None)
    run.journal.append("loop_paused", itemId=run.state.needs_human_items[-1])
    return loop_result(run.store.items(), run.state, LOOP_PAUSED, "paused_human",
                       "paused for a human decision: run git forge recover")

"""Where an item's agent runs, and the git work of its outcome there: a value the
engine (``slots``) is given, never a second loop.

* ``MainCheckout`` — one agent at a time, in the main checkout (a serial run,
  ``--parallel 1``). A done item is one commit of its work and its backlog mark
  on the loop's branch; a blocked item's leftovers are kept as its abandoned
  work and its mark committed alone (``[forge] <id> blocked: …``). All of it
  happens at once.
* ``Worktrees`` — N agents at once, each in a linked worktree of its own
  (``{stateDir}/worktrees/<id>`` on branch ``forge/<id>``, at the loop branch's
  tip as the item starts: made ahead — one for each slot's next item — moved to
  the tip as the slots free up, and checked at its start against that tip and the
  item's dependencies).
  The git work of an ended agent is the merge thread's (``merging``), in the order
  the agents ended: a done item's work committed there and integrated onto the
  loop's branch, a blocked item's leftovers kept as its abandoned work from its
  worktree, and the containment checks (``containment``) of the main checkout
  and of that worktree.
  Its results come back through ``results``. The items' statuses are committed
  once, as the run ends, stops or pauses (``[forge] backlog: 001, 003 done; …``),
  so each item is one commit on the branch.

Both commit only to the branch the run started on (``context.commit``), and both
keep an item's abandoned work — what its agent left when the item is blocked or
deferred, when the attempt is set aside before a retry, or when the run ends
between its attempts — under ``refs/forge/abandoned/<id>/<time>``
(``tree.stash.keep_paths``: the commit ``git stash create`` makes), never on the
user's stash list.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from git_forge.backlog.item import Item
from git_forge.exit_codes import LOOP_REFUSED
from git_forge.layout import item_worktree
from git_forge.loop.containment import Escape, Window
from git_forge.loop.context import (
    RunContext,
    actionable,
    changed_marks,
    commit,
    commit_others,
    dirty,
    on_disk,
)
from git_forge.loop.errors import LoopError
from git_forge.loop.merging import (
    CommitFailed,
    Crashed,
    Finished,
    Job,
    Kind,
    Merged,
    MergeWorker,
    Noted,
    Seen,
    kept_note,
)
from git_forge.loop.summary import LeftPathJSON
from git_forge.loop.verify import (
    STOPPED_CHECK,
    baseline_retaker,
    integration_check,
    tip_baseline,
)
from git_forge.loop.worktree_prep import WorktreePreparer
from git_forge.owned import make_dir
from git_forge.reconcile import messages
from git_forge.reconcile.conflicts import RECOVER_ANSWERS, record_conflict
from git_forge.reconcile.merge_queue import Conflicted, Integrated, Unverified, tidy
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import ListingMeanwhile, porcelain
from git_forge.tree.porcelain import StatusEntry, quote_path
from git_forge.tree.stash import keep_paths
from git_forge.tree.worktrees import (
    add_worktree,
    is_ignored,
    move_to,
    worktree_at,
)


@dataclass(frozen=True)
class Landed:
    """A done item's work is on the loop's branch: ``commit`` is its last commit
    there; ``integrated``: how the merge queue put it there (items in worktrees).
    ``left``: its agent's changes that were not committed (each with why), which
    stay in the tree ``left_in``."""

    item_id: str
    commit: str
    integrated: Integrated | None = None
    left: tuple[LeftPathJSON, ...] = ()
    left_in: str = ""


@dataclass(frozen=True)
class NotLanded:
    """A done item's work did not reach the loop's branch, and why. ``cleared``: the
    place has dealt with what it left (kept in its worktree); else the outcome
    clears it as a blocked item's."""

    item_id: str
    reason: str
    needs_human: bool = False
    cleared: bool = False
    #: The run stopped before the work could be checked on the new tip
    #: (``loop.verifyOnIntegrate``): no outcome; the item goes back to pending.
    stopped: bool = False


Landing = Landed | NotLanded


@dataclass(frozen=True)
class Note:
    """Something the operator is told about an item (a path left, work kept)."""

    item_id: str
    text: str


@dataclass(frozen=True)
class Escaped:
    """An agent wrote outside its worktree; ``item_id`` is the item whose git work
    found it (``own``: the escape is that item's own agent's)."""

    item_id: str
    escape: Escape

    @property
    def own(self) -> bool:
        return self.escape.into is None and self.escape.item_id == self.item_id


#: What a place's git work came to, for the engine to act on.
Event = Landing | Note | Escaped
#: The items that would start next, in the order they would, as slots free up: at
#: most the number asked for.
Coming = Callable[[int], list[Item]]


class Unavailable(Exception):
    """The item cannot run where the place would put it; the reason blocks it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Place(Protocol):
    """Where agents run, and the git work of their outcomes there."""

    #: How many agents run at once.
    slots: int
    #: A stopped run's last words: where the agents' work is.
    stopped: str
    #: Where the agents' work stays when the run stops (the end of a sentence).
    kept: str

    def take(self, item: Item) -> Path | None:
        """Where ``item``'s agent runs: a worktree, or ``None`` for the main checkout."""
        ...

    def ahead(self, coming: Coming, free: int) -> None:
        """Prepare, beside the loop, where the items that would start next run
        (``coming`` names them, asked only by a place that prepares): those about to
        take the ``free`` slots, brought to the tip now, and those that take the slots
        when the running agents end."""
        ...

    def began(self, item_id: str) -> None:
        """An attempt of ``item_id``'s agent is about to start."""
        ...

    def ended(self, item_id: str) -> None:
        """That attempt ended."""
        ...

    def listing(self) -> ListingMeanwhile | None:
        """git listing the tree an agent ended in, started now, when the outcome needs it."""
        ...

    def land(self, item: Item, listed: list[StatusEntry] | None) -> Landing | None:
        """Put done ``item``'s work on the loop's branch (``None``: under way)."""
        ...

    def clear(self, item: Item, listed: list[StatusEntry] | None, *,
              again: bool = False) -> list[str]:
        """An item's leftovers kept as its abandoned work, out of the way: the paths
        left where they were (they cannot be kept as git would). ``again``: the item
        runs again where it ran (its attempt set aside for a retry)."""
        ...

    def ready(self, item_id: str) -> bool:
        """Whether ``item_id`` may start again (its attempt set aside)."""
        ...

    def contain(self, item: Item) -> None:
        """``item``'s attempt ended with no outcome yet (a retry follows): check where
        it wrote all the same."""
        ...

    def record(self, item_id: str, message: str) -> None:
        """The backlog's change for ``item_id``'s outcome, recorded (``message``: its
        commit)."""
        ...

    @property
    def outstanding(self) -> int:
        """Git work under way."""
        ...

    def events(self, wait: float = 0.0) -> list[Event]:
        """What the git work under way came to since the last call."""
        ...

    def finish(self) -> None:
        """The run ends, stops or pauses: what is left to record, recorded."""
        ...

    def close(self, *, cancel: bool = False) -> None:
        """No more work (``cancel``: the work not started yet is not done)."""
        ...


# --- the main checkout --------------------------------------------------------------------


class MainCheckout:
    """One agent at a time, in the main checkout; every outcome's git work at once."""

    slots = 1
    stopped = "stopped; any work the agent left is in the tree for git forge reconcile"
    kept = "the agent's work is left in the tree"

    def __init__(self, run: RunContext) -> None:
        self.run = run

    def take(self, item: Item) -> Path | None:
        return None

    def ahead(self, coming: Coming, free: int) -> None:
        return None

    def began(self, item_id: str) -> None:
        return None

    def ended(self, item_id: str) -> None:
        return None

    def listing(self) -> ListingMeanwhile | None:
        """git lists the tree on the other core while the supervisor records the end
        (``None`` when git cannot start: the outcome lists again, and reports that).
        Not in a sandbox: what its agent must not leave in the git directory is removed
        as the supervisor records the end, and git must not read the tree before."""
        if self.run.sandbox is not None:
            return None
        try:
            return ListingMeanwhile(self.run.repo)
        except GitError:
            return None

    def land(self, item: Item, listed: list[StatusEntry] | None) -> Landing:
        """One commit of the item's work and its done mark. A changed path git-forge
        cannot commit as git would stays in the tree (see ``actionable``)."""
        run = self.run
        commit_others(run, item.id)
        entries = porcelain(run.repo) if listed is None else listed
        changed = dirty(run, entries)
        if run.backlog_rel not in changed:  # the listing may predate the done mark
            changed.append(run.backlog_rel)
        paths = actionable(run, item.id, changed, "commit")
        try:
            made = commit(run, paths, messages.item_done(item.id, item.title), allow_empty=True)
        except GitError as exc:
            return NotLanded(item.id, "the agent signalled done, but the commit failed: "
                             f"{exc.message}")
        return Landed(item.id, made, left=tuple(self._left(changed, paths, entries)),
                      left_in=str(run.workspace.root))

    def _left(self, changed: list[str], committed: list[str],
              entries: list[StatusEntry]) -> list[LeftPathJSON]:
        """The item's changes not committed: paths it cannot commit as git would, and
        paths the run leaves alone that changed during its attempt and are still
        changed — those that had changes before the run (``--force``) and those an
        earlier item left uncommitted."""
        run = self.run
        root = run.workspace.root
        still = {entry.path.rstrip("/") for entry in entries}
        left = [LeftPathJSON(path=path, why=run.kept_back[path])
                for path in changed if path not in committed]
        left += [LeftPathJSON(path=path, why="it had changes before the run (--force) and "
                              "changed again during this attempt")
                 for path in changed_marks(root, run.preexisting) if path in still]
        left += [LeftPathJSON(path=path, why="an earlier item left it uncommitted "
                              f"({run.kept_back[path]}) and it changed again")
                 for path in changed_marks(root, run.kept_marks)
                 if path in still and path not in changed]
        return left

    def clear(self, item: Item, listed: list[StatusEntry] | None, *,
              again: bool = False) -> list[str]:
        """The leftovers kept as the item's abandoned work (only those paths, under
        ``refs/forge/abandoned/<id>/<time>``), at once; what cannot be kept as git
        would stays, kept back for the run."""
        run = self.run
        item_id = item.id
        edited = changed_marks(run.workspace.root, run.preexisting)
        if edited:
            run.progress.note(f"item {item_id}: {', '.join(quote_path(path) for path in edited)}"
                              ", which had changes before the run (--force), changed during "
                              "its attempt: left as they are")
        leftovers = [path for path in dirty(run, listed) if path != run.backlog_rel]
        keepable = actionable(run, item_id, leftovers, "stash")
        if keepable:
            try:
                kept = keep_paths(run.repo, keepable, messages.abandoned_work(item_id),
                                  messages.abandoned_refs(item_id))
                run.progress.note(kept_note(item_id, kept.ref))
            except GitError as exc:
                for path in keepable:
                    run.kept_back[path] = f"keeping it failed: {exc.message}"
                run.progress.note(f"item {item_id}: its leftover changes could not be "
                                  f"kept and stay in the tree: {exc.message}")
        return [path for path in leftovers if path in run.kept_back]

    def ready(self, item_id: str) -> bool:
        return True

    def contain(self, item: Item) -> None:
        return None

    def record(self, item_id: str, message: str) -> None:
        commit_others(self.run, item_id)
        commit(self.run, [self.run.backlog_rel], message, allow_empty=True)

    @property
    def outstanding(self) -> int:
        return 0

    def events(self, wait: float = 0.0) -> list[Event]:
        return []

    def finish(self) -> None:
        return None

    def close(self, *, cancel: bool = False) -> None:
        return None


# --- linked worktrees ---------------------------------------------------------------------


@dataclass
class _Tree:
    """An item's worktree in this run, and its agent's attempts."""

    path: Path
    windows: list[Window] = field(default_factory=list)


class Worktrees:
    """N agents at once, each in its item's worktree; the git work on the merge thread."""

    stopped = "stopped; the agents' worktrees are kept for git forge reconcile"
    kept = "the agents' worktrees are kept"

    def __init__(self, run: RunContext, slots: int) -> None:
        if run.branch is None or run.repo.is_unborn:
            raise LoopError("--parallel needs a branch with a commit to integrate onto; check "
                            "one out first", exit_code=LOOP_REFUSED)
        self.run, self.slots, self.onto = run, slots, run.branch
        workspace = run.workspace
        self.root, self.state_dir = workspace.root, workspace.state_dir
        #: Each item's worktree, from its start until its git work is handed over.
        self.trees: dict[str, _Tree] = {}
        #: Attempts of items whose worktrees are gone (still witnesses of who ran when).
        self.past: list[Window] = []
        #: Items whose attempt the merge thread is setting aside before their retry.
        self.setting_aside: set[str] = set()
        self._check_ignored()
        # what the merges came to wakes the loop's watch of the agents: acted on at once
        # what led to the jobs is on disk before their git work is, made so on that thread
        self.worker = MergeWorker(workspace.root, workspace.state_dir, workspace.backlog_file,
                                  run.backlog_rel, self.onto, told=run.supervisor.wake,
                                  before=lambda: on_disk(run), check=integration_check(run),
                                  retake=baseline_retaker(run))
        self.preparer = WorktreePreparer(workspace.root)

    def _tip(self) -> str:
        """The loop branch's tip now: the merges' and any commit of the user's."""
        tip = self.run.repo.branch_tip(self.onto)
        if tip is None:
            raise GitError(f"no branch {self.onto}")
        return tip

    def _check_ignored(self) -> None:
        """The worktrees live in the state dir, which git must ignore (``git forge init``
        writes the rule); say so once when it does not."""
        holder = item_worktree(self.state_dir, "000").parent
        make_dir(holder)  # a pattern for directories matches only one
        if not is_ignored(self.root, holder):
            self.run.progress.note(f"{self.run.workspace.relative(holder)}/ is not ignored "
                                   "by git: run git forge init to add the rule")

    # --- where an agent runs -------------------------------------------------------------

    def take(self, item: Item) -> Path:
        """The item's worktree: the one it has in this run (a retry's), else one at the
        loop branch's tip now — made ahead, or left clean by a run before, and moved to
        the tip when the tip or the item's dependencies changed since it was made; else
        made now. What a run before left is cleared when nothing is in it; a worktree
        that holds work, or cannot be moved as ``git checkout`` would, keeps the item
        from running (``Unavailable``)."""
        known = self.trees.get(item.id)
        if known is not None:
            return known.path
        path = item_worktree(self.state_dir, item.id)
        branch = messages.item_branch(item.id)
        made = self.preparer.take(item.id)  # first: it may wait while the tip moves
        tip = self._tip()
        existing = worktree_at(self.root, path) if made is None and path.exists() else None
        if made is not None or (existing is not None and not existing.missing):
            at = made.tip if made is not None else existing.head if existing else None
            depends = made.depends_on if made is not None else item.depends_on
            if at != tip or depends != item.depends_on:
                self._move(path, branch, at, tip)
        else:
            try:
                add_worktree(self.root, path, branch, tip)
            except GitError:  # its branch, or a registration, left by a run before
                kept = tidy(self.root, self.state_dir, item.id, self.onto)
                if kept is not None:
                    raise Unavailable(f"its worktree or branch {branch} holds work from "
                                      f"before: {kept}; see git forge reconcile") from None
                add_worktree(self.root, path, branch, tip)
        self.run.journal.append("worktree_added", itemId=item.id, path=str(path), branch=branch,
                                commit=tip)
        self.trees[item.id] = _Tree(path)
        self._baseline(item.id, tip)
        return path

    def _baseline(self, item_id: str, tip: str) -> None:
        """The baselines the item's own gates are judged against: those of the tip it
        starts on — taken there first when a commit the run did not make put the
        branch there (the merge queue takes it too, before it integrates onto it)."""
        run = self.run
        if not run.options.verify:
            return
        told = tip_baseline(run, tip)
        if told is not None:
            run.progress.note(told)
        run.item_baselines[item_id] = run.baselines

    def _move(self, path: Path, branch: str, at: str | None, tip: str) -> None:
        """The worktree at ``path`` (at commit ``at``) moved to the tip, when nothing
        of it can be lost: ``at`` is on the loop's branch, and a local change (a
        sibling's write, reported at the item's end) is carried along."""
        try:
            if at is not None and not self.run.repo.is_ancestor(at, tip):
                raise GitError(f"it is at {at[:12]}, which is not on {self.onto}")
            move_to(self.root, path, branch, tip)
        except GitError as exc:
            raise Unavailable(f"its worktree {path} could not be moved to the tip "
                              f"{tip[:12]}: {exc.message}; see git forge reconcile") from exc

    def ahead(self, coming: Coming, free: int) -> None:
        """As many as there are slots, made in the order they start: when every agent
        of a round ends at once, each slot's next worktree is there. Those about to
        start are moved to the tip beside the loop, while it records the ends."""
        items = [item for index, item in enumerate(coming(self.slots))
                 if (index < free and self.preparer.asked(item.id)) or not (
                     self.preparer.asked(item.id)
                     or item_worktree(self.state_dir, item.id).exists())]
        if not items:
            return
        tip = self._tip()
        for item in items:
            self.preparer.prepare(item.id, item_worktree(self.state_dir, item.id),
                                  messages.item_branch(item.id), tip, item.depends_on)

    def began(self, item_id: str) -> None:
        self.trees[item_id].windows.append(Window(item_id, time.time()))

    def ended(self, item_id: str) -> None:
        windows = self.trees[item_id].windows
        windows[-1] = Window(item_id, windows[-1].start, time.time())

    def listing(self) -> ListingMeanwhile | None:
        return None

    # --- the git work of an outcome: the merge thread's ----------------------------------

    def _submit(self, kind: Kind, item: Item) -> None:
        windows = (*self.past, *(w for tree in self.trees.values() for w in tree.windows))
        self.worker.submit(Job(kind, item.id, item.title, self.trees[item.id].path, windows))
        if kind == "retry":
            self.setting_aside.add(item.id)
        elif kind != "contain":  # the item's worktree is the merge thread's to clear or keep
            self.past.extend(self.trees.pop(item.id).windows)

    def land(self, item: Item, listed: list[StatusEntry] | None) -> Landing | None:
        self._submit("done", item)
        return None

    def clear(self, item: Item, listed: list[StatusEntry] | None, *,
              again: bool = False) -> list[str]:
        """On the merge thread: kept, then the worktree removed when that emptied it —
        or, ``again``, kept there for the retry (which waits for it: ``ready``)."""
        if item.id in self.trees:  # else the item never had one (it could not start)
            self._submit("retry" if again else "leftovers", item)
        return []

    def ready(self, item_id: str) -> bool:
        return item_id not in self.setting_aside

    def contain(self, item: Item) -> None:
        self._submit("contain", item)

    def record(self, item_id: str, message: str) -> None:
        return None  # committed once, as the run ends (``finish``)

    @property
    def outstanding(self) -> int:
        return self.worker.outstanding

    def events(self, wait: float = 0.0) -> list[Event]:
        """The merge thread's results, in order, as the engine acts on them; a merge
        conflict is recorded here (the record, not the reason's words, makes it a
        conflict question for recover)."""
        found: list[Event] = []
        for result in self.worker.results(wait):
            job = result.job
            if isinstance(result, Crashed):
                raise result.error
            if isinstance(result, Finished) and job.kind == "retry":
                self.setting_aside.discard(job.item_id)
            elif isinstance(result, Noted):
                found.append(Note(job.item_id, result.text))
            elif isinstance(result, Seen):
                found.append(Escaped(job.item_id, result.escape))
            elif isinstance(result, CommitFailed):
                found.append(NotLanded(job.item_id, "the agent signalled done, but the commit "
                                       f"in its worktree failed: {result.reason}", cleared=True))
            elif isinstance(result, Merged):
                found.append(self._merged(result))
        return found

    def _merged(self, result: Merged) -> Landing:
        outcome = result.outcome
        item_id = result.job.item_id
        if isinstance(outcome, Integrated):
            return Landed(item_id, (outcome.commits or (result.commit,))[-1], outcome,
                          left=result.left, left_in=str(result.job.tree))
        if isinstance(outcome, Conflicted):
            self.run.journal.append("merge_conflict", itemId=item_id, paths=list(outcome.paths),
                                    collidedWith=list(outcome.collided_with),
                                    commit=outcome.commit)
            record_conflict(self.state_dir, outcome, self.onto, result.job.tree)
            return NotLanded(item_id, conflict_reason(outcome), needs_human=True, cleared=True)
        if isinstance(outcome, Unverified):
            if outcome.reason == STOPPED_CHECK:  # the run stops: the item goes back to pending
                return NotLanded(item_id, outcome.reason, cleared=True, stopped=True)
            self.run.journal.append("merge_conflict", itemId=item_id, paths=[], collidedWith=[],
                                    commit=outcome.commit, failedCheck=outcome.reason)
            record_conflict(self.state_dir, outcome, self.onto, result.job.tree)
            return NotLanded(item_id, f"its work, replayed onto {self.onto}, failed the run's "
                             f"checks there: {outcome.reason}{RECOVER_ANSWERS}",
                             needs_human=True, cleared=True)
        return NotLanded(item_id, "the agent signalled done, but its commit could not be "
                         f"integrated: {outcome.reason}", cleared=True)

    # --- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """The statuses this run wrote, committed as one bookkeeping commit (the items'
        work is on the branch already, a commit each)."""
        run = self.run
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

    def close(self, *, cancel: bool = False) -> None:
        """The merge thread ends (``cancel``: once the job under way is done), then the
        worktrees made for items that did not start are removed: clean, on a branch the
        loop's branch contains (``tidy`` keeps any that is not)."""
        self.worker.close(cancel=cancel)
        for made in self.preparer.close():
            with contextlib.suppress(GitError):
                tidy(self.root, self.state_dir, made.item_id, self.onto)


def conflict_reason(conflict: Conflicted) -> str:
    """A conflict's ``needsHuman`` reason: what collided, and where its two answers
    are (recover offers them; nothing here drops any work)."""
    return f"{conflict.reason}{RECOVER_ANSWERS}"

"""The git work of a parallel run, in one thread beside the loop.

When an agent of a parallel run ends, the loop decides what its signal means
for the item (the backlog, the journal, the progress: the loop's thread only)
and hands the git work to this thread, which does it in the order the agents
ended — the merge queue. The jobs queued while it worked are done together: one
containment check, then each one's own step, then the done items integrated with
one fast-forward of the loop's branch (each replayed onto the one before it):

* ``contain`` — the containment check (``containment``): a change in the main
  checkout since this thread last changed it itself;
* ``done`` — that check, then the worktree's own changes (``containment.foreign``:
  a sibling's writes there are reported and left alone) committed there on top
  of whatever the agent did with its HEAD (its commits, an amend, a detached
  HEAD or a branch of its own), the item's branch moved to that commit, then the
  merge queue's step (``reconcile.merge_queue.integrate_items``: its commits since
  it forked from the loop's branch replayed onto the tip, fast-forward, the
  worktree and branch removed when nothing is left);
* ``leftovers`` — that check, then a blocked item's own leftovers kept as its
  abandoned work (``refs/forge/abandoned/<id>/<time>``) from its worktree and the
  emptied worktree removed;
* ``retry`` — that check, then the ended attempt's own leftovers kept the same
  way, the worktree left for the item's retry (which waits for this job).

Every result goes back to the loop as data (``Result``), in order; the loop acts
on it. Nothing here touches the backlog, the journal or the progress, but for the
hook the loop gives (``before``): what led to the jobs taken together made durable
before their git work, once for them all, off the loop's thread. The main
checkout is changed only here (the fast-forwards), so its containment baseline
lives here too. A job whose item the containment check names (its agent ran alone
when the change was made) is not integrated: its work is kept like a blocked
item's, and the loop blocks the item.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from git_forge.loop.containment import Baseline, Escape, Window, escaped, foreign, take_baseline
from git_forge.loop.summary import LeftPathJSON
from git_forge.reconcile import messages
from git_forge.reconcile.item_trees import tree_changes
from git_forge.reconcile.merge_queue import Outcome, integrate_items, tidy
from git_forge.tree.commit import commit_paths
from git_forge.tree.errors import GitError
from git_forge.tree.repo import Repo, open_repo
from git_forge.tree.stash import keep_paths
from git_forge.tree.worktree import refusals
from git_forge.tree.worktrees import hold_on, tips

Kind = Literal["contain", "done", "leftovers", "retry"]


def kept_note(item_id: str, ref: str) -> str:
    """What the operator is told when an item's leftovers were kept as its abandoned work."""
    return (f"item {item_id}: its leftover changes are kept at {ref} (see them: git stash "
            f"show --include-untracked -p {ref})")


@dataclass(frozen=True)
class Job:
    kind: Kind
    item_id: str
    title: str
    tree: Path
    #: Every attempt of the run's agents so far (who may have written what, when).
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class Seen:
    """The containment check found a change an agent made outside its worktree."""

    job: Job
    escape: Escape

    @property
    def names_own_item(self) -> bool:
        return self.escape.item_id == self.job.item_id


@dataclass(frozen=True)
class Merged:
    """A done item's commit went through the merge queue."""

    job: Job
    commit: str
    outcome: Outcome
    #: The agent's changes left in its worktree, not committed, each with why.
    left: tuple[LeftPathJSON, ...] = ()


@dataclass(frozen=True)
class CommitFailed:
    job: Job
    reason: str


@dataclass(frozen=True)
class Noted:
    """Something the operator is told (a path left in a worktree, work kept)."""

    job: Job
    text: str


@dataclass(frozen=True)
class Finished:
    """The job is over; every result of it came before."""

    job: Job


@dataclass(frozen=True)
class Crashed:
    """The job failed in a way no item outcome covers: the run cannot go on."""

    job: Job
    error: BaseException


Result = Seen | Merged | CommitFailed | Noted | Finished | Crashed


class MergeWorker:
    """One thread doing the jobs in order; ``results`` hands back what they came to."""

    def __init__(self, root: Path, state_dir: Path, backlog_file: Path, backlog_rel: str,
                 onto: str, told: Callable[[], None] = lambda: None,
                 before: Callable[[], None] = lambda: None,
                 check: Callable[[str, str], str | None] | None = None,
                 retake: Callable[[str], str | None] | None = None) -> None:
        self.root, self.state_dir, self.backlog_file = root, state_dir, backlog_file
        self.backlog_rel, self.onto = backlog_rel, onto
        #: Called (in this thread) once the results of the jobs under way are all in.
        self.told = told
        #: Called (in this thread) before the git work of the jobs taken together: the
        #: loop's records of what led to them made durable, once for them all.
        self.before = before
        #: The run's checks of an item's commits replayed onto a tip that moved since it
        #: forked (``loop.verifyOnIntegrate``): why they may not land, or ``None``.
        self.check = check
        #: The run's gates run again on the branch's tip when a commit the run did not
        #: make put it there (``verify.baseline_retaker``), before the items are
        #: integrated onto it: the note to tell, or ``None``.
        self.retake = retake
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._results: queue.Queue[Result] = queue.Queue()
        self.outstanding = 0
        self._cancelled = False
        self.baseline = self._baseline()
        #: The paths of each worktree a sibling wrote: never committed or kept.
        self.foreign: dict[Path, set[str]] = {}
        self._repo: Repo | None = None
        self._thread = threading.Thread(target=self._work, name="forge-merge", daemon=True)
        self._thread.start()

    def _opened(self, tree: Path) -> Repo:
        """The item's worktree at ``tree``, opened through the repository at the root
        (the thread's own, opened once: a pygit2 handle is not shared)."""
        if self._repo is None:
            self._repo = open_repo(self.root)
        return self._repo.worktree(tree)

    def _baseline(self) -> Baseline:
        return take_baseline(self.root, self.state_dir, self.backlog_file,
                             ignore=(self.backlog_rel,))

    # --- the loop's side ---------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        self.outstanding += 1
        self._jobs.put(job)

    def results(self, wait: float = 0.0) -> list[Result]:
        """What the jobs came to since the last call, in order; ``wait``: up to that
        long for the first one."""
        found: list[Result] = []
        try:
            found.append(self._results.get(timeout=wait) if wait else
                         self._results.get_nowait())
        except queue.Empty:
            return found
        while True:
            try:
                found.append(self._results.get_nowait())
            except queue.Empty:
                break
        self.outstanding -= sum(isinstance(result, Finished) for result in found)
        return found

    def close(self, timeout: float = 60.0, *, cancel: bool = False) -> None:
        """No more jobs: the thread ends after those it has (the loop reads their
        results) — with ``cancel``, after those under way, the others not done."""
        self._cancelled = cancel
        self._jobs.put(None)
        self._thread.join(timeout)

    # --- the thread's side -------------------------------------------------------------------

    def _work(self) -> None:
        while jobs := self._take():
            if self._cancelled:
                for job in jobs:
                    self._results.put(Finished(job))
                continue
            try:
                self._do(jobs)
            except BaseException as exc:  # handed to the loop, which ends the run with it
                self._results.put(Crashed(jobs[0], exc))
            for job in jobs:
                self._results.put(Finished(job))
            self.told()

    def _take(self) -> list[Job]:
        """The next job and every one queued behind it, done together (none: the
        thread ends). A busy run queues more of them: one look at the main checkout
        and one integration then serve them all."""
        job = self._jobs.get()
        jobs: list[Job] = []
        while job is not None:
            jobs.append(job)
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return jobs
        self._jobs.put(None)  # the end, once these are done
        return jobs

    def _do(self, jobs: list[Job]) -> None:
        """The jobs in order: the containment check once for them all (a change it
        finds is the job's of the item it names, else the first's), then each job's
        commit or stash, then the done ones integrated together."""
        self.before()
        looked = time.time()
        found = escaped(self.baseline, self.root, self.state_dir, self.backlog_file,
                        jobs[-1].windows, ignore=(self.backlog_rel,))
        self.baseline = replace(self.baseline, taken=looked)  # "meanwhile" starts again
        own = None
        if found is not None:
            seen = next((job for job in jobs if job.item_id == found.item_id), jobs[0])
            self._results.put(Seen(seen, found))
            self.baseline = self._baseline()  # reported once
            if found.item_id == seen.item_id:  # its own work is not integrated
                own = seen
        committed: list[tuple[Job, str, tuple[LeftPathJSON, ...]]] = []
        for job in jobs:
            if job is own or job.kind == "leftovers":
                self._leftovers(job)
            elif job.kind == "retry":
                self._keep(job)
            elif job.kind == "done":
                try:
                    committed.append((job, *self._commit(job)))
                except GitError as exc:
                    self._results.put(CommitFailed(job, exc.message))
        if not committed:
            return
        self._moved(committed[0][0])
        # a fast-forward moves only clean paths (a dirty one in the way refuses it): the
        # main checkout's baseline holds
        outcomes = integrate_items(self.root, self.state_dir,
                                   [job.item_id for job, _, _ in committed], self.onto,
                                   self.check)
        for (job, commit, left), outcome in zip(committed, outcomes, strict=True):
            self._results.put(Merged(job, commit, outcome, left))

    def _moved(self, job: Job) -> None:
        """The gates' baseline on the branch's tip, before anything is integrated onto
        it, when a commit the run did not make put the branch there."""
        if self.retake is None:
            return
        now = tips(self.root, self.onto).get(self.onto)
        told = self.retake(now) if now is not None else None
        if told is not None:
            self._results.put(Noted(job, told))

    def _paths(self, job: Job) -> list[str]:
        """The agent's own changes in its worktree: never backlog.json or state files,
        never what a sibling wrote there (reported once, and left where it is)."""
        changes = [entry for entry in tree_changes(self.root, job.tree, self.state_dir,
                                                   self.backlog_file)
                   if entry.path != self.backlog_rel]
        written = self.foreign.setdefault(job.tree, set())
        found = foreign(job.tree, job.item_id,
                        [entry for entry in changes if entry.path not in written], job.windows)
        if found is not None:
            self._results.put(Seen(job, found))
            written.update(entry.path for entry in found.entries)
        return [entry.path.rstrip("/") for entry in changes if entry.path not in written]

    def _commit(self, job: Job) -> tuple[str, tuple[LeftPathJSON, ...]]:
        """Commit exactly the agent's changes in its worktree, on whatever its HEAD is
        now (none is an empty commit, as a serial done item without work has one), and
        hold the item's branch there; what git-forge cannot commit as git would stays
        there (returned, each with why), and so does the worktree."""
        paths = self._paths(job)
        repo = self._opened(job.tree)
        refused = dict(refusals(repo, paths, "commit")) if paths else {}
        commit = commit_paths(repo, [p for p in paths if p not in refused],
                              messages.item_done(job.item_id, job.title), allow_empty=True)
        hold_on(self.root, job.tree, messages.item_branch(job.item_id), repo.branch_name)
        return commit, tuple(LeftPathJSON(path=path, why=why) for path, why in refused.items())

    def _leftovers(self, job: Job) -> None:
        """The agent's leftovers kept as its item's abandoned work, then its worktree
        and branch away when that left them holding nothing."""
        self._keep(job)
        kept = tidy(self.root, self.state_dir, job.item_id, self.onto)
        if kept is not None:
            self._results.put(Noted(job, f"item {job.item_id}: its worktree is kept for "
                                         f"git forge reconcile: {kept}"))

    def _keep(self, job: Job) -> None:
        """The agent's own leftovers in its worktree kept under the item's abandoned-work
        refs (shared by every worktree); what cannot be kept as git would stays."""
        item_id = job.item_id
        try:
            paths = self._paths(job)
            if paths:
                repo = self._opened(job.tree)
                refused = dict(refusals(repo, paths, "stash"))
                keepable = [path for path in paths if path not in refused]
                if keepable:
                    kept = keep_paths(repo, keepable, messages.abandoned_work(item_id),
                                      messages.abandoned_refs(item_id))
                    self._results.put(Noted(job, kept_note(item_id, kept.ref)))
        except GitError as exc:
            self._results.put(Noted(job, f"item {item_id}: its leftover changes could "
                                         f"not be kept: {exc.message}"))

"""What one run carries between iterations, and its hold on the work tree.

The session builds a ``RunContext`` once; an iteration and the outcome of its
signal read and update it. The tree helpers here are the run's only way to see
and commit changes, so every part applies the same rules: its own state files
and what it had to leave alone are never taken into a commit, and a commit
reads backlog.json whole under its lock.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_forge.atomic import make_durable
from git_forge.backlog.bookkeeping import describe_changes
from git_forge.backlog.held import HeldBacklog
from git_forge.backlog.item import Item
from git_forge.gates.verdict import Baseline
from git_forge.locks import locked
from git_forge.loop import sandboxing
from git_forge.loop.agent_state import AgentState
from git_forge.loop.errors import BranchLeft
from git_forge.loop.journal import Journal
from git_forge.loop.options import LoopOptions
from git_forge.loop.progress import Progress
from git_forge.loop.state import RunState, write_state
from git_forge.loop.summary import UncommittedJSON
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.reconcile import messages
from git_forge.reconcile.stranded import stranded
from git_forge.supervisor.sandbox import Sandbox
from git_forge.supervisor.supervisor import Supervisor
from git_forge.tree.commit import commit_paths
from git_forge.tree.fast_status import head_blob
from git_forge.tree.git_status import porcelain
from git_forge.tree.porcelain import StatusEntry, quote_path
from git_forge.tree.repo import Repo
from git_forge.tree.worktree import Action, refusals
from git_forge.workspace import Workspace


@dataclass
class RunContext:
    """Everything one run carries between iterations."""

    workspace: Workspace
    options: LoopOptions
    progress: Progress
    repo: Repo
    store: HeldBacklog
    journal: Journal
    supervisor: Supervisor
    state: RunState
    stop: Callable[[], bool]
    #: The branch the run started on (``None``: a detached HEAD, with ``--force``): the
    #: only one it ever commits to.
    branch: str | None = None
    #: Paths changed before the run (``--force``), which it never commits, each with
    #: how it last looked (``path_mark``): a change to one is an agent's edit left behind.
    preexisting: dict[str, PathMark] = field(default_factory=dict)
    #: The ``kept_back`` paths, each as it looked when it was kept back.
    kept_marks: dict[str, PathMark] = field(default_factory=dict)
    #: Done items whose agents' changes were not all committed: item → what was left.
    uncommitted: dict[str, UncommittedJSON] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    #: What an item's last attempt failed of the verification gates (its excerpt),
    #: for its next prompt (``loop.verify``).
    verify_failures: dict[str, str] = field(default_factory=dict)
    #: The gates' results on the run's starting tip (``loop.verifyBaseline``).
    baselines: tuple[Baseline, ...] = ()
    #: The tips the gates' baseline was taken on: the starting tip, then each tip the
    #: branch moved to by a commit the run did not make (``verify.baseline_at``); and
    #: the lock under which one is taken (the loop's thread and the merge thread).
    baselined: set[str] = field(default_factory=set)
    baseline_lock: threading.Lock = field(default_factory=threading.Lock)
    #: Each item's baselines as they were when it started (its worktree at that tip):
    #: what its own gates are judged against; the merge queue's check on the branch's
    #: tip is judged against ``baselines``, the latest.
    item_baselines: dict[str, tuple[Baseline, ...]] = field(default_factory=dict)
    #: Paths the run could not commit or keep as git would (path → why): left in
    #: the tree for reconcile, and never swept into a later item's commit.
    kept_back: dict[str, str] = field(default_factory=dict)
    #: Its agent across iterations: breaker, notifier, resume, cost (``agent_state``).
    agent: AgentState = field(default_factory=AgentState)
    #: The state holds a change state.json does not have yet (``note``).
    noted: bool = False
    #: When the run began (``time.monotonic``): ``--max-duration`` counts from it.
    began: float = field(default_factory=time.monotonic)
    #: The sandbox its agents and checks run in (``loop.sandbox``), before each one's
    #: paths are filled in (``sandboxing.for_tree``); ``None``: none.
    sandbox: Sandbox | None = None

    def prepared(self, argv: list[str], cwd: Path, env: dict[str, str],
                 also: tuple[Path, ...] = ()) -> tuple[dict[str, str], Sandbox | None]:
        """A process's environment and sandbox, for ``argv`` in ``cwd`` (``also``:
        more it may write, in a sandbox)."""
        if self.sandbox is None:
            return env, None
        env = sandboxing.environment(env)
        return env, sandboxing.for_tree(self.sandbox, self.workspace, self.repo, self.options,
                                        cwd, env, argv, also)

    @property
    def backlog_rel(self) -> str:
        return self.workspace.relative(self.workspace.backlog_file)

    def save(self, **changes: Any) -> None:
        """Change the run's state (``RunState`` fields) and update state.json. A change
        of the run's status is made durable at once; the rest (iteration, current item,
        last signal, item lists) is a progress report rewritten atomically at every
        step, durable with the run's next status change — after a power loss the
        backlog, the manifests and the journal are what restore reads, never these
        fields."""
        durable = "status" in changes and changes["status"] != self.state.status
        self.state = write_state(self.workspace.state_dir, self.state._replace(**changes),
                                 durable=durable)
        self.noted = False

    def note(self, **changes: Any) -> None:
        """Change the run's state in memory only, for a step that another write soon
        after covers: state.json gets it with the next ``save``, or ``save_noted``."""
        self.state = self.state._replace(**changes)
        self.noted = True

    def save_noted(self) -> None:
        """state.json written when a change was ``note``d since it last was."""
        if self.noted:
            self.save()


def commit(run: RunContext, paths: list[str], message: str, *,
           allow_empty: bool = False) -> str:
    """Commit ``paths`` on the run's branch, holding backlog.json's lock: a ``backlog
    add`` from another terminal may rewrite it at any moment, and the commit must
    read it whole. A main checkout no longer on the run's branch gets no commit
    (``BranchLeft``)."""
    left = left_branch(run)
    if left is not None:
        raise BranchLeft(left)
    on_disk(run)
    with locked(run.store.path):
        return commit_paths(run.repo, paths, message, allow_empty=allow_empty,
                            branch=run.branch)


def on_disk(run: RunContext) -> None:
    """What led to git work is on disk before the git work is: the journal synced and
    backlog.json made durable. A done item's mark is written without an fsync
    (``outcomes.done``); the git work that puts the item's work on the branch — the
    commit in the main checkout, a parallel run's merges — must never outlive it in a
    power cut, or the item would run again with its work on the branch. One call
    serves every mark written since. Safe from the merge thread while the loop's
    thread appends and writes: neither waits on the other."""
    run.journal.sync()
    make_durable(run.store.path)


def commit_others(run: RunContext, item_id: str) -> None:
    """Another writer's backlog change made while ``item_id`` ran (``backlog done``,
    ``add``, ``edit`` … from another terminal) committed on its own, as ``[forge]
    backlog: …``, before the item's commit — which then holds only the item's own
    change. The change committed is the working backlog.json with ``item_id`` as
    HEAD has it (the run's mark on it is the item's commit's); an edit to the
    running item itself goes with that item's commit."""
    store = run.store
    if not store.changed_elsewhere:
        return
    store.changed_elsewhere = False
    head_raw = head_blob(run.workspace.root, run.backlog_rel)
    at_head = _item_in(head_raw, item_id) if head_raw is not None else None
    if at_head is None:
        return
    current = store.get(item_id)
    store.replace(at_head)
    try:
        if run.backlog_rel in dirty(run):
            summary = describe_changes(head_raw, store.path.read_bytes())
            commit(run, [run.backlog_rel], messages.backlog_queued(summary))
            run.progress.note(f"committed a backlog change made during the run ({summary})")
    finally:
        store.replace(current)


def _item_in(raw: bytes, item_id: str) -> Item | None:
    """The item ``item_id`` as the backlog.json text ``raw`` holds it (``None``: not there
    or not readable)."""
    try:
        document = load_json(raw, "backlog.json at HEAD")
    except (ValueError, DocumentTooComplex):
        return None
    items = document.get("items") if isinstance(document, dict) else None
    for fields in items if isinstance(items, list) else []:
        if isinstance(fields, dict) and fields.get("id") == item_id:
            return Item.from_json(fields)  # type: ignore[arg-type]
    return None


#: How a path in the tree looks, to see whether it changed (``path_mark``).
PathMark = int | None
#: The most entries of a directory ``path_mark`` looks at.
MARKED_ENTRIES = 10_000


def _stat_key(stat: os.stat_result) -> tuple[int, int, int, int, int]:
    return (stat.st_mode, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


def path_mark(root: Path, path: str) -> PathMark:
    """A digest of the lstat data of ``path`` (type, size, times, inode: git's own
    "racy" data) and, for a directory — an untracked one, a nested repository — of
    everything it holds but a ``.git`` (up to ``MARKED_ENTRIES`` entries; no link
    is followed); ``None`` when it is missing. Compared within one run only."""
    full = root / path.rstrip("/")
    try:
        parts: list[object] = [_stat_key(full.lstat())]
    except OSError:
        return None
    if full.is_dir() and not full.is_symlink():
        for directory, dirs, files in os.walk(full):
            dirs[:] = sorted(name for name in dirs if name != ".git")
            for name in sorted(files) + dirs:
                try:
                    parts.append((directory, name, _stat_key(os.lstat(os.path.join(directory,
                                                                                  name)))))
                except OSError:
                    continue
            if len(parts) > MARKED_ENTRIES:
                break
    return hash(tuple(parts))


def changed_marks(root: Path, marks: dict[str, PathMark]) -> list[str]:
    """The paths of ``marks`` that changed since their marks were taken (each mark
    taken again): the run leaves them alone, so a change to one is left uncommitted."""
    changed = []
    for path, mark in marks.items():
        now = path_mark(root, path)
        if now != mark:
            marks[path] = now
            changed.append(path.rstrip("/"))
    return changed


def left_branch(run: RunContext) -> str | None:
    """What the main checkout was switched to, when it is no longer on the branch the
    run started on (``to branch x``, ``to a detached HEAD at …``); else ``None``."""
    now = run.repo.branch_name
    if now == run.branch:
        return None
    if now is not None:
        return f"to branch {now}"
    return f"to a detached HEAD at {(run.repo.head_commit_id() or '')[:12]}"


def dirty(run: RunContext, listed: list[StatusEntry] | None = None) -> list[str]:
    """Changed paths the run may act on: the stranded work the pre-launch check
    sees (one filter: no state files, no crash bookkeeping), less what was
    dirty before the run (``--force``) and what the run had to leave alone —
    but backlog.json whenever it changed, the run's own bookkeeping. ``listed``:
    git's listing when the caller already has it (else it is asked now)."""
    workspace = run.workspace
    entries = stranded(porcelain(run.repo) if listed is None else listed, workspace.root,
                       workspace.state_dir, workspace.backlog_file, keep_backlog=True)
    paths = []
    for entry in entries:
        path = entry.path.rstrip("/")  # a nested repository is listed as "dir/"
        if path != run.backlog_rel and (entry.path in run.preexisting
                                        or path in run.kept_back):
            continue
        paths.append(path)
    return list(dict.fromkeys(paths))


def actionable(run: RunContext, item_id: str, paths: list[str], action: Action) -> list[str]:
    """The ``paths`` that ``action`` can handle as git would. The others are kept
    back for the rest of the run, each with why and the git command to use: the
    run goes on without them. Those not kept as abandoned work are said now; those
    not committed, by the item's outcome (``Landed.left``)."""
    refused = dict(refusals(run.repo, paths, action)) if paths else {}
    for path, why in refused.items():
        run.kept_back[path] = why
        run.kept_marks[path] = path_mark(run.workspace.root, path)
        if action != "commit":
            run.progress.note(f"item {item_id}: {quote_path(path)} left in the tree, not "
                              f"kept as its abandoned work: {why}")
    return [path for path in paths if path not in refused]

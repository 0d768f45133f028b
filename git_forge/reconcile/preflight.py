"""The launch blocker: stop the next launch while a prior run's work is stranded.

| porcelain | prior state.json | result                                        |
|-----------|------------------|-----------------------------------------------|
| clean     | either           | go, silently                                  |
| dirty     | present          | STOP: name that run, list the stranded paths  |
| dirty     | absent           | refuse with the ordinary "commit or stash"    |

Work left in an item's worktree or on its branch (``item_trees``: a parallel
run's) is stranded too: a worktree with changes, a ``forge/<id>`` branch whose
commits are not on the loop's branch. Either STOPs the launch, whether or not a
state.json survives.

It runs before every launch, so it must cost about what ``git status`` costs:
it never imports pygit2 (``fast_status`` asks git itself) and reads nothing
else while the tree is clean. The runner's own changes are not stranded work
(``stranded``), and a backlog.json changed in any other way that is still a
valid backlog is queued work (``queued_apart``), not stranded either — here, in
reconcile and in recover alike.
"""

from pathlib import Path
from typing import Literal, NamedTuple, NotRequired, TypedDict

from git_forge.backlog.model import backlog_problem
from git_forge.errors import StoreError
from git_forge.loop.state import RunState, StateNotAnObject, read_state, state_path
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.reconcile.errors import ReconcileError
from git_forge.reconcile.item_trees import ItemTree, ItemTreeJSON, loop_branch, stranded_trees
from git_forge.reconcile.stranded import relative, stranded
from git_forge.tree.fast_status import porcelain_fast
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line

Verdict = Literal["ok", "stop", "dirty"]


class PriorRunJSON(TypedDict):
    """The prior run as a STOP names it (without its identity when state.json could
    not be read)."""

    runId: NotRequired[str | None]
    status: NotRequired[str | None]
    startedAt: str | None
    currentItem: str | None
    blockedItems: list[str]
    needsHumanItems: list[str]


class PreflightJSON(TypedDict):
    """What ``preflight --json`` prints of a verdict (``cli/preflight.py`` prints the
    clean answer's ``{"status": "ok", "run": null, "paths": []}`` itself)."""

    status: Literal["ok", "stop"]
    run: PriorRunJSON | None
    paths: list[str]
    reason: NotRequired[str]
    worktrees: NotRequired[list[ItemTreeJSON]]


class Preflight(NamedTuple):
    """The check's verdict, the stranded entries and the prior run (if any)."""

    status: Verdict
    entries: list[StatusEntry]
    #: The prior run (empty when its state.json could not be read: ``run_error``).
    run: RunState | None = None
    run_error: str | None = None
    #: Why the launch stops other than stranded work (a corrupt backlog.json).
    reason: str | None = None
    #: Items' worktrees and branches holding stranded work, and the branch their
    #: commits are not on.
    trees: tuple[ItemTree, ...] = ()
    onto: str | None = None

    @property
    def lines(self) -> list[str]:
        """Each stranded path as ``git status --porcelain`` prints it."""
        return [render_porcelain_line(entry) for entry in self.entries]

    def run_json(self) -> PriorRunJSON | None:
        """The prior run as a STOP names it; without its identity when unreadable."""
        if self.run is None:
            return None
        run = self.run
        named: PriorRunJSON = {"startedAt": run.started_at, "currentItem": run.current_item,
                               "blockedItems": list(run.blocked_items),
                               "needsHumanItems": list(run.needs_human_items)}
        if self.run_error is not None:
            return named
        return {"runId": run.run_id, "status": run.status, **named}

    def to_json(self) -> PreflightJSON:
        document: PreflightJSON = {"status": "ok" if self.status == "ok" else "stop",
                                   "run": self.run_json(), "paths": self.lines}
        if self.reason is not None:
            document["reason"] = self.reason
        if self.trees:
            document["worktrees"] = [tree.to_json() for tree in self.trees]
        return document


def prior_run(state_dir: Path) -> tuple[RunState | None, str | None]:
    """The prior run from state.json: (run, error reading it). A state.json that
    cannot be read is still a prior run, of which nothing is known."""
    try:
        return read_state(state_dir), None
    except StateNotAnObject:
        return RunState(), f"{state_path(state_dir)} is not a JSON object"
    except StoreError as exc:
        return RunState(), exc.message


def backlog_file_problem(path: Path) -> str | None:
    """Why the backlog file cannot be used (missing, not JSON, not a backlog), or
    ``None``. The words are the ones every refusal uses: ``… is corrupt (…)``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return "it is missing"
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    try:
        document = load_json(raw.decode("utf-8"), path)
    except DocumentTooComplex as exc:
        return exc.problem
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not valid JSON: {exc}"
    return backlog_problem(document)


def refuse_corrupt_backlog_commit(groups: list[tuple[str, list[str]]], root: Path,
                                  backlog_path: Path) -> None:
    """A commit must never record a backlog.json that does not parse: ``groups`` are
    the (group id, paths) about to be committed. Raises ``ReconcileError`` (exit 2)."""
    backlog_rel = relative(backlog_path, root)
    if any(backlog_rel in paths for _, paths in groups) and backlog_path.exists():
        problem = backlog_file_problem(backlog_path)
        if problem is not None:
            raise ReconcileError(f"refusing to commit {backlog_rel}: it is corrupt ({problem})")


def queued_apart(work: list[StatusEntry], root: Path, backlog_path: Path
                 ) -> tuple[list[StatusEntry], StatusEntry | None, str | None]:
    """The stranded ``work`` (``stranded``'s) less a changed backlog.json that is a
    valid backlog; that entry (``None``: no such change); and why a changed
    backlog.json is corrupt (it then stays in the work).

    A valid change is not stranded work but queued work: what git-forge's own
    commands leave uncommitted (``backlog add``, ``answer``, ``edit``,
    ``decision revoke``, ``recover --no-commit``…) or the operator's own edit —
    the next run's input, which the loop commits first (``[forge] backlog: …``).
    Nothing of it is lost or taken for an item's work by launching, so the launch
    blocker lets it through, and reconcile and recover, which answer to the same
    question (what must be decided before the next launch), agree: it is no
    group to decide, and leaves the tree clean."""
    backlog_rel = relative(backlog_path, root)
    entry = next((entry for entry in work if entry.path == backlog_rel), None)
    if entry is None:
        return work, None, None
    problem = backlog_file_problem(backlog_path)
    if problem is not None:
        return work, None, problem
    return [other for other in work if other is not entry], entry, None


def check(root: Path, state_dir: Path, backlog_path: Path,
          entries: list[StatusEntry] | None = None) -> Preflight:
    """Run the launch blocker's table for the repository at ``root``.

    A changed backlog.json that is a valid backlog is not stranded work but queued
    work (``queued_apart``). One that is not valid stops the launch as what it is:
    a corrupt backlog. Stranded work in items' worktrees or on their branches
    stops it too (``trees``), with or without a prior run's state.json.
    """
    if entries is None:
        entries = porcelain_fast(root)
    work, _queued, problem = queued_apart(stranded(entries, root, state_dir, backlog_path),
                                          root, backlog_path)
    if problem is not None:
        backlog_rel = relative(backlog_path, root)
        run, error = prior_run(state_dir)
        return Preflight("stop", work, run, error, reason=(
            f"{backlog_rel} is corrupt ({problem}); repair it, or restore it with "
            f"git checkout HEAD -- {backlog_rel}"))

    trees = tuple(stranded_trees(root, state_dir, backlog_path))
    if not work and not trees:
        return Preflight("ok", [])
    run, error = prior_run(state_dir)
    if run is None and not trees:
        return Preflight("dirty", work)
    return Preflight("stop", work, run, error, trees=trees,
                     onto=loop_branch(root) if trees else None)

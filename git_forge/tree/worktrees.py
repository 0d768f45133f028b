"""Linked worktrees and their branches: create, list, integrate, remove.

Through the git CLI only, like ``fast_status``: the launch blocker lists the
worktrees a run left, and must not import pygit2. Everything here is what git
itself does, with the refusals that keep work from being lost:

* ``add_worktree`` is ``git worktree add DIR -b BRANCH START``.
* ``worktrees`` is ``git worktree list --porcelain``, the main worktree first.
* ``integrate`` replays a branch's commits onto another branch's tip the way
  ``git rebase`` / ``git cherry-pick`` do (each commit a three-way merge whose
  base is its parent, the author and message kept, a new committer), computed
  with ``git merge-tree --write-tree`` and ``git commit-tree`` — no working
  tree is touched while it is computed, and a conflict changes nothing but
  returns the conflicting paths. A clean result moves the target branch by
  fast-forward only; where that branch is checked out, its index and files
  follow as ``git merge --ff-only`` moves them (a local change in the way
  refuses it first), and the replayed branch is moved to the result so that
  its commits are reachable from the target.
* ``remove_worktree`` and ``delete_branch`` refuse unless the commit is
  integrated (reachable from the target, or every change of it already there)
  and, for a worktree, its tree clean (untracked files count), unlocked and
  with no merge, rebase, cherry-pick, revert or bisect in progress. Ignored
  files are not work, as for ``git worktree remove``, which then does the
  removal (and checks again).
* ``retire`` keeps a branch's commit — and its worktree's uncommitted work,
  saved on top as a discard's safety copy is (``tree.discard``, the one place
  pygit2 is used here, imported only then) — under a new ref, then removes the
  worktree and the branch; the same refusals apply, except that the commit is
  kept by that ref instead of the target branch.

Hooks: ``worktree add`` runs git's own (``post-checkout``), as it would for
the operator; the replay and the fast-forward run none (``commit-tree``,
``read-tree`` and ``update-ref`` have none) and sign nothing.
"""

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from git_forge.owned import make_dir, refuse_link
from git_forge.tree.errors import GitError
from git_forge.tree.fast_status import STATUS_ARGS
from git_forge.tree.gitcli import LITERAL_PATHSPECS, failure, git_result, run_git
from git_forge.tree.operations import HEADS, operation_in_progress
from git_forge.tree.porcelain import StatusEntry, parse_status_z

#: What a command meant for one linked worktree must not inherit from the one it
#: was started in: git then finds the repository from that worktree's ``.git``.
_OTHER_TREE: Mapping[str, str | None] = {
    "GIT_DIR": None, "GIT_WORK_TREE": None, "GIT_INDEX_FILE": None, "GIT_COMMON_DIR": None,
}


class Worktree(NamedTuple):
    """One entry of ``git worktree list --porcelain``."""

    path: Path
    #: HEAD's commit; ``None`` on an unborn branch.
    head: str | None
    #: The branch checked out (short name); ``None`` when HEAD is detached.
    branch: str | None
    #: ``None`` when unlocked; else the reason given (``""`` when none was).
    locked: str | None
    #: Why git would prune it (its directory is gone); ``None`` when it is there.
    prunable: str | None
    is_main: bool

    @property
    def missing(self) -> bool:
        return self.prunable is not None or not self.path.is_dir()


def _run(root: Path, args: list[str], *, input: bytes | None = None) -> bytes:
    return run_git(args, cwd=root, env=LITERAL_PATHSPECS, input=input)


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _in_tree(root: Path, tree: Path, args: list[str]) -> bytes:
    """Run git in the worktree at ``tree``: as the caller's own environment says
    when it is ``root`` (the operator's ``GIT_DIR`` and friends), else found from
    that worktree's ``.git`` alone."""
    if _same(root, tree):
        return _run(root, args)
    return run_git(args, cwd=tree, env={**_OTHER_TREE, **LITERAL_PATHSPECS})


def worktrees(root: Path) -> list[Worktree]:
    """Every worktree of the repository at ``root``, the main one first."""
    found: list[Worktree] = []
    for record in _run(root, ["worktree", "list", "--porcelain", "-z"]).split(b"\0\0"):
        fields: dict[str, str] = {}
        for line in record.split(b"\0"):
            if line:
                key, _, value = os.fsdecode(line).partition(" ")
                fields[key] = value
        if "worktree" not in fields or "bare" in fields:
            continue
        head = fields.get("HEAD")
        branch = fields.get("branch")
        found.append(Worktree(
            Path(fields["worktree"]),
            head if head and set(head) != {"0"} else None,
            branch.removeprefix(HEADS) if branch else None,
            fields.get("locked"), fields.get("prunable"), not found))
    return found


def worktree_at(root: Path, path: Path, trees: list[Worktree] | None = None) -> Worktree | None:
    """The worktree whose top is ``path``, or ``None`` (``trees``: a listing in hand)."""
    listed = trees if trees is not None else worktrees(root)
    return next((tree for tree in listed if _same(tree.path, path)), None)


def add_worktree(root: Path, directory: Path, branch: str, start: str) -> Path:
    """``git worktree add DIRECTORY -b BRANCH START``: a new branch at ``start``
    checked out in a new linked worktree (its path is returned). git refuses an
    existing branch or a directory that is not empty; nothing is created then. A
    link at ``directory`` or its parent is refused (``owned.LinkRefused``): git would
    check the worktree out where it points."""
    make_dir(directory.parent)
    refuse_link(directory)
    _run(root, ["worktree", "add", "--quiet", "-b", branch, str(directory), start])
    return directory


@contextlib.contextmanager
def scratch_worktree(root: Path, directory: Path, commit: str) -> Iterator[Path]:
    """``commit`` checked out (detached) in a linked worktree at ``directory`` for the
    block, then removed with whatever the block wrote there (``--force``): a place to
    run a check on commits no branch holds yet. A worktree left there by a crash is
    removed first."""
    make_dir(directory.parent)
    refuse_link(directory)
    if directory.exists():
        with contextlib.suppress(GitError):  # not a worktree: git's add refuses it below
            _run(root, ["worktree", "remove", "--force", "--force", str(directory)])
    _run(root, ["worktree", "prune"])
    _run(root, ["worktree", "add", "--quiet", "--detach", str(directory), commit])
    try:
        yield directory
    finally:
        _run(root, ["worktree", "remove", "--force", "--force", str(directory)])


def hold_on(root: Path, tree: Path, branch: str, current: str | None) -> None:
    """Have ``branch`` at the commit checked out in the linked worktree at ``tree``, and
    checked out there (``git checkout -B BRANCH HEAD``): whatever its HEAD became — a
    detached one, a branch of its own — the branch holds it. Nothing on disk changes
    (the same commit stays checked out, local changes with it). ``current``: the
    branch checked out there now (``None``: a detached HEAD), as the caller read it
    with the commit it just made there; nothing is done when it is ``branch``."""
    if current == branch:
        return
    _in_tree(root, tree, ["checkout", "--quiet", "-B", branch, "HEAD"])


def move_to(root: Path, tree: Path, branch: str, commit: str) -> None:
    """Check ``branch`` out at ``commit`` in the linked worktree at ``tree`` (``git
    checkout -B``): its files follow, a local change is carried along as ``git
    checkout`` carries it, and one in the way refuses it (``GitError``, nothing
    changed)."""
    _in_tree(root, tree, ["checkout", "--quiet", "-B", branch, commit])


def status(root: Path, tree: Path) -> list[StatusEntry]:
    """``git status --porcelain -uall --no-renames`` in the worktree at ``tree``."""
    return parse_status_z(_in_tree(root, tree, list(STATUS_ARGS)))[1]


def resolve(root: Path, revision: str) -> str | None:
    """The commit ``revision`` names, or ``None``."""
    result = git_result(["rev-parse", "-q", "--verify", f"{revision}^{{commit}}"],
                        cwd=root)
    return result.stdout.decode().strip() or None if result.returncode == 0 else None


def _refs(root: Path, branches: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Branch (short name) → (commit, its tree), for those that exist, in one look."""
    names = list(branches)
    out = _run(root, ["for-each-ref", "--format=%(objectname) %(tree) %(refname:strip=2)",
                      *(f"{HEADS}{branch}" for branch in names)])
    found = {}
    for line in out.decode("utf-8", "replace").splitlines():
        commit, tree, name = line.split(" ", 2)
        found[name] = (commit, tree)
    return {branch: found[branch] for branch in names if branch in found}


def tips(root: Path, *branches: str) -> dict[str, str]:
    """The commits of those of ``branches`` (short names) that exist, in one look."""
    return {name: commit for name, (commit, _) in _refs(root, branches).items()}


def branch_tips(root: Path, prefix: str) -> dict[str, str]:
    """Branches named ``PREFIX…`` (short names) and their commits."""
    out = _run(root, ["for-each-ref", "--format=%(refname:strip=2) %(objectname)",
                      f"{HEADS}{prefix}"])
    tips: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        name, _, commit = line.rpartition(" ")
        tips[name] = commit
    return tips


def unmerged(root: Path, prefix: str, onto: str) -> set[str]:
    """The ``PREFIX…`` branches whose tip is not reachable from ``onto``."""
    out = _run(root, ["for-each-ref", f"--no-merged={onto}", "--format=%(refname:strip=2)",
                      f"{HEADS}{prefix}"])
    return set(out.decode("utf-8", "replace").splitlines())


def last_move(root: Path, branch: str) -> str:
    """How ``branch`` last moved, as its reflog says (``commit: …``, ``forge: items
    001, 002``); ``''`` when it has no reflog."""
    try:
        return _run(root, ["log", "-g", "-1", "--format=%gs", f"refs/heads/{branch}",
                           "--"]).decode("utf-8", "replace").strip()
    except GitError:
        return ""


def is_ancestor(root: Path, commit: str, of: str) -> bool:
    result = git_result(["merge-base", "--is-ancestor", commit, of], cwd=root)
    if result.returncode not in (0, 1):
        raise failure(["merge-base"], result)
    return result.returncode == 0


def is_ignored(root: Path, path: Path) -> bool:
    """Whether git ignores ``path`` (``git check-ignore``)."""
    result = git_result(["check-ignore", "-q", "--no-index", str(path)], cwd=root)
    return result.returncode == 0


# --- integration -----------------------------------------------------------------------------


class CommitInfo(NamedTuple):
    """What a replay keeps of a commit: its tree, parents, author and message."""

    id: str
    tree: str
    parents: tuple[str, ...]
    author: tuple[str, str, str]  # name, email, date as git stores it
    encoding: str | None
    message: bytes


def commit_info(root: Path, commit: str) -> CommitInfo:
    raw = _run(root, ["cat-file", "commit", commit])
    header, _, message = raw.partition(b"\n\n")
    tree, parents, author, encoding = "", [], ("", "", ""), None
    for line in header.decode("utf-8", "surrogateescape").split("\n"):
        key, _, value = line.partition(" ")
        if key == "tree":
            tree = value
        elif key == "parent":
            parents.append(value)
        elif key == "author":
            name, _, rest = value.partition(" <")
            email, _, date = rest.partition("> ")
            author = (name, email, date)
        elif key == "encoding":
            encoding = value
    return CommitInfo(commit, tree, tuple(parents), author, encoding, message)


class Integration(NamedTuple):
    """What ``integrate`` did (or, with ``dry_run``, would do)."""

    outcome: Literal["integrated", "already", "conflict", "unverified"]
    branch: str
    onto: str
    #: ``onto``'s commit before, and after (the same unless integrated).
    tip: str
    new_tip: str
    #: Where the branch forked from ``onto`` (their merge base).
    fork_point: str
    #: The new commits on ``onto``, oldest first (the branch's own on a fast-forward).
    commits: tuple[str, ...] = ()
    #: The branch commit that conflicted, and the conflicting paths.
    conflict_commit: str | None = None
    conflict_paths: tuple[str, ...] = ()
    #: With ``tidy``: whether the branch and its worktree were removed, else why not.
    removed: bool = False
    kept: str | None = None
    #: ``unverified``: why the replayed commits failed the caller's check
    #: (``conflict_commit`` is the last of them).
    failed_check: str | None = None


#: A check of a branch's commits replayed onto a tip that moved since it forked
#: (the branch, the last replayed commit): why they may not land, or ``None``.
Check = Callable[[str, str], "str | None"]


def _pick(root: Path, commit: CommitInfo, onto: str, onto_tree: str,
          parent_is_ancestor: bool) -> tuple[str, list[str]]:
    """The tree of ``commit`` cherry-picked onto ``onto`` (a three-way merge whose
    base is ``commit``'s parent), and the conflicting paths (none when clean).

    ``merge-tree`` merges with the *real* merge base. When ``commit``'s parent is
    an ancestor of ``onto`` that is the parent itself; otherwise a throw-away
    commit with ``onto``'s tree and ``commit``'s parent makes it so — exactly the
    base cherry-pick merges with.
    """
    base = onto if parent_is_ancestor else _run(
        root, ["commit-tree", "--no-gpg-sign", "-p", commit.parents[0], "-m", "replay base",
               onto_tree]).decode().strip()
    args = ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages",
            base, commit.id]
    result = git_result(args, cwd=root, env=LITERAL_PATHSPECS)
    if result.returncode not in (0, 1):
        raise failure(args, result)
    fields = [os.fsdecode(field) for field in result.stdout.split(b"\0") if field]
    return fields[0], fields[1:] if result.returncode == 1 else []


def _commit_like(root: Path, source: CommitInfo, tree: str, parent: str) -> str:
    """A commit of ``tree`` on ``parent`` with ``source``'s author and message (the
    committer is git's own: the environment, then config)."""
    name, email, date = source.author
    env: dict[str, str | None] = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                                  "GIT_AUTHOR_DATE": date}
    args = ["commit-tree", "--no-gpg-sign", "-p", parent, tree]
    if source.encoding:
        args = ["-c", f"i18n.commitEncoding={source.encoding}", *args]
    return run_git(args, cwd=root, env=env, input=source.message).decode().strip()


def _tree_of(root: Path, commit: str) -> str:
    return _run(root, ["rev-parse", f"{commit}^{{tree}}"]).decode().strip()


class _Replay(NamedTuple):
    fork: str
    #: The commits ``onto`` would get (empty: nothing to integrate).
    commits: tuple[str, ...] = ()
    conflict_commit: str | None = None
    conflict_paths: tuple[str, ...] = ()
    #: The tree of the last of ``commits`` when the replay made it (else unknown).
    tree: str | None = None


def _replay(root: Path, name: str, head: str, tip: str, tip_tree: str | None) -> _Replay:
    """Replay ``head``'s commits since it forked from ``tip`` onto ``tip``, writing
    objects only (no ref). ``name`` names ``head`` in refusals."""
    listed = _run(root, ["rev-list", "--reverse", "--topo-order", "--parents",
                         f"{tip}..{head}"]).decode().split("\n")
    commits = [line.split(" ") for line in listed if line]
    if not commits:  # reachable from the tip already
        return _Replay(head)
    merges = [line[0] for line in commits if len(line) > 2]
    if merges:
        raise GitError(f"{name} has merge commits since it forked "
                       f"({', '.join(c[:12] for c in merges)}); integrate it by hand "
                       "(git rebase)")
    if len(commits[0]) < 2:
        raise GitError(f"{name} and the target branch have no common history: "
                       "integrate it by hand")
    fork = commits[0][1]  # the oldest commit's parent: where a linear branch forked
    if fork == tip:  # already on the tip: a plain fast-forward to the branch itself
        return _Replay(fork, tuple(line[0] for line in commits))
    current, current_tree = tip, tip_tree or _tree_of(root, tip)
    new_commits: list[str] = []
    for index, line in enumerate(commits):
        info = commit_info(root, line[0])
        # the oldest one's parent is reachable from the tip (it is not in tip..head)
        tree, conflicts = _pick(root, info, current, current_tree, parent_is_ancestor=not index)
        if conflicts:  # named with the true merge base (the fork above may be off the tip)
            fork = _run(root, ["merge-base", tip, head]).decode().strip()
            return _Replay(fork, (), info.id, tuple(conflicts))
        if tree == current_tree and info.tree != _tree_of(root, info.parents[0]):
            continue  # its change is on the tip already: dropped, as rebase drops it
        current = _commit_like(root, info, tree, current)
        current_tree = tree
        new_commits.append(current)
    return _Replay(fork, tuple(new_commits), tree=current_tree if new_commits else None)


def integrate(root: Path, branch: str, onto: str, *, dry_run: bool = False,
              reflog: str | None = None, trees: list[Worktree] | None = None,
              tidy: bool = False) -> Integration:
    """Replay ``branch``'s commits since it forked onto the tip of branch ``onto``.

    * ``already``: nothing to do — the branch is reachable from ``onto``, or
      every one of its changes is there already (each replayed commit would be
      empty, and is dropped as ``git rebase`` drops it); nothing changes.
    * ``conflict``: a replayed commit conflicts; nothing changes (no ref, no
      index, no file) and the paths are returned.
    * ``integrated``: ``onto`` fast-forwards to the replayed commits (to
      ``branch`` itself when it already sits on the tip). Where ``onto`` is
      checked out, its index and files move as a fast-forward merge moves them,
      and a local change in the way refuses it (a ``GitError``) before any ref
      moves. Then ``branch`` is moved to the new tip too (in its own worktree
      with ``git reset --keep``, which refuses to touch a local change; such a
      refusal leaves ``branch`` where it was, integrated all the same).

    A commit that merges (more than one parent) is refused: such a branch is
    integrated by hand. ``dry_run`` computes the outcome and changes no ref.
    ``trees``: the worktree listing, when the caller has one in hand.
    ``reflog``: the reflog's words before ``integrate <branch>: fast-forward``.

    ``tidy``: once integrated — the fast-forward done, so that its refusal
    removes nothing — ``branch`` and the worktree it is checked out in are
    removed instead of moved (every one of their commits was just replayed onto
    ``onto``) when nothing else can be lost there (the worktree clean, untracked
    files included, unlocked, no operation in progress); otherwise the branch is
    moved and both are kept (``kept`` says why).
    """
    done = integrate_all(root, [branch], onto, dry_run=dry_run, reflog=reflog, trees=trees,
                         tidy=tidy)[0]
    if isinstance(done, GitError):
        raise done
    return done


def integrate_all(root: Path, branches: Sequence[str], onto: str, *, dry_run: bool = False,
                  reflog: str | None = None, trees: list[Worktree] | None = None,
                  tidy: bool = False, check: Check | None = None, retries: int = 3
                  ) -> list[Integration | GitError]:
    """``integrate`` for several branches, in order, as one: each replayed onto the
    tip the ones before it made (a conflict, or a refusal — no such branch, merge
    commits, no common history — is that branch's alone: its ``GitError`` in the
    list; so is a replay onto a tip that moved since the branch forked which
    ``check`` fails: ``unverified``), then ``onto`` fast-forwarded once, to the last.
    One look at the refs and the worktrees, one fast-forward, for them all. When that
    fast-forward is refused (a local change in the way), each branch is integrated on
    its own, in order, so that only those whose changes meet the local change are
    refused. When it is refused because a commit landed on ``onto`` meanwhile (the
    user's, while the replays were checked), the whole integration is made again onto
    it, up to ``retries`` times."""
    found = _refs(root, (onto, *branches))
    if onto not in found:
        raise GitError(f"no branch {onto}")
    tip, tip_tree = found[onto]
    current: str = tip
    current_tree: str | None = tip_tree  # None: not known yet (the replay asks git)
    results: list[Integration | GitError] = []
    for branch in branches:
        if branch not in found:
            results.append(GitError(f"no branch {branch}"))
            continue
        try:
            replay = _replay(root, branch, found[branch][0], current, current_tree)
        except GitError as exc:
            results.append(exc)
            continue
        if replay.conflict_commit is not None:
            results.append(Integration("conflict", branch, onto, current, current, replay.fork,
                                       conflict_commit=replay.conflict_commit,
                                       conflict_paths=replay.conflict_paths))
        elif not replay.commits:
            results.append(Integration("already", branch, onto, current, current, replay.fork))
        elif check is not None and current != replay.fork and (
                failed := check(branch, replay.commits[-1])) is not None:
            results.append(Integration("unverified", branch, onto, current, current, replay.fork,
                                       conflict_commit=replay.commits[-1],
                                       failed_check=failed))
        else:
            results.append(Integration("integrated", branch, onto, current, replay.commits[-1],
                                       replay.fork, replay.commits))
            current, current_tree = replay.commits[-1], replay.tree
    landing = [result for result in results
               if isinstance(result, Integration) and result.outcome == "integrated"]
    if dry_run or not landing:
        return results
    names = ", ".join(result.branch for result in landing)
    message = f"{reflog}: integrate {names}: fast-forward" if reflog else (
        f"integrate {names}: fast-forward")
    trees = trees if trees is not None else worktrees(root)
    # The fast-forward first: it is what may refuse (a local change in the way), and a
    # refusal must find the branches and their worktrees, ignored files and all, as they
    # were. A crash after it leaves them integrated, for the next look to tidy.
    try:
        _fast_forward(root, trees, onto, tip, current, message)
    except GitError as exc:
        moved = _refs(root, (onto,)).get(onto, (tip, None))[0] != tip
        if moved and retries > 0:  # a commit landed on onto meanwhile: again, onto it
            return integrate_all(root, branches, onto, reflog=reflog, tidy=tidy, check=check,
                                 retries=retries - 1)
        if len(landing) == 1:
            return [exc if result is landing[0] else result for result in results]
        return [integrate_all(root, [branch], onto, reflog=reflog, tidy=tidy, check=check)[0]
                for branch in branches]
    return [_settle(root, trees, result, found[result.branch][0], message, tidy)
            if isinstance(result, Integration) and result.outcome == "integrated" else result
            for result in results]


def _settle(root: Path, trees: list[Worktree], result: Integration, head: str, message: str,
            tidy: bool) -> Integration:
    """An integrated branch after the fast-forward: with ``tidy``, it and its worktree
    removed when nothing else can be lost there; else (or when kept) moved to its
    replayed commits."""
    kept = None
    if tidy:
        kept = _remove_tree(root, trees, result.branch)
        if kept is None:  # the worktree is gone: the branch goes too, unless it moved
            kept = _drop_branch(root, result.branch, head, message)
            return result._replace(removed=kept is None, kept=kept)
    if result.new_tip != head:
        _follow(root, trees, result.branch, head, result.new_tip, message)
    return result._replace(kept=kept)


def _remove_tree(root: Path, trees: list[Worktree], branch: str) -> str | None:
    """Remove the worktree ``branch`` is checked out in (its commits are about to be
    integrated) when nothing else is in it; else why not (nothing changed then)."""
    tree = _checked_out(trees, branch)
    if tree is None:
        return None
    why = _holds_work(root, tree, ask_status=False)
    if why is not None:
        return why
    try:  # git refuses a worktree with changes, untracked files included
        _run(root, ["worktree", "remove", str(tree.path)])
    except GitError as exc:  # said in our words, naming the paths
        return _holds_work(root, tree) or exc.message
    return None


def _drop_branch(root: Path, branch: str, head: str, message: str) -> str | None:
    """Delete ``branch`` if it is still at ``head`` (every commit of it just integrated);
    else why it stays (it moved meanwhile: nothing is deleted then)."""
    try:
        _run(root, ["update-ref", "-m", message, "-d", f"{HEADS}{branch}", head])
    except GitError as exc:
        return exc.message
    return None


def _holds_work(root: Path, tree: Worktree, *, ask_status: bool = True) -> str | None:
    """Why removing the linked worktree ``tree`` could lose something, or ``None``
    (``ask_status=False``: its changes are left to ``git worktree remove`` to refuse)."""
    path = tree.path
    if tree.is_main:
        return f"{path} is the main worktree"
    if tree.locked is not None:
        why = f" ({tree.locked})" if tree.locked else ""
        return f"the worktree {path} is locked{why}; unlock it first: git worktree unlock {path}"
    if tree.missing:
        return None
    operation = operation_in_progress(path)
    if operation is not None:
        return operation.refusal(path)
    dirty = status(root, path) if ask_status else []
    if dirty:
        shown = ", ".join(entry.path for entry in dirty[:5])
        more = f" and {len(dirty) - 5} more" if len(dirty) > 5 else ""
        return f"the worktree {path} has uncommitted changes ({shown}{more}); they would be lost"
    return None


def _checked_out(trees: Iterable[Worktree], branch: str) -> Worktree | None:
    return next((tree for tree in trees if tree.branch == branch and not tree.missing), None)


def _fast_forward(root: Path, trees: list[Worktree], onto: str, tip: str, new_tip: str,
                  message: str) -> None:
    """Move ``onto`` from ``tip`` to its descendant ``new_tip``; where it is checked
    out, first its index and files (``read-tree -m -u``: a two-tree merge, which
    refuses when a local change would be overwritten)."""
    tree = _checked_out(trees, onto)
    if tree is not None:
        try:
            _in_tree(root, tree.path, ["read-tree", "-m", "-u", tip, new_tip])
        except GitError:  # perhaps only a stale stat cache: refreshed, as git merge does
            _refresh(root, tree.path)
            _in_tree(root, tree.path, ["read-tree", "-m", "-u", tip, new_tip])
    try:
        _run(root, ["update-ref", "-m", message, f"{HEADS}{onto}", new_tip, tip])
    except GitError:
        if tree is not None:  # the branch moved under us: put the files back
            _in_tree(root, tree.path, ["read-tree", "-m", "-u", new_tip, tip])
        raise


def _refresh(root: Path, tree: Path) -> None:
    """Bring the index's stat cache up to date, so a file touched but unchanged
    is not taken for a local change (``git merge`` does the same first)."""
    if _same(root, tree):
        git_result(["update-index", "-q", "--refresh"], cwd=root)
    else:
        git_result(["update-index", "-q", "--refresh"], cwd=tree, env=_OTHER_TREE)


def _follow(root: Path, trees: list[Worktree], branch: str, head: str, new_tip: str,
            message: str) -> None:
    """Point ``branch`` at the integrated commits, so that they are reachable."""
    tree = _checked_out(trees, branch)
    if tree is None:
        _run(root, ["update-ref", "-m", message, f"{HEADS}{branch}", new_tip, head])
        return
    try:
        _refresh(root, tree.path)
        _in_tree(root, tree.path, ["reset", "--quiet", "--keep", new_tip])
    except GitError:
        pass  # a local change in the way: the branch stays; its work is integrated


# --- removal ---------------------------------------------------------------------------------


def integrated(root: Path, commit: str, onto: str) -> bool:
    """``commit`` is reachable from branch ``onto``, or none of its changes since it
    forked would change ``onto`` (its replay would be empty: ``integrate`` says
    ``already``)."""
    tip = tips(root, onto).get(onto)
    if tip is None:
        raise GitError(f"no branch {onto}")
    if is_ancestor(root, commit, tip):
        return True
    try:
        replay = _replay(root, commit[:12], commit, tip, None)
    except GitError:
        return False
    return replay.conflict_commit is None and not replay.commits


def remove_worktree(root: Path, path: Path, onto: str,
                    trees: list[Worktree] | None = None) -> None:
    """Remove the linked worktree at ``path`` — only when nothing in it can be lost.

    Refuses (``GitError``, nothing changed) the main worktree, a path that is no
    worktree of this repository, a locked worktree, one with a merge, rebase,
    cherry-pick, revert or bisect in progress, one with any change ``git status``
    lists (untracked files included), and one whose HEAD is not integrated into
    ``onto`` (see ``integrated``). A worktree whose directory is gone has no
    files to lose: only its commit is checked. The branch is kept
    (``delete_branch``). ``trees``: the worktree listing, when in hand.
    """
    tree = worktree_at(root, path, trees)
    if tree is None:
        raise GitError(f"{path} is not a worktree of this repository")
    why = _holds_work(root, tree)
    if why is not None:
        raise GitError(why)
    if tree.head is not None and not integrated(root, tree.head, onto):
        raise GitError(f"the worktree {path} is at {tree.head[:12]}, which is not on {onto}; "
                       "its commits would be lost")
    _run(root, ["worktree", "remove", str(path)])


def delete_branch(root: Path, branch: str, onto: str,
                  trees: list[Worktree] | None = None) -> None:
    """Delete ``branch`` — only when its commit is integrated into ``onto`` and no
    worktree has it checked out (``trees``: the listing, when in hand).
    ``update-ref -d`` with the commit it was checked at, so a branch that moved
    meanwhile is not deleted."""
    commit = tips(root, branch).get(branch)
    if commit is None:
        raise GitError(f"no branch {branch}")
    holder = _checked_out(trees if trees is not None else worktrees(root), branch)
    if holder is not None:
        raise GitError(f"{branch} is checked out in {holder.path}")
    if not integrated(root, commit, onto):
        raise GitError(f"{branch} is at {commit[:12]}, which is not on {onto}; "
                       "its commits would be lost")
    _run(root, ["update-ref", "-d", f"{HEADS}{branch}", commit])


# --- retiring an attempt ---------------------------------------------------------------------


class Retired(NamedTuple):
    """What ``retire`` kept, and what it removed."""

    #: The ref holding the branch's commit (and, on top of it, the worktree's
    #: uncommitted work when there was any).
    ref: str
    #: The branch's commit.
    commit: str
    #: The uncommitted paths saved on top of it (the ref's own commit then).
    saved_paths: tuple[str, ...] = ()
    #: The worktree removed (``None``: the branch was checked out nowhere).
    worktree: Path | None = None


def retire_refusal(root: Path, branch: str, worktree: Path | None = None,
                   trees: list[Worktree] | None = None) -> str | None:
    """Why ``retire`` would refuse ``branch`` (``None``: it would not): no such
    branch, or its worktree (where it is checked out, or the one at ``worktree``
    — a rebase there detaches HEAD) is the main one, locked, mid-operation, or
    on another commit, or holds uncommitted work that cannot be kept (``_unkept``).
    A caller asks before it records anything: ``retire`` itself refuses no more."""
    if branch not in tips(root, branch):
        return f"no branch {branch}"
    listed = trees if trees is not None else worktrees(root)
    tree = _checked_out(listed, branch)
    there = worktree_at(root, worktree, listed) if worktree is not None else None
    for candidate in (tree, there):
        if candidate is not None and not candidate.missing:
            why = _holds_work(root, candidate, ask_status=False)
            if why is not None:
                return why
    if there is not None and not there.missing and there.branch != branch:
        return (f"the worktree {there.path} is not on {branch} "
                f"({'HEAD detached' if there.branch is None else there.branch}); "
                f"check {branch} out there first")
    return _unkept(root, tree) if tree is not None else None


def _unkept(root: Path, tree: Worktree) -> str | None:
    """Why the uncommitted work in ``tree`` cannot be saved under a ref before the
    worktree goes (a nested repository, a submodule's own changes: what a discard
    refuses, ``worktree.refusals``), or ``None``."""
    dirty = status(root, tree.path)
    if not dirty:
        return None
    # pygit2 boundary: status reads this module, and lists worktrees with git alone
    from git_forge.tree.repo import open_repo
    from git_forge.tree.worktree import refusals

    found = refusals(open_repo(tree.path), [entry.path for entry in dirty], "discard")
    if not found:
        return None
    return f"the work in the worktree {tree.path} cannot be kept: {found[0][1]}"


def retire(root: Path, branch: str, ref_prefix: str, worktree: Path | None = None,
           trees: list[Worktree] | None = None) -> Retired:
    """Keep ``branch``'s commit under a new ref ``<ref_prefix><timestamp>`` — with
    every uncommitted change of the worktree it is checked out in saved on top
    (a commit whose parent is the branch's, as a discard's safety copy is, the
    staged content too) — then remove that worktree and the branch.

    ``worktree``: where the branch's worktree should be (see ``retire_refusal``).
    Refuses (``GitError``) what ``retire_refusal`` names, and a path in the
    worktree whose content cannot be saved (a submodule, a nested repository),
    before anything changes. Nothing is removed unless it is reachable from the
    new ref; ``git worktree remove`` (without force) checks the tree once more.
    """
    trees = trees if trees is not None else worktrees(root)
    why = retire_refusal(root, branch, worktree, trees)
    if why is not None:
        raise GitError(why)
    commit = tips(root, branch)[branch]
    tree = _checked_out(trees, branch)
    saved: tuple[str, ...] = ()
    ref: str
    # pygit2 boundary: status reads this module, and lists worktrees with git alone
    from git_forge.tree.discard import create_safety_ref, discard_paths
    from git_forge.tree.repo import open_repo

    dirty = status(root, tree.path) if tree is not None else []
    if tree is not None and dirty:
        kept = discard_paths(open_repo(tree.path), [entry.path for entry in dirty],
                             prefix=ref_prefix,
                             subject=f"forge: uncommitted work of {branch} (safety copy)")
        ref, saved = kept.ref, kept.paths
    else:
        ref = create_safety_ref(open_repo(root), commit, ref_prefix)
    if not is_ancestor(root, commit, ref):  # the branch moved meanwhile: keep everything
        raise GitError(f"{branch} moved while it was being kept at {ref}; nothing removed")
    # a registration whose directory is gone has no files to lose: it goes too
    gone = next((t for t in trees if t.branch == branch and t.missing), None)
    for holder in (tree, gone):
        if holder is not None:
            _run(root, ["worktree", "remove", str(holder.path)])
    _run(root, ["update-ref", "-d", f"{HEADS}{branch}", commit])
    return Retired(ref, commit, saved, tree.path if tree is not None else None)

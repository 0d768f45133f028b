"""The only place that talks to git: the git adapter and nothing more.

It knows nothing of items, runs or state files (the launch blocker, attribution
and every message format live in ``reconcile/``, above this package) and
imports nothing from the layers above it.

Modules and what other layers call (every failure is a ``GitError``):

* ``gitcli``      — ``run_git``, ``start_git``, ``git_result``: the one way git
  is started (the same environment, optional locks off, one error).
* ``gitconfig``   — configuration values, booleans and colour as ``git config``
  answers them.
* ``repo``        — ``open_repo(path) -> Repo``: the repository git finds from
  ``path``, opened with pygit2 for index and tree writes; ``Repo.head_commit_id()``,
  ``is_unborn``, ``is_detached``, ``branch_name``, ``workdir``.
* ``identity``    — ``signature(repo, "author"|"committer")``,
  ``author_and_committer(repo)``: environment, then config, else an error.
* ``porcelain``   — ``StatusEntry(path, xy)``, ``parse_status_z`` (git's
  porcelain v2), ``render_porcelain_line(entry)`` (the line git prints),
  ``quote_path``.
* ``git_status``  — ``porcelain(repo) -> list[StatusEntry]``: the one status
  source, git's own ``status --porcelain`` (for an opened ``Repo``).
* ``fast_status`` — ``is_clean(root)``, ``porcelain_fast(root)``,
  ``launch_status(root, prefix)``: the same command for the hot path, no pygit2
  import (keep this package's ``__init__`` import-free).
* ``worktree``    — ``refusals(repo, paths, action)``: the paths a commit,
  stash or discard cannot handle as git would (each with the git command to
  use); ``restore_to_head`` puts paths back as ``git checkout`` does.
* ``history``     — ``log_subjects(root, base)``, ``stash_list(root)``,
  ``kept_list(root, prefix)``: the one history reader, ``git log`` and
  ``git for-each-ref`` (no pygit2: the pre-launch STOP path reads it).
* ``commit``      — ``commit_paths(repo, paths, message) -> commit id``.
* ``stash``       — ``stash_paths(repo, paths, message) -> stash id``;
  ``keep_paths(repo, paths, message, prefix) -> SafetyRef`` (the same commit, under
  a ref of its own instead of on the stash list).
* ``discard``     — ``discard_paths(repo, paths) -> SafetyRef``,
  ``restore_discarded(repo, ref)``, ``restore_hint(ref)``, ``safety_refs(repo)``.
* ``worktrees``   — linked worktrees through the git CLI (no pygit2):
  ``add_worktree``, ``worktrees``, ``status(root, tree)``, ``integrate(root,
  branch, onto) -> Integration`` (replay + fast-forward, a conflict changes
  nothing; ``integrate_all``: several branches, one fast-forward), ``integrated``,
  ``remove_worktree`` / ``delete_branch`` (refused while anything could be lost).

Paths are repository-relative strings as ``porcelain`` reports them, always
taken literally (``*.txt`` is a file name, never a pattern). No operation
follows a symbolic link or opens anything outside the working tree for
writing; the result of each is what git itself produces for the same paths,
or a refusal before anything changed.
"""

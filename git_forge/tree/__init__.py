"""The only place that talks to git: the pygit2 adapter (and, later, reconciliation
and the pre-launch check built on it).

Modules and what other layers call (every failure is a ``GitError``):

* ``repo``        — ``open_repo(path) -> Repo`` (``GIT_DIR``/``GIT_WORK_TREE``,
  worktrees); ``Repo.head_commit_id()``, ``is_unborn``, ``is_detached``,
  ``branch_name``, ``workdir``.
* ``identity``    — ``signature(repo, "author"|"committer")``,
  ``author_and_committer(repo)``: environment, then config, else an error.
* ``porcelain``   — ``StatusEntry(path, xy)``, ``render_porcelain_line(entry)``
  (the line git prints), ``quote_path``.
* ``status``      — ``porcelain(repo) -> list[StatusEntry]`` through pygit2.
* ``fast_status`` — ``is_clean(root)``, ``porcelain_fast(root)``: the hot path,
  git itself, no pygit2 import (keep this package's ``__init__`` import-free).
* ``history``     — ``log_subjects(repo, base)``, ``stash_list(repo)``.
* ``commit``      — ``commit_paths(repo, paths, message) -> commit id``.
* ``stash``       — ``stash_paths(repo, paths, message) -> stash id``.
* ``discard``     — ``discard_paths(repo, paths) -> SafetyRef``,
  ``restore_discarded(repo, ref)``, ``restore_hint(ref)``, ``safety_refs(repo)``.

Paths are repository-relative strings as ``porcelain`` reports them, always
taken literally (``*.txt`` is a file name, never a pattern).
"""

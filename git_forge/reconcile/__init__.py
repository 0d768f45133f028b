"""Reconciliation above ``tree/`` and ``loop/``: what a prior run left stranded, whose
work it is a candidate of, and what to do about it.

* ``stranded``    — the one filter of the runner's own changes: what is left is
  stranded work.
* ``launch_probe`` — the launch check's first look (``probe``): the clean answer,
  without the configuration; the hot path of every launch.
* ``preflight``   — the launch blocker (``check``): a tree that is not clean, and
  ``loop run``'s own check.
* ``stop``        — the STOP's explanation in the operator's terms.
* ``evidence``    — what a prior run left to attribute by (state.json, events).
* ``attribution`` — ``plan``: stranded entries grouped by candidate item.
* ``execution``   — ``execute``: commit, stash, discard or leave a group, verified.
* ``service``     — ``reconcile_tree``: the one use case ``reconcile`` and
  ``recover`` run, returning a ``ReconcileReport``.
* ``messages``    — every commit and stash message git-forge writes, beside
  its parser.

The loop uses the leaves ARCHITECTURE.md names (``stranded``, ``preflight``,
``messages``, ``item_trees``, ``merge_queue``, ``conflicts``); none imports from
``loop/`` but its records. Keep this ``__init__`` import-free: ``launch_probe`` is on
the hot path.
"""

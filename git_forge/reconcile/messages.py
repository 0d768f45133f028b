"""Every commit and stash message git-forge writes, beside the parsers that read
them back: attribution finds an item's work by these words, so a writer and its
parser change together or not at all.

Commit subjects (runner.md, recovery.md): an item's own ``[forge] <id>: …``
names it (``[rauf] <id>: …`` too, the older runner's); ``[forge] backlog: …``
and ``[forge] recover: …`` name none (item ids are three or more digits,
formats.md). Stash messages name an item as ``… from item <id>``; an item's
abandoned work is kept under ``refs/forge/abandoned/<id>/<time>``, which names it
too. An item's own branch, checked out in its worktree while it runs in parallel,
is ``forge/<id>``.

A subject is one line of safe text whatever the title or reason in it holds: a
line break there would start the message's body (``Signed-off-by:`` and other
trailers a title could forge), and an escape sequence would reach every terminal
``git log`` prints it on.

Imports next to nothing: the loop writes these on every iteration.
"""

from __future__ import annotations

import re

from git_forge.backlog.topology import id_key
from git_forge.layout import ABANDONED_REF_PREFIX, ITEM_BRANCH_PREFIX
from git_forge.safetext import clean

_ITEM_SUBJECT = re.compile(r"^\[(?:forge|rauf)\] ([0-9]{3,}):")
_STASH_ITEM = re.compile(r"from item ([^\s:()]+)")
_ITEM_BRANCH = re.compile(r"^forge/([0-9]{3,})\Z")  # \Z: "$" would allow a final newline
_ABANDONED_REF = re.compile(r"^refs/forge/abandoned/([0-9]{3,})/[^/]+\Z")


# --- the loop's commits and stashes ----------------------------------------------------------

def subject_text(text: str) -> str:
    """``text`` as part of a subject: safe text (``safetext.clean``), each run of
    whitespace — line breaks included — one space."""
    return " ".join(clean(text).split())


def item_done(item_id: str, title: str) -> str:
    """A done item, committed with its work."""
    return f"[forge] {item_id}: {subject_text(title)}"


def item_blocked(item_id: str, reason: str) -> str:
    """A blocked item's bookkeeping commit: the first line of its reason."""
    return f"[forge] {item_id}: blocked — {subject_text(reason)}"


def backlog_queued(summary: str) -> str:
    """Backlog changes made through git-forge's own commands, committed first."""
    return f"[forge] backlog: {summary}"


def items_settled(settled: list[tuple[str, list[str]]]) -> str:
    """The backlog bookkeeping of a parallel run, committed once items have settled:
    ``[forge] backlog: 001, 003 done; 002 needs a human`` (each done item's work is
    its own commit already). ``settled``: (what, ids) pairs, empty ones left out;
    each group's ids in id order, whatever order the items settled in."""
    parts = [f"{', '.join(sorted(ids, key=id_key))} {what}" for what, ids in settled if ids]
    return backlog_queued("; ".join(parts) or "update the backlog")


def process_lost(item_ids: list[str]) -> str:
    """Items whose process a crashed run lost, put back to pending."""
    return f"[forge] {', '.join(item_ids)}: back to pending (process lost)"


def breaker_reset(item_ids: list[str]) -> str:
    """Items a tripped circuit breaker put back to pending (their deferral undone)."""
    return f"[forge] {', '.join(item_ids)}: back to pending (circuit breaker)"


def abandoned_work(item_id: str) -> str:
    """The message of an item's abandoned work (kept under ``abandoned_refs``)."""
    return f"forge: abandoned work from item {item_id}"


def abandoned_refs(item_id: str) -> str:
    """Where an item's abandoned work is kept: ``refs/forge/abandoned/<id>/`` (each
    ref under it named by the time it was kept)."""
    return f"{ABANDONED_REF_PREFIX}{item_id}/"


def item_branch(item_id: str) -> str:
    """The branch an item's worktree has checked out (short name)."""
    return f"{ITEM_BRANCH_PREFIX}{item_id}"


# --- reconciliation's commits and stashes ----------------------------------------------------

def reconciled_item(item_id: str) -> str:
    """Stranded work committed for the item it is a candidate of."""
    return f"[forge] {item_id}: stranded work (reconciled)"


def recovery_decisions() -> str:
    """Recover's own backlog change: the decisions it applied."""
    return "[forge] recover: decisions applied to the backlog"


def reconciled_unattributed() -> str:
    """Stranded work no item is a candidate of, committed."""
    return "[forge] stranded work (reconciled)"


def reconciled_item_stash(item_id: str) -> str:
    """Stranded work stashed for the item it is a candidate of."""
    return f"forge: stranded work from item {item_id} (reconciled)"


def reconciled_group_stash(group_id: str) -> str:
    """Stranded work of a group that names no item, stashed."""
    return f"forge: stranded work ({group_id}, reconciled)"


# --- the parsers ----------------------------------------------------------------------------

def item_of_subject(subject: str) -> str | None:
    """``[forge] 003: title`` / ``[rauf] 003: …`` → ``003``."""
    match = _ITEM_SUBJECT.match(subject)
    return match.group(1) if match else None


def item_of_stash(message: str) -> str | None:
    """``forge: abandoned work from item 003`` (or any ``… from item <id>``) → ``003``."""
    match = _STASH_ITEM.search(message)
    return match.group(1) if match else None


def item_of_abandoned_ref(ref: str) -> str | None:
    """``refs/forge/abandoned/003/<time>`` → ``003``; any other ref → ``None``."""
    match = _ABANDONED_REF.match(ref)
    return match.group(1) if match else None


def item_of_branch(branch: str) -> str | None:
    """``forge/003`` → ``003``; any other branch name → ``None``."""
    match = _ITEM_BRANCH.match(branch)
    return match.group(1) if match else None

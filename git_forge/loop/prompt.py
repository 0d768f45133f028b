"""The prompt an agent receives for one backlog item.

It carries the item (title, description, acceptance criteria), the backlog's
project description, the configured prompt file, and — when a human answered the
item (``backlog answer``, ``recover``) — that answer together with what it
answers, worded by what happened: the question the agent asked, the blocker its
attempt stopped at, or its earlier attempts' failure (``answer_section``); when
the item's previous attempt conflicted with the branch, what collided and where
that attempt is kept; when an earlier attempt's changes were kept aside, where
they are and how to take them back, or, when this attempt resumes the session of
the one before, that its changes are still in the tree (``earlier_work_section``).
It ends with the signal protocol, so any agent (Claude Code, Codex, a script)
knows how to report done / blocked / needs-human.
"""

from typing import NamedTuple

from git_forge.backlog.item import Item
from git_forge.reconcile.conflicts import RETRY_ANSWER, ConflictRecord

SIGNAL_PROTOCOL = """\
## When you stop
End your output with exactly one of these lines:
- `FORGE_DONE` — the item is complete and its acceptance criteria hold.
- `FORGE_BLOCKED: <reason>` — you cannot proceed for a reason outside your control.
- `FORGE_NEEDS_HUMAN: <question>` — you need a human decision; ask for the decision (which
  option, which policy), never for a secret or credential.
The signal is a line of its own, the last of your output.
Markdown around it is fine (`**FORGE_DONE**`, a list marker, a final period), but
a signal inside a sentence, or followed by more text, is not read.
Do not commit; the runner commits your changes for the item."""


def conflict_section(conflict: ConflictRecord) -> str:
    """What the agent of an item whose previous attempt conflicted is told."""
    kept = (f" The previous attempt is kept at {conflict.retried_ref} (git show "
            f"{conflict.retried_ref}) for reference." if conflict.retried_ref else "")
    redo = ("so that the project's checks pass there" if conflict.failed_check is not None
            else "keeping what the other items changed in those paths")
    return ("## Your previous attempt could not be integrated\n"
            f"Its work was done, but {conflict.describe()}. The branch has moved on: this "
            f"attempt starts from its current tip, which holds that other work. Redo the "
            f"item on top of it, {redo}." + kept)


#: By what the answer answers (``answeredKind``): the section's heading, the words
#: before what was asked or what failed, and the words before the answer.
_ANSWERED: dict[str, tuple[str, str, str]] = {
    "question": ("Your question, and the human's answer", "Your previous attempt asked:",
                 "The human's answer:"),
    "blocker": ("Your previous attempt was blocked, and the human's answer",
                "Your previous attempt stopped, blocked:", "The human's answer:"),
    "failure": ("Your earlier attempts failed, and what the human says",
                "Your earlier attempts failed:", "The human says:"),
}


def answer_section(item: Item) -> str | None:
    """The human's answer with what it answers (``answeredReason``, quoted), worded
    by ``answeredKind``; only the answer, under a plain heading, when the item does
    not say what it answered (set by hand, or by an older git-forge); ``None``
    when the item holds no answer."""
    answer = (item.human_answer or "").strip()
    if not answer:
        return None
    reason = (item.answered_reason or "").strip()
    words = _ANSWERED.get(item.answered_kind or "")
    if not reason or words is None:
        return f"## The human's answer\n{answer}"
    heading, before_reason, before_answer = words
    quoted = "\n".join(f"> {line}".rstrip() for line in reason.splitlines())
    return f"## {heading}\n{before_reason}\n{quoted}\n\n{before_answer}\n{answer}"


#: How many of an item's kept attempts a prompt names, and how many paths of each.
KEPT_SHOWN = 3
PATHS_SHOWN = 5


class EarlierWork(NamedTuple):
    """What became of the item's earlier attempts' changes, for this attempt's prompt."""

    #: This attempt resumes the session of the one before, whose changes stay in the tree.
    resumed: bool = False
    #: Where earlier attempts' changes are kept (ref, paths), newest first.
    kept: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Where the item's refs are listed (for "and N older").
    refs: str = ""


def _listed(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:PATHS_SHOWN])
    more = len(paths) - PATHS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def earlier_work_section(earlier: EarlierWork) -> str | None:
    """What the agent is told of its item's earlier changes: still in the tree (a
    resumed session), or kept aside under a ref — with the commands to see and
    restore them — and not in the tree this attempt starts from."""
    parts = []
    if earlier.resumed:
        parts.append("## Your previous attempt's changes\nThis attempt resumes your previous "
                     "session, and the changes your previous attempt made are still in the "
                     "working tree, uncommitted: carry on from them.")
    if earlier.kept:
        newest, paths = earlier.kept[0]
        lines = ["## Your earlier changes to this item",
                 "An earlier attempt at this item did not finish it. Its changes were kept "
                 "aside, uncommitted, and are not in the working tree this attempt starts "
                 f"from. Your earlier changes are kept at {newest} ({_listed(paths)}); "
                 f"restore with: git stash apply {newest} (see them first: git stash show "
                 f"--include-untracked -p {newest}). Take what helps and redo the rest."]
        older = earlier.kept[1:KEPT_SHOWN]
        if older:
            lines.append("Older attempts' changes, newest first: " + "; ".join(
                f"{ref} ({_listed(held)})" for ref, held in older) + ".")
        hidden = len(earlier.kept) - KEPT_SHOWN
        if hidden > 0:
            lines.append(f"And {hidden} older (git for-each-ref {earlier.refs}).")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) or None


def verify_failure_section(excerpt: str) -> str:
    """What the agent is told when its previous attempt said done and the project's
    checks failed: the failure (a bounded excerpt, ``gates.verdict``), and that its
    changes are still in the tree."""
    return ("## Your previous attempt did not pass the project's checks\n"
            "You signalled done, but a check the project runs before it accepts an item "
            "failed:\n\n" + excerpt + "\n\nThe changes your previous attempt made are still "
            "in the working tree, uncommitted: fix what fails (only failures your changes "
            "caused count), then signal done again.")


def build_prompt(
    item: Item, *, project_description: str = "", prompt_file_text: str | None = None,
    conflict: ConflictRecord | None = None, earlier: EarlierWork | None = None,
    verify_failure: str | None = None,
) -> str:
    """The full prompt text for ``item`` (``conflict``: its previous attempt's merge
    conflict, described for this one; ``earlier``: what became of earlier attempts'
    changes; ``verify_failure``: the checks its previous attempt failed)."""
    parts: list[str] = []
    if prompt_file_text and prompt_file_text.strip():
        parts.append(prompt_file_text.strip())
    if project_description.strip():
        parts.append(f"## Project\n{project_description.strip()}")
    lines = [f"## Backlog item {item.id}: {item.title.strip()}"]
    if item.type:
        priority = "?" if item.priority is None else item.priority
        lines.append(f"Type: {item.type}, priority {priority}")
    description = item.description.strip()
    if description:
        lines += ["", description]
    criteria = [c for c in item.acceptance_criteria if c.strip()]
    if criteria:
        lines += ["", "### Acceptance criteria", *(f"- {c}" for c in criteria)]
    notes = item.notes.strip()
    if notes:
        lines += ["", "### Notes", notes]
    parts.append("\n".join(lines))
    if conflict is not None:
        parts.append(conflict_section(conflict))
    told = earlier_work_section(earlier) if earlier is not None else None
    if told is not None:
        parts.append(told)
    if verify_failure:
        parts.append(verify_failure_section(verify_failure))
    answered = answer_section(item)
    # A conflict retried on the new tip: its section is that question and its answer.
    if answered and not (conflict is not None and item.human_answer == RETRY_ANSWER):
        parts.append(answered)
    parts.append(SIGNAL_PROTOCOL)
    return "\n\n".join(parts) + "\n"

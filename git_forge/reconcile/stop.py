"""Why a launch stops, in the operator's terms: which stranded paths the last run
touched (its evidence, as candidates) and which it did not ("changed outside the
run"), and which of its items still wait on a decision *now*.

Only the STOP path comes here (a dirty tree with a prior run). It reads history
through the git CLI (``tree/history.py``), never pygit2, which costs more to
import than the rest of the explanation; the clean path reads no history at all.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

from git_forge.backlog.item import BacklogItemJSON, Item
from git_forge.errors import ForgeError
from git_forge.loop.state import RunState
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.reconcile.attribution import GroupKind, plan
from git_forge.reconcile.evidence import gather
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line


class TouchedJSON(TypedDict):
    path: str
    evidence: str


class StopExplanationJSON(TypedDict):
    """What ``preflight --json`` adds when a launch stops after a run."""

    touched: list[TouchedJSON]
    outside: list[str]
    blocked: list[str]
    needsHuman: list[str]


@dataclass(frozen=True)
class StopExplanation:
    """The stranded entries split by the last run's evidence."""

    #: (entry, why it is that run's candidate)
    touched: list[tuple[StatusEntry, str]] = field(default_factory=list)
    outside: list[StatusEntry] = field(default_factory=list)
    #: The run's blocked / needs-human items that are still so in the backlog.
    blocked: list[str] = field(default_factory=list)
    needs_human: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> StopExplanationJSON:
        return {"touched": [{"path": render_porcelain_line(entry), "evidence": why}
                            for entry, why in self.touched],
                "outside": [render_porcelain_line(entry) for entry in self.outside],
                "blocked": self.blocked, "needsHuman": self.needs_human}


def current_waits(backlog_file: Path, run: RunState) -> tuple[list[str], list[str]]:
    """The run's blocked and needs-human ids that are still blocked in the backlog
    (an item answered or unblocked since is not named)."""
    try:
        items = load_json(backlog_file.read_bytes(), backlog_file).get("items", [])
        # read tolerantly (this is evidence): an Item reads an odd field as absent
        status = {item.id: item for item in
                  (Item.from_json(cast(BacklogItemJSON, fields)) for fields in items
                   if isinstance(fields, dict))}
    except (OSError, ValueError, AttributeError, DocumentTooComplex):
        return [], []

    def still(ids: tuple[str, ...], needs_human: bool) -> list[str]:
        return [i for i in ids if (item := status.get(i)) is not None
                and item.status == "blocked" and item.needs_human == needs_human]

    return still(run.blocked_items, False), still(run.needs_human_items, True)


def explain(root: Path, state_dir: Path, backlog_file: Path,
            entries: list[StatusEntry], run: RunState) -> StopExplanation:
    """Attribute ``entries`` (the stranded ones) the way ``git forge reconcile`` does."""
    blocked, needs_human = current_waits(backlog_file, run)
    try:
        found = plan(root, gather(state_dir), entries)
    except ForgeError as exc:
        return StopExplanation(outside=list(entries), blocked=blocked,
                               needs_human=needs_human,
                               notes=[f"the run's evidence could not be read: {exc.message}"])
    touched: list[tuple[StatusEntry, str]] = []
    outside: list[StatusEntry] = []
    for group in found.groups:
        if group.kind is not GroupKind.ITEM:
            outside.extend(group.entries)
            continue
        for entry in group.entries:
            own = [note for note in group.evidence if note.startswith(f"{entry.path}: ")]
            why = own[0].split(": ", 1)[1] if own else next(
                (note for note in group.evidence if "was in flight" in note),
                f"a candidate of item {group.item_id}")
            touched.append((entry, why))
    order = {entry.path: index for index, entry in enumerate(entries)}
    touched.sort(key=lambda pair: order.get(pair[0].path, 0))
    outside.sort(key=lambda entry: order.get(entry.path, 0))
    return StopExplanation(touched, outside, blocked, needs_human, list(found.notes))
